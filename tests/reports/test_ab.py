"""``evalsuite ab``: the paired statistics against scipy and brute-force references, record
pairing, run identity in results.json, and the command end to end on two replay runs."""

from __future__ import annotations

import hashlib
import json
import math
import subprocess
import unicodedata
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats as scipy_stats

from evalsuite.commands.ab import resolve_run
from evalsuite.engines.weights import checkpoint_identity
from evalsuite.errors import NothingPairedError, RunNotFoundError
from evalsuite.records.metadata import RunMetadata
from evalsuite.records.model import BenchmarkRecord, MetricSummary, SampleRecord
from evalsuite.records.results import RunResults, read_results
from evalsuite.reports.ab_compute import compare_runs, pair_records
from evalsuite.reports.ab_render import render_html, render_text, report_json
from evalsuite.stats_paired import (
    discordant_counts,
    holm_adjust,
    mcnemar_exact,
    paired_bootstrap,
    sign_flip_exact,
    wilcoxon_signed_rank,
)
from tests.support.shared_data import needs_data, shared_data
from tests.support.subprocess_runs import child_env, run_evalsuite, run_pytest

DEGRADED_RECORD = "mode=small,config=color_blue,condition=vision"
DEGRADED_OUTPUT = "the page is unreadable \x1b[2J\x1b]0;pwned\x07\x9b31m"
"""A wrong answer that would clear the screen, retitle the window and colour the terminal if it
were printed raw (no letter a choice parser could take)."""
DEGRADED_COUNT = 12

pairs_of_outcomes = st.lists(st.tuples(st.booleans(), st.booleans()), min_size=1, max_size=60)


# --- McNemar -------------------------------------------------------------------------------

@given(pairs_of_outcomes)
def test_mcnemar_is_scipys_binomial_test_on_the_discordant_pairs(pairs):
    baseline, candidate = [a for a, _ in pairs], [b for _, b in pairs]
    only_baseline = sum(a and not b for a, b in pairs)
    only_candidate = sum(b and not a for a, b in pairs)
    result = mcnemar_exact(baseline, candidate)
    assert discordant_counts(baseline, candidate) == (only_baseline, only_candidate)
    discordant = only_baseline + only_candidate
    expected = (
        scipy_stats.binomtest(only_baseline, discordant, 0.5).pvalue if discordant else 1.0
    )
    assert result.p_value == pytest.approx(expected, rel=1e-12, abs=0)
    assert result.delta == pytest.approx((sum(candidate) - sum(baseline)) / len(pairs))


@pytest.mark.parametrize(("b", "c"), [(12, 0), (7, 3), (0, 5), (4, 4), (30, 11)])
def test_mcnemar_exact_p_by_hand(b, c):
    # two-sided exact: 2 * P(X <= min(b, c)), X ~ Binomial(b + c, 1/2), capped at 1
    n = b + c
    tail = sum(math.comb(n, k) for k in range(min(b, c) + 1)) / 2**n
    baseline = [True] * b + [False] * c + [True] * 5
    candidate = [False] * b + [True] * c + [True] * 5
    assert mcnemar_exact(baseline, candidate).p_value == pytest.approx(min(1.0, 2 * tail))


# --- paired bootstrap and Wilcoxon ---------------------------------------------------------

@settings(max_examples=25, deadline=None)
@given(
    st.lists(
        st.tuples(st.floats(0, 1), st.floats(0, 1)), min_size=3, max_size=40
    ).filter(lambda pairs: len({round(b - a, 12) for a, b in pairs}) > 1),
    st.integers(0, 2**16),
)
def test_bootstrap_equals_scipys_paired_bootstrap_with_the_same_seed(pairs, seed):
    baseline = np.array([a for a, _ in pairs])
    candidate = np.array([b for _, b in pairs])
    resamples = 999
    result = paired_bootstrap(baseline, candidate, resamples=resamples, seed=seed)
    reference = scipy_stats.bootstrap(
        (baseline, candidate),
        lambda x, y, axis=-1: np.mean(y - x, axis=axis),
        paired=True,
        n_resamples=resamples,
        method="percentile",
        random_state=np.random.default_rng(seed),
        vectorized=True,
    )
    assert result.ci_low == pytest.approx(reference.confidence_interval.low, abs=1e-12)
    assert result.ci_high == pytest.approx(reference.confidence_interval.high, abs=1e-12)
    distribution = reference.bootstrap_distribution
    tails = min(np.count_nonzero(distribution <= 0), np.count_nonzero(distribution >= 0))
    assert result.p_value == pytest.approx(min(1.0, 2 * (tails + 1) / (resamples + 1)))
    assert result.delta == pytest.approx(float(np.mean(candidate - baseline)))


