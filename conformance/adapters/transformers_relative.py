"""Library adapters for the relative schemes: transformers' T5, DeBERTa, BLOOM/MPT ALiBi,
Wav2Vec2-BERT (Shaw relative keys), XLNet and Parakeet functions.

``T5_BUCKET``, ``T5_BIAS``, ``DEBERTA_BUCKET``, ``DEBERTA_SCORES``, ``BLOOM_ALIBI``,
``MPT_ALIBI``, ``SHAW_W2V_BERT``, ``REL_SHIFT`` and ``XLNET``; what each calls and how a case is
wired in: conformance/README.md ("PyTorch and transformers adapters").

Run::

    posenc-ref conformance conformance/adapters/transformers_relative.py:T5_BIAS --dtype float32 \\
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
import posenc_adapter_checks as checks  # noqa: E402
from posenc_adapter_shared import Adapter, choice, invalid, invalid_shape, positions, require
from torch_common import (
    TORCH_DTYPES,
    _alibi_slopes_check,
    _deberta_v2,
    _numpy,
    _t5_bias_inputs,
    _t5_params,
    _transformers,
    _version,
)

torch = require("torch", "torch")


def _t5_bucket(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray]) -> np.ndarray:
    direction, buckets, distance, _ = _t5_params(params)
    rel = positions("relative_positions", inputs["relative_positions"], nonnegative=False)
    t5 = _transformers("t5.modeling_t5")
    buckets_of = t5.T5Attention._relative_position_bucket
    return _numpy(buckets_of(torch.from_numpy(rel), bidirectional=direction == "bidirectional", num_buckets=buckets,
                             max_distance=distance))


def _t5_compute_bias(compute: Any) -> Any:
    def run(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray]) -> np.ndarray:
        per_bucket, qp, kp, (direction, buckets, distance, _) = _t5_bias_inputs(params, inputs)
        t5 = _transformers("t5.modeling_t5")
        heads = per_bucket.shape[1]
        config = t5.T5Config(d_model=heads, d_kv=1, num_heads=heads, relative_attention_num_buckets=buckets,
                             relative_attention_max_distance=distance, is_decoder=direction == "unidirectional")
        layer = t5.T5Attention(config, has_relative_attention_bias=True, layer_idx=0).to(compute)
        with torch.no_grad():
            layer.relative_attention_bias.weight.copy_(torch.from_numpy(per_bucket))
            rows = []
            for q_row, k_row in zip(qp.reshape(-1, qp.shape[-1]), kp.reshape(-1, kp.shape[-1])):
                keys = torch.from_numpy(k_row)
                # one query at a time: compute_bias numbers keys 0..K-1 and the query past_seen_tokens
                rows.append(torch.cat([layer.compute_bias(1, int(k_row.max()) + 1, past_seen_tokens=int(i))[..., keys]
                                       for i in q_row], dim=2))  # (1, H, Tq, Tk)
        bias = torch.cat(rows, dim=0).reshape(qp.shape[:-1] + (heads, qp.shape[-1], kp.shape[-1]))
        return _numpy(bias)
    return run


def _deberta_bucket(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray]) -> np.ndarray:
    buckets, max_position, clamp = checks.deberta(params)  # log((max_position - 1) / mid) must divide
    choice("distance_clamp", clamp, ("none",))  # make_log_bucket_position has no distance clamp
    rel = positions("relative_positions", inputs["relative_positions"], nonnegative=False)
    return _numpy(_deberta_v2().make_log_bucket_position(torch.from_numpy(rel), buckets, max_position))


def _bloom_slopes(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray]) -> np.ndarray:
    heads = _alibi_slopes_check(params)
    bloom = _transformers("bloom.modeling_bloom")
    alibi = bloom.build_alibi_tensor(torch.ones(1, 2, dtype=torch.int64), heads, torch.float32)  # (H, 1, 2)
    return _numpy(alibi[:, 0, 1])  # slope * position 1


def _mpt_slopes(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray]) -> np.ndarray:
    heads = _alibi_slopes_check(params)
    mpt = _transformers("mpt.modeling_mpt")
    alibi = mpt.build_mpt_alibi_tensor(heads, 2, alibi_bias_max=float(params["bias_max"]))  # (H, 1, 2): [-m, 0]
    return _numpy(-alibi[:, 0, 0])


def _bloom_mask_positions(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray]) -> np.ndarray:
    mask = checks.attention_mask(inputs)
    bloom = _transformers("bloom.modeling_bloom")
    # one head: slope 2**-8 exactly, so alibi / slope is the position BLOOM multiplies (exact in float64)
    alibi = bloom.build_alibi_tensor(torch.from_numpy(mask), 1, torch.float64)  # (B, 1, T)
    return _numpy(torch.round(alibi[:, 0, :] * 2.0 ** 8).to(torch.int64))


def _bloom_bias(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray]) -> np.ndarray:
    heads = _alibi_slopes_check(params)
    choice("form", params["form"], ("relative_causal", "key_only", "symmetric", "bottom_right"))
    q = positions("query_positions", inputs["query_positions"])
    k = positions("key_positions", inputs["key_positions"])
    if k.shape[:-1] != q.shape[:-1] or q.ndim > 2:
        raise invalid_shape(f"query_positions and key_positions must agree on the batch, got {q.shape} and {k.shape}")
    choice("form", params["form"], ("key_only",))
    masks = _bloom_key_masks(k)  # BLOOM numbers keys (cumsum(mask) - 1) * mask
    bloom = _transformers("bloom.modeling_bloom")
    alibi = bloom.build_alibi_tensor(torch.from_numpy(masks), heads, torch.float32)  # (B*H, 1, Tk)
    bias = alibi.reshape(len(masks), heads, 1, k.shape[-1]).expand(-1, -1, q.shape[-1], -1)
    return _numpy(bias.reshape(k.shape[:-1] + (heads, q.shape[-1], k.shape[-1])))


def t5_bucket() -> Adapter:
    calls = {"t5.bucket": "transformers T5Attention._relative_position_bucket"}
    return Adapter("transformers-t5-bucket", _version(), "float32", {"t5.bucket": _t5_bucket},
                   {"t5.bucket": {}}, calls)


def t5_bias(dtype: str = "float64") -> Adapter:
    calls = {"t5.bias": "transformers T5Attention.compute_bias (one query at past_seen_tokens = its position, "
                        "keys 0..max(k), the case's keys gathered) with relative_attention_bias = the table"}
    return Adapter("transformers-t5-bias", _version(), dtype, {"t5.bias": _t5_compute_bias(TORCH_DTYPES[dtype])},
                   {"t5.bias": {}}, calls, t5_bias, ("float64", "float32"))


def deberta_bucket() -> Adapter:
    calls = {"deberta.bucket": "transformers DeBERTa-v2 make_log_bucket_position"}
    return Adapter("transformers-deberta-bucket", _version(), "float32", {"deberta.bucket": _deberta_bucket},
                   {"deberta.bucket": {"distance_clamp": ("none",)}}, calls)


def bloom_alibi() -> Adapter:
    calls = {"alibi.slopes": "transformers BLOOM build_alibi_tensor (slope = alibi at position 1)",
             "alibi.mask_positions": "transformers BLOOM build_alibi_tensor with one head (alibi / 2**-8)",
             "alibi.bias": "transformers BLOOM build_alibi_tensor on the left-padding mask that numbers the keys"}
    caps = {"alibi.slopes": {"slope_rule": ("press",), "bias_max": (8.0,)}, "alibi.mask_positions": {},
            "alibi.bias": {"slope_rule": ("press",), "bias_max": (8.0,), "form": ("key_only",)}}
    return _BloomAdapter("transformers-bloom-alibi", _version(), "float32",
                         {"alibi.slopes": _bloom_slopes, "alibi.mask_positions": _bloom_mask_positions,
                          "alibi.bias": _bloom_bias}, caps, calls)


class _BloomAdapter(Adapter):
    """BLOOM numbers its keys from an attention mask: key positions other than a left-padded
    ``0..n-1`` cannot be given to it, so such ``alibi.bias`` cases are not applicable."""

    def supports(self, op: str, params: Mapping[str, Any], case_kind: str,
                 inputs: Mapping[str, np.ndarray]) -> bool | str:
        if op not in self.capabilities:
            return f"{op} not supported"
        if case_kind == "valid":
            for name, values in self.capabilities[op].items():
                if params.get(name) not in values:
                    return f"{op}: {name}={params.get(name)!r} not supported"
            if op == "alibi.bias" and "key_positions" in inputs:
                try:
                    _bloom_key_masks(np.asarray(inputs["key_positions"]))
                except RuntimeError as exc:
                    return f"BLOOM builds key positions from an attention mask: {exc}"
        return True


def mpt_alibi() -> Adapter:
    calls = {"alibi.slopes": "transformers MPT build_mpt_alibi_tensor(alibi_bias_max=bias_max)"}
    caps = {"alibi.slopes": {"slope_rule": ("press",)}}
    return Adapter("transformers-mpt-alibi", _version(), "float32", {"alibi.slopes": _mpt_slopes}, caps, calls)


def _deberta_scores(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray]) -> np.ndarray:
    a = checks.deberta_scores(params, inputs)
    choice("distance_clamp", a["clamp"], ("none",))  # make_log_bucket_position has no distance clamp
    deberta = _deberta_v2()
    heads, tq, dim = a["q"].shape
    b, n = a["buckets"], a["qp"].size + a["kp"].size
    factor = 1 + len(a["terms"])  # DisentangledSelfAttention.forward's scale_factor
    config = deberta.DebertaV2Config(hidden_size=2 * heads * dim, num_attention_heads=heads, relative_attention=True,
                                     position_buckets=b, max_relative_positions=a["limit"],
                                     pos_att_type=list(a["terms"]), share_att_key=True)
    config.attention_head_size = dim
    layer = deberta.DisentangledSelfAttention(config).eval()
    # rel_embeddings row r = [Kr of every head | Qr of every head]; key_proj and query_proj pick one half
    rows = [np.moveaxis(a[name], 0, 1).reshape(2 * b, heads * dim) for name in ("pos_key", "pos_query")]
    rel_embeddings = torch.from_numpy(np.concatenate(rows, axis=1)).to(torch.float32)
    eye, zero = torch.eye(heads * dim), torch.zeros(heads * dim, heads * dim)
    # one sequence of Tq + Tk slots at the case's positions: the queries (zero keys), then the keys (zero queries)
    slots = np.concatenate([a["qp"], a["kp"]])
    query, key = torch.zeros(heads, n, dim), torch.zeros(heads, n, dim)
    query[:, :tq], key[:, tq:] = torch.from_numpy(a["q"]), torch.from_numpy(a["k"])
    with torch.no_grad():
        layer.key_proj.weight.copy_(torch.cat([eye, zero], dim=1))
        layer.query_proj.weight.copy_(torch.cat([zero, eye], dim=1))
        layer.key_proj.bias.zero_()
        layer.query_proj.bias.zero_()
        relative = deberta.make_log_bucket_position(torch.from_numpy(slots[:, None] - slots[None, :]), b, a["limit"])
        rel_att = layer.disentangled_attention_bias(query, key, relative, rel_embeddings, factor)
        scale = deberta.scaled_size_sqrt(query, factor)  # forward's content scores, then + rel_att
        scores = torch.bmm(query, key.transpose(-1, -2) / scale.to(dtype=query.dtype)) + rel_att
    return _numpy(scores[:, :tq, tq:])


def deberta_scores() -> Adapter:
    calls = {"deberta.scores": "transformers DeBERTa-v2 DisentangledSelfAttention.disentangled_attention_bias "
                               "(share_att_key, c2p/p2c from pos_att_type, scaled_size_sqrt(d, 1 + n)) with "
                               "make_log_bucket_position rel. positions; content bmm(q, k^T / scale) as its forward"}
    return Adapter("transformers-deberta-scores", _version(), "float32", {"deberta.scores": _deberta_scores},
                   {"deberta.scores": {"distance_clamp": ("none",)}}, calls)


def _shaw_relative_key(table: np.ndarray, queries: np.ndarray, qp: np.ndarray, kp: np.ndarray, k: int,
                       compute: Any) -> Any:
    """Wav2Vec2-BERT ``_apply_relative_key_position_encoding``: ``q_i . table[clip(j - i, -K, K) + K]``
    (Tq, Tk) for the case's positions. Query ``i`` sits at row ``qp[i]`` of batch ``i``, the keys
    are rows ``0..max(kp)``, and the wanted entries are gathered."""
    w2v = _transformers("wav2vec2_bert.modeling_wav2vec2_bert")
    config = w2v.Wav2Vec2BertConfig(hidden_size=table.shape[1], num_attention_heads=1,
                                    position_embeddings_type="relative_key", left_max_position_embeddings=k,
                                    right_max_position_embeddings=k)
    module = w2v.Wav2Vec2BertSelfAttention(config).to(compute)
    module.scaling = 1.0  # the op is unscaled (the module's own head_size**-0.5 is attention's scale)
    # The module numbers positions 0..L-1 itself and reads distances only: the positions are moved
    # down by their common minimum so that a case at positions near 10^6 does not build a 10^6 grid.
    low = int(min(qp.min(), kp.min())) if qp.size and kp.size else 0
    qp, kp = qp - low, kp - low
    tq = qp.size
    query = torch.zeros(tq, 1, int(qp.max()) + 1, table.shape[1], dtype=compute)
    query[torch.arange(tq), 0, torch.from_numpy(qp)] = torch.from_numpy(queries).to(compute)
    key = torch.zeros(1, 1, int(kp.max()) + 1, table.shape[1], dtype=compute)
    with torch.no_grad():
        module.distance_embedding.weight.copy_(torch.from_numpy(table))
        _, bias = w2v._apply_relative_key_position_encoding(module, query, key)  # (Tq, 1, Lq, Lk)
    return bias[torch.arange(tq)[:, None], 0, torch.from_numpy(qp)[:, None], torch.from_numpy(kp)[None, :]]


def _shaw_library(op: str, compute: Any) -> Any:
    def run(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray]) -> np.ndarray:
        a = checks.shaw(params, inputs, op)
        qp, kp = (positions(n, inputs[n]) for n in ("q_positions", "k_positions"))
        k = int(params["max_relative_position"])
        if op == "shaw.index":  # a one-column table holding the row numbers, queries of 1: the bias is the row
            rows = np.arange(2.0 * k + 1)[:, None]
            table, queries = rows, np.ones((qp.size, 1))
        else:
            table, queries = a["table"], a["q"]
        if params["sign"] == "query_minus_key":  # clip(i - j) + K reads row 2K - (clip(j - i) + K): the table flipped
            table = table[::-1].copy()
        term = _shaw_relative_key(table, queries, qp, kp, k, compute)
        if op == "shaw.index":
            return _numpy(torch.round(term).to(torch.int64))
        q, keys = (torch.from_numpy(a[n]).to(compute) for n in ("q", "k"))
        return _numpy(q @ keys.T + term)
    return run


def shaw_w2v_bert(dtype: str = "float64") -> Adapter:
    call = ("transformers Wav2Vec2-BERT _apply_relative_key_position_encoding (position_embeddings_type="
            "'relative_key', left = right = K, distance_embedding = the table, scaling 1)")
    calls = {"shaw.index": call + " on a table of row numbers", "shaw.logits": "q @ k.T + " + call}
    ops = {op: _shaw_library(op, TORCH_DTYPES[dtype]) for op in calls}
    return Adapter("transformers-w2v-bert-relative-key", _version(), dtype, ops, {op: {} for op in ops}, calls,
                   shaw_w2v_bert, ("float64", "float32"))


def _xlnet() -> Any:
    return _transformers("xlnet.modeling_xlnet")


def _parakeet_rel_shift(x: Any) -> Any:
    """Parakeet's ``ParakeetEncoderAttention._rel_shift`` (Transformer-XL appendix B) of a (Tq, Tk) matrix."""
    parakeet = _transformers("parakeet.modeling_parakeet")
    config = parakeet.ParakeetEncoderConfig(hidden_size=2, num_attention_heads=1, num_key_value_heads=1,
                                            intermediate_size=2, num_hidden_layers=0)
    return parakeet.ParakeetEncoderAttention(config, layer_idx=0)._rel_shift(x[None, None])[0, 0]


