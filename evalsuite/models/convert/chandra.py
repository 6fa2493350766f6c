"""Chandra's answer to its ``ocr_layout`` prompt (top-level layout ``<div>``s of HTML) as page
markdown, and its repeat detector, for Chandra 1 (chandra-ocr 0.1.8) and Chandra 2 (0.2.0).

As ``chandra/output.py`` does (``parse_html`` then ``parse_markdown``):

1. The answer is parsed with BeautifulSoup's ``html.parser``; only its top-level ``<div>``s count
   (text or tags outside them are dropped). Each div, numbered from 1 in document order, keeps its
   inner HTML unless its ``data-label`` is Page-Header/Page-Footer (headers and footers left out,
   the CLI's default), Image/Figure with images left out, or Blank-Page (Chandra 2). An Image or
   Figure block's first ``<img>`` gets ``src = md5(answer)_<n>_img.webp`` (one is appended when
   the block has none); Chandra 2 deletes ``<img>`` without ``src`` from every other block. A Text
   block whose inner HTML has no tag (regex ``<.+>``) is wrapped in ``<p>``. The kept blocks'
   inner HTML is concatenated with no separator (:func:`page_html`).
2. That HTML goes through markdownify 1.1.0 with Chandra's options and overrides
   (:class:`ChandraMarkdownConverter`), and the result is stripped (:func:`page_markdown`).

Where ``parse_markdown`` prints the error of a failed conversion and returns "", a
:class:`~evalsuite.models.convert.ConversionError` is raised instead (the sample fails rather than
being scored as a blank page); the repeat detector keeps Chandra's values.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import Any

from bs4 import BeautifulSoup
from bs4.exceptions import ParserRejectedMarkup
from markdownify import ATX, MarkdownConverter, re_whitespace

from evalsuite.models.convert import ConversionError

HEADER_FOOTER = ("Page-Header", "Page-Footer")
IMAGE_LABELS = ("Image", "Figure")
BLANK_PAGE = "Blank-Page"
_HAS_TAG = re.compile("<.+>")
_LINK_BRACKETS = re.compile(r"([\[\]()])")
_VERBATIM_PARENTS = ("pre", "code", "kbd", "samp", "math")
REPEAT_WINDOW = 500
"""Units of 1 to ``REPEAT_WINDOW // 2`` characters are tried."""
REPEAT_BASE_LIMIT = 4
REPEAT_CUT_FROM_END = 50
"""The retry test also looks for a repeat ending this many characters before the end."""


@dataclass(frozen=True)
class OutputRules:
    """What a chandra-ocr release does differently with an answer."""

    release: str
    skips_blank_pages: bool
    """``parse_html`` drops Blank-Page blocks."""
    drops_images_without_src: bool
    """``parse_html`` deletes ``<img>`` without ``src`` outside Image/Figure blocks."""
    repeat_scaling: float
    """``detect_repeat_token``'s limit for a unit of L characters: ⌊4·(1 + scaling/L)⌋ repeats."""
    repeats_on_markdown: bool
    """``detect_repeat_token`` looks at ``parse_markdown(answer)`` rather than the answer."""


OUTPUT_1 = OutputRules("chandra-ocr 0.1.8", skips_blank_pages=False,
                       drops_images_without_src=False, repeat_scaling=0.0,
                       repeats_on_markdown=True)
OUTPUT_2 = OutputRules("chandra-ocr 0.2.0", skips_blank_pages=True,
                       drops_images_without_src=True, repeat_scaling=3.0,
                       repeats_on_markdown=False)


class ChandraMarkdownConverter(MarkdownConverter):
    """markdownify 1.1.0 as Chandra's ``Markdownify`` configures it: ATX headings, ``-`` bullets,
    ``_``, ``*`` and ``$`` escaped in text (other markdown characters not), ``<sub>``/``<sup>``
    kept as HTML, ``<math>`` as ``$…$`` (`` $x$ `` with its spaces) or a ``$$…$$`` line for
    ``display="block"``, tables as their raw HTML, link text escaped again with brackets and
    parentheses backslashed, no escaping inside pre/code/kbd/samp/math."""

    def __init__(self) -> None:
        super().__init__(heading_style=ATX, bullets="-", escape_misc=False,
                         escape_underscores=True, escape_asterisks=True,
                         sub_symbol="<sub>", sup_symbol="<sup>")

    def convert_math(self, el: Any, text: str, parent_tags: set[str]) -> str:
        if el.get("display") == "block":
            return f"\n$${text.strip()}$$\n"
        return f" ${text.strip()}$ "

    def convert_table(self, el: Any, text: str, parent_tags: set[str]) -> str:
        return f"\n\n{el}\n\n"

    def convert_a(self, el: Any, text: str, parent_tags: set[str]) -> str:
        text = _LINK_BRACKETS.sub(r"\\\1", self.escape(text))
        return super().convert_a(el, text, parent_tags)

    def escape(self, text: str, parent_tags: set[str] | None = None) -> str:
        return super().escape(text, parent_tags).replace("$", r"\$")

    def process_text(self, el: Any, parent_tags: set[str] | None = None) -> str:
        """A text node: spaces and tabs collapsed outside ``<pre>``, escaped outside verbatim
        tags, trailing space cut where it ends an ``<li>`` or precedes a nested list (newlines
        and the space next to block tags are kept, unlike markdownify's own)."""
        text = str(el)
        if el.find_parent("pre") is None:
            text = re_whitespace.sub(" ", text)
        if el.find_parent(_VERBATIM_PARENTS) is None:
            text = self.escape(text)
        after = el.next_sibling
        if el.parent.name == "li" and (not after or after.name in ("ul", "ol")):
            text = text.rstrip()
        return text