def test_bootstrap_p_value_tells_a_shift_from_noise():
    rng = np.random.default_rng(7)
    baseline = rng.uniform(0.5, 1.0, 60)
    shifted = paired_bootstrap(baseline, baseline - 0.1 + rng.normal(0, 0.02, 60))
    assert shifted.p_value == pytest.approx(2 / 10000)  # no resample reaches 0
    assert shifted.ci_high < 0
    same = paired_bootstrap(baseline, baseline)
    assert (same.p_value, same.ci_low, same.ci_high, same.delta) == (1.0, 0.0, 0.0, 0.0)
    noise = rng.normal(0, 0.05, 30)
    balanced = paired_bootstrap(baseline, baseline + np.concatenate([noise, -noise]))
    assert balanced.delta == pytest.approx(0, abs=1e-12)
    assert balanced.p_value > 0.5 and balanced.ci_low < 0 < balanced.ci_high


@settings(max_examples=25, deadline=None)
@given(st.lists(st.tuples(st.floats(0, 1), st.floats(0, 1)), min_size=2, max_size=40)
       .filter(lambda pairs: any(a != b for a, b in pairs)))
def test_wilcoxon_is_scipys_on_the_same_pairs(pairs):
    baseline = [a for a, _ in pairs]
    candidate = [b for _, b in pairs]
    expected = scipy_stats.wilcoxon(candidate, baseline).pvalue
    assert wilcoxon_signed_rank(baseline, candidate).p_value == pytest.approx(expected)


@pytest.mark.parametrize("baseline, candidate", [
    ([0, 1, 1, 0, 1], [1, 1, 0, 1, 1]),  # 0/1 outcomes: zeros and one tie group
    ([0.5, 0.2, 0.9, 0.1, 0.3, 0.3], [0.7, 0.2, 0.5, 0.3, 0.1, 0.9]),  # a zero, ties of |d|
    ([0.0] * 6 + [0.1] * 4, [0.2] * 5 + [0.0] * 5),  # n = 10, three tie groups
    ([1.0, 2.0, 3.0], [2.0, 1.0, 3.0]),  # two differences of opposite sign tie
    ([0.25] * 9, [0.75] * 8 + [0.0]),  # every difference tied in |d|, one sign apart
])
def test_wilcoxon_with_ties_or_zeros_is_scipys_sign_flip_count_to_the_last_digit(
    baseline, candidate
):
    """The branch where scipy enumerates every sign flip (ties or zeros, n <= 13): the counted
    p-value equals scipy's exactly."""
    expected = float(scipy_stats.wilcoxon(candidate, baseline).pvalue)
    assert wilcoxon_signed_rank(baseline, candidate).p_value == expected


def test_paired_tests_reject_unpaired_input():
    with pytest.raises(ValueError, match="differ in length: 2 vs 1"):
        paired_bootstrap([0.1, 0.2], [0.3])
    with pytest.raises(ValueError, match="at least one pair"):
        mcnemar_exact([], [])


# --- Holm ----------------------------------------------------------------------------------

