"""The plugin's DeepSeek-OCR and DeepSeek-OCR-2 classes for vLLM: per-request resolution modes
with DeepSeek's reference preprocessing (see :mod:`evalsuite.vllm_plugin`).

Imported by vLLM (through ``ModelRegistry``) in its own environment; never by the suite's.

- :class:`ModeProcessor` (the "HF processor" vLLM calls) builds the pixel tensors, tile grid and
  prompt ids of ``infer()`` from :func:`evalsuite.engines.deepseek_views.page_views` for the
  request's ``mode`` (default: the family's default, gundam / default).
- The processing info and multimodal processor write as many image tokens as that mode gives
  (:func:`~evalsuite.engines.deepseek_views.image_token_count`), and profile with the largest
  page any mode can produce.
- The models encode each image on its own, so a batch may mix modes (views of different sizes
  reach the model as a list, which vLLM's stock classes refuse).

Deliberate deviation from the stock classes: the encoder CUDA graph path
(``cudagraph_mm_encoder``, off by default) is refused, because it assumes one view size.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import torch
from transformers import BatchFeature
from vllm.model_executor.models.deepseek_ocr import (
    DeepseekOCRDummyInputsBuilder,
    DeepseekOCRForCausalLM,
    DeepseekOCRMultiModalProcessor,
    DeepseekOCRProcessingInfo,
)
from vllm.model_executor.models.deepseek_ocr2 import (
    DeepseekOCR2DummyInputsBuilder,
    DeepseekOCR2ForCausalLM,
    DeepseekOCR2MultiModalProcessor,
    DeepseekOCR2ProcessingInfo,
)
from vllm.multimodal import MULTIMODAL_REGISTRY
from vllm.multimodal.parse import ImageProcessorItems, ImageSize
from vllm.multimodal.processing import PromptReplacement, PromptUpdate
from vllm.transformers_utils.processors.deepseek_ocr import DeepseekOCRProcessor

from evalsuite.engines.deepseek_views import (
    FAMILY_VIEWS,
    ViewSettings,
    image_token_count,
    normalized,
    page_views,
    tile_edge,
    view_settings,
)
from evalsuite.vllm_plugin import MODE_KWARG

DEFAULT_MODES = {"deepseek-ocr": "gundam", "deepseek-ocr-2": "default"}
"""The mode of a request that names none: the mode a stock vLLM serves, now with
``infer()``'s preprocessing."""


def mode_views(family: str, mode: object) -> ViewSettings:
    """The view settings of a request's mode (its ``mm_processor_kwargs[MODE_KWARG]``; None:
    the family's default); ValueError for a bad mode."""
    mode = mode or DEFAULT_MODES[family]
    if not isinstance(mode, str):
        raise ValueError(f"mm_processor_kwargs[{MODE_KWARG!r}] must be a mode name, got {mode!r}")
    return view_settings(family, mode)


def largest_page(family: str) -> ImageSize:
    """A page size that gives the most image tokens of any of ``family``'s modes (profiling)."""
    best = (0, 1, 1)
    for settings in FAMILY_VIEWS[family].values():
        tile = settings.image_size
        for count in range(1, settings.max_crops + 1):
            size = (tile, tile * count)
            best = max(best, (image_token_count(*size, settings), *size))
    return ImageSize(width=best[1], height=best[2])


