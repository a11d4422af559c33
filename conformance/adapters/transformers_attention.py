"""Library adapter ``EAGER_ATTENTION``: transformers' Llama ``eager_attention_forward`` with a
positional scheme plugged in the way the models do it: Llama or GPT-J rotary on q and k
(``attention.rope``), BLOOM's ``build_alibi_tensor`` (``attention.alibi``) or T5's
``compute_bias`` (``attention.t5``) as its ``attention_mask``; float32 (its softmax is float32).
Details: conformance/README.md ("PyTorch and transformers adapters").

Run::

    posenc-ref conformance conformance/adapters/transformers_attention.py:EAGER_ATTENTION \\
        --expectations conformance/adapters/torch_library.toml
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

if str(Path(__file__).resolve().parent) not in sys.path:  # the shared helpers live next to this file
    sys.path.insert(0, str(Path(__file__).resolve().parent))
import posenc_adapter_attention_checks as attention_checks  # noqa: E402
from posenc_adapter_shared import (  # noqa: E402
    Adapter,
    choice,
    require,
)
from torch_common import _llama_config, _numpy, _SupportsAdapter, _transformers, _version  # noqa: E402
from transformers_relative import _bloom_key_masks, _t5_compute_bias  # noqa: E402

torch = require("torch", "torch")


def _eager_attention(a: Mapping[str, Any], q: Any, k: Any, bias: Any = None) -> tuple[np.ndarray, np.ndarray]:
    """Llama ``eager_attention_forward`` (``repeat_kv`` for grouped heads, softmax in float32) of the
    rotated or plain q, k and the case's v; ``attention_mask`` = the bias plus the causal mask (0 or
    -inf, the case's alignment), as the models add their position bias to the mask. (output, weights)."""
    llama = _transformers("llama.modeling_llama")
    module = torch.nn.Module()
    module.num_key_value_groups = a["groups"]
    module.eval()
    keep = np.broadcast_to(a["keep"], np.broadcast_shapes(np.shape(a["keep"]), (1, 1) + np.shape(a["keep"])[-2:]))
    mask = torch.from_numpy(np.where(keep, 0.0, -np.inf)).to(torch.float32)  # plain_attention: causal only
    if bias is not None:
        mask = mask + bias
    v = torch.from_numpy(a["v"]).to(torch.float32)
    with torch.no_grad():
        output, weights = llama.eager_attention_forward(module, q, k, v, mask, scaling=float(a["scale"]))
    return _numpy(output.transpose(1, 2)), _numpy(weights)


def _eager_rope(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    a = attention_checks.attention_rope(params, inputs)
    d = a["q"].shape[-1]

    def rotate(x: np.ndarray, pos: np.ndarray) -> Any:
        xt = torch.from_numpy(x).to(torch.float32)
        with torch.no_grad():
            if a["layout"] == "interleaved":  # GPT-J: [sin | cos] table, rotate_every_two on (B, T, H, D)
                gptj = _transformers("gptj.modeling_gptj")
                sin, cos = torch.split(gptj.create_sinusoidal_positions(int(pos.max()) + 1, d)[torch.from_numpy(pos)],
                                       d // 2, dim=-1)
                return gptj.apply_rotary_pos_emb(xt.transpose(1, 2), sin, cos).transpose(1, 2)
            llama = _transformers("llama.modeling_llama")
            config = _llama_config({"rope_type": "default", "rope_theta": a["base"]}, d, 4096)
            cos, sin = llama.LlamaRotaryEmbedding(config)(xt, torch.from_numpy(pos))  # (B|1, T, D)
            return llama.apply_rotary_pos_emb(xt, xt, cos, sin)[0]

    return _eager_attention(a, rotate(a["q"], a["q_positions"]), rotate(a["k"], a["k_positions"]))


def _eager_alibi(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    a = attention_checks.attention_alibi(params, inputs)
    choice("form", a["form"], ("relative_causal",))  # the form BLOOM's key-only bias equals under softmax
    heads, kp = a["q"].shape[1], a["k_positions"]
    masks = _bloom_key_masks(kp)
    bloom = _transformers("bloom.modeling_bloom")
    alibi = bloom.build_alibi_tensor(torch.from_numpy(masks), heads, torch.float32)  # (rows * H, 1, Tk): m_h * p_j
    bias = alibi.reshape(kp.shape[:-1] + (heads, 1, kp.shape[-1]))
    q, k = (torch.from_numpy(a[n]).to(torch.float32) for n in ("q", "k"))
    return _eager_attention(a, q, k, bias)


def _eager_t5(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    a = attention_checks.attention_t5(params, inputs)
    table = "buckets_heads"
    bias_params = {"direction": a["direction"], "num_buckets": a["buckets"], "max_distance": a["limit"],
                   "table_layout": table}
    bias = _t5_compute_bias(torch.float32)(bias_params, {"table": a["table"], "query_positions": a["q_positions"],
                                                         "key_positions": a["k_positions"]})
    q, k = (torch.from_numpy(a[n]).to(torch.float32) for n in ("q", "k"))
    return _eager_attention(a, q, k, torch.from_numpy(bias))


def _eager_supports(op: str, params: Mapping[str, Any]) -> bool | str:
    if op == "attention.rope" and params.get("layout") == "interleaved" and params.get("base") != 10000.0:
        return "GPT-J's create_sinusoidal_positions (the interleaved rotation) has base 10000 only"
    if op == "attention.alibi" and params.get("form") != "relative_causal":
        return ("BLOOM's bias m_h * p_j equals the relative_causal -m_h (p_i - p_j) up to a per-row constant "
                "that softmax cancels; other forms differ by more")
    return True


def eager_attention() -> Adapter:
    eager = "transformers Llama eager_attention_forward (repeat_kv, float32 softmax; bias and causal mask as its " \
            "attention_mask)"
    calls = {"attention.rope": "transformers LlamaRotaryEmbedding.forward + apply_rotary_pos_emb (half) or GPT-J "
                               "create_sinusoidal_positions + apply_rotary_pos_emb (interleaved) at each side's "
                               "positions, then " + eager,
             "attention.alibi": "transformers BLOOM build_alibi_tensor (key-only m_h p_j), then " + eager,
             "attention.t5": "transformers T5Attention.compute_bias (as T5_BIAS), then " + eager}
    ops = {"attention.rope": _eager_rope, "attention.alibi": _eager_alibi, "attention.t5": _eager_t5}
    return _SupportsAdapter("transformers-eager-attention", _version(), "float32", ops, {op: {} for op in ops},
                            calls, supports=_eager_supports)


EAGER_ATTENTION = eager_attention
