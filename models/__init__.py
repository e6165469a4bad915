"""Network definitions built with ``sg.sym`` that tests, benchmarks and examples share."""
