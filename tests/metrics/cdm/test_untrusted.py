"""Hostile formulas and tables: CDM's TeX runs (pdflatex for v1.6, xelatex for v1.5) and
LaTeXML (LaTeX tables) read and write nothing outside their own folder, run no shell command and
stop in bounded time; through ``evalsuite score cdm`` and ``evalsuite score omnidocbench``, each
traced with strace.

The oracle is the system calls themselves: every file any process of the command opens is
traced, and the sentinel file the formulas aim at must never be opened (with the distribution's
defaults pdflatex opens it, by absolute path and through ``..``). TeX's primitives that open a
file directly (``\\pdfximage``, ``\\pdfobj file``, ``\\XeTeXpicfile``, a font by path) bypass
kpathsea: they do try their own sentinel, and every such attempt must be refused by the kernel
(Landlock, ``EACCES``)."""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from evalsuite.metrics.cdm import cdm_scores
from evalsuite.metrics.cdm.common import render as render_mod

pytestmark = pytest.mark.cdm

SENTINEL_TEXT = "SENTINEL-5b1e0c9d"
PRIMITIVE_SENTINEL_TEXT = "PRIMITIVE-SENTINEL-7d3a"
WRITE18_PROBE = "evalsuite-write18-probe"
LEAVE = r"x\label{{}} "
"""A prefix the v1.6 tokenizer cannot split: the rest reaches TeX unchanged."""


def hostile_formulas(sentinel: Path, outside: Path) -> dict[str, str]:
    """Formula id -> a prediction that tries to read ``sentinel`` or to write beside it
    (``outside``); run folders are two levels below ``sentinel``'s folder."""
    relative = f"../../{sentinel.name}"
    return {
        "openin": LEAVE + rf"\openin15={sentinel}\relax\read15to\l\l",
        "openin-relative": LEAVE + rf"\openin15={relative}\relax\read15to\l\l",
        "input": LEAVE + rf"\input{{{sentinel}}}",
        "input-relative": LEAVE + rf"\input{{{relative}}}",
        "include": LEAVE + rf"\include{{{sentinel.with_suffix('')}}}",
        "usepackage": LEAVE + rf"\usepackage{{{sentinel.with_suffix('')}}}",
        "openout": LEAVE + rf"\immediate\openout15={outside / 'written.txt'}"
                           r"\immediate\write15{hi}\immediate\closeout15",
        "openout-relative": LEAVE + r"\immediate\openout15=../../written-relative.txt"
                                    r"\immediate\write15{hi}\immediate\closeout15",
        # kpsewhich is on Debian's list of commands a restricted shell escape may run
        "write18": LEAVE + rf"\immediate\write18{{kpsewhich {WRITE18_PROBE}}}",
        "megabyte": "x+" * 500_000 + "y",  # past MAX_FORMULA_CHARS: fails untypeset
    }


def primitive_formulas(version: str, target: Path) -> dict[str, str]:
    """Formula id -> a prediction whose TeX primitive opens ``target`` (or ``target`` with the
    font-metric suffix) itself, not through kpathsea's checks (``\\def`` hides ``file`` from
    v1.6's tokenizer)."""
    if version == "1.6":
        return {
            "pdfobj-file": LEAVE + rf"\def\f{{file}}\immediate\pdfobj\f{{{target}}}",
            "pdfmapfile": LEAVE + rf"\pdfmapfile{{+{target}}}",
            "font-by-path": LEAVE + rf"\font\g={target.with_suffix('')}\relax\g x",
        }
    return {
        "xetexpicfile": LEAVE + rf'\XeTeXpicfile "{target}"',
        "font-by-path": LEAVE + rf'\font\g="[{target}]"\g x',
    }


ORDINARY = {"same": ("x^{2}+y", "x^{2}+y"), "different": ("a+b=c", "a-b=c")}


def strace() -> str:
    found = shutil.which("strace")
    if found is None:
        pytest.fail("strace is not on PATH: `make system-deps` (apt-get install strace)")
    return found


