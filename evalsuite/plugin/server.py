"""The model server of a benchmark run: the OpenAI-compatible server the served engines
(``vllm``, ``openai``) talk to.

``--api-base URL`` names a running server. Otherwise, when the run has a served engine to run,
the controlling pytest process (the only one, or xdist's controller) starts one before any test
and stops it at the end, so every xdist worker shares one server per machine: by default
``vllm serve`` (:data:`VLLM_COMMAND`) from the pinned environment ``.venv-vllm`` that ``make
vllm-env`` builds, else the ``vllm`` on PATH, with evalsuite's vLLM plugin
(:mod:`evalsuite.vllm_plugin`: every DeepSeek-OCR mode per request, DeepSeek's preprocessing,
the n-gram processor for Model Runner V2, the runner pinned in :data:`SERVER_ENVIRONMENT`);
or the ``--server-command``. Before starting vLLM the run reads its version and checks that the
plugin is installed beside it (:func:`vllm_environment`). It waits
for ``GET /health`` until ``--server-timeout``; a server that exits or stays unhealthy is an error
naming the command and showing the last lines of its log (``<run dir>/server.log``), and every
test of a served engine then errors with that one line.
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections import deque
from dataclasses import dataclass
from pathlib import Path

from evalsuite.engines.deepseek_ocr import WEIGHTS as OCR_WEIGHTS
from evalsuite.errors import EngineUnavailableError
from evalsuite.images import LIMIT_ENV, max_image_pixels
from evalsuite.vllm_plugin import (
    ARCHITECTURES,
    NGRAM_PROCESSOR,
    PLUGIN_NAME,
    SERVER_ENVIRONMENT,
    VLLM_VERSION,
)

SERVED_ENGINES = ("vllm", "openai")
SERVED_MODELS: dict[str, tuple[str, str | None]] = {
    "deepseek-ocr": (OCR_WEIGHTS.repo_id, OCR_WEIGHTS.env_var),
    # vLLM runs DeepSeek's own checkpoint (DeepseekOCR2ForCausalLM), not the transformers
    # conversion (deepseek-community/DeepSeek-OCR-2) that the in-process engine and
    # EVALSUITE_DEEPSEEK_OCR2_PATH name, so no environment variable applies here
    "deepseek-ocr-2": ("deepseek-ai/DeepSeek-OCR-2", None),
}
"""``--served-model`` values: the model family, its hub id for vLLM, and the environment
variable naming a local copy of that checkpoint."""
VLLM_COMMAND = (
    "{vllm} serve {model} --host 127.0.0.1 --port {port} --served-model-name {name} "
    "--hf-overrides {overrides} --logits-processors " + NGRAM_PROCESSOR + " "
    "--no-enable-prefix-caching --mm-processor-cache-gb 0 --trust-remote-code"
)
"""vLLM's DeepSeek-OCR recipe with evalsuite's plugin: the plugin's architecture for the served
family (``--hf-overrides``, so a vLLM without the plugin refuses to start), its V2 n-gram
logits processor (arguments come with each request), no prefix caching and no multimodal
processor cache. ``{vllm}`` is :func:`vllm_executable`'s answer."""
VLLM_ENV_DIR = ".venv-vllm"
"""The pinned vLLM environment ``make vllm-env`` builds in the checkout."""
INSTALL_HINT = "run `make vllm-env` in the evalsuite checkout (docs/gpu_nightly.md)"
LOG_TAIL_LINES = 50
POLL_INTERVAL_S = 0.5


class ServerStartError(EngineUnavailableError):
    """The model server did not come up: ``str()`` is one line, ``log_tail`` the end of its log."""

    def __init__(self, message: str, log_tail: str = "") -> None:
        super().__init__(message)
        self.log_tail = log_tail


@dataclass(frozen=True)
class ServerPlan:
    """How to start the run's server: the command (placeholders filled but ``{port}``), the
    weights it serves, and how long to wait for it."""

    command: str
    model: str
    timeout_s: float


def model_argument(served_model: str, model_path: str | None) -> str:
    """What the server loads: the weights folder given (``--model-path`` for DeepSeek-OCR,
    ``--model-path-v2`` for DeepSeek-OCR-2), else the model's environment variable, else its
    hub id (the server then finds it in the Hugging Face cache)."""
    repo_id, env_var = SERVED_MODELS[served_model]
    return model_path or (os.environ.get(env_var) if env_var else None) or repo_id


def vllm_executable(root: Path | None = None) -> str:
    """The ``vllm`` to start: ``$EVALSUITE_VLLM`` when set, else ``<root>/.venv-vllm/bin/vllm``
    when the pinned environment exists (``root``: the checkout, default the current folder),
    else ``vllm`` (from PATH)."""
    if os.environ.get("EVALSUITE_VLLM"):
        return os.environ["EVALSUITE_VLLM"]
    pinned = (root or Path.cwd()) / VLLM_ENV_DIR / "bin" / "vllm"
    return str(pinned) if pinned.is_file() else "vllm"


@dataclass(frozen=True)
class VllmEnvironment:
    """What a ``vllm`` executable runs with: vLLM's version and whether evalsuite's plugin is
    registered there (entry point ``vllm.general_plugins: evalsuite``)."""

    executable: str
    version: str
    plugin: bool

    def describe(self) -> str:
        pin = "" if self.version == VLLM_VERSION else f", not the pinned {VLLM_VERSION}"
        plugin = "evalsuite plugin" if self.plugin else "no evalsuite plugin"
        return f"vLLM {self.version} ({self.executable}; {plugin}{pin})"