def holm_brute_force(p_values: list[float]) -> list[float]:
    """Adjusted p of H_i = the smallest level alpha at which Holm's step-down procedure
    (reject p_(k) while p_(k) <= alpha / (m - k + 1)) rejects H_i; searched over every level at
    which a decision can change."""
    m = len(p_values)
    levels = sorted({min(1.0, p * j) for p in p_values for j in range(1, m + 1)} | {1.0})

    def rejected(alpha: float) -> set[int]:
        out: set[int] = set()
        for k, index in enumerate(sorted(range(m), key=lambda i: p_values[i])):
            if p_values[index] * (m - k) > alpha:
                break
            out.add(index)
        return out

    adjusted = [1.0] * m
    for alpha in reversed(levels):
        for index in rejected(alpha):
            adjusted[index] = alpha
    return adjusted


@given(st.lists(st.floats(0, 1), min_size=1, max_size=8))
def test_holm_equals_the_brute_force_step_down_procedure(p_values):
    assert holm_adjust(p_values) == pytest.approx(holm_brute_force(p_values))


def test_holm_known_values():
    assert holm_adjust([0.01, 0.04, 0.03, 0.5]) == pytest.approx([0.04, 0.09, 0.09, 0.5])
    with pytest.raises(ValueError, match="in \\[0, 1\\]"):
        holm_adjust([0.2, 1.5])


# --- pairing -------------------------------------------------------------------------------

def _record(
    engine: str, outcomes: list[bool], *, parameter: str = "mode=small", data: str = "fixtures"
) -> BenchmarkRecord:
    samples = [SampleRecord(f"s{i}", {"accuracy": ok, "tokens": 3}, prediction=f"answer {ok}")
               for i, ok in enumerate(outcomes)]
    metrics = {
        "accuracy": MetricSummary(sum(outcomes) / len(outcomes), len(outcomes),
                                  kind="proportion"),
        "tokens": MetricSummary(3.0, len(outcomes), direction=None),
    }
    return BenchmarkRecord("bench", engine, parameter, metrics, samples, data=data)


def _run(
    run_id: str, *records: BenchmarkRecord, details: dict[str, dict] | None = None
) -> RunResults:
    metadata = RunMetadata(run_id, "2026-01-01T00:00:00Z", engines=sorted(details or {}),
                           engine_details=details or {})
    return RunResults(metadata, list(records))


def _peer(name: str, version: int, prompt: str = "a1") -> dict:
    """A served peer's engine details, as a run records them."""
    return {"engine": "served", "model": f"org/{name}",
            "model_profile": {"name": name, "version": version, "prompt_sha256": prompt * 32,
                              "decoding": {"temperature": 0.0}}}


def test_records_of_different_engines_pair_when_each_run_has_one():
    model_a = _run("a", _record("model-a", [True] * 20), _record("x", [True], parameter="p=1"))
    model_b = _run("b", _record("model-b", [True] * 8 + [False] * 12))
    pairs = pair_records(model_a.records, model_b.records)
    assert [(p.baseline.engine, p.candidate.engine) for p in pairs] == [("model-a", "model-b")]
    report = compare_runs(model_a, model_b, worst=20)
    (comparison,) = report.comparisons  # tokens has no better side: not tested
    assert comparison.engines == "model-a → model-b"
    assert comparison.test.p_value == pytest.approx(scipy_stats.binomtest(12, 12).pvalue)
    assert comparison.regressed and comparison.verdict == "REGRESSED"
    assert {c.sample_id for c in report.worst} == {f"s{i}" for i in range(8, 20)}
    assert compare_runs(model_a, model_b).worst == report.worst[:10]


