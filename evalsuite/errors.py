"""Exceptions raised by evalsuite. Each names what is wrong and, where possible, how to fix it."""


class EvalsuiteError(Exception):
    """Base class of every error evalsuite raises on purpose."""


class ToolUnavailableError(EvalsuiteError):
    """A tool a step needs is absent here: a program (LaTeXML, xelatex, Node, Chromium), a package
    at its pinned version, a tokenizer's files or a reference environment. The message names the
    tool and how to install it. Each tool's error is a subclass named ``<Tool>UnavailableError``."""


class EngineUnavailableError(EvalsuiteError):
    """An engine cannot run here (no weights, no CUDA, no binary). Raised once, at load time."""


class UnknownEngineError(EvalsuiteError, KeyError):
    """No engine is registered under the requested name."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


class MissingRecordingError(EvalsuiteError, KeyError):
    """The replay engine has no recording for a request's key."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class DatasetNotFoundError(EvalsuiteError, FileNotFoundError):
    """A benchmark's data is absent; the message names the path and the fetch command."""


class DatasetFormatError(EvalsuiteError, ValueError):
    """A dataset file exists but does not have the expected layout."""


class GoldenError(EvalsuiteError):
    """A golden file is missing an entry or is malformed."""


class UnknownBenchmarkError(EvalsuiteError, KeyError):
    """No benchmark (or data source of a benchmark) is registered under the requested name."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class ImageInputError(EvalsuiteError, ValueError):
    """An image cannot be used: missing, empty, not an image, truncated or corrupt, or above
    the pixel limit (``--max-image-pixels``). The message is one line naming the file."""


class RunNotFoundError(EvalsuiteError, LookupError):
    """No run has the given id, name or results.json path; the message lists close matches."""


class NothingPairedError(EvalsuiteError, ValueError):
    """Two runs share no benchmark x data x parameter with samples of the same ids to compare."""
