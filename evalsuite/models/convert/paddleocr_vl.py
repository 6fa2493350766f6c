"""PaddleOCR-VL's handling of one ``OCR:`` block's answer, as paddlex 3.7.2 (the implementation
paddleocr 3.7.0 wraps) does it: repetition truncation and the ``\\( \\)``/``\\[ \\]`` rewrite of
``pipelines/paddleocr_vl/pipeline.py:_paddleocr_vl_assemble_parsing_results``, then the block's
markdown (``common/result/converter/markdown_format_funcs.py:_format_normalize_newlines``, the
formatter of the labels ``ocr`` and ``text``). Tables, formula numbers and spotting blocks,
which the pipeline treats otherwise, never reach it here.
"""

from __future__ import annotations

from collections import Counter

OCR_MIN_COUNT = 50
"""The pipeline's ``min_count`` for every block but a table (5000): shorter answers stay as they
are."""
SUFFIX_MIN_UNIT = 8
SUFFIX_MIN_REPEATS = 5
LINE_THRESHOLD = 10
CHAR_THRESHOLD = 10
MIN_LEN = 10


def shortest_repeating_unit(text: str) -> str | None:
    """The shortest ``u`` with ``u·(n/|u|) == text``, ``|u| <= n/2`` (None: there is none)
    (``uilts.py:find_shortest_repeating_substring``)."""
    n = len(text)
    for size in range(1, n // 2 + 1):
        if n % size == 0 and text[:size] * (n // size) == text:
            return text[:size]
    return None


def repeating_suffix(
    text: str, min_len: int = SUFFIX_MIN_UNIT, min_repeats: int = SUFFIX_MIN_REPEATS
) -> tuple[str, str, int] | None:
    """(prefix, unit, count) for the LONGEST unit of ``min_len`` to ``n // min_repeats``
    characters that ends ``text`` at least ``min_repeats`` times in a row, counted to the start of
    the run; None when there is none (``uilts.py:find_repeating_suffix``)."""
    for size in range(len(text) // min_repeats, min_len - 1, -1):
        unit = text[-size:]
        if text.endswith(unit * min_repeats):
            count, rest = 0, text
            while rest.endswith(unit):
                rest, count = rest[:-size], count + 1
            return text[:len(text) - count * size], unit, count
    return None


def truncate_repetitive_content(content: str, min_count: int = OCR_MIN_COUNT) -> str:
    """``content`` cut where the model looped (``uilts.py:truncate_repetitive_content``), only
    when it has at least ``min_count`` characters; on the stripped text ``s``, the first rule that
    applies:

    1. one line, ``|s| > 100``, ending in a unit of >= 8 characters repeated >= 5 times that covers
       more than half of ``s``: the text before the run;
    2. one line, ``|s| > 10``, ``s`` is one unit repeated >= 10 times: the unit;
    3. >= 10 non-empty (stripped) lines of which one makes >= 10 and >= 80 %: that line.
    """
    if len(content) < min_count:
        return content
    stripped = content.strip()
    if not stripped:
        return content
    if "\n" not in stripped and len(stripped) > 100:
        suffix = repeating_suffix(stripped)
        if suffix is not None:
            prefix, unit, count = suffix
            if len(unit) * count > len(stripped) * 0.5:
                return prefix
    if "\n" not in stripped and len(stripped) > MIN_LEN:
        unit = shortest_repeating_unit(stripped)
        if unit is not None and len(stripped) // len(unit) >= CHAR_THRESHOLD:
            return unit
    lines = [line.strip() for line in content.split("\n") if line.strip()]
    if len(lines) < LINE_THRESHOLD:
        return content
    line, count = Counter(lines).most_common(1)[0]
    if count >= LINE_THRESHOLD and count / len(lines) >= 0.8:
        return line
    return content


def dollar_delimited(content: str) -> str:
    """An answer with both ``\\(`` and ``\\)``, or both ``\\[`` and ``\\]``: every ``$``
    deleted, then ``\\(`` -> `` $ ``, ``\\)`` -> `` $``, ``\\[\\[`` -> ``\\[``, ``\\]\\]`` ->
    ``\\]``, ``\\[`` -> `` $$ ``, ``\\]`` -> `` $$ ``; any other answer as it is."""
    if not (("\\(" in content and "\\)" in content) or ("\\[" in content and "\\]" in content)):
        return content
    return (content.replace("$", "")
            .replace("\\(", " $ ").replace("\\)", " $")
            .replace("\\[\\[", "\\[").replace("\\]\\]", "\\]")
            .replace("\\[", " $$ ").replace("\\]", " $$ "))


def ocr_block_content(answer: str) -> str:
    """The content the pipeline keeps of an ``OCR:`` block's answer: truncated (min_count 50),
    then :func:`dollar_delimited`."""
    return dollar_delimited(truncate_repetitive_content(answer, OCR_MIN_COUNT))


def ocr_block_markdown(answer: str) -> str:
    """The markdown of a page that is one ``ocr`` block (``predict(use_layout_detection=False)``):
    its content with ``\\n\\n`` -> ``\\n``, then ``\\n`` -> ``\\n\\n``."""
    return ocr_block_content(answer).replace("\n\n", "\n").replace("\n", "\n\n")