class ModeProcessor(DeepseekOCRProcessor):
    """vLLM's DeepSeek-OCR processor, preprocessing with DeepSeek's ``infer()`` rules for the
    request's mode; ``family`` picks DeepSeek-OCR or DeepSeek-OCR-2."""

    family: ClassVar[str] = "deepseek-ocr"

    def __call__(  # type: ignore[override]
        self, *, prompt: str, images: list[Any], mode: str | None = None, **kwargs: object
    ) -> BatchFeature:
        settings = mode_views(self.family, mode)
        return self.process_views(prompt, images, settings)

    def process_views(
        self, prompt: str, images: Sequence[Any], settings: ViewSettings
    ) -> BatchFeature:
        """``input_ids`` (BOS, text and image tokens, as ``infer()`` lays them out),
        ``pixel_values`` (global views), ``images_crop`` (tiles), ``images_spatial_crop``
        (``[cols, rows]`` per image), ``images_seq_mask`` and ``num_image_tokens``."""
        splits = prompt.split(self.image_token)
        if len(splits) - 1 != len(images):
            raise ValueError(
                f"the prompt holds {len(splits) - 1} {self.image_token!r} tags for "
                f"{len(images)} images"
            )
        ids: list[int] = [self.bos_id]
        mask: list[bool] = [False]
        globals_, tiles, grids, counts = [], [], [], []
        for text, image in zip(splits, images, strict=False):
            encoded = self.encode(text, bos=False, eos=False)
            ids += encoded
            mask += [False] * len(encoded)
            views = page_views(image.convert("RGB"), settings)
            globals_.append(torch.from_numpy(normalized(views.global_view)))
            tiles += [torch.from_numpy(normalized(tile)) for tile in views.tiles]
            grids.append(list(views.grid))
            counts.append(views.image_tokens)
            ids += [self.image_token_id] * views.image_tokens
            mask += [True] * views.image_tokens
        encoded = self.encode(splits[-1], bos=False, eos=False)
        ids += encoded
        mask += [False] * len(encoded)
        # an untiled image's empty tile tensor gets the family's tile edge, not its mode's
        # view size: vLLM batches tiles of concurrent requests as one flat field and zero-pads
        # every tile to the largest edge in the batch (MultiModalFlatField._reduce_data)
        tile_size = tile_edge(self.family)
        return BatchFeature(
            data={
                "input_ids": torch.tensor([ids], dtype=torch.long),
                "pixel_values": torch.stack(globals_) if globals_ else torch.zeros(
                    (0, 3, settings.global_size, settings.global_size)
                ),
                "images_crop": torch.stack(tiles) if tiles else torch.zeros(
                    (0, 3, tile_size, tile_size)
                ),
                "images_seq_mask": torch.tensor(mask, dtype=torch.bool),
                "images_spatial_crop": torch.tensor(grids, dtype=torch.long).reshape(-1, 2),
                "num_image_tokens": counts,
            }
        )


class ModeProcessor2(ModeProcessor):
    family: ClassVar[str] = "deepseek-ocr-2"


class _ModeInfo:
    """Processing info of the plugin's models (mixed into vLLM's per family)."""

    family: ClassVar[str]
    processor_class: ClassVar[type[ModeProcessor]]

    def get_hf_processor(self, **kwargs: object) -> ModeProcessor:
        kwargs.pop(MODE_KWARG, None)  # a call argument, not a constructor one
        return self.ctx.get_hf_processor(self.processor_class, **kwargs)  # type: ignore[attr-defined]

    def get_num_image_tokens(  # type: ignore[override]
        self, *, image_width: int, image_height: int, mode: str | None = None, **_: object
    ) -> int:
        settings = mode_views(self.family, mode)
        return image_token_count(image_width, image_height, settings)

    def get_image_size_with_most_features(self) -> ImageSize:
        return largest_page(self.family)


class ModeInfo(_ModeInfo, DeepseekOCRProcessingInfo):
    family = "deepseek-ocr"
    processor_class = ModeProcessor


class ModeInfo2(_ModeInfo, DeepseekOCR2ProcessingInfo):
    family = "deepseek-ocr-2"
    processor_class = ModeProcessor2