def joined(lines: list[str]) -> list[str]:
    """strace -f lines with each call interrupted by another process's (``<unfinished ...>``)
    joined to its ``<... resumed>`` end, so that a line holds both the path and the result."""
    pending: dict[str, str] = {}
    whole = []
    for line in lines:
        pid = line.split(" ", 1)[0]
        if line.endswith("<unfinished ...>"):
            pending[pid] = line.removesuffix("<unfinished ...>")
        elif "resumed>" in line and pid in pending:
            whole.append(pending.pop(pid) + line.split("resumed>", 1)[1])
        else:
            whole.append(line)
    return whole + list(pending.values())


def traced(command: list[str], folder: Path, env: dict[str, str]) -> tuple[
        subprocess.CompletedProcess[str], list[str]]:
    """Run ``command`` under ``strace -f`` (file opens and creations of every process); the
    result and the traced lines, each call on one line (:func:`joined`)."""
    log = folder / "strace.log"
    done = subprocess.run(
        [strace(), "-f", "-qq", "-s", "256", "-e", "trace=open,openat,creat,rename,renameat,"
         "renameat2,link,symlink,mkdir,execve,connect", "-o", str(log), *command],
        capture_output=True, text=True, env=env, timeout=600,
    )
    return done, joined(log.read_text(errors="replace").splitlines())