def test_ab_names_the_peer_profiles_and_warns_when_sides_differ_in_version_or_data(tmp_path):
    """dots.ocr v1 against dots.ocr v2 (labels dots.ocr and dots.ocr-v2, paired as the one
    record of each run): the header names each side's profile and a warning line says the
    versions differ; a setting run on other data by each side is not paired, and said."""
    outcomes = [True] * 10 + [False] * 2
    base = _run("a", _record("dots.ocr", outcomes),
                _record("dots.ocr", outcomes, parameter="p=2", data="fox@a"),
                details={"dots.ocr": _peer("dots.ocr", 1)})
    cand = _run("b", _record("dots.ocr-v2", outcomes),
                _record("dots.ocr-v2", outcomes, parameter="p=2", data="fox@b"),
                details={"dots.ocr-v2": _peer("dots.ocr", 2)})
    report = compare_runs(base, cand)
    assert [c.engines for c in report.comparisons] == ["dots.ocr → dots.ocr-v2"]
    assert report.warnings == [
        "dots.ocr → dots.ocr-v2: baseline ran dots.ocr v1, candidate dots.ocr v2: two profile "
        "versions of one model, a difference may come from the profile's prompt, decoding or "
        "image preparation",
        "bench: baseline ran on fox@a, candidate on fox@b: different data, 1 setting(s) not "
        "compared",
    ]
    text = render_text(report).splitlines()
    assert text[0].endswith("engines dots.ocr (dots.ocr v1)")
    assert text[1].endswith("engines dots.ocr-v2 (dots.ocr v2)")
    assert text[3:5] == [f"warning: {warning}" for warning in report.warnings]
    assert report_json(report)["warnings"] == report.warnings
    assert "⚠ dots.ocr → dots.ocr-v2: baseline ran dots.ocr v1" in render_html(report)

    # one label, one version, another prompt: the profile changed without a new version
    edited = _run("c", _record("dots.ocr", outcomes),
                  details={"dots.ocr": _peer("dots.ocr", 1, prompt="b2")})
    assert compare_runs(base, edited).warnings == [
        "dots.ocr: both ran dots.ocr v1 but not the same prompt: the profile changed without "
        "a new version"]
    # two models, or the same profile on the same data: nothing to warn of
    other = _run("d", _record("olmocr-2", outcomes), details={"olmocr-2": _peer("olmOCR-2", 1)})
    assert compare_runs(base, other).warnings == []
    same = compare_runs(base, base)
    assert same.warnings == [] and "warning" not in render_text(same)
    # runs on different data only: nothing is paired, and the error says why
    moved = _run("e", _record("dots.ocr", outcomes, data="fox@b"))
    with pytest.raises(NothingPairedError, match="baseline ran on fixtures, candidate on fox@b"):
        compare_runs(_run("f", _record("dots.ocr", outcomes)), moved)


def test_a_drop_within_the_tolerance_is_not_a_regression():
    base = _run("a", _record("m", [True] * 20))
    cand = _run("b", _record("m", [True] * 8 + [False] * 12))
    (comparison,) = compare_runs(base, cand, tolerance=0.7).comparisons
    assert comparison.significant and not comparison.regressed
    assert comparison.verdict == "worse, within tolerance"


# --- identity ------------------------------------------------------------------------------

def test_checkpoint_identity_follows_config_and_weight_bytes(tmp_path):
    def checkpoint(name: str, weights: bytes, config: str = '{"a": 1}') -> Path:
        folder = tmp_path / name
        folder.mkdir()
        (folder / "config.json").write_text(config)
        (folder / "model.safetensors").write_bytes(weights)
        return folder

    weights = bytes(range(256)) * 400  # 100 KiB: every byte lies in a sampled block
    edited = bytearray(weights)
    edited[51_234] ^= 1
    first = checkpoint_identity(checkpoint("a", weights))
    same = checkpoint_identity(checkpoint("b", weights))
    tuned = checkpoint_identity(checkpoint("c", bytes(edited)))
    other_config = checkpoint_identity(checkpoint("d", weights, '{"a": 2}'))
    assert first["config_sha256"] == same["config_sha256"] == tuned["config_sha256"]
    assert first["weights_fingerprint"] == same["weights_fingerprint"]
    assert tuned["weights_fingerprint"] != first["weights_fingerprint"]
    assert other_config["config_sha256"] != first["config_sha256"]
    assert first["weights_path"] == str((tmp_path / "a").resolve())


# --- end to end ------------------------------------------------------------------------------

