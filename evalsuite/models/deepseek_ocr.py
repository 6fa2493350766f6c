"""DeepSeek-OCR and DeepSeek-OCR-2: the models the suite was built for.

Their engines keep DeepSeek's resolution modes, the benchmarks' own prompts
(:mod:`evalsuite.prompts`) and, on vLLM, evalsuite's plugin with DeepSeek's n-gram rule
(:mod:`evalsuite.engines.served`); the profiles name them for ``--model`` and record them.
"""

from __future__ import annotations

from evalsuite.models import PAGE_MARKDOWN, PLAIN_TEXT, ModelProfile, TaskPrompt, register_model
from evalsuite.prompts import FREE_OCR, MARKDOWN

_IMAGE = "<image>\n"
_SOURCES = {
    "prompts": "deepseek-ai/DeepSeek-OCR README and DeepSeek-OCR-master/"
    "DeepSeek-OCR-vllm/config.py (PROMPT)",
    "decoding": "deepseek-ai/DeepSeek-OCR DeepSeek-OCR-vllm/run_dpsk_ocr_eval_batch.py "
    "(temperature 0, n-gram 40/90) and vllm-project/recipes DeepSeek/DeepSeek-OCR.md (30/90, "
    "whitelist <td></td>, skip_special_tokens False)",
    "image": "DeepSeek-OCR's infer() modes tiny/small/base/large/gundam "
    "(evalsuite.engines.deepseek_views)",
}
_TASKS = {
    PAGE_MARKDOWN: TaskPrompt(MARKDOWN.removeprefix(_IMAGE)),
    PLAIN_TEXT: TaskPrompt(FREE_OCR.removeprefix(_IMAGE)),
}
_DECODING = {"temperature": 0.0, "skip_special_tokens": False}



def _deepseek(name: str, hf_id: str, title: str) -> ModelProfile:
    return register_model(
        ModelProfile(
            name=name,
            version=1,
            hf_ids=(hf_id,),
            sources=_SOURCES,
            tasks=_TASKS,
            decoding=_DECODING,
            image_rule=f"{title}'s mode (evalsuite.engines.deepseek_views)",
            family=name,
            settings_from=f"{title}'s scripts, vLLM's recipe",
            runs_here="every benchmark, every mode (in process, vLLM with evalsuite's plugin, "
            "`evalsuite serve`)",
        )
    )


DEEPSEEK_OCR = _deepseek("deepseek-ocr", "deepseek-ai/DeepSeek-OCR", "DeepSeek-OCR")
DEEPSEEK_OCR_2 = _deepseek("deepseek-ocr-2", "deepseek-ai/DeepSeek-OCR-2", "DeepSeek-OCR-2")
