"""Engine results by request content, so that no request reaches an engine twice in a run.

:class:`ResultCache` lives in one process. :class:`SharedResultCache` is one SQLite file (WAL
journal) that every process of a run uses, pytest-xdist workers included: before calling the
engine a process *claims* a request; a process that finds the request claimed by another waits
for its result instead of calling the engine too. So ``pytest -n N`` makes exactly the model
calls of a serial run. A failed result is never stored (a failure may be transient): its claim
is released and the next process that needs the request calls the engine itself, as a serial
run would. A claim whose process has died is taken over.

Resuming (``pytest benches --resume RUN``): a run killed part-way (preemption, out of memory)
leaves its cache, :data:`CACHE_FILE`, in its folder beside no ``results.json``. The resuming
run's first process *takes over* that cache: it copies its answers (not its claims: those
belong to dead processes, of this host or another) into the new run's cache, marked as answers
of the resumed run, writes :data:`RESUMED_MARKER` into the old folder and deletes the old
cache there, so one copy of the answers exists at a time, in the folder of the newest session.
The first process of the new run to use such an answer counts it as its model call (once per
request and run, as the engine call it replaces), so the resumed run records what an
uninterrupted one records. Every cache also keeps its run's identity (what decides the answers:
engines, labels, weights, server command, batch size, evalsuite's commit), which a later
``--resume`` of the run must match (:func:`check_resumable`).

Cleaning: a run that writes its results.json deletes its cache (a Ctrl-C'd run too: it is
written, with the tests that finished); a killed run cannot, so the next run written into the
same report folder deletes the caches of dead runs (no results.json, not written for
:data:`IDLE_S`) beyond the newest :data:`KEEP_DEAD_RUNS` and any older than
:data:`KEEP_DEAD_DAYS` days (:func:`remove_stale_caches`). A cache holds one pickled answer per
distinct request of the run (DeepSeek-OCR's recorded answers: 1.2 KB on average, 31 KB at
most; under 1 MB for the default night's 525 requests).

Results are stored pickled: the file is private to one checkout (the identity names its
commit) and holds only what the processes of this run, or of the run it resumed, put there.
"""

from __future__ import annotations

import hashlib
import json
import os
import pickle
import socket
import sqlite3
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from evalsuite.engines.base import Engine, InferenceRequest, InferenceResult
from evalsuite.errors import EvalsuiteError
from evalsuite.records.atomic import atomic_write_json
from evalsuite.records.results import RESULTS_FILE

WAIT_POLL_S = 0.05
CONNECT_TIMEOUT_S = 60.0
CACHE_FILE = "request_cache.sqlite"
"""The run's cache, in its run folder (with SQLite's ``-wal`` and ``-shm`` files)."""
RESUMED_MARKER = "resumed.json"
"""Written into a run folder whose cache a resuming run took over: which run that was."""
RESUMED_OWNER = "resumed"
"""The owner of an answer taken over from the resumed run that no process has used yet."""
IDLE_S = 3600.0
"""A cache not written for this long in a folder without results.json belongs to a dead run (a
live run writes it with every answer; one request waits at most 600 s per attempt)."""
KEEP_DEAD_RUNS = 3
KEEP_DEAD_DAYS = 7.0


class ResumeError(EvalsuiteError, ValueError):
    """A run cannot be resumed (gone, complete, still running, or made otherwise); the message
    names the run and what to do."""


def request_key(engine_label: str, engine: Engine, request: InferenceRequest) -> str:
    """What identifies a request's result: engine label, image bytes, prompt, mode,
    anti-repetition setting, repeat (after the first) and the PDF page it came from; plus the
    request's replay key for engines whose output depends on it (replay). SHA-256 hex, the same
    in every process and run (sets are sorted, so that the hash seed does not order them)."""
    identity: dict[str, Any] = {
        "engine": engine_label,
        "image": request.image_sha256,
        "prompt": request.prompt,
        "mode": request.mode,
    }
    if request.anti_repetition is not None:
        identity["anti_repetition"] = request.anti_repetition.as_dict()
    if request.repeat != 1:
        identity["repeat"] = request.repeat
    if request.pdf_page is not None:  # a model that renders PDF pages itself sees the PDF's page
        identity["pdf_page"] = [request.pdf_page.content_sha256, request.pdf_page.index]
    if getattr(engine, "keyed_outputs", False):
        identity["key"] = request.replay_key()
    text = json.dumps(identity, sort_keys=True, default=_stable_json)
    return hashlib.sha256(text.encode()).hexdigest()


