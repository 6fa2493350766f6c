"""Render many CDM v1.6 formulas with one pdflatex run and one Ghostscript run.

The official code compiles one document per formula. Here the formulas of one template and
paper size share a document: the official preamble once, then per formula ``\\clearpage``, a
log marker with the number of the next page, and the formula block exactly as the official
document has it. Every formula therefore starts on a fresh page of the same geometry, at the
same place as in its own document, and its pages are typeset by the same TeX state; Ghostscript
then rasterises the pages of the formulas it keeps, and each formula's pages are stacked,
cropped and boxed as :func:`~evalsuite.metrics.cdm.common.render.render_uncached` does
(tests/metrics/cdm/common/test_batch.py checks boxes and sizes against one-formula-per-run
renderings).

A formula is taken from the shared run only when nothing could have leaked between formulas:
both its markers were printed from their own input lines at the same group level (TeX read
exactly its block, no argument swallowed a marker, no group or math mode was left open), the
following marker appears, every formula before it in the run was taken, and its body uses no
command that changes global state (:data:`STATEFUL_COMMANDS`). A TeX error inside the formula
does not stop that: in nonstopmode TeX recovers from an error by inserting or dropping tokens,
which acts on the formula's own material only, so the pages equal those of the formula's own
run. The exceptions are the error counter, which stops TeX at 100 errors in one paragraph (a
run with :data:`TEX_ERROR_LIMIT` or more errors takes only error-free formulas), and error
messages quoting the source line, whose truncation depends on the line number (an erring
formula whose body holds "Overfull" or the marker is not taken, :func:`may_err`).

The first formula not taken is rendered alone, as the official code renders it; the formulas
after it go to a new shared run. A fatal error (no PDF at all) sends the formula after those the
log showed isolated to be rendered alone and the others to a new run. A formula whose braces or
environments do not close (:func:`looks_balanced`) would spoil its run, so it is rendered alone
from the start. An "Overfull" warning in its log section sends a formula to the next larger
paper, as the official retry does; a shared run that fails otherwise or times out falls back to
rendering each of its formulas alone.
"""

from __future__ import annotations

import re
import tempfile
from collections.abc import Sequence
from pathlib import Path

from evalsuite.metrics.cdm.common.render import (
    COMMAND_TIMEOUT_S,
    SMALLEST_PAPER,
    Rendering,
    RenderJob,
    RenderTimeoutError,
    Template,
    boxes_of,
    ghostscript_command,
    latex_document,
    read_pages,
    render_uncached,
    reports_overfull,
    run_ghostscript,
    stack_pages,
    typeset,
)
from evalsuite.metrics.cdm.common.toolchain import program_paths

MARKER = "cdm-batch-formula"
_WHERE = "\\the\\inputlineno\\space\\the\\currentgrouplevel"
_MARKER_LINE = re.compile(rf"^{MARKER} (?:(start) (\d+ \d+)|(end) (\d+)) (\d+) (\d+)$", re.M)
_BEGIN = "\\begin{document}\n"
STATEFUL_COMMANDS = frozenset(
    """global gdef xdef setcounter addtocounter stepcounter refstepcounter newcounter setlength
    addtolength newcommand renewcommand providecommand newenvironment renewenvironment
    DeclareMathOperator catcode makeatletter makeatother clearpage newpage pagebreak
    enlargethispage pagestyle thispagestyle pagecolor document input include endinput typeout
    write immediate special csname expandafter aftergroup afterassignment everymath
    everydisplay everypar everyhbox everyvbox output count dimen skip toks advance multiply
    divide font shipout end begin""".split()
)
"""Commands that may change state beyond their formula (``begin``/``end`` only when followed by
``{document}``, see :func:`batchable`); a formula using one is rendered alone. ``pdf*``
primitives are excluded too."""
_COMMAND = re.compile(r"\\([A-Za-z@]+)")
_ERROR = "\n! "
TEX_ERROR_LIMIT = 100
"""TeX stops a run at this many errors in one paragraph (its ``error_count``)."""


def batchable(job: RenderJob) -> bool:
    """Whether ``job`` may share a pdflatex run: no command of :data:`STATEFUL_COMMANDS` (other
    than ``\\begin``/``\\end`` of an environment other than ``document``) and no ``\\pdf...``."""
    for match in _COMMAND.finditer(job.body):
        name = match.group(1)
        if name.startswith("pdf"):
            return False
        if name in ("begin", "end"):
            if job.body.startswith("{document}", match.end()):
                return False
            continue
        if name in STATEFUL_COMMANDS:
            return False
    return True


_STRUCTURE = re.compile(r"\\(begin|end)\s*\{([^{}]*)\}|\\[A-Za-z@]+|\\.|[{}]", re.S)


