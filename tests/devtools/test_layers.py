"""The import layering of evalsuite (evalsuite.devtools.layers): the real package is clean, and
the checker finds upward imports and cycles where they are."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path
from textwrap import dedent

from evalsuite.devtools import layers
from evalsuite.devtools.layers import (
    LAYER_MAP,
    PACKAGE_DIR,
    Import,
    check,
    collect_imports,
    import_cycles,
    upward_imports,
)

FAKE_LAYERS = {"pkg": "bottom", "pkg.low": "bottom", "pkg.mid": "middle", "pkg.high": "top"}


def write_package(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(dedent(text), encoding="utf-8")
    return root / "pkg"


def fake_package(root: Path) -> Path:
    """bottom ``pkg.low``, middle ``pkg.mid`` (a namespace folder), top ``pkg.high``; with an
    upward import, a module-level cycle, and a cycle closed only by a function-local one."""
    return write_package(
        root,
        {
            "pkg/__init__.py": "VERSION = 1\n",
            "pkg/low.py": """\
                import os

                from pkg.high import SHOWN

                def later():
                    from pkg.mid import c  # lazy: upward all the same; closes no cycle
                    return c, SHOWN, os
                """,
            "pkg/mid/a.py": "from . import b\n",
            "pkg/mid/b.py": """\
                from typing import TYPE_CHECKING

                from .a import low

                if TYPE_CHECKING:
                    from pkg.high import SHOWN
                """,
            "pkg/high.py": """\
                import pkg.mid.a
                from pkg import VERSION

                SHOWN = VERSION

                def refresh():
                    import pkg.high.nothing  # resolves to pkg.high itself: no cycle
                """,
            "pkg/mid/c.py": "from .. import low\nfrom ..low import later\n",
        },
    )


def test_real_package_is_clean():
    report = check()
    assert report.ok, "\n".join(report.lines())


def test_metrics_lie_below_the_data_sources_and_the_sources_below_the_engines():
    """A metric reading a data loader's table (as OmniDocBench's version table once read the
    releases' page counts), a loader or a model profile using an engine: upward in the real
    map; the reverse directions are allowed."""
    def edge(importer: str, imported: str) -> Import:
        return Import(importer, imported, Path("evalsuite/x.py"), 1)

    upward = [edge("evalsuite.metrics.omnidocbench.versions", "evalsuite.datasets.omnidocbench"),
              edge("evalsuite.datasets.fox", "evalsuite.engines.base"),
              edge("evalsuite.models.mineru", "evalsuite.engines.served"),
              edge("evalsuite.render.markdown", "evalsuite.models.convert")]
    downward = [edge(e.imported, e.importer) for e in upward]
    found = upward_imports([*upward, *downward], LAYER_MAP)
    assert [violation.edge for violation in found] == upward


VERSIONED_METRICS = ("evalsuite.metrics.omnidocbench", "evalsuite.metrics.cdm")
"""Metrics laid out as a shared ``common`` package beside one package per version or code base
(``v1_0``, ``v1_5``, ``v1_6``)."""
VERSION_PACKAGE = re.compile(r"v\d+_\d+")


def test_versioned_metrics_share_only_their_common_package():
    """Within a metric of :data:`VERSIONED_METRICS`, ``common`` imports no version's package and
    no version's package imports another's: what two versions use lies in ``common``."""
    crossing = []
    for edge in collect_imports(PACKAGE_DIR):
        for metric in VERSIONED_METRICS:
            prefix = metric + "."
            if not (edge.importer.startswith(prefix) and edge.imported.startswith(prefix)):
                continue
            importer = edge.importer.removeprefix(prefix).split(".")[0]
            imported = edge.imported.removeprefix(prefix).split(".")[0]
            if (importer != imported and VERSION_PACKAGE.fullmatch(imported)
                    and (importer == "common" or VERSION_PACKAGE.fullmatch(importer))):
                crossing.append(f"{edge.where(PACKAGE_DIR.parent)}: {edge.importer} imports "
                                f"{edge.imported}")
    assert crossing == []


def test_every_top_level_module_has_a_layer():
    top_level = {
        ".".join(name.split(".")[:2]) for name in layers.discover_modules(PACKAGE_DIR)
    }
    assert sorted(top_level - set(LAYER_MAP)) == []


def test_imports_are_resolved(tmp_path):
    edges = {
        (e.importer, e.imported, e.line, e.lazy, e.type_only)
        for e in collect_imports(fake_package(tmp_path))
    }
    assert ("pkg.mid.a", "pkg.mid.b", 1, False, False) in edges  # from . import b
    assert ("pkg.mid.c", "pkg.low", 1, False, False) in edges  # from .. import low
    assert ("pkg.mid.c", "pkg.low", 2, False, False) in edges  # from ..low import later
    assert ("pkg.mid.b", "pkg.mid.a", 3, False, False) in edges  # from .a import low
    assert ("pkg.mid.b", "pkg.high", 6, False, True) in edges  # TYPE_CHECKING
    assert ("pkg.low", "pkg.mid.c", 6, True, False) in edges  # function-local
    assert ("pkg.high", "pkg", 2, False, False) in edges  # from pkg import VERSION
    assert ("pkg.high", "pkg.mid.a", 1, False, False) in edges  # import pkg.mid.a
    assert not any(imported == "os" or imported.startswith("typing") for _, imported, *_ in edges)


def test_upward_imports_are_reported_with_file_and_line(tmp_path):
    package = fake_package(tmp_path)
    found = upward_imports(collect_imports(package), FAKE_LAYERS)
    described = sorted(v.describe(tmp_path) for v in found)
    assert described == [
        "pkg/low.py:3: pkg.low (bottom) imports pkg.high (top)",
        "pkg/low.py:6: pkg.low (bottom) imports pkg.mid.c (middle) (function-local)",
        "pkg/mid/b.py:6: pkg.mid.b (middle) imports pkg.high (top) (TYPE_CHECKING)",
    ]


def test_cycles_among_module_level_imports_are_reported(tmp_path):
    cycles = import_cycles(collect_imports(fake_package(tmp_path)))
    # mid.a <-> mid.b at module level; low -> mid.c -> low closes only through a lazy import
    assert [cycle.modules for cycle in cycles] == [("pkg.mid.a", "pkg.mid.b")]
    text = cycles[0].describe(tmp_path)
    assert text.splitlines()[0] == "pkg.mid.a → pkg.mid.b → pkg.mid.a"
    assert "pkg/mid/a.py:1: pkg.mid.a imports pkg.mid.b" in text
    assert "pkg/mid/b.py:3: pkg.mid.b imports pkg.mid.a" in text


def test_longer_cycle_is_found_once(tmp_path):
    package = write_package(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/low.py": "from pkg import mid\n",
            "pkg/mid.py": "from pkg import high\n",
            "pkg/high.py": "import pkg.low\n",
        },
    )
    cycles = import_cycles(collect_imports(package))
    assert [cycle.modules for cycle in cycles] == [("pkg.high", "pkg.low", "pkg.mid")]


def test_report_lists_every_problem(tmp_path):
    package = fake_package(tmp_path)
    (package / "extra.py").write_text("", encoding="utf-8")
    report = check(package, FAKE_LAYERS)
    assert not report.ok
    assert len(report.violations) == 3
    assert len(report.cycles) == 1
    assert report.unassigned == ["pkg.extra"]
    text = "\n".join(report.lines())
    assert "upward imports (3)" in text
    assert "import cycles (1)" in text
    assert "modules without a layer (1)" in text


def test_golden_importing_reports_fails_the_check(tmp_path, capsys):
    """What the real-package test guards: an upward import added to evalsuite/golden.py."""
    copy = tmp_path / "evalsuite"
    shutil.copytree(PACKAGE_DIR, copy, ignore=shutil.ignore_patterns("__pycache__"))
    golden = copy / "golden.py"
    lines = golden.read_text(encoding="utf-8").splitlines()
    lines.append("from evalsuite.reports import summary  # noqa")
    golden.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert layers.main([str(copy)]) == 1
    out = capsys.readouterr().out
    assert (
        f"evalsuite/golden.py:{len(lines)}: evalsuite.golden (middle) imports "
        "evalsuite.reports.summary (top)" in out
    )


def test_command_exits_zero_on_the_package():
    done = subprocess.run(
        [sys.executable, "-m", "evalsuite.devtools.layers"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "no upward import, no import cycle" in done.stdout