def _xlnet_rel_shift(x: Any, k_len: int) -> Any:
    """XLNet's ``XLNetRelativeAttention.rel_shift_bnij`` of a (Tq, R) matrix, ``klen = k_len``."""
    return _xlnet().XLNetRelativeAttention.rel_shift_bnij(x[None, None], klen=k_len)[0, 0]


def _rel_shift_library(compute: Any) -> Any:
    def run(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        a = checks.rel_shift(params, inputs)
        tq, rows, tk = a["tq"], a["rows"], a["k_len"]

        def shift(x: Any) -> Any:
            return _xlnet_rel_shift(x, tk) if a["variant"] == "xlnet" else _parakeet_rel_shift(x)

        with torch.no_grad():
            shifted = shift(torch.from_numpy(a["x"]).to(compute))
            # valid: the same shift of each entry's label 1 + i R + c (0 = the padding column), exact in float64;
            # an entry is direct where it came from its own row i and the row distance of its column is m + i - j
            moved = shift(1 + torch.arange(tq * rows, dtype=torch.float64).reshape(tq, rows)).to(torch.int64)
        row, column = (moved - 1) // rows, (moved - 1) % rows
        distance = (tk if a["variant"] == "xlnet" else tk - 1) - column  # rho_c of each codebase's R rows
        i, j = torch.arange(tq)[:, None], torch.arange(tk)[None, :]
        valid = (moved > 0) & (row == i) & (distance == tk - tq + i - j)
        return _numpy(shifted), _numpy(valid.to(torch.int64))
    return run


def rel_shift(dtype: str = "float64") -> Adapter:
    calls = {"transformer_xl.rel_shift": "transformers XLNetRelativeAttention.rel_shift_bnij (variant xlnet) and "
                                         "ParakeetEncoderAttention._rel_shift (variant transformer_xl); valid: the "
                                         "same shift of the entries' labels"}
    ops = {"transformer_xl.rel_shift": _rel_shift_library(TORCH_DTYPES[dtype])}
    return Adapter("transformers-rel-shift", _version(), dtype, ops, {"transformer_xl.rel_shift": {}}, calls,
                   rel_shift, tuple(TORCH_DTYPES))


def _xlnet_score(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray]) -> np.ndarray:
    a = checks.xl_score(params, inputs)
    xlnet = _xlnet()
    qp, kp = a["qp"], a["kp"]
    tq, dim, width = qp.size, a["q"].shape[1], a["w_r"].shape[0]
    # XLNet numbers a segment of qlen queries after klen - qlen memory keys: queries at positions lo..top over
    # keys 0..top, query i alone in batch i at row qp[i] - lo, key j at row kp[j] (zeros elsewhere)
    lo, top = int(qp.min()), int(kp.max())
    qlen, klen = top + 1 - lo, top + 1
    config = xlnet.XLNetConfig(vocab_size=1, d_model=width, n_head=1, n_layer=0, attn_type="bi", bi_data=False,
                               clamp_len=a["clamp_len"], pad_token_id=None, bos_token_id=None, eos_token_id=None)
    model = xlnet.XLNetModel(config)
    q_head = torch.zeros(qlen, tq, 1, dim)
    q_head[torch.from_numpy(qp - lo), torch.arange(tq), 0] = torch.from_numpy(a["q"]).to(torch.float32)
    k_head_h = torch.zeros(klen, tq, 1, dim)
    k_head_h[torch.from_numpy(kp)] = torch.from_numpy(a["k"]).to(torch.float32)[:, None, None, :]
    u, v, w_r = (torch.from_numpy(a[n]).to(torch.float32) for n in ("u", "v", "w_r"))
    with torch.no_grad():
        r = model.relative_positional_encoding(qlen, klen, bsz=tq)  # (klen + qlen, Tq, D_r): distances klen..1-qlen
        k_head_r = torch.einsum("ibh,hnd->ibnd", r, w_r[:, None, :])  # XLNetRelativeAttention.forward's r projection
        ac = torch.einsum("ibnd,jbnd->bnij", q_head + u, k_head_h)  # rel_attn_core: r_w_bias = u
        bd = torch.einsum("ibnd,jbnd->bnij", q_head + v, k_head_r)  # rel_attn_core: r_r_bias = v
        bd = xlnet.XLNetRelativeAttention.rel_shift_bnij(bd, klen=ac.shape[3])
    score = (ac + bd)[torch.arange(tq), 0, torch.from_numpy(qp - lo)]  # (Tq, klen)
    return _numpy(score[:, torch.from_numpy(kp)])


