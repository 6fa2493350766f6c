"""``evalsuite score cdm``: the pairs file's checks, the output layouts, and (``make test-cdm``)
the command's scores against the official CDM of both versions on fixture pairs."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from evalsuite.cli import main
from evalsuite.commands import score_cdm
from evalsuite.metrics.cdm import CdmScore
from tests.support.paths import TEST_FIXTURES

FIXTURES = TEST_FIXTURES / "cdm"


def write_pairs(path: Path, rows: list) -> Path:
    path.write_text("\n".join(json.dumps(row, ensure_ascii=False) for row in rows) + "\n",
                    encoding="utf-8")
    return path


@pytest.mark.parametrize(("content", "message"), [
    (b'{"id": "a", "gt": "x", "pred": "y"}\nnot json\n', "line 2: not JSON"),
    (b'["a", "x", "y"]\n', 'line 1: expected an object {"id", "gt", "pred"}'),
    (b'{"id": "a", "gt": "x"}\n', "line 1: 'pred' must be a string"),
    (b'{"id": "a", "gt": "x", "pred": "y"}\n{"id": "a", "gt": "x", "pred": "z"}\n',
     "line 2: id 'a' is repeated"),
    (b"\n\n", "holds no pair"),
    (b'{"id": "a", "gt": "\xff", "pred": "y"}\n', "is not UTF-8 text (byte 19)"),
])
def test_bad_pairs_are_named_in_one_line(tmp_path, capsys, content, message):
    (tmp_path / "pairs.jsonl").write_bytes(content)
    status = main(["score", "cdm", "--version", "1.6", "--pairs", str(tmp_path / "pairs.jsonl")])
    err = capsys.readouterr().err.strip()
    assert status == 2 and err.count("\n") == 0 and message in err, err


def test_output_layouts(tmp_path, capsys, monkeypatch):
    seen = {}

    def fake_scores(pairs, *, version, workers, cache_dir):
        seen.update(version=version, pairs=pairs)
        return [CdmScore(1.0, 1.0, 1.0), CdmScore(0.5, 0.25, 1.0)]

    monkeypatch.setattr(score_cdm, "cdm_scores", fake_scores)
    pairs = write_pairs(tmp_path / "p.jsonl", [{"id": "one", "gt": "x", "pred": "x"},
                                               {"id": "two", "gt": "a+b", "pred": "a"}])
    assert main(["score", "cdm", "--version", "1.5", "--pairs", str(pairs), "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == {"version": "1.5", "pairs": {
        "one": {"F1_score": 1.0, "recall": 1.0, "precision": 1.0},
        "two": {"F1_score": 0.5, "recall": 0.25, "precision": 1.0}}}
    assert seen == {"version": "1.5", "pairs": [("x", "x"), ("a+b", "a")]}
    assert main(["score", "cdm", "--version", "1.5", "--pairs", str(pairs)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("CDM as OmniDocBench v1.5's official code computes it: 2 pair")
    assert lines[-1].split() == ["mean", "0.750", "0.625", "1.000"]


@pytest.mark.cdm
@pytest.mark.parametrize("version", ["1.5", "1.6"])
def test_the_command_equals_the_official_cdm(tmp_path, capsys, version):
    """Four fixture pairs of different kinds (exact, edited, structural, failing) per version."""
    cases = json.loads(gzip.decompress(
        (FIXTURES / f"cdm_v{version.replace('.', '')}_cases.json.gz").read_bytes()))["cases"]
    chosen = {}
    for case in cases:
        chosen.setdefault(case["kind"], case)
    picked = [chosen[kind] for kind in ("exact", "edit", "structural", "fail") if kind in chosen]
    assert len(picked) >= 3
    pairs = write_pairs(tmp_path / "p.jsonl", [
        {"id": str(case["index"]), "gt": case["gt"], "pred": case["pred"]} for case in picked])
    assert main(["score", "cdm", "--version", version, "--pairs", str(pairs), "--json"]) == 0
    scored = json.loads(capsys.readouterr().out)["pairs"]
    assert scored == {str(case["index"]): {key: case[key] for key in
                                           ("F1_score", "recall", "precision")}
                      for case in picked}
