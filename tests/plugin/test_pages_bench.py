"""The ``pages`` benchmark: the loader of a user's folder (images, PDFs, ground truth) and the
front end run as users run it, in subprocesses, on ``tests/fixtures/pages``."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pypdfium2
import pytest
from PIL import Image

from evalsuite.datasets.pages import load_user_pages, render_pdf_page
from evalsuite.errors import DatasetFormatError, DatasetNotFoundError
from evalsuite.golden import GoldenStore, subset_data
from evalsuite.records.results import read_results
from evalsuite.reports.series import load_golden_index
from tests.support.paths import REPOSITORY, TEST_FIXTURES
from tests.support.subprocess_runs import needs_tesseract, run_pytest

PAGES = TEST_FIXTURES / "pages"


def blank_page(width: int, height: int) -> Image.Image:
    return Image.new("L", (width, height), 255)


def write_pdf(path: Path, sizes: list[tuple[int, int]], resolution: float) -> None:
    images = [blank_page(*size) for size in sizes]
    images[0].save(path, save_all=True, append_images=images[1:], resolution=resolution)


def test_the_fixture_folder_pairs_every_page_with_its_ground_truth() -> None:
    pages = load_user_pages(PAGES)
    assert [(p.page_id, p.kind) for p in pages] == [
        ("invoice_017", "image"), ("memo", "image"),
        ("site_report#p1", "pdf"), ("site_report#p2", "pdf"),
    ]
    by_id = {page.page_id: page.ground_truth for page in pages}
    assert by_id["invoice_017"] == (PAGES / "invoice_017.md").read_text("utf-8")
    assert "| Flour sacks | 4 | 38.00 |" in by_id["invoice_017"]  # the page with a table
    assert by_id["memo"] == (PAGES / "memo.txt").read_text("utf-8")
    whole = (PAGES / "site_report.md").read_text("utf-8")
    assert by_id["site_report#p1"] + "\f" + by_id["site_report#p2"] == whole
    assert by_id["site_report#p1"].startswith("# Site Report")
    assert by_id["site_report#p2"].startswith("## Open items")


@pytest.mark.parametrize("count", [1, 3])
def test_a_pdf_gives_one_page_per_pdf_page_rendered_at_the_dpi(tmp_path: Path, count) -> None:
    sizes = [(200 + 10 * i, 100 + 20 * i) for i in range(count)]
    write_pdf(tmp_path / "doc.pdf", sizes, resolution=72)  # 1 pixel = 1 point
    (tmp_path / "doc.txt").write_text("\f".join(f"page {i}" for i in range(count)) + "\f")
    pages = load_user_pages(tmp_path)
    assert [p.page_id for p in pages] == [f"doc#p{i + 1}" for i in range(count)]
    assert [p.ground_truth for p in pages] == [f"page {i}" for i in range(count)]
    assert len(pypdfium2.PdfDocument(tmp_path / "doc.pdf")) == count
    for page, (width, height) in zip(pages, sizes, strict=True):
        assert render_pdf_page(page.path, page.pdf_index, 72).size == (width, height)
        rendered = render_pdf_page(page.path, page.pdf_index, 144)
        assert rendered.size == (2 * width, 2 * height) and rendered.mode == "RGB"


def test_the_fixture_pdf_renders_at_its_own_resolution() -> None:
    pages = [p for p in load_user_pages(PAGES) if p.kind == "pdf"]
    with Image.open(PAGES / "invoice_017.png") as png:
        width = png.size[0]  # the fixture pages share one width, embedded at 144 dpi
    assert render_pdf_page(pages[0].path, 0, 144).size[0] == width


def copy_fixture(tmp_path: Path) -> Path:
    folder = tmp_path / "mine"
    shutil.copytree(PAGES, folder)
    return folder


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda d: (d / "memo.txt").unlink(),
         "no ground truth for memo.jpg in .*put <stem>.md or <stem>.txt beside"),
        (lambda d: (d / "memo.md").write_text("also"), r"memo.jpg has two ground truths"),
        (lambda d: (d / "memo.txt").write_bytes(b"\xff\xfe bad"), r"memo.txt is not UTF-8"),
        (lambda d: (d / "memo.txt").write_text(" \n"), r"ground truth of memo .* is empty"),
        (lambda d: (d / "memo.jpg").write_bytes(b"\xff\xd8\xff broken"), r"memo.jpg"),
        (lambda d: (d / "site_report.pdf").write_bytes(b"%PDF-1.4 broken"),
         r"cannot read PDF .*site_report.pdf"),
        (lambda d: (d / "site_report.md").write_text("one\fpage\fthree"),
         r"site_report.pdf has 2 pages but its ground truth has 3 .*form feed"),
        (lambda d: (d / "memo.png").write_bytes((d / "invoice_017.png").read_bytes()),
         r"no ground truth for memo.png|share the stem memo"),
    ],
)
def test_bad_folders_are_format_errors_naming_the_file(tmp_path: Path, change, message) -> None:
    folder = copy_fixture(tmp_path)
    change(folder)
    with pytest.raises(DatasetFormatError, match=message):
        load_user_pages(folder)


def test_empty_and_missing_folders(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("ground truth without a page")
    with pytest.raises(DatasetFormatError, match=r"holds no page images \(PNG, JPEG\) or PDFs"):
        load_user_pages(tmp_path)
    with pytest.raises(DatasetNotFoundError):
        load_user_pages(tmp_path / "absent")


def pages_run(tmp_path: Path, *args: str, pages: Path = PAGES):
    return run_pytest(
        "benches", "-m", "pages", "--pages-dir", str(pages), "--engine", "tesseract",
        "--golden-dir", str(tmp_path / "golden"), "--report-dir", str(tmp_path / "reports"),
        *args,
    )


def run_records(tmp_path: Path) -> list:
    [results] = sorted((tmp_path / "reports").glob("*/results.json"))
    return read_results(results).records


@pytest.mark.e2e
@needs_tesseract
def test_update_golden_then_gate_then_fail_a_degraded_engine(tmp_path: Path) -> None:
    """Slow (~40 s here): three child pytest runs of the pages benchmark on the four fixture
    pages (goldens set on tesseract, gated, a degraded copy failing); the gate and the failure
    are against the goldens only the first run writes."""
    done = pages_run(tmp_path, "--update-golden")
    assert done.returncode == 0, done.stdout[-3000:]
    store = GoldenStore(tmp_path / "golden")
    entries = store.load("pages-pages").entries.values()
    metrics = {entry.metric for entry in entries}
    assert {"overall", "text_block_Edit_dist", "reading_order_Edit_dist", "table_TEDS",
            "edit_precision", "word_f1", "crr", "degenerate_output_rate"} <= metrics
    assert {entry.engine for entry in entries} == {"tesseract"}
    assert {entry.data for entry in entries} == {next(iter(entries)).data}
    assert next(iter(entries)).data.startswith("pages@sha256:")

    [record] = run_records(tmp_path)
    kinds = {sample.sample_id: sample.details["kind"] for sample in record.samples}
    assert kinds == {"invoice_017": "image", "memo": "image",
                     "site_report#p1": "pdf", "site_report#p2": "pdf"}
    assert all(sample.error is None for sample in record.samples)
    pdf_words = next(s for s in record.samples if s.sample_id == "site_report#p2")
    assert pdf_words.scores["word_f1"] > 0.5  # tesseract read the rendered PDF page
    assert record.metrics["table_TEDS"].n == 1  # only the invoice has a table

    shutil.rmtree(tmp_path / "reports")
    again = pages_run(tmp_path)
    assert again.returncode == 0, again.stdout[-3000:]
    assert "9 metrics gated on 4 samples" in again.stdout

    degraded = pages_run(
        tmp_path, "-p", "tests.support.degraded_engine", "--engine", "degraded-tesseract",
        "--engine-label", "degraded-tesseract=tesseract",
    )
    assert degraded.returncode == 1, degraded.stdout[-3000:]
    assert "pages-pages [tesseract data=pages@sha256:" in degraded.stdout
    assert "word_f1 regressed (higher is better)" in degraded.stdout
    assert "worst samples:" in degraded.stdout


@pytest.mark.e2e
@needs_tesseract
def test_a_page_set_without_a_table_sets_goldens_and_passes_with_teds_not_measured(
    tmp_path: Path,
) -> None:
    folder = copy_fixture(tmp_path)
    for path in folder.glob("invoice_017.*"):  # the only page with a table
        path.unlink()
    done = pages_run(tmp_path, "--update-golden", pages=folder)
    assert done.returncode == 0, done.stdout[-3000:]
    assert "obtained" not in done.stdout
    # the run that sets the goldens says so, not "no golden"
    assert "no golden" not in done.stdout and "golden set" in done.stdout
    entries = GoldenStore(tmp_path / "golden").load("pages-pages").entries.values()
    assert "table_TEDS" not in {entry.metric for entry in entries}
    assert not list((tmp_path / "golden").glob("*.obtained.json"))

    shutil.rmtree(tmp_path / "reports")
    again = pages_run(tmp_path, pages=folder)
    assert again.returncode == 0, again.stdout[-3000:]
    row = next(line for line in again.stdout.splitlines() if "table_TEDS" in line)
    assert "not measured" in row and "no golden" not in again.stdout


@pytest.mark.e2e
@needs_tesseract
def test_a_subset_run_is_never_gated_against_the_whole_sets_golden(tmp_path: Path) -> None:
    """Slow (~49 s here): four child pytest runs of the pages benchmark on tesseract (the whole
    set's goldens, a 2-page subset failing for want of its own, the subset's goldens, the subset
    gated); each step reads the goldens the one before it left."""
    assert pages_run(tmp_path, "--update-golden").returncode == 0
    shutil.rmtree(tmp_path / "reports")
    subset = pages_run(tmp_path, "--max-samples", "2")
    # no false regression: the two pages are not compared with the four pages' values
    assert "REGRESSED" not in subset.stdout and "regressed" not in subset.stdout
    assert subset.returncode == 1, subset.stdout[-3000:]
    assert "data=pages@sha256:" in subset.stdout and "[first 2 of 4]" in subset.stdout
    assert "Golden entries exist for the whole of pages@sha256:" in subset.stdout
    [record] = run_records(tmp_path)
    assert record.data.endswith("[first 2 of 4]")  # its own series in trend and dashboard

    shutil.rmtree(tmp_path / "reports")
    assert pages_run(tmp_path, "--max-samples", "2", "--update-golden").returncode == 0
    shutil.rmtree(tmp_path / "reports")
    again = pages_run(tmp_path, "--max-samples", "2")
    assert again.returncode == 0, again.stdout[-3000:]
    datas = {e.data for e in GoldenStore(tmp_path / "golden").load("pages-pages").entries.values()}
    assert len(datas) == 2 and any(d.endswith("[first 2 of 4]") for d in datas)


def test_trend_and_dashboard_find_the_goldens_of_a_users_page_set() -> None:
    repo_golden = REPOSITORY / "golden"
    own = GoldenStore(repo_golden).load("pages-pages").entries
    index = load_golden_index(repo_golden, {"pages", "fox"})
    assert own and all(index[("pages", *key)] == entry for key, entry in own.items())


def test_subset_data_names_the_part_of_the_set() -> None:
    assert subset_data("fox@abc", 3, 3) == "fox@abc"
    assert subset_data("fox@abc", 2, 3) == "fox@abc[first 2 of 3]"


@pytest.mark.e2e
@needs_tesseract
def test_a_pdf_with_one_ground_truth_is_one_document_and_strays_are_noted(tmp_path: Path) -> None:
    """Slow (~28 s here): three child pytest runs of the pages benchmark on tesseract over one
    changed copy of the fixture folder (goldens set, --pages-strict, --max-samples 2); each
    checks what another option makes of the same stray file and one-document PDF."""
    folder = copy_fixture(tmp_path)
    truth = (folder / "site_report.md").read_text()
    (folder / "site_report.md").write_text(truth.replace("\f", "\n\n"))
    (folder / "memo_typo.md").write_text("a page whose image name was mistyped")
    [document] = [p for p in load_user_pages(folder) if p.path.suffix == ".pdf"]
    assert (document.page_id, document.kind, document.document_pages) == (
        "site_report", "pdf document", 2)

    done = pages_run(tmp_path, "--update-golden", pages=folder)
    assert done.returncode == 0, done.stdout[-3000:]
    flat = " ".join(done.stdout.split())
    assert "site_report.pdf: 2 pages, one ground truth without form feeds: read page by page " \
           "and scored as one document" in flat
    assert "memo_typo.md: ground truth without a page file" in flat
    [record] = run_records(tmp_path)
    sample = next(s for s in record.samples if s.sample_id == "site_report")
    assert sample.details["kind"] == "pdf document" and sample.details["pages"] == 2
    assert record.params["model_calls"] == 4  # two images and the PDF's two pages
    separate = [p for p in load_user_pages(PAGES) if p.path.suffix == ".pdf"]
    assert len(separate) == 2  # the fixture's form feeds keep two pages

    shutil.rmtree(tmp_path / "reports")
    strict = pages_run(tmp_path, "--pages-strict", pages=folder)
    assert strict.returncode == 1 and "memo_typo.md: ground truth without a page file" in \
        " ".join(strict.stdout.split())

    shutil.rmtree(tmp_path / "reports")
    capped = pages_run(tmp_path, "--max-samples", "2", pages=folder)  # the two images only
    assert "site_report" not in capped.stdout  # no note about a document that did not run


@needs_tesseract
def test_dataset_name_chooses_the_golden_file(tmp_path: Path) -> None:
    done = pages_run(tmp_path, "--dataset-name", "invoices")
    assert done.returncode == 1, done.stdout[-3000:]  # no golden yet: it fails and says how
    assert "pages-invoices [tesseract data=invoices@sha256:" in done.stdout
    assert "golden accept pages-invoices" in done.stdout
    obtained = json.loads((tmp_path / "golden" / "pages-invoices.obtained.json").read_text())
    assert obtained["entries"] and not (tmp_path / "golden" / "pages-invoices.json").exists()
    # one label for the data everywhere: terminal, records and the run's data sources
    (run,) = [p for p in (tmp_path / "reports").iterdir() if p.is_dir()]
    results = json.loads((run / "results.json").read_text())
    [label] = {record["data"] for record in results["records"]}
    assert label.startswith("invoices@sha256:") and f"data={label}" in done.stdout
    assert [source["revision"] for source in results["run"]["data_sources"].values()] == [label]


@needs_tesseract
def test_a_page_without_ground_truth_fails_the_run_naming_it(tmp_path: Path) -> None:
    folder = copy_fixture(tmp_path)
    (folder / "memo.txt").unlink()
    done = pages_run(tmp_path, pages=folder)
    assert done.returncode == 1, done.stdout[-3000:]
    assert "pages data source pages: no ground truth for memo.jpg" in done.stdout
    assert "pages: pages:" not in done.stdout  # said once, not once per layer


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["benches", "-m", "pages"], "pages runs on your own data: pass --pages-dir DIR"),
        (["benches/test_pages.py"], "pages runs on your own data: pass --pages-dir DIR"),
        (["benches", "-m", "pages", "--pages-dir", "/nonexistent/pages"],
         "--pages-dir /nonexistent/pages: not a directory"),
        (["benches", "-m", "pages", "--pages-dir", str(PAGES), "--pages-dpi", "abc"],
         "--pages-dpi 'abc': expected dots per inch"),
        (["benches", "-m", "pages", "--pages-dir", str(PAGES), "--dataset-name", "../x"],
         "--dataset-name '../x': a dataset name is letters, digits"),
    ],
)
def test_pages_without_a_usable_folder_is_a_usage_error(tmp_path: Path, args, message) -> None:
    done = run_pytest(*args, "--report-dir", str(tmp_path / "reports"))
    assert done.returncode == pytest.ExitCode.USAGE_ERROR, done.stdout[-2000:] + done.stderr
    assert message in done.stderr
    assert not (tmp_path / "reports").exists()


def test_a_documents_pages_join_in_order_and_a_failed_page_is_named() -> None:
    from evalsuite.engines.base import InferenceResult
    from evalsuite.runner import joined_result

    first = InferenceResult(text="one", output_tokens=3, latency_s=1.0)
    second = InferenceResult(text="two", output_tokens=4, latency_s=0.5)
    assert joined_result([first]) is first
    joined = joined_result([first, second])
    assert (joined.text, joined.output_tokens, joined.latency_s, joined.error) == (
        "one\n\ntwo", 7, 1.5, None)
    failed = joined_result([first, InferenceResult(text="", error="timed out")])
    assert failed.error == "page 2: timed out" and failed.output_tokens is None
