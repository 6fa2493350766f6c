"""Times OmniDocBench v1.6's own CDM (commit 9dc1dec, ``src/metrics/cdm_metric.py``); not imported
by evalsuite, run as a script by a Python that has the official code's dependencies (numpy,
pillow, scipy, pylatexenc 2.10).

Reads ``{"official": TREE, "pairs": [[gt, pred], ...], "workers": int}`` on stdin; scores every
pair with ``CDM(output_root).evaluate(gt, pred, id)`` in a process pool of ``workers`` (as the
official ``cal_metric`` CDM stage does) and prints ``{"seconds": wall time, "f1": [...]}``.

The official code is not edited. At call time: ``src`` and ``src.metrics`` are registered as bare
packages (``src/metrics/__init__.py`` imports every other metric), ``CDM_SAVE_VIS=0`` (pictures
never change a score), and, as this machine has no ImageMagick 7, a ``magick`` script first on
PATH does what ``magick -density 200 -quality 100 IN.pdf -append OUT.png`` does: Ghostscript with
the command line of ImageMagick 7's PDF delegate, then ImageMagick 6 stacks the pages
(``tests/fixtures/cdm/gen_cdm_v16_cases.py`` checks that this gives magick's pixels).
"""

from __future__ import annotations

import importlib
import json
import os
import stat
import sys
import tempfile
import time
import types
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

MAGICK = r"""#!/bin/sh
# magick -density 200 -quality 100 IN.pdf -append OUT.png (the only form CDM v1.6 runs here)
set -e
src="$5"; out="$7"
work=$(mktemp -d)
printf ' ' > "$work/ctl.ps"
gs -sstdout=%stderr -dQUIET -dSAFER -dBATCH -dNOPAUSE -dNOPROMPT -dMaxBitmap=500000000 \
  -dAlignToPixels=0 -dGridFitTT=2 -sDEVICE=pngalpha -dTextAlphaBits=4 -dGraphicsAlphaBits=4 \
  -r200x200 -dPrinted=false "-sOutputFile=$work/page%d.png" "-f$work/ctl.ps" "-f$src"
/usr/bin/convert $(ls "$work"/page*.png | sort -V) -append -quality 100 "$out"
rm -rf "$work"
"""

_CDM = None


def _load(official: str, bin_dir: str) -> None:
    global _CDM
    for name, path in (("src", "src"), ("src.metrics", "src/metrics")):
        package = types.ModuleType(name)
        package.__path__ = [str(Path(official, path))]
        sys.modules[name] = package
    sys.path.insert(0, official)
    os.environ["PATH"] = f"{bin_dir}{os.pathsep}{os.environ['PATH']}"
    os.environ["CDM_SAVE_VIS"] = "0"
    _CDM = importlib.import_module("src.metrics.cdm_metric").CDM


def _score(job: tuple[int, str, str, str]) -> float:
    index, gt, pred, root = job
    return _CDM(output_root=tempfile.mkdtemp(dir=root)).evaluate(gt, pred, str(index))["F1_score"]


def main() -> None:
    job = json.load(sys.stdin)
    with tempfile.TemporaryDirectory(prefix="cdm_official_") as tmp:
        magick = Path(tmp, "magick")
        magick.write_text(MAGICK, encoding="utf-8")
        magick.chmod(magick.stat().st_mode | stat.S_IXUSR)
        jobs = [(i, gt, pred, tmp) for i, (gt, pred) in enumerate(job["pairs"])]
        start = time.perf_counter()
        with ProcessPoolExecutor(
            job["workers"], initializer=_load, initargs=(job["official"], tmp)
        ) as pool:
            f1 = list(pool.map(_score, jobs))
        seconds = time.perf_counter() - start
    print(json.dumps({"seconds": seconds, "f1": f1}))


if __name__ == "__main__":
    main()