def _stable_json(value: Any) -> Any:
    """A JSON form of what :mod:`json` cannot write: sets sorted, anything else as ``str``."""
    if isinstance(value, (set, frozenset)):
        return sorted(value, key=repr)
    return str(value)


class ResultCache:
    """The results of one process. ``claim`` always succeeds: nobody else computes."""

    def __init__(self) -> None:
        self._results: dict[str, InferenceResult] = {}

    def get(self, key: str) -> InferenceResult | None:
        return self._results.get(key)

    def claim(self, key: str) -> bool:
        """Whether this process is to compute ``key`` (else another one does: :meth:`wait`)."""
        return True

    def put(self, key: str, result: InferenceResult) -> None:
        """Store a successful result; a failed one is not stored and its claim released."""
        if result.error is None:
            self._results[key] = result

    def release(self, key: str) -> None:
        """Give up this process's claim on ``key`` without a result (its engine call raised)."""

    def wait(self, key: str) -> InferenceResult | None:
        """The result another process computes for ``key``; None when it failed or its process
        died, the claim then being this process's."""
        return self.get(key)

    def resumed_answer(self, key: str) -> bool:
        """Whether the answer :meth:`get` gave for ``key`` is one the resumed run's engine
        computed and this process is the one to count it as a model call of the run (true
        once per request and run)."""
        return False


