"""``evalsuite serve``: any engine of this project behind an OpenAI-compatible HTTP server.

:mod:`evalsuite.serving.app` holds the FastAPI application and its request batcher,
:mod:`evalsuite.serving.server` the socket and the uvicorn server that serve it,
:mod:`evalsuite.serving.process` a helper that runs the command (:mod:`evalsuite.commands.serve`)
in a subprocess (tests, ``python -m evalsuite.perf --serving``).
"""
