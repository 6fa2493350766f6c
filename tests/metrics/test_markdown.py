"""FinixDocBench page and dataset metrics: hand-computed pages, safeguards, properties."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import linear_sum_assignment

from evalsuite.errors import DatasetFormatError, DatasetNotFoundError
from evalsuite.metrics.markdown import (
    MAX_PRED_ITEMS,
    MAX_SINGLE_ITEM_LENGTH,
    MAX_TABLE_CELLS,
    MAX_TOTAL_LENGTH,
    NO_TABLE_NOTE,
    RATIO_THRESHOLD,
    Safeguards,
    aggregate_pages,
    evaluate_dirs,
    evaluate_page,
    success_rate,
)
from evalsuite.metrics.markdown_blocks import Block, parse_blocks
from evalsuite.metrics.markdown_tables import match_tables, table_nodes, table_teds, teds_bounds
from evalsuite.metrics.tables import teds
from evalsuite.metrics.text import edit_distance
from tests.support.paths import TEST_FIXTURES

FIXTURES = TEST_FIXTURES / "finix"


def write_pages(folder: Path, pages: dict[str, str | bytes]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, content in pages.items():
        if isinstance(content, bytes):
            (folder / name).write_bytes(content)
        else:
            (folder / name).write_text(content, encoding="utf-8")
    return folder


# ---------------------------------------------------------------- hand-computed pages


def test_fixture_page_03_by_hand() -> None:
    """Two headings swapped with a paragraph, one typo ("costumer"), grounding markup, image."""
    gt_blocks = [
        "Notes to the Financial Statements",
        "1. Basis of preparation",
        "The financial statements have been prepared on a going concern basis.",
        "2. Revenue recognition",
        "Revenue is recognised when control of the goods passes to the customer.",
    ]
    page = evaluate_page(
        (FIXTURES / "pred" / "page_03.md").read_text(encoding="utf-8"),
        (FIXTURES / "gt" / "page_03.md").read_text(encoding="utf-8"),
    )
    # customer -> costumer: two substitutions; every other block is identical.
    assert page["text_edit_distance_sum"] == 2
    assert page["text_max_length_sum"] == sum(len(text) for text in gt_blocks) == 218
    assert page["text_block_Edit_dist"] == pytest.approx(2 / 218)
    # Predicted order of ground-truth blocks 0 1 3 2 4: two substitutions out of 5.
    assert page["matched_gt_order"] == [0, 1, 3, 2, 4]
    assert page["reading_order_Edit_dist"] == pytest.approx(2 / 5)
    assert page["table_TEDS"] is None and page["status"] == "ok" and page["valid_prediction"]


def test_text_metric_pairs_unmatched_blocks_with_the_empty_string() -> None:
    page = evaluate_page("abd\n\nxyz", "abc\n\ndef\n\nxyz")
    # abd~abc: 1 edit of 3; xyz exact; "def" unmatched: 3 edits of 3.
    assert page["text_edit_distance_sum"] == 1 + 0 + 3
    assert page["text_max_length_sum"] == 3 + 3 + 3
    assert page["text_block_Edit_dist"] == pytest.approx(4 / 9)
    # Ground-truth order 0 1 2; predicted blocks match 0 then 2: one deletion of 3.
    assert page["reading_order_Edit_dist"] == pytest.approx(1 / 3)


def test_text_matching_minimises_total_normalised_distance() -> None:
    # Greedy in order would pair "abcdef"~"abcxyz"; the optimum crosses over.
    page = evaluate_page("abcxyz\n\nabcdeX", "abcdef\n\nabcxyQ")
    assert page["matched_gt_order"] == [1, 0]
    assert page["text_edit_distance_sum"] == 2


def test_pair_distances_are_the_metric_library_edit_distance() -> None:
    rng = random.Random(7)
    for _ in range(20):
        gt = "".join(rng.choice("ab cé€") for _ in range(rng.randint(1, 30))).strip() or "a"
        pred = "".join(rng.choice("ab cé€") for _ in range(rng.randint(1, 30))).strip() or "b"
        gt, pred = " ".join(gt.split()), " ".join(pred.split())
        page = evaluate_page(pred, gt)
        assert page["text_edit_distance_sum"] == edit_distance(pred, gt)
        assert page["text_max_length_sum"] == max(len(pred), len(gt))


def test_table_with_one_changed_cell_by_hand() -> None:
    gt = "| a | b |\n|---|---|\n| 35.7 | x |\n"
    pred = "| a | b |\n|---|---|\n| 35.1 | x |\n"
    page = evaluate_page(pred, gt)
    # 2 tr + 4 td = 6 nodes; one rename of cost Levenshtein("35.1", "35.7") / 4 = 0.25.
    assert page["table_TEDS"] == pytest.approx(100 * (1 - 0.25 / 6))
    assert page["text_block_Edit_dist"] == 0.0 and page["reading_order_Edit_dist"] == 0.0


def test_unmatched_ground_truth_table_scores_zero() -> None:
    table = "| a | b |\n|---|---|\n| 1 | 2 |\n"
    page = evaluate_page("| a | b |\n|---|---|\n| 1 | 2 |\n", table + "\ntext\n\n" + table)
    assert page["table_scores"] == [100.0, 0.0]
    assert page["table_TEDS"] == pytest.approx(50.0)


def test_missing_prediction_scores_as_an_empty_page() -> None:
    page = evaluate_page(None, "# T\n\n| a |\n|---|\n| 1 |\n")
    assert page["status"] == "missing" and not page["valid_prediction"]
    assert (page["text_block_Edit_dist"], page["reading_order_Edit_dist"]) == (1.0, 1.0)
    assert page["table_TEDS"] == 0.0


def test_page_without_text_on_either_side_has_zero_text_distance() -> None:
    page = evaluate_page("", "")
    assert (page["text_block_Edit_dist"], page["reading_order_Edit_dist"]) == (0.0, 0.0)
    assert page["table_TEDS"] is None and not page["valid_prediction"]


def test_html_prediction_of_a_pipe_ground_truth_table_is_perfect() -> None:
    gt = "| Class | Shares |\n|---|---|\n| Ordinary | 98,400,000 |\n"
    pred = (
        "<table><tr><th>Class</th><th>Shares</th></tr>"
        "<tr><td>Ordinary</td><td>98,400,000</td></tr></table>"
    )
    assert evaluate_page(pred, gt)["table_TEDS"] == 100.0


# ---------------------------------------------------------------- safeguards


def test_safeguard_defaults_are_finixdocbench_values() -> None:
    assert (MAX_TABLE_CELLS, MAX_PRED_ITEMS, RATIO_THRESHOLD) == (50_000, 50_000, 100)
    assert (MAX_TOTAL_LENGTH, MAX_SINGLE_ITEM_LENGTH) == (10_000_000, 10_000_000)
    assert Safeguards().max_pred_items == MAX_PRED_ITEMS


@pytest.mark.parametrize(
    ("safeguards", "pred", "constant"),
    [
        (Safeguards(max_total_length=20), "a" * 21, "MAX_TOTAL_LENGTH"),
        (Safeguards(max_pred_items=3), "a\n\nb\n\nc\n\nd", "MAX_PRED_ITEMS"),
        (Safeguards(ratio_threshold=2), "a\n\nb\n\nc\n\nd\n\ne", "RATIO_THRESHOLD"),
        (Safeguards(max_single_item_length=5), "short\n\nlonger one", "MAX_SINGLE_ITEM_LENGTH"),
    ],
)
def test_safeguards_fail_the_page_with_a_reason(
    safeguards: Safeguards, pred: str, constant: str
) -> None:
    page = evaluate_page(pred, "a\n\nb", safeguards=safeguards)
    assert page["status"] == "failed" and constant in page["reason"]
    assert page["text_block_Edit_dist"] == 1.0 and page["reading_order_Edit_dist"] == 1.0
    assert not page["valid_prediction"]


def test_table_over_the_cell_limit_scores_zero() -> None:
    table = "| a | b |\n|---|---|\n| 1 | 2 |\n"
    assert evaluate_page(table, table, safeguards=Safeguards(max_table_cells=3))["table_TEDS"] == 0
    assert (
        evaluate_page(table, table, safeguards=Safeguards(max_table_cells=4))["table_TEDS"] == 100
    )


def test_twenty_megabyte_line_is_a_failed_page_not_a_crash() -> None:
    page = evaluate_page("x" * 20_000_000, "# Title\n\nBody.")
    assert page["status"] == "failed" and "MAX_TOTAL_LENGTH" in page["reason"]
    assert page["text_block_Edit_dist"] == 1.0


@pytest.mark.parametrize(
    ("field", "value", "error"),
    [
        ("max_pred_items", 0, ValueError),
        ("ratio_threshold", -1.0, ValueError),
        ("max_table_cells", 2.5, TypeError),
        ("max_total_length", True, TypeError),
    ],
)
def test_bad_safeguards_name_the_field(field: str, value: object, error: type) -> None:
    with pytest.raises(error, match=field):
        Safeguards(**{field: value})  # type: ignore[arg-type]


@pytest.mark.parametrize(("pred", "gt", "name"), [(b"x", "y", "pred_markdown"), ("x", None, "gt")])
def test_non_str_pages_raise_type_error_naming_the_argument(
    pred: object, gt: object, name: str
) -> None:
    with pytest.raises(TypeError, match=name):
        evaluate_page(pred, gt)  # type: ignore[arg-type]


# ---------------------------------------------------------------- TEDS shortcuts


cells = st.tuples(
    st.text(alphabet="ab1 ", max_size=4),
    st.sampled_from([1, 1, 1, 2]),
    st.sampled_from([1, 1, 1, 2]),
)
# Rows of (text, colspan, rowspan); the first row has a cell, so every table is scored.
table_rows = st.tuples(
    st.lists(cells, min_size=1, max_size=4),
    st.lists(st.lists(cells, max_size=4), max_size=3),
).map(lambda first_and_rest: [first_and_rest[0], *first_and_rest[1]])


def table_block(rows: list[list[tuple[str, int, int]]]) -> Block:
    html = "".join(
        "<tr>"
        + "".join(f'<td colspan="{c}" rowspan="{r}">{text}</td>' for text, c, r in row)
        + "</tr>"
        for row in rows
    )
    (table,) = parse_blocks(f"<table>{html}</table>")
    return table


@settings(max_examples=150, deadline=None)
@given(table_rows, table_rows)
def test_teds_bounds_bracket_the_tree_edit_distance(pred_rows: list, gt_rows: list) -> None:
    pred, gt = table_block(pred_rows), table_block(gt_rows)
    nodes = max(table_nodes(pred), table_nodes(gt))
    distance = (1 - teds(pred.content, gt.content)) * nodes
    bounds = teds_bounds(pred, gt)
    assert bounds is not None
    assert float(bounds[0]) - 1e-9 <= distance <= float(bounds[1]) + 1e-9
    assert table_teds(pred, gt, max_cells=MAX_TABLE_CELLS) == pytest.approx(
        teds(pred.content, gt.content), abs=1e-12
    )


def mutate(rows: list[list[tuple[str, int, int]]], rng: random.Random) -> Block:
    """A prediction of the table: some cell texts changed, perhaps a row dropped, spans lost."""
    rows = [
        [
            (text[:-1] + rng.choice("xyz"), 1, 1) if rng.random() < 0.3 else (text, 1, 1)
            for text, _, _ in row
        ]
        for row in rows
    ]
    if len(rows) > 1 and rng.random() < 0.3:
        del rows[rng.randrange(len(rows))]
    return table_block(rows)


@settings(max_examples=40, deadline=None)
@given(st.lists(table_rows, min_size=1, max_size=3), st.randoms())
def test_lazy_table_assignment_is_optimal_on_exact_teds(
    tables_rows: list, rng: random.Random
) -> None:
    tables = [table_block(rows) for rows in tables_rows]
    pred = [mutate(rows, rng) for rows in tables_rows]
    rng.shuffle(pred)
    _, per_gt = match_tables(pred, tables, max_cells=MAX_TABLE_CELLS)
    brute = np.array([[max(teds(p.content, g.content), 0.0) for g in tables] for p in pred])
    rows, columns = linear_sum_assignment(-brute)
    assert sum(per_gt) == pytest.approx(brute[rows, columns].sum(), abs=1e-9)


def test_dropped_row_is_scored_without_apted_and_matches_teds() -> None:
    gt_rows = [f"| r{i} | {i * 1.5:.1f} | {i * 7} |" for i in range(12)]
    gt = "| h | x | y |\n|---|---|---|\n" + "\n".join(gt_rows)
    pred = "| h | x | y |\n|---|---|---|\n" + "\n".join(gt_rows[:5] + gt_rows[6:])
    (gt_table,), (pred_table,) = parse_blocks(gt), parse_blocks(pred)
    lower, upper = teds_bounds(pred_table, gt_table)  # type: ignore[misc]
    assert lower == upper == 4  # the dropped tr and its three td
    assert table_teds(pred_table, gt_table, max_cells=MAX_TABLE_CELLS) == pytest.approx(
        teds(pred_table.content, gt_table.content), abs=1e-12
    )


# ---------------------------------------------------------------- properties


paragraphs = (
    st.text(alphabet="abcdefgh ", min_size=1, max_size=25)
    .map(lambda text: " ".join(text.split()))
    .filter(bool)
)
pipe_tables = st.lists(
    st.lists(st.text(alphabet="0123456789.", min_size=1, max_size=5), min_size=2, max_size=2),
    min_size=1,
    max_size=3,
).map(
    lambda rows: (
        "| c1 | c2 |\n|---|---|\n" + "\n".join("| " + " | ".join(row) + " |" for row in rows)
    )
)
page_blocks = st.lists(
    st.one_of(paragraphs, paragraphs.map(lambda text: "## " + text), pipe_tables),
    min_size=0,
    max_size=8,
)


@settings(max_examples=100, deadline=None)
@given(st.lists(page_blocks, min_size=1, max_size=4))
def test_perfect_prediction_scores_perfectly(pages: list[list[str]]) -> None:
    results = {}
    for index, blocks in enumerate(pages):
        markdown = "\n\n".join(blocks)
        page = evaluate_page(markdown, markdown)
        assert page["text_block_Edit_dist"] == 0.0 and page["reading_order_Edit_dist"] == 0.0
        assert page["table_TEDS"] in (None, 100.0)
        results[f"p{index}.md"] = page
    metrics = aggregate_pages(results)
    assert metrics["overall"] == pytest.approx(100.0) and metrics["score"] == metrics["overall"]


@settings(max_examples=100, deadline=None)
@given(st.lists(paragraphs, min_size=2, max_size=8, unique=True), st.randoms())
def test_shuffling_blocks_changes_order_but_not_text(blocks: list[str], rng: random.Random) -> None:
    permutation = list(range(len(blocks)))
    rng.shuffle(permutation)
    page = evaluate_page("\n\n".join(blocks[i] for i in permutation), "\n\n".join(blocks))
    assert page["text_block_Edit_dist"] == 0.0
    assert page["matched_gt_order"] == permutation
    expected = edit_distance(permutation, list(range(len(blocks)))) / len(blocks)
    assert page["reading_order_Edit_dist"] == pytest.approx(expected)
    assert (page["reading_order_Edit_dist"] > 0) == (permutation != sorted(permutation))


@settings(max_examples=60, deadline=None)
@given(st.lists(paragraphs, min_size=1, max_size=6), st.integers(0, 5))
def test_duplicate_blocks_keep_their_order(blocks: list[str], repeat: int) -> None:
    blocks = blocks + blocks[:repeat]
    markdown = "\n\n".join(blocks)
    assert evaluate_page(markdown, markdown)["matched_gt_order"] == list(range(len(blocks)))


def test_ties_go_to_the_block_at_the_same_relative_position() -> None:
    # The predicted "a" could pair with either ground-truth "a" at equal cost; the later one keeps
    # the predicted order and leaves one deletion (the first "a") instead of a swap.
    page = evaluate_page("y\n\na", "a\n\ny\n\na")
    assert page["matched_gt_order"] == [1, 2]
    assert page["reading_order_Edit_dist"] == pytest.approx(1 / 3)


def test_aggregate_overall_with_and_without_tables() -> None:
    def page(text: float, order: float, table: float | None) -> dict[str, object]:
        return {"text_block_Edit_dist": text, "reading_order_Edit_dist": order, "table_TEDS": table}

    with_tables = aggregate_pages({"a": page(0.2, 0.1, 80.0), "b": page(0.0, 0.3, None)})
    assert with_tables["text_block_Edit_dist"] == pytest.approx(0.1)
    assert with_tables["reading_order_Edit_dist"] == pytest.approx(0.2)
    assert with_tables["table_TEDS"] == 80.0  # only page a has a table
    assert with_tables["overall"] == pytest.approx((90 + 80 + 80) / 3)
    assert with_tables["num_samples"] == 2
    without = aggregate_pages({"a": page(0.2, 0.1, None)})
    assert without["table_TEDS"] is None
    assert without["overall"] == pytest.approx((80 + 90) / 2)
    with pytest.raises(ValueError, match="pages"):
        aggregate_pages({})


# ---------------------------------------------------------------- directories


def test_evaluate_dirs_scores_the_fixture_example() -> None:
    result = evaluate_dirs(FIXTURES / "pred", FIXTURES / "gt", allow_name_mismatch=True, workers=1)
    assert result["inputs"] == {
        "gt_files": 5,
        "pred_files": 5,
        "missing_predictions": ["page_04.md"],
        "unexpected_predictions": ["page_06.md"],
    }
    assert list(result["pages"]) == [f"page_0{i}.md" for i in range(1, 6)]
    assert result["pages"]["page_04.md"]["status"] == "missing"
    assert result["pages"]["page_05.md"]["table_TEDS"] == 100.0
    assert result["success_rate"] == 4 / 5
    assert result["metrics"] == aggregate_pages(result["pages"])


def test_name_mismatch_fails_with_both_lists(tmp_path: Path) -> None:
    gt = write_pages(tmp_path / "gt", {"a.md": "A", "b.md": "B"})
    pred = write_pages(tmp_path / "pred", {"a.md": "A", "c.md": "C", "notes.txt": "ignored"})
    with pytest.raises(DatasetFormatError, match=r"missing predictions: \['b.md'\].*\['c.md'\]"):
        evaluate_dirs(pred, gt)


def test_missing_and_empty_directories(tmp_path: Path) -> None:
    gt = write_pages(tmp_path / "gt", {"a.md": "A"})
    with pytest.raises(DatasetNotFoundError, match="pred_dir"):
        evaluate_dirs(tmp_path / "nope", gt)
    with pytest.raises(DatasetFormatError, match=r"gt_dir has no \.md files"):
        evaluate_dirs(gt, write_pages(tmp_path / "empty", {}))
    with pytest.raises(DatasetFormatError, match="not a directory"):
        evaluate_dirs(gt / "a.md", gt)
    empty_pred = write_pages(tmp_path / "empty_pred", {})
    result = evaluate_dirs(empty_pred, gt, allow_name_mismatch=True)
    assert result["inputs"]["missing_predictions"] == ["a.md"]
    assert result["metrics"]["overall"] == 0.0 and result["notes"] == [NO_TABLE_NOTE]


def test_unreadable_predictions_are_failed_pages(tmp_path: Path) -> None:
    gt = write_pages(tmp_path / "gt", {"a.md": "A", "b.md": "B", "c.md": "C"})
    pred = write_pages(
        tmp_path / "pred",
        {"a.md": b"\xff\xfe\x00garbage", "b.md": b"B\x00\x01\x02", "c.md": "C"},
    )
    result = evaluate_dirs(pred, gt, workers=2)
    pages = result["pages"]
    assert pages["a.md"]["status"] == "failed" and "not valid UTF-8" in pages["a.md"]["reason"]
    assert pages["b.md"]["status"] == "failed" and "binary" in pages["b.md"]["reason"]
    assert pages["c.md"]["status"] == "ok"
    assert result["success_rate"] == pytest.approx(1 / 3)


def test_unreadable_ground_truth_is_an_error_naming_the_file(tmp_path: Path) -> None:
    gt = write_pages(tmp_path / "gt", {"a.md": b"\x80abc"})
    pred = write_pages(tmp_path / "pred", {"a.md": "abc"})
    with pytest.raises(DatasetFormatError, match=r"a\.md is not valid UTF-8"):
        evaluate_dirs(pred, gt)


def test_success_rate_counts_valid_non_empty_predictions(tmp_path: Path) -> None:
    gt = write_pages(tmp_path / "gt", {f"{name}.md": "# Page\n\ntext" for name in "abcdef"})
    pred = write_pages(
        tmp_path / "pred",
        {
            "a.md": "# Page\n\ntext",
            "b.md": "  \n<|ref|>text<|/ref|><|det|>[[1, 2, 3, 4]]<|/det|>\n",
            "c.md": b"\xc3\x28",
            "d.md": "<table><tr><td>never closed",
            "e.md": "<table></table>\n\ntext",
        },
    )
    assert success_rate(pred, gt) == pytest.approx(1 / 6)
    assert evaluate_dirs(pred, gt, allow_name_mismatch=True)["success_rate"] == pytest.approx(1 / 6)


@settings(max_examples=15, deadline=None)
@given(st.permutations([f"page_{i}.md" for i in range(6)]), st.sampled_from([1, 2]))
def test_results_do_not_depend_on_file_enumeration_order(
    tmp_path_factory: pytest.TempPathFactory, order: list[str], workers: int
) -> None:
    root = tmp_path_factory.mktemp("enum")
    rng = random.Random(3)
    gt_pages = {
        name: f"# {name}\n\n{rng.random()}\n\n| a |\n|---|\n| {i} |" for i, name in enumerate(order)
    }
    gt = write_pages(root / "gt", {name: gt_pages[name] for name in order})
    pred = write_pages(root / "pred", {name: gt_pages[name][::-1] for name in order})
    baseline = evaluate_dirs(pred, gt, workers=1)
    original_iterdir = Path.iterdir

    def shuffled_iterdir(self: Path):  # type: ignore[no-untyped-def]
        entries = list(original_iterdir(self))
        entries.sort(key=lambda entry: order.index(entry.name) if entry.name in order else -1)
        return iter(entries)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(Path, "iterdir", shuffled_iterdir)
        shuffled = evaluate_dirs(pred, gt, workers=workers)
    assert shuffled == baseline
    assert list(shuffled["pages"]) == sorted(order)
