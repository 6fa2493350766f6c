"""``evalsuite serve``: any engine of this project behind an OpenAI-compatible HTTP server.

:mod:`evalsuite.serving.app` holds the FastAPI application and its request batcher,
:mod:`evalsuite.serving.cli` the command, :mod:`evalsuite.serving.process` a helper that runs
the command in a subprocess (tests, ``python -m evalsuite.perf --serving``).
"""