_PROBE = (
    "import importlib.metadata as m, json; "
    "print(json.dumps([m.version('vllm'), "
    f"any(e.name == {PLUGIN_NAME!r} for e in m.entry_points(group='vllm.general_plugins'))]))"
)


def vllm_environment(executable: str) -> VllmEnvironment:
    """Read (without importing vLLM) the version and plugin of the environment of
    ``executable`` (a path, or a name looked up on PATH), with the Python beside it;
    ServerStartError when there is no such vLLM."""
    found = shutil.which(executable)
    if found is None:
        raise ServerStartError(
            f"cannot start the model server: no `{executable}` found; {INSTALL_HINT}, or pass "
            "--server-command CMD or --api-base URL"
        )
    python = Path(found).parent / "python"
    try:
        answer = subprocess.run(
            [str(python), "-c", _PROBE], capture_output=True, text=True, timeout=60, check=True
        )
        version, plugin = json.loads(answer.stdout)
    except (OSError, subprocess.SubprocessError, ValueError) as exc:
        raise ServerStartError(
            f"cannot read the vLLM installation of `{found}` with {python} ({exc}); {INSTALL_HINT}"
        ) from None
    return VllmEnvironment(found, str(version), bool(plugin))


def plan_server(
    command: str | None,
    served_model: str,
    model_path: str | None,
    timeout_s: float,
    *,
    vllm: str = "vllm",
) -> ServerPlan:
    """The plan for ``--server-command`` (default :data:`VLLM_COMMAND`); ``{model}``,
    ``{name}`` (the served model's name, e.g. ``deepseek-ocr``), ``{python}`` (this Python,
    e.g. for ``{python} -m evalsuite serve ...``), ``{vllm}`` (``vllm``: the executable) and
    ``{overrides}`` (the plugin's architecture as ``--hf-overrides`` JSON) are filled in now."""
    model = model_argument(served_model, model_path)
    template = command or VLLM_COMMAND
    overrides = json.dumps({"architectures": [ARCHITECTURES[served_model]]})
    try:
        filled = template.format(
            model=shlex.quote(model),
            name=served_model,
            python=shlex.quote(sys.executable),
            vllm=shlex.quote(vllm),
            overrides=shlex.quote(overrides),
            port="{port}",
        )
    except (KeyError, IndexError, ValueError) as exc:
        raise ValueError(
            f"--server-command {template!r}: unknown placeholder {exc}; use {{port}}, {{model}}, "
            "{name}, {python}, {vllm}, {overrides}"
        ) from None
    if "{port}" not in filled:
        raise ValueError(f"--server-command {template!r} must contain {{port}}")
    return ServerPlan(filled, model, timeout_s)


@dataclass
class RunningServer:
    """A server this run started: its process (in its own process group), URL and log."""

    api_base: str
    process: subprocess.Popen[bytes]
    log_path: Path
    command: str

    def stop(self, grace_s: float = 30.0) -> None:
        """SIGTERM the server's process group, SIGKILL it after ``grace_s``."""
        if self.process.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(grace_s)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def start_server(plan: ServerPlan, log_path: Path) -> RunningServer:
    """Start ``plan`` on a free port and wait until ``/health`` answers 200; raises
    :class:`ServerStartError` (with the log's last lines) when it exits or times out."""
    import httpx

    port = free_port()
    command = plan.command.replace("{port}", str(port))
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with log_path.open("ab") as log:
        try:
            process = subprocess.Popen(
                shlex.split(command),
                env={**os.environ, **SERVER_ENVIRONMENT, LIMIT_ENV: str(max_image_pixels())},
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        except OSError as exc:
            raise ServerStartError(
                f"cannot start the model server `{command}`: {exc} ({INSTALL_HINT}, or pass "
                "--server-command CMD or --api-base URL)"
            ) from None
    server = RunningServer(f"http://127.0.0.1:{port}/v1", process, log_path, command)
    deadline = time.monotonic() + plan.timeout_s
    with httpx.Client(timeout=5.0) as client:
        while True:
            status = process.poll()
            if status is not None:
                raise ServerStartError(
                    f"the model server `{command}` exited with status {status} before it was "
                    f"healthy (log: {log_path})",
                    _log_tail(log_path),
                )
            with contextlib.suppress(httpx.HTTPError):
                if client.get(f"http://127.0.0.1:{port}/health").status_code == 200:
                    return server
            if time.monotonic() > deadline:
                server.stop(grace_s=10.0)
                raise ServerStartError(
                    f"the model server `{command}` was not healthy after {plan.timeout_s:g} s "
                    f"(--server-timeout; log: {log_path})",
                    _log_tail(log_path),
                )
            time.sleep(POLL_INTERVAL_S)


def _log_tail(log_path: Path) -> str:
    try:
        with log_path.open(encoding="utf-8", errors="replace") as log:
            lines = deque(log, maxlen=LOG_TAIL_LINES)
    except OSError:
        return ""
    if not lines:
        return f"{log_path} is empty"
    return f"last {len(lines)} lines of {log_path}:\n" + "".join(lines).rstrip()