class _ModeMultiModalProcessor:
    """Writes the image tokens of the request's mode into the prompt."""

    def _get_prompt_updates(
        self,
        mm_items: Any,
        hf_processor_mm_kwargs: Mapping[str, object],
        out_mm_kwargs: Any,
    ) -> Sequence[PromptUpdate]:
        info = self.info  # type: ignore[attr-defined]
        settings = mode_views(info.family, hf_processor_mm_kwargs.get(MODE_KWARG))
        image_token_id = info.get_hf_processor().image_token_id

        def replacement(item_idx: int) -> list[int]:
            # looked up per item: with vLLM's processor cache, a request whose images are all
            # cached calls this with no image items at all
            size = mm_items.get_items("image", ImageProcessorItems).get_image_size(item_idx)
            return [image_token_id] * image_token_count(size.width, size.height, settings)

        return [PromptReplacement(modality="image", target=[image_token_id],
                                  replacement=replacement)]


class ModeMultiModalProcessor(_ModeMultiModalProcessor, DeepseekOCRMultiModalProcessor):
    pass


class ModeMultiModalProcessor2(_ModeMultiModalProcessor, DeepseekOCR2MultiModalProcessor):
    pass


def split_images(
    pixel_values: torch.Tensor | list[torch.Tensor],
    images_crop: torch.Tensor | list[torch.Tensor] | None,
    images_spatial_crop: torch.Tensor,
) -> list[tuple[torch.Tensor, torch.Tensor, torch.Tensor]]:
    """Per image: its global view ``(1, 3, S, S)``, its tiles ``(n, 3, T, T)`` and its grid
    ``(1, 2)``, whether vLLM stacked the batch (one mode) or listed it (mixed modes)."""
    grids = images_spatial_crop.to(dtype=torch.long).reshape(-1, 2)
    tiled = (grids[:, 0] > 1) | (grids[:, 1] > 1)
    per_image = torch.where(tiled, grids.prod(dim=-1), 0).tolist()
    if images_crop is None:
        crops: Sequence[torch.Tensor] = [torch.zeros((0, 3, 1, 1))] * len(per_image)
    elif isinstance(images_crop, torch.Tensor):
        crops = images_crop.split(per_image)
    else:
        crops = list(images_crop)
    return [
        (pixel_values[i].unsqueeze(0), crops[i], grids[i : i + 1])
        for i in range(len(per_image))
    ]


class _ModeModel:
    """Encodes each image of a batch on its own, so that a batch may mix modes."""

    def embed_multimodal(self, **kwargs: object) -> list[torch.Tensor] | None:
        pixel_values = kwargs.get("pixel_values")
        if pixel_values is None:
            return None
        embeddings: list[torch.Tensor] = []
        for view, crops, grid in split_images(
            pixel_values,  # type: ignore[arg-type]
            kwargs.get("images_crop"),  # type: ignore[arg-type]
            kwargs["images_spatial_crop"],  # type: ignore[arg-type]
        ):
            embeddings += self._pixel_values_to_embedding(  # type: ignore[attr-defined]
                pixel_values=view, images_crop=crops, images_spatial_crop=grid
            )
        return embeddings

    def get_encoder_cudagraph_config(self) -> Any:
        raise ValueError(
            "evalsuite's vLLM plugin runs DeepSeek-OCR's encoder eagerly: requests in different "
            "modes give views of different sizes; leave cudagraph_mm_encoder off"
        )


@MULTIMODAL_REGISTRY.register_processor(
    ModeMultiModalProcessor, info=ModeInfo, dummy_inputs=DeepseekOCRDummyInputsBuilder
)
class EvalsuiteDeepseekOCRForCausalLM(_ModeModel, DeepseekOCRForCausalLM):
    """vLLM's DeepSeek-OCR with per-request modes and DeepSeek's preprocessing."""


@MULTIMODAL_REGISTRY.register_processor(
    ModeMultiModalProcessor2, info=ModeInfo2, dummy_inputs=DeepseekOCR2DummyInputsBuilder
)
class EvalsuiteDeepseekOCR2ForCausalLM(_ModeModel, DeepseekOCR2ForCausalLM):
    """vLLM's DeepSeek-OCR-2 with per-request modes and DeepSeek's preprocessing."""