def _pytest(*args: str) -> subprocess.CompletedProcess[str]:
    """The render_configs benches on replay, EVALSUITE_DATA kept."""
    return run_pytest(
        "benches", "-m", "render_configs", "--engine", "replay", "-p", "no:cacheprovider", "-q",
        *args, env=child_env(data=True),
    )


def _ab(*args: str) -> subprocess.CompletedProcess[str]:
    return run_evalsuite("ab", *args, timeout=300)


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory):
    """A replay run of the study recordings (``base``), and one (``cand``) whose recordings
    answer 12 questions of one record that the first run got right with a wrong text.
    Slow (~27 s here): two child pytest runs of the render-configuration study on replay of its
    recordings (the base and the degraded candidate), shared by this module's tests; ``evalsuite
    ab`` pairs two whole runs sample by sample, and the 12 changed answers need a record with
    that many right ones."""
    recordings = shared_data("deepseek_ocr_recordings", "recordings.jsonl")
    folder = tmp_path_factory.mktemp("ab")
    reports = folder / "reports"
    base = _pytest("--recordings", str(recordings), "--run-name", "base",
                   "--report-dir", str(reports))
    assert base.returncode == 0, base.stdout[-3000:]
    base_path = next(reports.glob("*/results.json"))
    (record,) = [r for r in read_results(base_path).records
                 if r.parameter == DEGRADED_RECORD and r.data != "fixtures"]
    degraded = [s.sample_id for s in record.samples if s.scores["accuracy"]][:DEGRADED_COUNT]
    assert len(degraded) == DEGRADED_COUNT
    edited = folder / "degraded.jsonl"
    changed = 0
    with recordings.open(encoding="utf-8") as source, edited.open("w", encoding="utf-8") as out:
        for line in source:
            item = json.loads(line)
            sample = f"{item['document']}/{item['question_id']}"
            if (item["render_config"], item["condition"]) == ("color_blue", "vision") \
                    and sample in degraded:
                item["output"] = DEGRADED_OUTPUT
                changed += 1
            out.write(json.dumps(item) + "\n")
    assert changed == DEGRADED_COUNT
    cand = _pytest("--recordings", str(edited), "--run-name", "cand",
                   "--report-dir", str(reports))
    assert cand.returncode == 1, cand.stdout[-3000:]  # its golden gate fails, as it should
    assert "\\x1b[2J\\x1b]0;pwned\\x07\\x9b31m" in cand.stdout  # the gate's worst samples
    assert not any(unicodedata.category(ch) == "Cc" for ch in cand.stdout.replace("\n", ""))
    cand_path = next(p for p in reports.glob("*/results.json") if p != base_path)
    return {"reports": reports, "base": base_path, "cand": cand_path, "degraded": degraded,
            "recordings": recordings}


@needs_data()
def test_run_record_carries_what_reproduces_it(two_runs):
    run = read_results(two_runs["base"]).metadata
    assert run.run_name == "base"
    assert run.modes == ["small"]
    assert run.duration_s is not None and run.duration_s > 0
    assert run.git_commit is None or len(run.git_commit) == 40
    replay = run.engine_details["replay"]
    digest = hashlib.sha256(two_runs["recordings"].read_bytes()).hexdigest()
    assert replay["recordings"] == [{"path": str(two_runs["recordings"].resolve()),
                                     "sha256": digest}]
    assert replay["modes"] == ["small"]
    assert run.data_sources and all("revision" in s and "path" in s
                                    for s in run.data_sources.values())
    assert "render_configs/" + next(r.data for r in read_results(two_runs["base"]).records
                                    if r.data != "fixtures") in run.data_sources


