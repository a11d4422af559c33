"""Deprecated spelling: ``conformance/adapters/torch_adapter.py:NAME`` still loads every PyTorch adapter
for one release; use the module that holds it (conformance/README.md, "Framework adapters").

================================================================ ==============================
adapters                                                         module
================================================================ ==============================
``DISTILBERT``, ``MARIAN``, ``M2M100``, ``WHISPER``,             ``transformers_absolute.py``
``VITMAE_2D``, ``EMBEDDING``, ``VIT_INTERPOLATE``
``ROPE_INIT``, ``LONGROPE``, ``LLAMA_ROPE``, ``GPTJ_ROPE``,       ``transformers_rope.py``
``QWEN2VL_MROPE``
``T5_BUCKET``, ``T5_BIAS``, ``DEBERTA_BUCKET``,                  ``transformers_relative.py``
``DEBERTA_SCORES``, ``BLOOM_ALIBI``, ``MPT_ALIBI``,
``SHAW_W2V_BERT``, ``REL_SHIFT``, ``XLNET``
``EAGER_ATTENTION``                                              ``transformers_attention.py``
``SDPA``, ``INTERPOLATE``, ``TORCH_LAYER``                       ``torch_functions.py``
``TORCH`` (also ``ADAPTER``)                                     ``torch_port.py``
================================================================ ==============================
"""

from __future__ import annotations

import sys
from pathlib import Path

if str(Path(__file__).resolve().parent) not in sys.path:  # the adapter modules live next to this file
    sys.path.insert(0, str(Path(__file__).resolve().parent))
from posenc_adapter_shared import require  # noqa: E402

require("torch", "torch")  # here too: the modules below may already be imported
from torch_functions import INTERPOLATE, SDPA, TORCH_LAYER  # noqa: E402
from torch_port import ADAPTER, TORCH  # noqa: E402
from transformers_absolute import (  # noqa: E402
    DISTILBERT,
    EMBEDDING,
    M2M100,
    MARIAN,
    VIT_INTERPOLATE,
    VITMAE_2D,
    WHISPER,
)
from transformers_attention import EAGER_ATTENTION  # noqa: E402
from transformers_relative import (  # noqa: E402
    BLOOM_ALIBI,
    DEBERTA_BUCKET,
    DEBERTA_SCORES,
    MPT_ALIBI,
    REL_SHIFT,
    SHAW_W2V_BERT,
    T5_BIAS,
    T5_BUCKET,
    XLNET,
)
from transformers_rope import GPTJ_ROPE, LLAMA_ROPE, LONGROPE, QWEN2VL_MROPE, ROPE_INIT  # noqa: E402

__all__ = ["ADAPTER", "BLOOM_ALIBI", "DEBERTA_BUCKET", "DEBERTA_SCORES", "DISTILBERT", "EAGER_ATTENTION", "EMBEDDING",
           "GPTJ_ROPE", "INTERPOLATE", "LLAMA_ROPE", "LONGROPE", "M2M100", "MARIAN", "MPT_ALIBI", "QWEN2VL_MROPE",
           "REL_SHIFT", "ROPE_INIT", "SDPA", "SHAW_W2V_BERT", "T5_BIAS", "T5_BUCKET", "TORCH", "TORCH_LAYER",
           "VIT_INTERPOLATE", "VITMAE_2D", "WHISPER", "XLNET"]
