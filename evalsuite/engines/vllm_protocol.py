"""What the served engine (:mod:`evalsuite.engines.served`) and evalsuite's vLLM plugin
(:mod:`evalsuite.vllm_plugin`) agree on in a request: written here, below both, so that the
engine never imports the plugin (which imports vLLM-side code) and the plugin reads the same
names the engine sends."""

from __future__ import annotations

MODE_KWARG = "mode"
"""The ``mm_processor_kwargs`` key that names a request's resolution mode."""
