"""No tracked file names an absolute path of one machine (issue 37): reference environments,
source trees and scratch folders are named by environment variables (tests/fixtures/README.md)
or by paths relative to the checkout. System paths (/usr/, /etc/, /dev/, /proc/, /bin/) are fine."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

from tests.support.paths import REPOSITORY as ROOT

MAX_BYTES = 4 * 1024 * 1024  # larger tracked files are recorded data, not hand-written text
# Folders of one machine or user: an absolute path under them is never the project's.
MACHINE_ROOTS = ("work", "root", "home", "Users", "tmp", "var/tmp", "mnt")
URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://\S*")
# An absolute path starts a token: not after a word character, a dot, "~", "$", "/" or "-"
# (tests/tmp/x, ./tmp/x, $HOME/tmp/x are relative or named by a variable).
MACHINE_PATH = re.compile(
    r"(?<![\w.~$/-])/(?:" + "|".join(map(re.escape, MACHINE_ROOTS)) + r")/[^\s'\"`()<>\[\],;:|]+"
)
ALLOWED = {  # tracked file -> why it may name such paths
    "tests/test_no_machine_paths.py": "its detector cases below name such paths on purpose",
}


def machine_paths(line: str) -> list[str]:
    """The absolute paths under :data:`MACHINE_ROOTS` that ``line`` names, URLs left out."""
    return [path.rstrip(".") for path in MACHINE_PATH.findall(URL.sub(" ", line))]


def offences(path: Path, name: str) -> list[str]:
    """``name:line: path`` for every machine path in the file (a symbolic link: in its target);
    nothing for a binary file (a NUL byte in its first 8,000 bytes, git's test) or a large one."""
    if path.is_symlink():
        text = os.readlink(path)
    elif not path.is_file() or path.stat().st_size > MAX_BYTES:
        return []
    else:
        data = path.read_bytes()
        if b"\0" in data[:8000]:
            return []
        text = data.decode("utf-8", errors="replace")
    if not MACHINE_PATH.search(text):
        return []
    return [f"{name}:{number}: {found}" for number, line in enumerate(text.splitlines(), 1)
            for found in machine_paths(line)]


def tracked_files() -> list[str]:
    """``git ls-files`` of the checkout; fails (never skips) where git cannot list them."""
    try:
        listed = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-z"], capture_output=True,
                                check=False, timeout=60)
    except FileNotFoundError:
        pytest.fail("git is not installed: the tracked files cannot be listed")
    if listed.returncode != 0:
        pytest.fail(f"git ls-files failed in {ROOT}: {listed.stderr.decode(errors='replace')}")
    names = [name for name in listed.stdout.decode("utf-8", errors="replace").split("\0") if name]
    assert names, f"git ls-files listed no file in {ROOT}"
    return names


def test_no_tracked_file_names_a_machine_path() -> None:
    found = [offence for name in tracked_files() if name not in ALLOWED
             for offence in offences(ROOT / name, name)]
    assert not found, (
        "absolute paths of one machine (name them by an environment variable, see "
        "tests/fixtures/README.md, or relative to the checkout):\n" + "\n".join(found)
    )


def test_every_allowed_file_exists() -> None:
    assert [name for name in ALLOWED if not (ROOT / name).is_file()] == []


@pytest.mark.parametrize(
    ("line", "paths"),
    [
        ('REF = Path("/work/refsrc/dots.ocr-36d7248")', ["/work/refsrc/dots.ocr-36d7248"]),
        ("Run: /work/refenv/cdm-v16/bin/python gen.py", ["/work/refenv/cdm-v16/bin/python"]),
        ("    --output_json /tmp/finix.json --allow_name_mismatch", ["/tmp/finix.json"]),
        ("PATH=/home/ci/bin:/usr/bin", ["/home/ci/bin"]),
        ("a checkout in /Users/me/src/evalsuite.", ["/Users/me/src/evalsuite"]),
        ("cp x /var/tmp/cache/ && ls /mnt/data/set", ["/var/tmp/cache/", "/mnt/data/set"]),
        ("(see /root/.cache/x)", ["/root/.cache/x"]),
        ("export D=/tmp/{name}", ["/tmp/{name}"]),
        ("WHEELS = '/tmp/pk/x'", ["/tmp/pk/x"]),
    ],
)
def test_the_detector_finds_machine_paths(line: str, paths: list[str]) -> None:
    assert machine_paths(line) == paths


@pytest.mark.parametrize(
    "line",
    [
        "https://example.com/work/refenv/x and git+ssh://git@host/home/repo.git",
        "tests/work/x, src/tmp/y, ./tmp/z and ../work/w are relative",
        "/usr/lib/chromium/chromium, /etc/os-release, /dev/null, /proc/cpuinfo, /bin/sh",
        "sockets go under the shared /tmp, not the checkout",
        "$EVALSUITE_REFENV/olmocr-0.4.27/bin/python, $HOME/tmp/x and ~/.cache/evalsuite/cdm",
        "/temporary/x, /homework/x, /tmpfs/x, /workspace/x",
    ],
)
def test_the_detector_leaves_other_paths(line: str) -> None:
    assert machine_paths(line) == []


def test_offences_name_file_and_line_and_skip_binary_files(tmp_path: Path) -> None:
    text = tmp_path / "notes.md"
    text.write_text("intro\n\nsee /home/me/x and https://host/home/y\n", encoding="utf-8")
    binary = tmp_path / "data.bin"
    binary.write_bytes(b"\0/home/me/x\n")
    link = tmp_path / "link"
    link.symlink_to("/usr/share/doc")
    assert offences(text, "notes.md") == ["notes.md:3: /home/me/x"]
    assert offences(binary, "data.bin") == []
    assert offences(link, "link") == []
    link.unlink()
    link.symlink_to("/mnt/data")  # a tracked link is checked by its target
    assert offences(link, "link") == ["link:1: /mnt/data"]
    assert offences(tmp_path / "absent", "absent") == []