def setting(tmp_path: Path) -> tuple[Path, Path, Path, dict[str, str]]:
    """(sentinel, outside folder, run folders' parent, child environment): TeX's run folders
    are made in ``runs`` (TMPDIR), two levels below the sentinel; the primitives' sentinel
    (:func:`primitive_sentinel`) lies beside it."""
    sentinel = tmp_path / "sentinel.tex"
    sentinel.write_text(SENTINEL_TEXT + "\n")
    for target in primitive_sentinels(tmp_path):
        target.write_text(PRIMITIVE_SENTINEL_TEXT + "\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    runs = tmp_path / "runs"
    runs.mkdir()
    env = {**os.environ, "TMPDIR": str(runs), "EVALSUITE_CDM_CACHE": str(tmp_path / "cache"),
           "PYTHONDONTWRITEBYTECODE": "1"}
    return sentinel, outside, runs, env


def primitive_sentinel(tmp_path: Path) -> Path:
    """The primitives' target; a font by path opens it with ``.tfm`` instead (both exist)."""
    return tmp_path / "primitive-target.png"


def primitive_sentinels(tmp_path: Path) -> tuple[Path, Path]:
    return primitive_sentinel(tmp_path), primitive_sentinel(tmp_path).with_suffix(".tfm")


def refused_attempts(lines: list[str], target: Path) -> int:
    """How many traced calls tried to open ``target`` (with any suffix); fails on any that was
    not refused with ``EACCES``. (Other calls may name it: mktextfm is run with its name.)"""
    opening = re.compile(rf"\b(?:open|openat|creat)\(.*\"{re.escape(str(target.with_suffix('')))}")
    trying = [line for line in lines if opening.search(line)]
    opened = [line for line in trying if " = -1 EACCES" not in line]
    assert opened == [], opened[:5]
    return len(trying)


def assert_confined(lines: list[str], tmp_path: Path, sentinel: Path, outside: Path,
                    kept: list[str]) -> None:
    """No traced call names the sentinel or runs the shell-escape probe; every attempt on the
    primitives' sentinel was refused; nothing was created in ``outside`` or beside the
    sentinels; neither sentinel's text is in ``kept`` (the outputs) nor in any file left under
    ``tmp_path``."""
    touching = [line for line in lines if sentinel.name in line or sentinel.stem in line
                or WRITE18_PROBE in line]
    assert touching == [], touching[:5]
    refused_attempts(lines, primitive_sentinel(tmp_path))
    assert sorted(path.name for path in outside.iterdir()) == []
    assert not (tmp_path / "written-relative.txt").exists()
    for text in kept:
        assert SENTINEL_TEXT not in text and PRIMITIVE_SENTINEL_TEXT not in text
    for path in tmp_path.rglob("*"):
        if path.is_file() and path not in (sentinel, *primitive_sentinels(tmp_path)):
            content = path.read_bytes()
            assert SENTINEL_TEXT.encode() not in content, path
            assert PRIMITIVE_SENTINEL_TEXT.encode() not in content, path


@pytest.mark.parametrize("version", ["1.5", "1.6"])
def test_score_cdm_confines_tex_to_its_folder(version: str, tmp_path: Path) -> None:
    """Slow (~20 s per version here): every hostile formula and two ordinary pairs through one
    ``evalsuite score cdm`` run under strace. A kpathsea-refused formula fails; a refused
    primitive fails or scores as the same formula aimed at a missing file (TeX may go on
    without a font or picture in nonstop mode, as the official code would for a missing one)."""
    sentinel, outside, _, env = setting(tmp_path)
    primitives = primitive_formulas(version, primitive_sentinel(tmp_path))
    hostile = hostile_formulas(sentinel, outside)
    # the same primitives aimed at a file that does not exist (a name of the same length)
    absent = {f"{key}/absent": formula for key, formula in
              primitive_formulas(version, tmp_path / "primitive-absent.png").items()}
    pairs = tmp_path / "pairs.jsonl"
    with pairs.open("w") as out:
        for key, prediction in (hostile | primitives | absent).items():
            out.write(json.dumps({"id": key, "gt": "x", "pred": prediction}) + "\n")
        for key, (gt, prediction) in ORDINARY.items():
            out.write(json.dumps({"id": key, "gt": gt, "pred": prediction}) + "\n")
    started = time.monotonic()
    done, lines = traced([sys.executable, "-m", "evalsuite", "score", "cdm", "--version",
                          version, "--pairs", str(pairs), "--json"], tmp_path, env)
    assert done.returncode == 0, done.stderr[-3000:]
    assert time.monotonic() - started < 300
    assert any("execve" in line and ("pdflatex" in line or "xelatex" in line)
               for line in lines)  # TeX was traced
    scores = json.loads(done.stdout)["pairs"]
    assert_confined(lines, tmp_path, sentinel, outside, [done.stdout, done.stderr])
    # the primitives did reach TeX and try their sentinel: the sandbox, not luck, refused them
    assert refused_attempts(lines, primitive_sentinel(tmp_path)) >= len(primitives)
    for key in hostile:  # each fails its own formula
        assert scores[key]["F1_score"] == 0, (key, scores[key])
    for key in primitives:  # refused: fails, or TeX goes on as without the file
        assert scores[key]["F1_score"] == 0 or scores[key] == scores[f"{key}/absent"], key
    # the ordinary pairs score as they do alone
    alone = cdm_scores(list(ORDINARY.values()), version=version, cache_dir=tmp_path / "alone")
    assert [scores[key]["F1_score"] for key in ORDINARY] == [s.F1_score for s in alone]
    assert scores["same"]["F1_score"] == 1


def test_omnidocbench_display_formulas_are_confined(tmp_path: Path) -> None:
    """Slow (~15 s here): a v1.6 page run whose display formulas are the hostile ones, with
    CDM, under strace."""
    sentinel, outside, _, env = setting(tmp_path)
    gt, pred = tmp_path / "OmniDocBench.json", tmp_path / "pred"
    pred.mkdir()
    pages = []
    primitives = primitive_formulas("1.6", primitive_sentinel(tmp_path))
    formulas = hostile_formulas(sentinel, outside) | primitives
    for index, formula in enumerate(formulas.values()):
        name = f"page{index}"
        pages.append({
            "layout_dets": [{
                "category_type": "equation_isolated", "ignore": False, "anno_id": 0,
                "order": 1, "poly": [50.0, 90.0, 750.0, 90.0, 750.0, 120.0, 50.0, 120.0],
                "latex": "$$\nx\n$$", "attribute": {"formula_type": "print"}}],
            "page_info": {"page_no": index, "height": 1100, "width": 800,
                          "image_path": f"{name}.jpg",
                          "page_attribute": {"data_source": "academic_literature",
                                             "language": "english", "layout": "single_column",
                                             "special_issue": []}},
            "extra": {"relation": []},
        })
        (pred / f"{name}.md").write_text(f"$$\n{formula}\n$$\n")
    gt.write_text(json.dumps(pages))
    done, lines = traced([sys.executable, "-m", "evalsuite", "score", "omnidocbench",
                          "--version", "1.6", "--gt", str(gt), "--pred", str(pred), "--json"],
                         tmp_path, env)
    assert done.returncode == 0, done.stderr[-3000:]
    assert any("execve" in line and "pdflatex" in line for line in lines)
    assert_confined(lines, tmp_path, sentinel, outside, [done.stdout, done.stderr])
    assert refused_attempts(lines, primitive_sentinel(tmp_path)) >= len(primitives)
    assert json.loads(done.stdout)["overall"]["display_formula_cdm"] == 0


TABLE_GT = {
    "category_type": "table", "ignore": False, "anno_id": 0, "order": 1,
    "poly": [50.0, 50.0, 750.0, 50.0, 750.0, 80.0, 50.0, 80.0],
    "html": "<table><tr><td>A</td><td>B</td></tr><tr><td>1</td><td>2</td></tr></table>",
    "latex": "\\begin{tabular}{cc}\nA & B \\\\\n1 & 2 \\\\\n\\end{tabular}",
    "attribute": {"language": "table_en", "line": "full_line", "with_span": False,
                  "include_equation": False, "include_background": False,
                  "include_photo": False, "table_layout": "horizontal",
                  "with_structured_text": False},
}


@pytest.mark.parametrize("version", ["1.0", "1.6"])
def test_latex_tables_cannot_read_outside_latexmls_folder(version: str, tmp_path: Path) -> None:
    """Slow (~10 s here): LaTeX table predictions that ``\\input`` the sentinel (absolute,
    through ``..``, as a kpsewhich option), include it as a graphic or input a URL, converted by
    LaTeXML in a page run under strace; an ordinary table on the same run converts as before."""
    sentinel, outside, _, env = setting(tmp_path)
    gt, pred = tmp_path / "OmniDocBench.json", tmp_path / "pred"
    pred.mkdir()
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    listener.setblocking(False)
    port = listener.getsockname()[1]
    cells = [rf"\input{{{sentinel}}}", rf"\input{{../../{sentinel.name}}}",
             rf"\input{{-expand-var={sentinel}}}", rf"\includegraphics{{{sentinel}}}",
             rf"\input{{http://127.0.0.1:{port}/x.tex}}", "1"]
    pages = []
    for index, cell in enumerate(cells):
        pages.append({"layout_dets": [TABLE_GT], "extra": {"relation": []}, "page_info": {
            "page_no": index, "height": 1100, "width": 800, "image_path": f"t{index}.jpg",
            "page_attribute": {"data_source": "academic_literature", "language": "english",
                               "layout": "single_column", "special_issue": []}}})
        (pred / f"t{index}.md").write_text(
            f"\\begin{{tabular}}{{cc}}\nA & B \\\\\n{cell} & 2 \\\\\n\\end{{tabular}}\n")
    gt.write_text(json.dumps(pages))
    done, lines = traced([sys.executable, "-m", "evalsuite", "score", "omnidocbench",
                          "--version", version, "--no-cdm", "--gt", str(gt), "--pred", str(pred),
                          "--json"], tmp_path, env)
    assert done.returncode == 0, done.stderr[-3000:]
    assert any("execve" in line and "latexmlc" in line for line in lines)  # LaTeXML was traced
    assert_confined(lines, tmp_path, sentinel, outside, [done.stdout, done.stderr])
    teds = {stem: page["table_teds"] for stem, page in json.loads(done.stdout)["pages"].items()}
    assert teds[f"t{len(cells) - 1}"] == 1  # the ordinary table, equal to its ground truth
    with pytest.raises(BlockingIOError):  # LaTeXML never connected to the URL
        listener.accept()
    listener.close()


def test_a_formula_that_never_ends_is_stopped_at_the_time_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A formula that loops forever fails its side once pdflatex's time limit is up (2 s here
    instead of the official 30 s); the other pair scores."""
    from evalsuite.metrics.cdm.common import batch

    for module in (render_mod, batch):
        monkeypatch.setattr(module, "COMMAND_TIMEOUT_S", 2)
    started = time.monotonic()
    scores = cdm_scores([("x", r"\def\a{\a}\a"), ("x", "x")], version="1.6",
                        cache_dir=tmp_path / "cache")
    assert time.monotonic() - started < 30
    assert [s.F1_score for s in scores] == [0, 1]


def test_the_length_limit_fails_only_what_is_longer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With the limit at 9 characters, a 9-character side is typeset as before and a
    10-character one fails."""
    from evalsuite.metrics.cdm.v1_6 import score

    monkeypatch.setattr(score, "MAX_FORMULA_CHARS", 9)
    scores = cdm_scores([("x^{2}+y+z", "x^{2}+y+z"), ("x^{2}+y+zw", "x^{2}+y+zw")],
                        version="1.6", cache_dir=tmp_path / "cache")
    assert [s.F1_score for s in scores] == [1, 0]


