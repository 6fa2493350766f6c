"""evalsuite: regression benchmarks for document-OCR vision-language models."""

__version__ = "0.1.0"
