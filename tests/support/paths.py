"""Where the tests find the repository and their fixture sets, wherever a test module sits in
the tree that mirrors ``evalsuite/``."""

from __future__ import annotations

from pathlib import Path

REPOSITORY = Path(__file__).resolve().parents[2]
"""The checkout's root (``pyproject.toml``, ``golden/``, ``benches/``)."""
TEST_FIXTURES = REPOSITORY / "tests" / "fixtures"
"""The committed fixture sets; ``tests/fixtures/README.md`` says how each is rebuilt."""