def test_the_tex_environment_is_paranoid_and_private(tmp_path: Path) -> None:
    from evalsuite.confined import TEX_ARGUMENTS, file_size_limit, tex_environment

    env = tex_environment(tmp_path, {"PATH": "/bin", "openin_any": "a"})
    assert env["openin_any"] == env["openout_any"] == "p" and env["shell_escape"] == "f"
    assert env["TEXMFOUTPUT"] == str(tmp_path) and env["PATH"] == "/bin"
    assert Path(env["TEXMFVAR"]).parent == tmp_path
    assert "-no-shell-escape" in TEX_ARGUMENTS
    with pytest.raises(ValueError, match="positive"):
        file_size_limit(0)
    # a child writing past the size limit is stopped by SIGXFSZ
    done = subprocess.run(["sh", "-c", "head -c 4096 /dev/zero > big"],
                          cwd=tmp_path, preexec_fn=file_size_limit(1024), check=False)
    assert done.returncode != 0 and (tmp_path / "big").stat().st_size <= 1024


def test_strace_lines_name_what_they_open(tmp_path: Path) -> None:
    """The oracle itself: a process that opens the sentinel shows in the trace."""
    sentinel, _, _, env = setting(tmp_path)
    _, lines = traced([sys.executable, "-c", f"open({str(sentinel)!r}).read()"], tmp_path, env)
    assert any(re.search(re.escape(str(sentinel)), line) for line in lines)


