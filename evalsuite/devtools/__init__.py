"""Developer tools that check the project itself: ``python -m evalsuite.devtools.<tool>``."""
