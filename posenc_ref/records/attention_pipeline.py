"""Registry record of the one-layer attention pipeline (:mod:`posenc_ref.attention_pipeline`).

Listed after the attention pass in :data:`posenc_ref.records.attention.RECORDS`.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import NDArray

from posenc_ref.attention_pipeline import PE_PLACEMENTS, attention_layer
from posenc_ref.opspec import Case, OpRecord, Output, Param

F64 = NDArray[np.float64]


def _sinusoid_rows(t: int, width: int) -> F64:
    """The sinusoid table at positions 0..t-1, correctly rounded (the oracle's twin, not the float64 reference)."""
    from posenc_ref import oracle

    params = {"dim": width, "base": 10000.0, "ladder": "paper", "layout": "interleaved", "odd_width": "error",
              "position_offset": 0, "scale": 1.0}
    return oracle.expected("sinusoidal.table", params, {"positions": np.arange(t)})["table"]


def _layer_inputs(b: int, t: int, width: int, h: int, hkv: int, vocab: int) -> Any:
    head = width // h

    def make(rng: np.random.Generator) -> dict[str, Any]:
        return {
            "tokens": rng.integers(0, vocab, size=(b, t)),
            "embedding": rng.normal(size=(vocab, width)),
            "pe": _sinusoid_rows(t, width),
            "w_q": rng.normal(scale=math.sqrt(1.0 / width), size=(width, h * head)),
            "w_k": rng.normal(scale=math.sqrt(1.0 / width), size=(width, hkv * head)),
            "w_v": rng.normal(scale=math.sqrt(1.0 / width), size=(width, hkv * head)),
            "w_o": rng.normal(scale=math.sqrt(1.0 / (h * head)), size=(h * head, width)),
        }
    return make


PIPELINE = OpRecord(
    name="attention.pipeline",
    family="attention",
    function=attention_layer,
    inputs=("tokens", "embedding", "pe", "w_q", "w_k", "w_v", "w_o"),
    outputs=(Output("output", "float64", "normwise"),),
    params=(
        Param("num_heads", "int", doc="query heads H"),
        Param("num_kv_heads", "int", None, doc="kv heads (None: H)"),
        Param("causal", "bool", True, doc="causal self-attention"),
        Param("pe_placement", "str", "input", PE_PLACEMENTS,
              users={"input": "Vaswani 2017 section 3.5; BERT; GPT-2; fairseq",
                     "after_block": "no library: the common mistake, kept to show the difference"},
              doc="where the absolute encoding is added"),
    ),
    summary="one layer: embedding + absolute PE -> Q/K/V -> attention -> output projection",
    citation="Vaswani et al. 2017, arXiv:1706.03762, sections 3.2.2 and 3.5",
    cases=(
        Case("attention.pipeline.sinusoidal.gqa.t8.d16", {"num_heads": 4, "num_kv_heads": 2},
             _layer_inputs(2, 8, 16, 4, 2, 11),
             "end to end: sinusoidal PE at the input, 4 query heads over 2 kv heads, causal"),
        Case("attention.pipeline.sinusoidal.bidirectional.t6.d8", {"num_heads": 2, "causal": False},
             _layer_inputs(1, 6, 8, 2, 2, 5), "end to end, encoder style (no causal mask), repeated tokens"),
        Case("attention.pipeline.pe_after_block.t8.d16",
             {"num_heads": 4, "num_kv_heads": 2, "pe_placement": "after_block"}, _layer_inputs(2, 8, 16, 4, 2, 11),
             "the PE added after the block: what the common mistake computes", kind="edge"),
        Case("attention.pipeline.error.token_beyond_table", {"num_heads": 2},
             lambda rng: {**_layer_inputs(1, 4, 8, 2, 2, 5)(rng), "tokens": np.array([[0, 1, 5, 2]])},
             "error: token id 5 of a 5-row embedding", kind="error", error="out_of_range"),
        Case("attention.pipeline.error.w_o_shape", {"num_heads": 2},
             lambda rng: {**_layer_inputs(1, 4, 8, 2, 2, 5)(rng), "w_o": np.zeros((8, 6))},
             "error: an output projection of the wrong shape", kind="error", error="invalid_shape"),
        Case("attention.pipeline.error.after_block.token_beyond_table", {"num_heads": 2, "pe_placement": "after_block"},
             lambda rng: {**_layer_inputs(1, 4, 8, 2, 2, 5)(rng), "tokens": np.array([[0, 5, 1, 2]])},
             "error under pe_placement='after_block': token id 5 of a 5-row embedding", kind="error",
             error="out_of_range"),
    ),
    value_inputs=("embedding", "pe", "w_q", "w_k", "w_v", "w_o"),
)

RECORDS = (PIPELINE,)