def test_the_sandbox_lets_a_program_use_its_folder_and_the_system_only(tmp_path: Path) -> None:
    """Under :func:`confinement`, a shell and its children read and write their folder, read
    and run /usr, and are refused (EACCES) a file elsewhere, a file they would create elsewhere
    and a TCP connection to a listener of ours."""
    from evalsuite.confined import confinement, landlock_abi

    assert landlock_abi() > 0, "this kernel has no Landlock: TeX's primitives are unconfined"
    work, elsewhere = tmp_path / "work", tmp_path / "elsewhere"
    work.mkdir()
    elsewhere.mkdir()
    (elsewhere / "secret").write_text(PRIMITIVE_SENTINEL_TEXT)
    (work / "mine").write_text("mine")
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    listener.setblocking(False)
    port = listener.getsockname()[1]
    script = (f"cat mine > copy && cat {elsewhere}/secret; echo read=$?; "
              f"sh -c 'echo x > {elsewhere}/new'; echo write=$?; "
              f"bash -c 'echo > /dev/tcp/127.0.0.1/{port}' 2>/dev/null; echo connect=$?")
    with confinement(work) as preexec:
        done = subprocess.run(["/bin/sh", "-c", script], cwd=work, capture_output=True,
                              text=True, preexec_fn=preexec, check=False, timeout=60)
    assert (work / "copy").read_text() == "mine"
    assert PRIMITIVE_SENTINEL_TEXT not in done.stdout
    assert "read=0" not in done.stdout and "Permission denied" in done.stderr
    assert "write=0" not in done.stdout and not (elsewhere / "new").exists()
    assert "connect=0" not in done.stdout
    with pytest.raises(BlockingIOError):
        listener.accept()
    listener.close()
    # unconfined, the same script reads the file: the test can see the difference
    free = subprocess.run(["/bin/sh", "-c", script], cwd=work, capture_output=True, text=True,
                          check=False, timeout=60)
    assert PRIMITIVE_SENTINEL_TEXT in free.stdout and "write=0" in free.stdout