def _xlnet_attention(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    a = attention_checks.attention_xl(params, inputs)
    xlnet = _xlnet()
    qp, kp = (positions(n, inputs[n]).reshape(-1) for n in ("q_positions", "k_positions"))
    if np.unique(qp).size != qp.size:
        raise invalid(f"XLNet numbers one query per position, got repeated q_positions {qp.tolist()}")
    b, h, tq, d = a["q"].shape
    tk, width = a["k"].shape[2], a["w_r"].shape[1]
    # the XLNet segment: queries at positions lo..top over keys 0..top (query i at row qp[i] - lo, key j at
    # row kp[j]); slots that hold no query or key are masked; XLNet has no grouped heads: kv heads repeated
    lo, top = int(qp.min()), int(kp.max())
    qlen, klen = top + 1 - lo, top + 1
    rows, keys = torch.from_numpy(qp - lo), torch.from_numpy(kp)

    def segment(array: np.ndarray, length: int, at: Any) -> Any:  # (B, H, T, D) -> XLNet's (length, B, H, D)
        out = torch.zeros(length, b, h, d)
        out[at] = torch.from_numpy(array).to(torch.float32).permute(2, 0, 1, 3)
        return out

    q_head = segment(a["q"], qlen, rows)
    k_head_h, v_head_h = (segment(np.repeat(a[n], a["groups"], axis=1), klen, keys) for n in ("k", "v"))
    allowed = torch.zeros(qlen, klen, dtype=torch.bool)
    allowed[rows[:, None], keys[None, :]] = torch.from_numpy(np.broadcast_to(a["keep"], (1, 1, tq, tk))[0, 0].copy())
    attn_mask = (~allowed).to(torch.float32)[:, :, None, None]  # 1 = masked (XLNet subtracts 1e30)
    positional = xlnet.XLNetModel(xlnet.XLNetConfig(vocab_size=1, d_model=width, n_head=1, n_layer=0, attn_type="bi",
                                                    bi_data=False, clamp_len=-1, pad_token_id=None,
                                                    bos_token_id=None, eos_token_id=None))
    layer = xlnet.XLNetRelativeAttention(xlnet.XLNetConfig(vocab_size=1, d_model=h * d, n_head=h, n_layer=0,
                                                           pad_token_id=None, bos_token_id=None, eos_token_id=None))
    layer.eval()
    layer.scale = float(a["scale"])  # XLNet's 1 / sqrt(d_head), times softmax_multiplier, or the case's scale
    with torch.no_grad():
        layer.r_w_bias.copy_(torch.from_numpy(a["u_bias"]))
        layer.r_r_bias.copy_(torch.from_numpy(a["v_bias"]))
        r = positional.relative_positional_encoding(qlen, klen, bsz=b)  # (klen + qlen, B, D_r)
        w_r = torch.from_numpy(a["w_r"]).to(torch.float32).permute(1, 0, 2)  # (D_r, H, D): XLNet's r parameter
        k_head_r = torch.einsum("ibh,hnd->ibnd", r, w_r)  # as XLNetRelativeAttention.forward projects r
        output, weights = layer.rel_attn_core(q_head, k_head_h, v_head_h, k_head_r, attn_mask=attn_mask,
                                              output_attentions=True)  # (qlen, B, H, D), (qlen, klen, B, H)
    return _numpy(output[rows].permute(1, 2, 0, 3)), _numpy(weights[rows][:, keys].permute(2, 3, 0, 1))


def xlnet() -> Adapter:
    calls = {"transformer_xl.score": "transformers XLNetModel.relative_positional_encoding (attn_type='bi', "
                                     "clamp_len) + XLNetRelativeAttention.rel_shift_bnij, with rel_attn_core's "
                                     "ac and bd einsums (r_w_bias = u, r_r_bias = v, W_R as its r)",
             "attention.xl": "transformers XLNetRelativeAttention.rel_attn_core (r_w_bias = u, r_r_bias = v, "
                             "output_attentions) on XLNetModel.relative_positional_encoding rows projected by W_R, "
                             "the causal mask as its attn_mask"}
    ops = {"transformer_xl.score": _xlnet_score, "attention.xl": _xlnet_attention}
    caps = {"transformer_xl.score": {"base": (10000.0,)}, "attention.xl": {"base": (10000.0,)}}
    return Adapter("transformers-xlnet", _version(), "float32", ops, caps, calls)


def _bloom_key_masks(k: np.ndarray) -> np.ndarray:
    """The left-padding masks (B, Tk) whose BLOOM positions ``(cumsum(mask) - 1) * mask`` are the key positions."""
    masks = []
    for row in k.reshape(-1, k.shape[-1]):
        pad = next((p for p in range(row.size) if not row[:p].any() and
                    np.array_equal(row[p:], np.arange(row.size - p))), None)
        if pad is None:
            raise RuntimeError(f"key positions {row.tolist()} are not BLOOM mask positions")
        masks.append((np.arange(row.size) >= pad).astype(np.int64))
    return np.stack(masks)


T5_BUCKET = t5_bucket
T5_BIAS = t5_bias
DEBERTA_BUCKET = deberta_bucket
BLOOM_ALIBI = bloom_alibi
MPT_ALIBI = mpt_alibi
DEBERTA_SCORES = deberta_scores
SHAW_W2V_BERT = shaw_w2v_bert
REL_SHIFT = rel_shift
XLNET = xlnet
