"""The parts of ``sg.test_utils`` (MXNet's ``mx.test_utils`` names and signatures), by job:
``compare`` (tolerances and array comparisons), ``data`` (random inputs, iterators, datasets,
environment and stderr helpers), ``run`` (forward, consistency across contexts and dtypes,
speed, optimizers) and ``stats`` (distribution checks of random generators)."""
