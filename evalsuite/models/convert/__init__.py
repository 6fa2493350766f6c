"""Output converters: a peer model's raw answer to the markdown/HTML/LaTeX page the scorers read,
one module per model, each equal to the model's official conversion (quirks included)."""

from __future__ import annotations

from evalsuite.errors import EvalsuiteError


class ConversionError(EvalsuiteError, ValueError):
    """An answer the model's official conversion fails on: the sample is recorded as failed."""
