"""Backends execute schedules: ``numpy_backend`` on the CPU, ``symgraph.cuda`` on GPUs."""