@needs_data()
def test_ab_finds_the_degraded_samples_and_fails_on_the_regression(two_runs, tmp_path):
    page = tmp_path / "ab.html"
    done = _ab("base", "cand", "--report-dir", str(two_runs["reports"]), "--json",
               "--worst", "50", "--html", str(page), "--fail-on-regression")
    assert done.returncode == 1, done.stderr
    report = json.loads(done.stdout)
    (regressed,) = [c for c in report["comparisons"] if c["regressed"]]
    assert (regressed["parameter"], regressed["metric"]) == (DEGRADED_RECORD, "accuracy")
    p_value = scipy_stats.binomtest(DEGRADED_COUNT, DEGRADED_COUNT, 0.5).pvalue
    assert regressed["p_value"] == pytest.approx(p_value)
    tests = len(report["comparisons"])
    others = [c["p_value"] for c in report["comparisons"] if c is not regressed]
    assert others and all(p == 1.0 for p in others)
    assert regressed["p_holm"] == pytest.approx(min(1.0, tests * p_value))
    assert regressed["delta"] == pytest.approx(-DEGRADED_COUNT / 30)
    worst = report["worst_samples"]
    assert sorted(s["sample_id"] for s in worst) == sorted(two_runs["degraded"])
    assert all(DEGRADED_RECORD in s["where"] and s["candidate_text"] == DEGRADED_OUTPUT
               for s in worst)
    html = page.read_text(encoding="utf-8")
    assert "<svg" in html and "Candidate output" in html and two_runs["degraded"][0] in html


@needs_data()
def test_ab_terminal_table_names_the_regression_and_diffs_the_outputs(two_runs):
    done = _ab(str(two_runs["base"]), str(two_runs["cand"].parent))  # a path and a folder
    assert done.returncode == 0, done.stderr  # without --fail-on-regression
    assert "REGRESSED" in done.stdout and "McNemar exact (b=12, c=0)" in done.stdout
    assert "+ candidate only: " in done.stdout and "page unreadable" in done.stdout
    assert "\\x1b" in done.stdout and "pwned\\x07\\x9b31m" in done.stdout  # shown, not acted on
    assert not any(unicodedata.category(ch) == "Cc" for ch in done.stdout.replace("\n", ""))
    assert "1 significant regression(s)" in done.stdout


@needs_data()
def test_ab_of_a_run_against_itself_passes(two_runs):
    run_id = two_runs["base"].parent.name
    done = _ab(run_id, "base", "--report-dir", str(two_runs["reports"]),
               "--fail-on-regression")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "no significant regression" in done.stdout
    assert "samples that got worse" not in done.stdout


@needs_data()
def test_an_unknown_run_is_an_error_with_close_matches(two_runs):
    done = _ab("bsae", "cand", "--report-dir", str(two_runs["reports"]))
    assert done.returncode == 2
    assert "no run 'bsae'" in done.stderr and "close matches: base" in done.stderr
    with pytest.raises(RunNotFoundError, match="no run 'nothing'"):
        resolve_run("nothing", two_runs["reports"])


def test_runs_without_common_samples_are_an_error():
    base = _run("a", _record("m", [True, False]))
    other = _run("b", _record("m", [True], parameter="mode=base"),
                 _record("n", [True], parameter="mode=base"))
    with pytest.raises(NothingPairedError, match="share no sample"):
        compare_runs(base, other)


def test_every_pair_of_ids_in_a_record_must_be_unique():
    record = _record("m", [True, False])
    record.samples.append(record.samples[0])
    with pytest.raises(ValueError, match="appears twice"):
        compare_runs(_run("a", record), _run("b", _record("m", [True, True])))


def test_holm_brute_force_reference_is_itself_right_on_a_textbook_case():
    # m = 3: sorted p 0.01, 0.02, 0.04 -> 0.03, 0.04, 0.04
    assert holm_brute_force([0.04, 0.01, 0.02]) == pytest.approx([0.04, 0.03, 0.04])


def test_a_label_for_an_engine_the_run_does_not_use_is_a_usage_error(tmp_path):
    done = _pytest("--engine-label", "tesseract=tesseract@new", "--report-dir", str(tmp_path))
    assert done.returncode == pytest.ExitCode.USAGE_ERROR, done.stdout[-2000:]
    assert "'tesseract' is not an engine of this run (--engine replay)" in done.stderr
    assert not any(tmp_path.iterdir())


