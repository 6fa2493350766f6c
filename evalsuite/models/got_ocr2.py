"""GOT-OCR2.0 (stepfun-ai/GOT-OCR2_0), which no served engine here can run.

vLLM does not serve it: its model registry (vllm-project/vllm 0002bff, a tree after v0.12.0)
lists neither ``GotOcr2ForConditionalGeneration`` (transformers' ``stepfun-ai/GOT-OCR-2.0-hf``)
nor the original checkpoint's ``Qwen2GotForCausalLM``, and the requests to add it (vLLM issues
#13862, #14606) were closed without it. Its authors run it in-process with transformers
(Ucas-HaoranWei/GOT-OCR2.0 179ed08 ``GOT/demo/run_ocr_2.0.py``: the prompts "OCR: " and
"OCR with format: " in their MPT conversation frame, greedy, no-repeat 20-grams, 4,096 new
tokens). The profile records that, so ``--model GOT-OCR2`` says so instead of sending it
requests no server can answer.
"""

from __future__ import annotations

from evalsuite.models import ModelProfile, register_model

GOT = "Ucas-HaoranWei/GOT-OCR2.0@179ed086ad6bac0908a04ee06b3fc382021aa566"
GOT_OCR2 = register_model(
    ModelProfile(
        name="GOT-OCR2",
        version=1,
        hf_ids=("stepfun-ai/GOT-OCR2_0", "stepfun-ai/GOT-OCR-2.0-hf"),
        sources={
            "runner": f"{GOT} GOT-OCR-2.0-master/GOT/demo/run_ocr_2.0.py:eval_model",
            "serving": "vllm-project/vllm@0002bff0b6cb36a3c8a17364de3303664463c412 "
            "vllm/model_executor/models/registry.py (no GOT architecture); issues #13862, #14606",
        },
        unavailable="vLLM does not serve GOT-OCR2 (no GotOcr2ForConditionalGeneration or "
        "Qwen2GotForCausalLM in its model registry), so no served engine can run it; its "
        "authors run it in-process with transformers, which evalsuite has no engine for yet",
        settings_from=f"{GOT[:-32]} `run_ocr_2.0.py`",
        runs_here="nothing: `--model GOT-OCR2` says why",
        left_out="everything: vLLM does not serve it; an in-process transformers engine is "
        "not built",
    )
)
