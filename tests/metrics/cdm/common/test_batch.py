"""Shared pdflatex runs (evalsuite.metrics.cdm.common.batch) give what one run per formula gives.

The official-code comparison of the shared renderer is tests/metrics/cdm/v1_6/test_cdm.py (every
case side is rendered through ``score_jobs``); here formulas chosen to stress the sharing (TeX
errors in the middle of a run, a runaway argument, a conditional that swallows the rest of the run,
global assignments, an overfull formula that moves to larger paper, empty output) are rendered both
ways and compared.
"""

from __future__ import annotations

import pytest

from evalsuite.metrics.cdm import VERSIONS
from evalsuite.metrics.cdm.common import batch
from evalsuite.metrics.cdm.common.batch import (
    MARKER,
    TEX_ERROR_LIMIT,
    batch_document,
    batchable,
    log_sections,
    looks_balanced,
    may_err,
    render_many,
)
from evalsuite.metrics.cdm.common.render import RenderJob, Template, latex_document, render_uncached

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
    r"x \over y \over z",
    r"\text{a $ b} + c",
    r"x^{2}^{3} + \left( y",
    r"\iffalse x + y",
    r"a & b = \mathbf{\alpha}",
]
CONTAINED_ERRORS = [5, 15, 16, 17, 19]
"""Formulas of STRESS whose TeX errors stay inside them: taken from the shared run."""


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


def test_log_sections_take_only_formulas_typeset_in_isolation() -> None:
    lines = [(10, 20), (21, 30), (31, 40), (41, 50)]
    log = (
        f"preamble\n{MARKER} start 0 1 10 1\n[1]\n{MARKER} end 0 20 1\n"
        f"{MARKER} start 1 2 21 1\n! Undefined control sequence.\n{MARKER} end 1 30 1\n"
        f"{MARKER} start 2 3 31 1\nOverfull \\hbox\n{MARKER} end 2 40 1\n[3]\n"
        f"{MARKER} start 3 4 41 1\n{MARKER} end 3 50 1\n[4]\nOutput written on x.pdf\n"
    )
    erring = [True] * 4
    accepted = log_sections(log, lines, erring)
    assert [(first, following) for first, following, _ in accepted] == [
        (1, 2), (2, 3), (3, 4), (4, 0)]
    assert "Overfull" in accepted[2][2]
    # an error is not tolerated where the body forbids it, nor in a run near TeX's error limit
    assert len(log_sections(log, lines, [True, False, True, True])) == 1
    many = log.replace("[3]\n", "[3]\n" + "! Missing $ inserted.\n" * (TEX_ERROR_LIMIT - 1))
    assert len(log_sections(many, lines, erring)) == 1
    assert len(log_sections(many.replace("! Undefined", "Undefined"), lines, erring)) == 4
    assert len(log_sections(log.replace("Output", ""), lines, erring)) == 3  # run never finished
    swallowed = log.replace(f"{MARKER} end 1 30 1", f"{MARKER} end 1 33 1")
    assert len(log_sections(swallowed, lines, erring)) == 1  # end marker ran from a later line
    regrouped = log.replace(f"{MARKER} end 1 30 1", f"{MARKER} end 1 30 2")
    assert len(log_sections(regrouped, lines, erring)) == 1  # a group left open
    unordered = log.replace(f"{MARKER} start 2 3 31 1", f"{MARKER} start 2 3 32 1")
    assert len(log_sections(unordered, lines, erring)) == 1  # next marker from another line


def test_errors_in_quoted_source_that_could_differ_are_not_tolerated() -> None:
    assert may_err(_job(r"\undefined x"))
    assert not may_err(_job(r"\text{Overfull \hbox} \undefined"))
    assert not may_err(_job(f"\\text{{{MARKER}}}"))


@pytest.mark.parametrize(
    ("body", "balanced"),
    [
        (r"\frac{a}{b} + \{x\}", True),
        (r"a \\{b}", True),
        (r"\left\{ x \right.", True),
        (r"\begin{bmatrix} a \\ b \end{bmatrix}", True),
        (r"\begin {cases} a \end {cases}", True),
        (r"\frac{x}{", False),
        (r"a + b }", False),
        (r"}{", False),
        (r"\begin{bmatrix} a & b", False),
        (r"\begin{array}{c} x \end{matrix}", False),
        (r"{\begin{matrix} x } \end{matrix}", False),
    ],
)
def test_formulas_that_leave_a_group_open_are_seen_before_the_run(body, balanced) -> None:
    assert looks_balanced(_job(body)) is balanced


@pytest.mark.cdm
@pytest.mark.parametrize("guess", [True, False], ids=["balance-guessed", "all-in-shared-runs"])
def test_shared_runs_equal_one_run_per_formula(monkeypatch, guess) -> None:
    """Slow (~24 s for balance-guessed here): the 20 stress formulas rendered twice, in shared
    pdflatex runs (with those the runs refuse rendered alone) and by one pdflatex and Ghostscript
    run each; the one-run-per-formula rendering is the reference, and each formula stresses
    another way a shared run can go wrong."""
    if not guess:  # the log checks alone must keep unbalanced formulas out
        monkeypatch.setattr(batch, "looks_balanced", lambda job: True)
    jobs = [job for job in map(VERSIONS["1.6"].prepare, STRESS) if job is not None]
    assert len(jobs) == len(STRESS)
    rendered_alone = []
    real_alone = batch._alone

    def spy(job, paper, timed_out):
        rendered_alone.append(job)
        return real_alone(job, paper, timed_out)

    monkeypatch.setattr(batch, "_alone", spy)
    shared, timed_out = render_many(jobs)
    assert timed_out == set()
    alone = [render_uncached(job) for job in jobs]
    assert [r is None for r in alone].count(False) >= 8  # most of them do render
    assert shared == alone
    taken = [n for n, job in enumerate(jobs) if job not in rendered_alone]
    assert set(CONTAINED_ERRORS) <= set(taken)
    assert STRESS.index(r"\iffalse x + y") not in taken