GRID_SCORE = st.integers(0, 1024).map(lambda k: k / 1024)
"""Scores on a 1/1024 grid: every sum of up to 12 differences is exact in floating point, so
a permutation's mean ties the observed one exactly or not at all, in any summation order. With
arbitrary floats a tie in exact arithmetic becomes rounding noise larger than scipy's relative
slack (e.g. an observed mean of 1e-4 among terms near 1), and which side of it a sum lands on
depends on numpy's summation order, not on the test."""


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(GRID_SCORE, GRID_SCORE), min_size=2, max_size=12))
def test_sign_flip_equals_scipys_exact_paired_permutation_test(pairs):
    baseline = np.array([a for a, _ in pairs])
    candidate = np.array([b for _, b in pairs])
    result = sign_flip_exact(baseline, candidate)
    reference = scipy_stats.permutation_test(
        (baseline, candidate), lambda x, y, axis=-1: np.mean(y - x, axis=axis),
        permutation_type="samples", n_resamples=np.inf, vectorized=True,
    )
    assert result.p_value == pytest.approx(reference.pvalue, abs=1e-12)
    assert result.delta == pytest.approx(float(np.mean(candidate - baseline)))


def test_five_pairs_all_worse_give_the_smallest_p_five_pairs_allow():
    """2 of the 32 sign assignments are as extreme: two-sided p = 2/32 (one-sided 1/32), above
    0.05, where a bootstrap of the same 5 pairs claims about 0.0002."""
    baseline = [0.9, 0.8, 0.85, 0.7, 0.95]
    candidate = [b - d for b, d in zip(baseline, [0.2, 0.3, 0.25, 0.1, 0.4], strict=True)]
    assert sign_flip_exact(baseline, candidate).p_value == 2 / 32
    assert paired_bootstrap(baseline, candidate).p_value < 0.001

    def record(values: list[float]) -> BenchmarkRecord:
        samples = [SampleRecord(f"p{i}", {"overall": v}) for i, v in enumerate(values)]
        return BenchmarkRecord("pages", "m", "mode=base",
                               {"overall": MetricSummary(float(np.mean(values)), 5)}, samples)

    (comparison,) = compare_runs(_run("a", record(baseline)), _run("b", record(candidate))
                                 ).comparisons
    assert comparison.test.test == "exact sign-flip (5 pairs)"
    assert comparison.test.p_value == 2 / 32 and not comparison.regressed
    with pytest.raises(ValueError, match="n must be <= 16"):
        sign_flip_exact([0.0] * 17, [1.0] * 17)


def test_a_mean_metric_gets_the_paired_test_asked_for():
    rng = np.random.default_rng(3)
    before = rng.uniform(0.6, 1.0, 25)
    after = before - rng.uniform(0.0, 0.1, 25)

    def record(values: np.ndarray) -> BenchmarkRecord:
        samples = [SampleRecord(f"p{i:02d}", {"edit_precision": float(v)})
                   for i, v in enumerate(values)]
        summary = MetricSummary(float(np.mean(values)), len(values))
        return BenchmarkRecord("fox", "m", "mode=small", {"edit_precision": summary}, samples)

    base, cand = _run("a", record(before)), _run("b", record(after))
    (wilcoxon,) = compare_runs(base, cand, mean_test="wilcoxon").comparisons
    assert wilcoxon.test.p_value == pytest.approx(scipy_stats.wilcoxon(after, before).pvalue)
    (bootstrap,) = compare_runs(base, cand, resamples=999, seed=5).comparisons
    reference = scipy_stats.bootstrap(
        (before, after), lambda x, y, axis=-1: np.mean(y - x, axis=axis), paired=True,
        n_resamples=999, method="percentile", random_state=np.random.default_rng(5),
        vectorized=True,
    )
    assert bootstrap.test.ci_high == pytest.approx(reference.confidence_interval.high)
    assert bootstrap.baseline == pytest.approx(np.mean(before))
    assert bootstrap.candidate == pytest.approx(np.mean(after))
    assert bootstrap.regressed and bootstrap.test.p_value == pytest.approx(2 / 1000)