def image_name(answer: str, block: int) -> str:
    """The file name Chandra gives block ``block``'s image: ``md5(answer)_<block>_img.webp``."""
    return f"{hashlib.md5(answer.encode('utf-8')).hexdigest()}_{block}_img.webp"


def page_html(
    answer: str, rules: OutputRules, include_headers_footers: bool = False,
    include_images: bool = True,
) -> str:
    """``parse_html``: the inner HTML of the answer's kept top-level divs (module docstring,
    step 1); ConversionError where BeautifulSoup rejects the markup."""
    try:
        soup = BeautifulSoup(answer, "html.parser")
    except ParserRejectedMarkup as exc:
        raise ConversionError(f"html.parser rejected the answer: {exc}") from exc
    kept = []
    for number, div in enumerate(soup.find_all("div", recursive=False), start=1):
        label = div.get("data-label")
        if (
            (label == BLANK_PAGE and rules.skips_blank_pages)
            or (label in HEADER_FOOTER and not include_headers_footers)
            or (label in IMAGE_LABELS and not include_images)
        ):
            continue
        if label in IMAGE_LABELS:
            src = image_name(answer, number)
            image = div.find("img")
            if image is None:
                div.append(BeautifulSoup(f"<img src='{src}'/>", "html.parser"))
            else:
                image["src"] = src
        elif rules.drops_images_without_src:
            for image in div.find_all("img"):
                if not image.get("src"):
                    image.decompose()
        if label == "Text":
            inner = div.decode_contents().strip()
            if not _HAS_TAG.search(inner):
                div.clear()
                div.append(BeautifulSoup(f"<p>{inner}</p>", "html.parser"))
        kept.append(div.decode_contents())
    return "".join(kept)


def html_markdown(html: str) -> str:
    """:class:`ChandraMarkdownConverter`'s markdown of ``html``, stripped; ConversionError where
    the conversion fails (markdownify recurses once per nesting level: a deeply nested answer
    exhausts Python's stack), where ``parse_markdown`` would give ""."""
    try:
        return ChandraMarkdownConverter().convert(html).strip()
    except RecursionError as exc:
        raise ConversionError(f"markdownify could not convert the HTML: {exc}") from exc


def page_markdown(
    answer: str, rules: OutputRules, include_headers_footers: bool = False,
    include_images: bool = True,
) -> str:
    """``parse_markdown``: the answer's page as markdown (module docstring)."""
    return html_markdown(page_html(answer, rules, include_headers_footers, include_images))


def detect_repeat_token(text: str, rules: OutputRules, cut_from_end: int = 0) -> bool:
    """Whether ``text`` (Chandra 1: its ``parse_markdown``; True where that raises), less its
    last ``cut_from_end`` characters, ends in more than ⌊4·(1 + scaling/L)⌋ back-to-back copies
    of its own last L characters, for some L in 1…250."""
    if rules.repeats_on_markdown:
        try:
            html = page_html(text, rules)
        except ConversionError:
            return True
        try:
            text = html_markdown(html)
        except ConversionError:
            text = ""
    if cut_from_end > 0:
        text = text[:-cut_from_end]
    for length in range(1, REPEAT_WINDOW // 2 + 1):
        start = len(text) - length
        if start < 0:
            break
        unit = text[start:]
        copies = 0
        while start >= 0 and text[start:start + length] == unit:
            copies += 1
            start -= length
        if copies > int(REPEAT_BASE_LIMIT * (1 + rules.repeat_scaling / length)):
            return True
    return False


def repeats(answer: str, rules: OutputRules) -> bool:
    """``generate_vllm``'s repeat test of an answer: a repeat at its end, or (answers of more
    than 50 characters) one ending :data:`REPEAT_CUT_FROM_END` characters before it."""
    return detect_repeat_token(answer, rules) or (
        len(answer) > REPEAT_CUT_FROM_END
        and detect_repeat_token(answer, rules, cut_from_end=REPEAT_CUT_FROM_END)
    )
