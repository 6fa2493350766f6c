"""Engine results by request content, so that no request reaches an engine twice in a run.

:class:`ResultCache` lives in one process. :class:`SharedResultCache` is one SQLite file (WAL
journal) that every process of a run uses, pytest-xdist workers included: before calling the
engine a process *claims* a request; a process that finds the request claimed by another waits
for its result instead of calling the engine too. So ``pytest -n N`` makes exactly the model
calls of a serial run. A failed result is never stored (a failure may be transient): its claim
is released and the next process that needs the request calls the engine itself, as a serial
run would. A claim whose process has died is taken over.

Results are stored pickled: the file is private to one run of one checkout (it is deleted when
the run is written) and holds only what this run's own processes put there.
"""

from __future__ import annotations

import hashlib
import json
import os
import pickle
import socket
import sqlite3
import time
from pathlib import Path
from typing import Any

from evalsuite.engines.base import Engine, InferenceRequest, InferenceResult

WAIT_POLL_S = 0.05
CONNECT_TIMEOUT_S = 60.0


def request_key(engine_label: str, engine: Engine, request: InferenceRequest) -> str:
    """What identifies a request's result: engine label, image bytes, prompt, mode and
    anti-repetition setting; plus the request's replay key for engines whose output depends on
    it (replay). SHA-256 hex."""
    identity: dict[str, Any] = {
        "engine": engine_label,
        "image": request.image_sha256,
        "prompt": request.prompt,
        "mode": request.mode,
    }
    if request.anti_repetition is not None:
        identity["anti_repetition"] = request.anti_repetition.as_dict()
    if getattr(engine, "keyed_outputs", False):
        identity["key"] = request.replay_key()
    text = json.dumps(identity, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()


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


class SharedResultCache(ResultCache):
    """The results of every process of a run, in the SQLite file ``path`` (see the module)."""

    def __init__(self, path: Path) -> None:
        super().__init__()
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.owner = f"{socket.gethostname()}:{os.getpid()}"
        self._connection: sqlite3.Connection | None = None

    @property
    def _db(self) -> sqlite3.Connection:
        if self._connection is None:
            self._connection = self._open()
        return self._connection

    def _open(self) -> sqlite3.Connection:
        """A connection to the file, in WAL mode with the table made. Switching the journal
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
                    " owner TEXT NOT NULL, result BLOB)"
                )
                return connection
            except sqlite3.OperationalError as error:
                connection.close()
                if "locked" not in str(error) or time.monotonic() > deadline:
                    raise
            time.sleep(WAIT_POLL_S)

    def get(self, key: str) -> InferenceResult | None:
        local = self._results.get(key)
        if local is not None:
            return local
        row = self._db.execute("SELECT result FROM results WHERE key = ?", (key,)).fetchone()
        if row is None or row[0] is None:
            return None
        result = pickle.loads(row[0])
        self._results[key] = result
        return result

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