def looks_balanced(job: RenderJob) -> bool:
    """Whether ``job``'s braces and environments close in order: a formula that leaves one open
    spoils the shared run from where it stands, so it is rendered alone straight away. Only a
    cost guess: a balanced formula that spoils its run is still caught by its log section."""
    open_items: list[str] = []
    for match in _STRUCTURE.finditer(job.body):
        item = match.group(0)
        if match.group(1) == "begin" or item == "{":
            open_items.append(match.group(2) or "{")
        elif (match.group(1) == "end" or item == "}") and (
            not open_items or open_items.pop() != (match.group(2) or "{")
        ):
            return False
    return not open_items


def batch_document(jobs: Sequence[RenderJob], paper: int) -> tuple[str, list[tuple[int, int]]]:
    """One .tex for ``jobs`` (same template) and the input lines of each formula's two markers:
    the official preamble, then per formula a page break, a start marker (``MARKER start index
    next-page line group-level``), the official formula block and an end marker (``MARKER end
    index line group-level``)."""
    template = jobs[0].template
    text = ""
    lines = []
    for index, job in enumerate(jobs):
        document = latex_document(job.body, template, paper)
        start = document.index(_BEGIN) + len(_BEGIN)
        block = document[start:].removesuffix("\\end{document}\n\n")
        text = text or document[:start]
        start_line = text.count("\n") + 1
        text += (
            f"\\clearpage\\typeout{{{MARKER} start {index} \\the\\count0 \\space{_WHERE}}}\n{block}"
        )
        lines.append((start_line, text.count("\n") + 1))
        text += f"\\typeout{{{MARKER} end {index} {_WHERE}}}\n"
    return text + "\\end{document}\n\n", lines


class _SharedRunFailed(Exception):
    """pdflatex or Ghostscript failed or timed out on a shared run."""


class _SharedRunAborted(Exception):
    """TeX stopped a shared run (a fatal error, which leaves no PDF) after its log had shown
    ``taken`` formulas typeset in isolation."""

    def __init__(self, taken: int) -> None:
        super().__init__(taken)
        self.taken = taken


def log_sections(
    text: str, lines: Sequence[tuple[int, int]], may_err: Sequence[bool]
) -> list[tuple[int, int, str]]:
    """Of a shared run's log: (first page, next formula's first page or 0 if last, log section)
    of the leading formulas that were typeset in isolation. Isolated: both markers printed from
    their own input lines (not from an argument that swallowed them) at the same group level,
    in order, the next start marker (or, for the last, the end of the run) present, and no TeX
    error in the section unless ``may_err`` allows it for that formula and the whole run has
    fewer than :data:`TEX_ERROR_LIMIT` errors."""
    marks = []  # (kind, index, [first page (start only), line, group level], match)
    for m in _MARKER_LINE.finditer(text):
        index, *page = (int(n) for n in (m.group(2) or m.group(4)).split())
        kind = m.group(1) or m.group(3)
        marks.append((kind, index, [*page, int(m.group(5)), int(m.group(6))], m))
    starts = [number for number, mark in enumerate(marks) if mark[0] == "start"]
    errors_tolerated = text.count(_ERROR) < TEX_ERROR_LIMIT
    accepted: list[tuple[int, int, str]] = []
    for order, at in enumerate(starts):
        _, index, (page, line, level), match = marks[at]
        following = marks[starts[order + 1]] if order + 1 < len(starts) else None
        section = text[match.end() : following[3].start() if following else len(text)]
        if not (index == order < len(lines) and line == lines[index][0]):
            break
        if _ERROR in section and not (errors_tolerated and may_err[index]):
            break
        end = marks[at + 1][:3] if at + 1 < len(marks) else None
        if end != ("end", index, [lines[index][1], level]):
            break
        if index + 1 < len(lines):
            if following is None or following[2][1] != lines[index + 1][0]:
                break
        elif following is not None or not (
            "Output written" in section or "No pages of output" in section
        ):
            break
        accepted.append((page, following[2][0] if following else 0, section))
    return accepted


_PAGES_WRITTEN = re.compile(r"Output written on .*?\((\d+) pages?, \d+ bytes\)\.")


def pages_written(log: str) -> int:
    """Pages in the PDF, from the log's last line ("Output written on ... (n pages, ...)."; TeX
    breaks that line at its width, so line breaks are dropped first); 0 without it."""
    tail = log[log.rfind("Output written on ") :].replace("\n", "")
    found = _PAGES_WRITTEN.match(tail)
    return int(found.group(1)) if found else 0


def may_err(job: RenderJob) -> bool:
    """Whether ``job`` may be taken from a shared run despite a TeX error: TeX quotes the source
    line in an error message, cut to the log's width from the line number on, so the quoted
    part of a body holding "Overfull" or the marker could differ from its own run's log."""
    return "Overfull" not in job.body and MARKER not in job.body


