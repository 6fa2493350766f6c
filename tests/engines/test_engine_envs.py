"""What each DeepSeek engine needs from its Python environment, and the errors that name it:
ImportError classification, the remote-code environment check of deepseek-ocr, the transformers
check of deepseek-ocr-2, the modes each engine supports, and the packaging that provides them."""

from __future__ import annotations

import importlib
import importlib.util
import shutil
import subprocess
import sys
import tomllib
import types

import pytest
import transformers

from evalsuite.engines import create_engine
from evalsuite.engines.deepseek_ocr import (
    REMOTE_CODE_PACKAGES,
    REMOTE_CODE_TOKENIZERS,
    REMOTE_CODE_TRANSFORMERS,
    DeepseekOcrEngine,
    _load_remote_code,
    environment_problem,
    load_problem,
)
from evalsuite.engines.deepseek_ocr2 import (
    NATIVE_TRANSFORMERS,
    OCR2_MODES,
    DeepseekOcr2Engine,
    native_problem,
)
from evalsuite.engines.tesseract import TesseractEngine
from evalsuite.engines.tiny_deepseek_ocr2 import TinyDeepseekOcr2Engine
from evalsuite.engines.weights import ImportCause, import_cause, pip_install
from evalsuite.errors import EngineUnavailableError
from evalsuite.tokens import MODES
from tests.support.paths import REPOSITORY as REPO_ROOT

LLAMA = "transformers.models.llama.modeling_llama"


def raised_by(statement: str) -> ImportError:
    """The ImportError that executing ``statement`` raises."""
    with pytest.raises(ImportError) as caught:
        exec(statement, {})
    return caught.value


# --- reading an ImportError --------------------------------------------------------------------


def test_a_module_that_is_not_installed_is_missing() -> None:
    cause = import_cause(raised_by("import evalsuite_no_such_package.sub"))
    assert cause == ImportCause(missing=("evalsuite_no_such_package",))
    assert cause.package is None


def test_a_name_an_installed_module_lacks_is_absent() -> None:
    cause = import_cause(raised_by(f"from {LLAMA} import NoSuchAttention"))
    assert cause.absent == f"{LLAMA}.NoSuchAttention" and cause.package == "transformers"
    assert cause.missing == ()


def test_a_submodule_an_installed_package_lacks_is_absent() -> None:
    cause = import_cause(raised_by("import transformers.models.no_such_model"))
    assert cause == ImportCause(absent="transformers.models.no_such_model")


def test_transformers_check_of_remote_code_imports_lists_the_missing(tmp_path) -> None:
    from transformers.dynamic_module_utils import check_imports

    module = tmp_path / "modeling_x.py"
    module.write_text("import json\nfrom evalsuite_no_a import A\nimport evalsuite_no_b.c\n")
    with pytest.raises(ImportError) as caught:
        check_imports(str(module))
    assert set(import_cause(caught.value).missing) == {"evalsuite_no_a", "evalsuite_no_b"}


def test_an_unrelated_import_error_has_no_cause() -> None:
    assert import_cause(ImportError("flash_attn is broken")) == ImportCause()


def test_pip_install_uses_pip_names() -> None:
    assert pip_install(["flash_attn", "einops"]) == "pip install flash-attn einops"


# --- deepseek-ocr: the environment its remote code needs ----------------------------------------


def test_this_transformers_lacks_what_the_remote_code_imports() -> None:
    llama = importlib.import_module(LLAMA)
    if hasattr(llama, "LlamaFlashAttention2"):
        pytest.fail(f"transformers {transformers.__version__} is older than this suite expects")
    problem = environment_problem()
    assert problem is not None and "\n" not in problem
    for needed in (
        f"needs transformers {REMOTE_CODE_TRANSFORMERS}",
        "LlamaFlashAttention2",
        f"transformers {transformers.__version__} does not have",
        "`make deepseek-ocr-env`",
    ):
        assert needed in problem