class SharedResultCache(ResultCache):
    """The results of every process of a run, in the SQLite file ``path`` (see the module).

    ``identity``: what decides this run's answers, stored for a later ``--resume`` to compare;
    ``resume_from``: the folder of the run this one resumes, whose cache the first process to
    open this one takes over."""

    def __init__(
        self,
        path: Path,
        *,
        identity: Mapping[str, Any] | None = None,
        resume_from: Path | None = None,
    ) -> None:
        super().__init__()
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.owner = f"{socket.gethostname()}:{os.getpid()}"
        self.identity = dict(identity or {})
        self.resume_from = resume_from
        self._taken: set[str] = set()
        self._connection: sqlite3.Connection | None = None

    @property
    def _db(self) -> sqlite3.Connection:
        if self._connection is None:
            connection = self._open()
            try:
                self._start(connection)
            except BaseException:
                connection.close()
                raise
            self._connection = connection
        return self._connection

    def _open(self) -> sqlite3.Connection:
        """A connection to the file, in WAL mode with the tables made. Switching the journal
        mode does not wait for another process's lock as statements do (SQLite answers
        "database is locked" at once while a process that started at the same moment sets it
        up), so the setup is retried until :data:`CONNECT_TIMEOUT_S` has passed."""
        deadline = time.monotonic() + CONNECT_TIMEOUT_S
        while True:
            connection = sqlite3.connect(self.path, timeout=CONNECT_TIMEOUT_S,
                                         isolation_level=None)
            try:
                connection.execute("PRAGMA journal_mode=WAL")
                connection.execute(
                    "CREATE TABLE IF NOT EXISTS results (key TEXT PRIMARY KEY,"
                    " owner TEXT NOT NULL, result BLOB, origin TEXT)"
                )
                connection.execute(
                    "CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value TEXT)"
                )
                return connection
            except sqlite3.OperationalError as error:
                connection.close()
                if "locked" not in str(error) or time.monotonic() > deadline:
                    raise
            time.sleep(WAIT_POLL_S)

    def _start(self, connection: sqlite3.Connection) -> None:
        """Store the run's identity and, resuming, take over the resumed run's answers: once
        per run, by whichever process comes first (the others wait for its transaction)."""
        source = self.resume_from
        connection.execute("BEGIN IMMEDIATE")
        try:
            connection.execute("INSERT OR IGNORE INTO meta VALUES ('identity', ?)",
                               (json.dumps(self.identity, sort_keys=True),))
            if source is not None and _meta(connection, "resumed") is None:
                runs = _take_answers(connection, source)
                connection.execute("INSERT INTO meta VALUES ('resumed', ?)",
                                   (json.dumps({"runs": runs}),))
            else:
                source = None  # nothing to take over, or another process took it
            connection.execute("COMMIT")
        except BaseException:
            connection.execute("ROLLBACK")
            raise
        if source is not None:  # the answers are safe here: point the old folder here, free it
            atomic_write_json(source / RESUMED_MARKER, {
                "resumed_as": self.path.parent.name,
                "run_dir": str(self.path.parent.resolve()),
            })
            remove_cache(source)

    def get(self, key: str) -> InferenceResult | None:
        local = self._results.get(key)
        if local is not None:
            return local
        row = self._db.execute("SELECT owner, result FROM results WHERE key = ?",
                               (key,)).fetchone()
        if row is None or row[1] is None:
            return None
        if row[0] == RESUMED_OWNER and self._db.execute(
            "UPDATE results SET owner = ? WHERE key = ? AND owner = ?",
            (self.owner, key, RESUMED_OWNER),
        ).rowcount == 1:
            self._taken.add(key)
        result = pickle.loads(row[1])
        self._results[key] = result
        return result

    def resumed_answer(self, key: str) -> bool:
        if key in self._taken:
            self._taken.discard(key)
            return True
        return False

    def claim(self, key: str) -> bool:
        cursor = self._db.execute(
            "INSERT OR IGNORE INTO results (key, owner, result) VALUES (?, ?, NULL)",
            (key, self.owner),
        )
        return cursor.rowcount == 1

    def put(self, key: str, result: InferenceResult) -> None:
        if result.error is None:
            self._results[key] = result
            self._db.execute(
                "UPDATE results SET result = ? WHERE key = ?",
                (pickle.dumps(result, protocol=pickle.HIGHEST_PROTOCOL), key),
            )
        else:
            self.release(key)

    def release(self, key: str) -> None:
        self._db.execute("DELETE FROM results WHERE key = ? AND owner = ? AND result IS NULL",
                         (key, self.owner))

    def wait(self, key: str) -> InferenceResult | None:
        while True:
            row = self._db.execute("SELECT owner, result FROM results WHERE key = ?",
                                   (key,)).fetchone()
            if row is None:
                if self.claim(key):
                    return None
                continue
            owner, stored = row
            if stored is not None:
                result = pickle.loads(stored)
                self._results[key] = result
                return result
            if owner == self.owner:  # an earlier call of this process left it unanswered
                return None
            if not _alive(owner):
                taken = self._db.execute(
                    "UPDATE results SET owner = ? WHERE key = ? AND owner = ? AND result IS NULL",
                    (self.owner, key, owner),
                )
                if taken.rowcount == 1:
                    return None
            time.sleep(WAIT_POLL_S)

    def close(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None


def _take_answers(connection: sqlite3.Connection, source: Path) -> list[str]:
    """Copy the answers of the cache in run folder ``source`` into ``connection``'s (inside its
    transaction), owned by :data:`RESUMED_OWNER`; returns the runs they come from, oldest
    first (``source`` last; before it the runs ``source`` itself resumed)."""
    path = source / CACHE_FILE
    if not path.is_file():
        raise ResumeError(
            f"--resume {source}: its request cache is gone (taken over by another run resuming "
            f"it at the same time? see {source / RESUMED_MARKER})"
        )
    previous = sqlite3.connect(path, timeout=CONNECT_TIMEOUT_S)
    try:
        earlier = json.loads(_meta(previous, "resumed") or "{}").get("runs", [])
        rows = previous.execute("SELECT key, result FROM results WHERE result IS NOT NULL")
        connection.executemany(
            "INSERT OR IGNORE INTO results (key, owner, result, origin) VALUES (?, ?, ?, ?)",
            ((key, RESUMED_OWNER, result, source.name) for key, result in rows),
        )
    finally:
        previous.close()
    return [*earlier, source.name]


def _meta(connection: sqlite3.Connection, name: str) -> str | None:
    """The ``meta`` value ``name`` of a cache, None when absent (or the table is)."""
    try:
        row = connection.execute("SELECT value FROM meta WHERE name = ?", (name,)).fetchone()
    except sqlite3.OperationalError:  # no meta table: an older evalsuite's cache
        return None
    return None if row is None else str(row[0])


def remove_cache(run_dir: Path) -> None:
    """Delete the request cache of the run folder ``run_dir`` (with its WAL files)."""
    for suffix in ("", "-wal", "-shm"):
        (run_dir / f"{CACHE_FILE}{suffix}").unlink(missing_ok=True)


def check_resumable(run_dir: Path, identity: Mapping[str, Any]) -> None:
    """Raise :class:`ResumeError` unless ``run_dir`` is a run that died part-way whose cache
    was made with ``identity`` (what decides the answers, by the option that sets it)."""
    results = run_dir / RESULTS_FILE
    if results.is_file():
        raise ResumeError(
            f"--resume {run_dir.name}: that run is complete ({results} is written; a run "
            "stopped with Ctrl-C is written too, with the tests that finished); only a run that "
            "died before writing its results can be resumed: run without --resume"
        )
    marker = run_dir / RESUMED_MARKER
    if marker.is_file():
        later = json.loads(marker.read_text(encoding="utf-8"))
        done = Path(later["run_dir"]) / RESULTS_FILE
        state = f"which is complete ({done})" if done.is_file() else "which did not finish"
        raise ResumeError(
            f"--resume {run_dir.name}: that run was already resumed as {later['resumed_as']} "
            f"({later['run_dir']}), {state}; resume {later['resumed_as']} instead if it died"
        )
    if not (run_dir / CACHE_FILE).is_file():
        raise ResumeError(
            f"--resume {run_dir.name}: {run_dir} holds no request cache ({CACHE_FILE}): the run "
            "ended before any request was answered, or its cache was removed as too old; run "
            "without --resume"
        )
    connection = sqlite3.connect(run_dir / CACHE_FILE, timeout=CONNECT_TIMEOUT_S)
    try:
        stored = _meta(connection, "identity")
        owners = [row[0] for row in connection.execute(
            "SELECT DISTINCT owner FROM results WHERE result IS NULL")]
    finally:
        connection.close()
    live = [owner for owner in owners if owner.rpartition(":")[0] == socket.gethostname()
            and _alive(owner)]
    if live:
        raise ResumeError(
            f"--resume {run_dir.name}: that run is still running (process {live[0]} is "
            "computing a request); wait for it to end, or stop it, then resume"
        )
    if stored is None:
        raise ResumeError(
            f"--resume {run_dir.name}: its cache was made by an evalsuite without --resume, so "
            "what made its answers is unknown; run without --resume"
        )
    then = json.loads(stored)
    now = json.loads(json.dumps(dict(identity), sort_keys=True))
    differences = [
        f"{name} {then.get(name)!r} then, {now.get(name)!r} now"
        for name in sorted(set(then) | set(now))
        if then.get(name) != now.get(name)
    ]
    if differences:
        raise ResumeError(
            f"--resume {run_dir.name}: that run's answers were made otherwise, and reusing them "
            f"would mix two setups in one run: {'; '.join(differences)}. Resume with the run's "
            "own options, or run without --resume"
        )


def resume_summary(run_dir: Path) -> dict[str, Any] | None:
    """For a resumed run's results.json: ``from`` (the runs it resumed, oldest first),
    ``answers`` (the answers it took over) and ``reused_requests`` (those it used, counted
    in its model calls but not sent to the engine again); None for a run that resumed none."""
    path = run_dir / CACHE_FILE
    if not path.is_file():
        return None
    connection = sqlite3.connect(path, timeout=CONNECT_TIMEOUT_S)
    try:
        resumed = _meta(connection, "resumed")
        if resumed is None:
            return None
        answers, unused = connection.execute(
            "SELECT COUNT(*), COALESCE(SUM(owner = ?), 0) FROM results WHERE origin IS NOT NULL",
            (RESUMED_OWNER,),
        ).fetchone()
    finally:
        connection.close()
    return {"from": json.loads(resumed)["runs"], "answers": answers,
            "reused_requests": answers - unused}


def dead_run_caches(report_dir: Path, now: float | None = None) -> Iterator[tuple[Path, float]]:
    """(run folder, seconds since its cache was written) of every run in ``report_dir`` that
    died: a cache, no results.json, and no write for :data:`IDLE_S`; newest first."""
    now = time.time() if now is None else now
    found = []
    for path in report_dir.glob(f"*/{CACHE_FILE}"):
        run_dir = path.parent
        files = [run_dir / f"{CACHE_FILE}{suffix}" for suffix in ("", "-wal")]
        try:
            written = max(f.stat().st_mtime for f in files if f.exists())
        except (OSError, ValueError):  # removed meanwhile
            continue
        if now - written >= IDLE_S and not (run_dir / RESULTS_FILE).exists():
            found.append((run_dir, now - written))
    yield from sorted(found, key=lambda item: item[1])


def remove_stale_caches(
    report_dir: Path,
    *,
    keep: int = KEEP_DEAD_RUNS,
    max_age_days: float = KEEP_DEAD_DAYS,
    now: float | None = None,
) -> list[Path]:
    """Delete the caches of dead runs (:func:`dead_run_caches`) beyond the newest ``keep`` and
    any older than ``max_age_days``; returns their run folders (the folders stay)."""
    removed = []
    for index, (run_dir, age_s) in enumerate(dead_run_caches(report_dir, now)):
        if index >= keep or age_s > max_age_days * 86400:
            remove_cache(run_dir)
            removed.append(run_dir)
    return removed


def _alive(owner: str) -> bool:
    """Whether the process ``host:pid`` still runs (a process of another host counts as alive:
    its claim is only given up when released)."""
    host, _, pid = owner.rpartition(":")
    if host != socket.gethostname():
        return True
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except (PermissionError, ValueError):
        return True
    return True