def _shared_run(
    jobs: Sequence[RenderJob], paper: int, work: Path
) -> list[tuple[bool, Rendering | None]]:
    """(overfull, rendering) of the leading formulas of ``jobs`` that one shared run may speak
    for (none: the first must be rendered alone). A formula that goes on to the next larger
    paper (overfull, with a page) gets no rendering: only the pages of the others are
    rasterised. Raises _SharedRunFailed."""
    pdf = work / "batch.pdf"
    document, lines = batch_document(jobs, paper)
    limit = COMMAND_TIMEOUT_S * len(jobs)
    try:
        text = typeset(document, work / "batch.tex", timeout_s=limit)
        accepted = log_sections(text, lines, [may_err(job) for job in jobs])
        page_count = pages_written(text) if pdf.exists() else 0
        spans = []  # (first page, page after the last, overfull) of each accepted formula
        for first, following, section in accepted:
            after = following or page_count + 1
            if after - 1 > page_count:  # pages the log promised are missing
                if len(accepted) < len(jobs):
                    raise _SharedRunAborted(len(accepted))
                raise _SharedRunFailed
            # no page: the formula's own run would have left no PDF, whatever its log says
            spans.append((first, after, reports_overfull(section) and after > first))
        wanted = [n for first, after, retry in spans if not (retry and paper > SMALLEST_PAPER)
                  for n in range(first, after)]
        if wanted:
            gs = ghostscript_command(program_paths()["gs"], pdf, work, page_list=wanted)
            if not run_ghostscript(gs, work, timeout_s=limit):
                raise _SharedRunFailed
            if len(list(work.glob("page*.png"))) != len(wanted):
                raise _SharedRunFailed
    except RenderTimeoutError:
        raise _SharedRunFailed from None
    png_of = {page: work / f"page{n}.png" for n, page in enumerate(wanted, start=1)}
    results: list[tuple[bool, Rendering | None]] = []
    for job, (first, after, retry) in zip(jobs, spans, strict=False):
        if retry and paper > SMALLEST_PAPER:
            results.append((True, None))
            continue
        pixels = stack_pages(read_pages([png_of[n] for n in range(first, after)]))
        results.append((retry, boxes_of(pixels, job) if pixels is not None else None))
    return results


def _render_group(
    jobs: Sequence[RenderJob], paper: int, timed_out: set[RenderJob]
) -> dict[RenderJob, tuple[bool, Rendering | None]]:
    """(overfull, rendering) of each job at ``paper``: shared runs, and alone where needed
    (jobs whose own run timed out are added to ``timed_out``)."""
    results: dict[RenderJob, tuple[bool, Rendering | None]] = {}
    pending = [job for job in jobs if batchable(job) and looks_balanced(job)]
    for job in jobs:
        if job not in pending:
            results[job] = (False, _alone(job, paper, timed_out))
    while pending:
        with tempfile.TemporaryDirectory(prefix="cdm_batch_") as tmp:
            try:
                shared = _shared_run(pending, paper, Path(tmp))
            except _SharedRunAborted as aborted:
                # the formula after those taken stopped TeX: alone; the others run again
                culprit = pending.pop(aborted.taken)
                results[culprit] = (False, _alone(culprit, paper, timed_out))
                continue
            except _SharedRunFailed:
                for job in pending:
                    results[job] = (False, _alone(job, paper, timed_out))
                return results
        results.update(zip(pending, shared, strict=False))
        # the first formula not taken is rendered alone; the others get a fresh shared run
        if len(shared) < len(pending):
            first = pending[len(shared)]
            results[first] = (False, _alone(first, paper, timed_out))
        pending = pending[len(shared) + 1 :]
    return results


def _alone(job: RenderJob, paper: int, timed_out: set[RenderJob]) -> Rendering | None:
    """The official one-formula-per-run rendering from ``paper`` on (None on a timeout, which
    adds ``job`` to ``timed_out``)."""
    try:
        return render_uncached(RenderJob(job.body, job.tokens, job.template, paper))
    except RenderTimeoutError:
        timed_out.add(job)
        return None


def render_many(jobs: Sequence[RenderJob]) -> tuple[list[Rendering | None], set[RenderJob]]:
    """Rendering of each job as :func:`~evalsuite.metrics.cdm.common.render.render_uncached` gives
    it, formulas of one template and paper sharing pdflatex runs; and the jobs whose own run
    timed out (scored as failed, like the official code, but not to be cached)."""
    final: dict[RenderJob, Rendering | None] = {}
    timed_out: set[RenderJob] = set()
    paper_of = {job: job.paper for job in dict.fromkeys(jobs)}
    while paper_of:
        groups: dict[tuple[Template, int], list[RenderJob]] = {}
        for job, paper in paper_of.items():
            groups.setdefault((job.template, paper), []).append(job)
        paper_of = {}
        for (_, paper), group in groups.items():
            for job, (overfull, rendering) in _render_group(group, paper, timed_out).items():
                if overfull and paper > SMALLEST_PAPER:
                    paper_of[job] = paper - 1
                else:
                    final[job] = rendering
    return [final[job] for job in jobs], timed_out