def test_missing_packages_get_a_pip_command_and_no_transformers_blame() -> None:
    problem = environment_problem(
        ("json", "evalsuite_no_such_package"), ((LLAMA, "LlamaAttention"),)
    )
    assert problem == (
        "DeepSeek-OCR's remote code imports evalsuite_no_such_package, not installed here: "
        "`pip install evalsuite_no_such_package`"
    )


def test_missing_torchvision_must_match_torch() -> None:
    import torch

    if importlib.util.find_spec("torchvision") is not None:
        pytest.skip("torchvision is installed here")
    problem = environment_problem(("torchvision",), ())
    assert "`pip install torchvision`" in problem and torch.__version__ in problem


def test_a_package_that_fails_to_import_is_named_with_its_error(tmp_path, monkeypatch) -> None:
    (tmp_path / "evalsuite_broken_pkg.py").write_text("raise RuntimeError('built for torch 0.1')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    problem = environment_problem(("json", "evalsuite_broken_pkg"), ())
    assert problem == (
        "DeepSeek-OCR's remote code imports evalsuite_broken_pkg, which is installed but fails "
        "to import (RuntimeError: built for torch 0.1)"
    )


def test_a_module_gone_from_transformers_is_a_version_problem() -> None:
    problem = environment_problem((), (("transformers.models.no_such_model", "NoSuchModel"),))
    assert problem is not None and "it imports NoSuchModel" in problem
    assert "`make deepseek-ocr-env`" in problem


def test_nothing_missing_is_no_problem() -> None:
    assert environment_problem(("json",), ((LLAMA, "LlamaAttention"),)) is None


def test_load_errors_name_the_missing_packages(tmp_path) -> None:
    from transformers.dynamic_module_utils import check_imports

    module = tmp_path / "modeling_deepseekocr.py"
    module.write_text("from addict_not_here import Dict\nimport easydict_not_here\n")
    with pytest.raises(ImportError) as caught:
        check_imports(str(module))
    message = str(load_problem(caught.value, "/ckpt"))
    assert message.startswith(
        "engine 'deepseek-ocr' cannot load '/ckpt': DeepSeek-OCR's remote code"
    )
    assert "pip install " in message and "addict_not_here" in message
    assert "transformers" not in message


def test_load_errors_name_the_transformers_version() -> None:
    message = str(load_problem(raised_by(f"from {LLAMA} import NoSuchAttention"), "/ckpt"))
    assert f"imports {LLAMA}.NoSuchAttention" in message
    assert f"transformers {transformers.__version__} does not have" in message
    assert f"needs transformers {REMOTE_CODE_TRANSFORMERS}" in message
    assert "`make deepseek-ocr-env`" in message


def test_other_load_errors_keep_their_message() -> None:
    message = str(load_problem(ImportError("flash_attn is broken"), "/ckpt"))
    assert message.endswith("remote code fails to import: ImportError: flash_attn is broken")


def test_loading_turns_an_import_error_into_the_named_cause(monkeypatch, tmp_path) -> None:
    def missing_package(*args, **kwargs):
        raise ModuleNotFoundError("No module named 'easydict'", name="easydict")

    monkeypatch.setattr(transformers.AutoTokenizer, "from_pretrained", missing_package)
    with pytest.raises(EngineUnavailableError, match=r"imports easydict.*`pip install easydict`"):
        _load_remote_code(tmp_path, "cuda", None)


@pytest.fixture
def no_weights(monkeypatch, tmp_path) -> None:
    for name in ("EVALSUITE_DEEPSEEK_OCR_PATH", "HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


def test_creating_deepseek_ocr_here_names_the_environment_first(no_weights) -> None:
    with pytest.raises(EngineUnavailableError) as caught:
        create_engine("deepseek-ocr")
    message = str(caught.value)
    assert message.startswith(
        f"engine 'deepseek-ocr' cannot run here: DeepSeek-OCR's remote code needs transformers "
        f"{REMOTE_CODE_TRANSFORMERS}"
    )
    assert "`make deepseek-ocr-env`" in message and "EVALSUITE_DEEPSEEK_OCR_PATH" in message


# --- deepseek-ocr-2: transformers' native classes ----------------------------------------------


def test_this_transformers_runs_deepseek_ocr2() -> None:
    assert native_problem() is None


def test_a_transformers_without_the_classes_is_named(monkeypatch) -> None:
    old = types.ModuleType("transformers")
    old.__version__ = "4.46.3"
    monkeypatch.setitem(sys.modules, "transformers", old)
    problem = native_problem()
    assert problem.startswith(
        f"DeepSeek-OCR-2's native classes need transformers >= {NATIVE_TRANSFORMERS} and this "
        "environment has 4.46.3, which has no transformers.DeepseekOcr2ForConditionalGeneration"
    )
    assert f"pip install 'transformers>={NATIVE_TRANSFORMERS}'" in problem


def test_a_transformers_with_the_older_processor_is_named(monkeypatch) -> None:
    # transformers may replace its module in sys.modules once a lazy class is imported
    monkeypatch.setattr(sys.modules["transformers"], "__version__", "5.19.0")
    problem = native_problem()
    assert "environment has 5.19.0, whose DeepseekOcr2Processor takes neither text-only" in problem


# --- modes per engine ---------------------------------------------------------------------------


def test_each_engine_class_lists_its_modes() -> None:
    assert DeepseekOcrEngine.supported_modes == tuple(MODES)
    assert DeepseekOcr2Engine.supported_modes == OCR2_MODES == ("default", "global")
    assert TinyDeepseekOcr2Engine.supported_modes == OCR2_MODES
    assert TesseractEngine.supported_modes == ("native",)
    assert not set(OCR2_MODES) & set(MODES)


def test_deepseek_ocr_tiles_as_its_infer_does() -> None:
    assert DeepseekOcrEngine.max_crops == 9


# --- packaging: pins and the deepseek-ocr environment -------------------------------------------


@pytest.fixture(scope="module")
def project() -> dict:
    return tomllib.loads((REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]


def test_the_package_installs_with_deepseek_ocrs_transformers(project) -> None:
    assert f"transformers>={REMOTE_CODE_TRANSFORMERS}" in project["dependencies"]
    assert f"tokenizers>={REMOTE_CODE_TOKENIZERS}" in project["dependencies"]


def test_the_extras_pin_what_the_engines_check(project) -> None:
    extras = project["optional-dependencies"]
    assert extras["deepseek-ocr"] == [
        f"transformers=={REMOTE_CODE_TRANSFORMERS}",
        f"tokenizers=={REMOTE_CODE_TOKENIZERS}",
        *(package for package in REMOTE_CODE_PACKAGES if package != "torchvision"),
    ]
    assert extras["deepseek-ocr-2"] == [f"transformers>={NATIVE_TRANSFORMERS}"]
    assert f"transformers>={NATIVE_TRANSFORMERS}" in extras["dev"]


def test_make_builds_the_deepseek_ocr_environment_apart() -> None:
    if shutil.which("make") is None:
        pytest.skip("make is not installed")
    plan = subprocess.run(
        ["make", "-n", "-B", "deepseek-ocr-env", "DEEPSEEK_OCR_TORCH_SPEC=torch==2.6.0 tv"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout
    assert "-m venv .venv-deepseek-ocr" in plan
    assert ".venv-deepseek-ocr/bin/pip install -q torch==2.6.0 tv" in plan
    assert ".venv-deepseek-ocr/bin/pip install -q -e '.[deepseek-ocr]'" in plan
    ignored = (REPO_ROOT / ".gitignore").read_text(encoding="utf-8").splitlines()
    assert ".venv-deepseek-ocr/" in ignored
