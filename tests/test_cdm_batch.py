"""Shared pdflatex runs (evalsuite.metrics.cdm.batch) give what one run per formula gives.

The official-code comparison of the shared renderer is tests/test_cdm_v16.py (every case side
is rendered through ``score_jobs``); here formulas chosen to stress the sharing (TeX errors
in the middle of a run, a runaway argument, global assignments, an overfull formula that moves
to larger paper, empty output) are rendered both ways and compared.
"""

from __future__ import annotations

import pytest

from evalsuite.metrics.cdm import PREPARERS
from evalsuite.metrics.cdm.batch import MARKER, batch_document, batchable, log_sections, render_many
from evalsuite.metrics.cdm.render import RenderJob, Template, latex_document, render_uncached

STRESS = [
    r"x^2 + y^2 = z^2",
    r"\frac{x}{",
    r"\alpha + \beta = \gamma",
    r"\begin{bmatrix} a & b",
    r"\sum_{i=1}^{n} i = \frac{n(n+1)}{2}",
    r"\undefinedmacro{x} + y",
    r"\global\let\alpha\beta \alpha",
    r"\text{速度} v = \frac{s}{t}",
    r"\begin{tabular}{cc} a & b \\ c & d \end{tabular}",
    " + ".join(f"a_{{{i}}} x^{{{i}}}" for i in range(60)),
    r"a + b }",
    r"\left( \frac{1}{1+e^{-x}} \right)",
    r"\hat{y} = \arg\max_{y} p(y \mid x)",
    r"x \\ \\ \end{array}",
    r"\int_{0}^{\infty} e^{-x^2} \, dx",
]


def _job(body: str) -> RenderJob:
    return RenderJob(body=body, tokens=("x",), template=Template.FORMULA, paper=5)


def test_stateful_commands_are_not_shared() -> None:
    assert batchable(_job(r"\frac{a}{b} \begin{matrix} a \end{matrix}"))
    for body in (r"\global\def\x{1}", r"\setcounter{page}{3} x", r"\end{document}",
                 r"\pdfliteral{0 g}", r"\pagecolor{red} x"):
        assert not batchable(_job(body)), body


def test_shared_document_holds_each_official_block_in_order() -> None:
    jobs = [_job(r"x^{2}"), _job(r"\frac{a}{b}"), _job(r"y")]
    document, lines = batch_document(jobs, 4)
    official = [latex_document(job.body, job.template, 4) for job in jobs]
    head = official[0].split("\\begin{document}\n")[0]
    assert document.startswith(head + "\\begin{document}\n")
    numbered = document.split("\n")
    position = 0
    for index, text in enumerate(official):
        block = text.split("\\begin{document}\n")[1].removesuffix("\\end{document}\n\n")
        start, end = lines[index]
        assert f"{MARKER} start {index} " in numbered[start - 1]
        assert f"{MARKER} end {index} " in numbered[end - 1]
        position = document.index(block, document.index(numbered[start - 1], position))
        assert position < document.index(numbered[end - 1])
    assert document.endswith("\\end{document}\n\n")


def test_log_sections_take_only_cleanly_typeset_formulas() -> None:
    lines = [(10, 20), (21, 30), (31, 40), (41, 50)]
    log = (
        f"preamble\n{MARKER} start 0 1 10 1\n[1]\n{MARKER} end 0 20 1\n"
        f"{MARKER} start 1 2 21 1\n! Undefined control sequence.\n{MARKER} end 1 30 1\n"
        f"{MARKER} start 2 3 31 1\nOverfull \\hbox\n{MARKER} end 2 40 1\n[3]\n"
        f"{MARKER} start 3 4 41 1\n{MARKER} end 3 50 1\n[4]\nOutput written on x.pdf\n"
    )
    accepted, errors = log_sections(log, lines)
    assert [(first, following) for first, following, _ in accepted] == [(1, 2)]
    assert errors == {1}
    clean = log.replace("! Undefined", "Undefined")
    accepted, errors = log_sections(clean, lines)
    assert [(first, following) for first, following, _ in accepted] == [
        (1, 2), (2, 3), (3, 4), (4, 0)]
    assert "Overfull" in accepted[2][2] and errors == set()
    assert len(log_sections(clean.replace("Output", ""), lines)[0]) == 3  # run never finished
    swallowed = clean.replace(f"{MARKER} end 1 30 1", f"{MARKER} end 1 33 1")
    assert len(log_sections(swallowed, lines)[0]) == 1  # end marker ran from a later line
    regrouped = clean.replace(f"{MARKER} end 1 30 1", f"{MARKER} end 1 30 2")
    assert len(log_sections(regrouped, lines)[0]) == 1  # a group left open


@pytest.mark.cdm
def test_shared_runs_equal_one_run_per_formula() -> None:
    jobs = [job for job in map(PREPARERS["1.6"], STRESS) if job is not None]
    assert len(jobs) == len(STRESS)
    shared, timed_out = render_many(jobs)
    assert timed_out == set()
    alone = [render_uncached(job) for job in jobs]
    assert [r is None for r in alone].count(False) >= 8  # most of them do render
    assert shared == alone
