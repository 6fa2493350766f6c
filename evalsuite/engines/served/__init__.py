"""``openai`` and ``vllm``: an engine behind an OpenAI-compatible chat-completions server.

The package in parts, lowest first:

- :mod:`~evalsuite.engines.served.billing`: the tokens an answer is billed for.
- :mod:`~evalsuite.engines.served.families`: the served model's families (modes, vision-token
  arithmetic).
- :mod:`~evalsuite.engines.served.transport`: the servers' URLs and key, POSTs with retries,
  rests and backoff, rate limits, several servers as one.
- :mod:`~evalsuite.engines.served.discovery`: who serves (``/v1/models``, ``/version``).
- :mod:`~evalsuite.engines.served.shapes`: :class:`RequestShape`, what every shape of request
  does, and the pieces they share (the page as a PNG data URL, the chat text).
- the shapes: :mod:`~evalsuite.engines.served.chat` (one completion per request; a stock
  server's), :mod:`~evalsuite.engines.served.deepseek` (DeepSeek-OCR's, with the vLLM details),
  :mod:`~evalsuite.engines.served.profile` (a peer model profile's).
- :mod:`~evalsuite.engines.served.engine`: the engines, which choose a shape when created and
  send it through the transport.
"""

from evalsuite.engines.served.billing import billed_tokens
from evalsuite.engines.served.chat import DEFAULT_MAX_TOKENS, ChatShape, StockShape
from evalsuite.engines.served.deepseek import TABLE_CELL_TOKEN_IDS, DeepSeekShape
from evalsuite.engines.served.discovery import (
    EVALSUITE_SERVER,
    SERVER_IDENTITY_FIELDS,
    ServerInfo,
    served_modes,
)
from evalsuite.engines.served.engine import OpenAIChatEngine, VllmChatEngine
from evalsuite.engines.served.families import MODEL_FAMILIES, PER_REQUEST, ModelFamily
from evalsuite.engines.served.profile import ProfileShape, prepared_page
from evalsuite.engines.served.shapes import EncodedPage, RequestShape, chat_text, encode_page
from evalsuite.engines.served.transport import (
    MAX_BACKOFF_DOUBLINGS,
    Attempt,
    Endpoint,
    Transport,
    api_base_urls,
)

__all__ = [
    "DEFAULT_MAX_TOKENS",
    "EVALSUITE_SERVER",
    "MAX_BACKOFF_DOUBLINGS",
    "MODEL_FAMILIES",
    "PER_REQUEST",
    "SERVER_IDENTITY_FIELDS",
    "TABLE_CELL_TOKEN_IDS",
    "Attempt",
    "ChatShape",
    "DeepSeekShape",
    "EncodedPage",
    "Endpoint",
    "ModelFamily",
    "OpenAIChatEngine",
    "ProfileShape",
    "RequestShape",
    "ServerInfo",
    "StockShape",
    "Transport",
    "VllmChatEngine",
    "api_base_urls",
    "billed_tokens",
    "chat_text",
    "encode_page",
    "prepared_page",
    "served_modes",
]
