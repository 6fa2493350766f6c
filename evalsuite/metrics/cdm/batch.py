"""Render many CDM v1.6 formulas with one pdflatex run and one Ghostscript run.

The official code compiles one document per formula. Here the formulas of one template and
paper size share a document: the official preamble once, then per formula ``\\clearpage``, a
log marker with the number of the next page, and the formula block exactly as the official
document has it. Every formula therefore starts on a fresh page of the same geometry, at the
same place as in its own document, and its pages are typeset by the same TeX state; Ghostscript
then rasterises all pages at once and each formula's pages are stacked, cropped and boxed as
:func:`~evalsuite.metrics.cdm.render.render_uncached` does (tests/test_cdm_v16_batch.py checks
boxes and sizes against one-formula-per-run renderings).

A formula is taken from the shared run only when nothing could have leaked between formulas:
its log section (from its marker to the next) has no TeX error, the following marker appears,
every formula before it in the run was taken, and its body uses no command that changes global
state (:data:`STATEFUL_COMMANDS`). Otherwise it is rendered alone as the official code does, and
the formulas after it go to a new shared run. An "Overfull" warning in its log section sends a
formula to the next larger paper, as the official retry does; a shared run that fails or times
out falls back to rendering each of its formulas alone.
"""

from __future__ import annotations

import re
import tempfile
from collections.abc import Sequence
from pathlib import Path

from evalsuite.metrics.cdm.render import (
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
    run_program,
    stack_pages,
)
from evalsuite.metrics.cdm.toolchain import program_paths

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


def log_sections(
    text: str, lines: Sequence[tuple[int, int]]
) -> tuple[list[tuple[int, int, str]], set[int]]:
    """Of a shared run's log: (first page, next formula's first page or 0 if last, log section)
    of the leading formulas that were typeset cleanly, and the positions of all formulas whose
    section shows a TeX error. Clean: both markers printed from their own input lines (not
    from an argument that swallowed them) at the same group level, in order, no error from the
    start marker to the next, and the next start marker (or, for the last, the end of the run)
    present."""
    marks = []  # (kind, index, [first page (start only), line, group level], match)
    for m in _MARKER_LINE.finditer(text):
        index, *page = (int(n) for n in (m.group(2) or m.group(4)).split())
        kind = m.group(1) or m.group(3)
        marks.append((kind, index, [*page, int(m.group(5)), int(m.group(6))], m))
    starts = [number for number, mark in enumerate(marks) if mark[0] == "start"]
    accepted: list[tuple[int, int, str]] = []
    errors: set[int] = set()
    clean_so_far = True
    for order, at in enumerate(starts):
        _, index, (page, line, level), match = marks[at]
        following = marks[starts[order + 1]] if order + 1 < len(starts) else None
        section = text[match.end() : following[3].start() if following else len(text)]
        if "\n! " in section:
            errors.add(index)
            clean_so_far = False
        clean_so_far = clean_so_far and index == order < len(lines) and line == lines[index][0]
        end = marks[at + 1][:3] if at + 1 < len(marks) else None
        clean_so_far = clean_so_far and end == ("end", index, [lines[index][1], level])
        if index + 1 < len(lines):
            clean_so_far = (
                clean_so_far and following is not None and following[2][1] == lines[index + 1][0]
            )
        else:
            clean_so_far = clean_so_far and following is None and (
                "Output written" in section or "No pages of output" in section
            )
        if clean_so_far:
            accepted.append((page, following[2][0] if following else 0, section))
    return accepted, errors


def _shared_run(
    jobs: Sequence[RenderJob], paper: int, work: Path
) -> tuple[list[tuple[bool, Rendering | None]], set[int]]:
    """(overfull, rendering) of the leading formulas of ``jobs`` that one shared run may speak
    for (none: the first must be rendered alone), and the positions of formulas that showed a
    TeX error. Raises _SharedRunFailed."""
    tex, pdf, log = work / "batch.tex", work / "batch.pdf", work / "batch.log"
    document, lines = batch_document(jobs, paper)
    tex.write_text(document, encoding="utf-8")
    limit = COMMAND_TIMEOUT_S * len(jobs)
    try:
        run_program(
            [program_paths()["pdflatex"], "-interaction=nonstopmode",
             f"-output-directory={work}", str(tex)],
            work, timeout_s=limit,
        )
        text = log.read_text(encoding="utf-8", errors="ignore") if log.exists() else ""
        accepted, errors = log_sections(text, lines)
        page_count = 0
        last_page = accepted[-1][1] - 1 if accepted and accepted[-1][1] else None
        if accepted and pdf.exists() and last_page != 0:
            gs = ghostscript_command(program_paths()["gs"], pdf, work, last_page)
            if not run_program(gs, work, timeout_s=limit):
                raise _SharedRunFailed
            page_count = len(list(work.glob("page*.png")))
    except RenderTimeoutError:
        raise _SharedRunFailed from None
    results = []
    for job, (first, following, section) in zip(jobs, accepted, strict=False):
        after = following or page_count + 1
        if after - 1 > page_count:
            raise _SharedRunFailed  # pages the log promised are missing
        pixels = stack_pages(read_pages([work / f"page{n}.png" for n in range(first, after)]))
        overfull = "Overfull \\hbox" in section or "Overfull \\vbox" in section
        # no page: the formula's own run would have left no PDF, whatever its log says
        results.append((overfull and pixels is not None,
                        boxes_of(pixels, job) if pixels is not None else None))
    return results, errors


def _render_group(
    jobs: Sequence[RenderJob], paper: int, timed_out: set[RenderJob]
) -> dict[RenderJob, tuple[bool, Rendering | None]]:
    """(overfull, rendering) of each job at ``paper``: shared runs, and alone where needed
    (jobs whose own run timed out are added to ``timed_out``)."""
    results: dict[RenderJob, tuple[bool, Rendering | None]] = {}
    pending = [job for job in jobs if batchable(job)]
    for job in jobs:
        if not batchable(job):
            results[job] = (False, _alone(job, paper, timed_out))
    while pending:
        with tempfile.TemporaryDirectory(prefix="cdm_batch_") as tmp:
            try:
                shared, errors = _shared_run(pending, paper, Path(tmp))
            except _SharedRunFailed:
                shared, errors = [], set(range(len(pending)))
        results.update(zip(pending, shared, strict=False))
        # the first formula not taken, and any that showed an error, are rendered alone; the
        # others get a fresh shared run
        rest = list(enumerate(pending))[len(shared) :]
        for position, job in rest:
            if position == len(shared) or position in errors:
                results[job] = (False, _alone(job, paper, timed_out))
        pending = [job for position, job in rest if job not in results]
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
    """Rendering of each job as :func:`~evalsuite.metrics.cdm.render.render_uncached` gives
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
