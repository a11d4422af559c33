"""JAX adapter: a ``jax.numpy`` port of every op, with JAX's own library functions where one exists.

=============================  ==================================================================
op                             computed by
=============================  ==================================================================
sinusoidal.*, grid2d.sincos,   ``jax.numpy`` port (``learned.lookup``: ``jnp.take(mode="clip")``)
learned.lookup
rope.inv_freq (every           ``jax.numpy`` port of transformers' init functions; LongRoPE is
rope_type but longrope),       ``rope.longrope_inv_freq`` (``1 / (e_i * base ** (2i/d))``, the
rope.longrope_inv_freq         factor list and attention factor chosen by the wrapper)
rope.cos_sin, rope.apply,      ``jax.numpy`` port; ``rope.apply``/``rope.scores`` at every scaling
rope.scores, rope.rotate,      (the rope.inv_freq / rope.longrope_inv_freq port at the rotary
rope.rotate_freq, rope.xpos,   width), ``rope.rotate`` turning by the caller's cache rows,
rope.mrope_cos_sin             ``rope.rotate_freq`` at the caller's inverse frequencies
alibi.*, t5.*, deberta.*,      ``jax.numpy`` port
shaw.*
transformer_xl.score           ``jax.numpy`` port: ``R = [sin | cos]`` of ``p_i - p_j`` as
                               Transformer-XL's ``PositionalEmbedding``, by direct indexing
transformer_xl.rel_shift       ``jax.numpy`` port of the codebase's pad-and-reshape shift
resample.*                     ``jax.image.scale_and_translate``: ``"cubic-pytorch"`` (a=-0.75,
                               edges replicated) without antialias, ``"cubic"`` (a=-0.5) with it,
                               ``"linear"`` for bilinear; align corners through its scale and
                               translation; other kernel parameters are not_applicable (below)
attention, attention.*         ``jax.nn.dot_product_attention`` for the output (float32, float16,
                               bfloat16), a ``jax.numpy`` softmax port for the weights; the
                               scheme is the port's own: RoPE on q and k at their positions
                               (``attention.rope``, the RoPE block's whole-pipeline parity case),
                               the ALiBi and T5 biases, Shaw's and Transformer-XL's terms
attention.pipeline             ``jax.numpy`` embedding, projections and head split around the same
                               attention
=============================  ==================================================================

``resample.*``: ``jax.image`` has a cubic with a=-0.5 only antialiased ("cubic"; "cubic-pytorch"
falls back to it when antialiased) and a cubic that replicates the edges as PyTorch does only with
a=-0.75 and no antialias ("cubic-pytorch"; plain "cubic" renormalises the edge weights), so bicubic
with ``antialias="on"`` and ``cubic_a=-0.75``, or ``"off"`` and ``-0.5``, is not_applicable.
``"linear"`` without antialias renormalises the in-range taps, which equals PyTorch's clamp of the
source coordinate at the edges. Align corners is ``scale = (m-1)/(n-1)``, ``translation = 0.5 (1 -
scale)`` (the ``scale_and_translate`` docstring), one output sample reading sample 0.

Logits terms (``attention.terms``, ``attention.shaw``, ``attention.xl``) enter
``dot_product_attention`` as ``scale * term`` in its ``bias``; the value term is added to its output
as ``weights @ value_term``, with the port's weights.

JAX computes in float32 unless ``jax_enable_x64`` is on, and then it *silently* downcasts a
requested float64 to float32. So the adapter's dtype follows the flag: ``ADAPTER`` is float64
when x64 is on and float32 when it is off; ``at_dtype("float64")`` refuses when x64 is off, and
every run checks the dtype of what JAX returned, so the adapter never claims float64 for
float32 values. float16 and bfloat16 inputs are held in that dtype, computed in float32 and
rounded once at the end, except for the library attention below.

``attention``: the output is ``jax.nn.dot_product_attention(implementation="xla")`` on q, k, v
held in the adapter's dtype (B, T, N, H layout, GQA from the shapes, the bias and the additive
mask as ``bias``, causal/window/padding/boolean masks resolved into ``mask``; ``attention.*`` hand
it q and k after RoPE, ``attention.pipeline`` the projected heads, rounded to that dtype as a
half-precision layer holds them); its fully masked rows hold the mean of V (a finite fill), so
``fully_masked="zeros"``/``"nan"`` are applied to them afterwards, as a caller does. It computes
its softmax in float32 whatever the input dtype (``jax/_src/nn/functions.py``,
``_dot_product_attention_core``: ``padded_logits.astype(np.float32)``), so the float64 adapter uses
the port's own softmax for the output instead of claiming float64. The weights come from the port.

``t5.bucket`` / ``deberta.*``: the float log ladders as transformers writes them (T5 truncates,
DeBERTa ceils), in the compute dtype; the scalar logs are Python float64 as in transformers.
``rope.inv_freq``: scalar bookkeeping (scaled bases, YaRN ramp ends and factors) in Python float64,
the per-pair arrays in the compute dtype, as transformers does; YaRN's ``ext_factor`` ``e`` blends
with ``gamma + (1 - gamma)(1 - e)`` in place of the ramp ``gamma`` (ggml's ``rope_yarn``). Bad input
is refused by the wrapper checks in :mod:`posenc_adapter_checks`. ``rope.apply``/``rope.scores``
take the same frequencies at ``dim = S`` (the rotary space; pairs from ``rotary_dim/2`` on at
frequency 0) and the whole attention factor from :func:`posenc_adapter_checks.scaling`.
``sinusoidal.fairseq``: ``cache_rule="m2m100"`` numbers a chunk after ``past_length`` cached tokens
``(cumsum(real) + past) * real + padding_idx``, as transformers' M2M100 does.

``learned.lookup``: JAX indexing never raises; an index past the end reads the last row (the
``out_of_range="clamp"`` policy, ``jnp.take(..., mode="clip")``). The ``"error"`` policy is the
wrapper's check before the lookup (:mod:`posenc_adapter_shared`).

Run::

    JAX_ENABLE_X64=1 posenc-ref conformance conformance/adapters/jax_port.py:ADAPTER \
        --expectations conformance/adapters/jax_float64.toml                               # float64
    posenc-ref conformance conformance/adapters/jax_port.py:ADAPTER                        # float32
    posenc-ref conformance conformance/adapters/jax_port.py:ADAPTER --dtype bfloat16    # or float16

No expectations file at float32, float16 or bfloat16: every case passes (the narrow-dtype
policies include the rounding of inputs held in that dtype; docs/tolerance.md).

Needs ``pip install 'posenc-ref[jax]'``.
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
from jax_common import DTYPES, Pair, x64_enabled  # noqa: E402
from jax_formulas import (  # noqa: E402
    alibi_bias,
    attention,
    cos_sin,
    deberta_buckets,
    deberta_scores,
    fairseq,
    grid,
    inv_freq,
    longrope_inv_freq,
    mrope,
    rel_shift,
    rope_qk,
    rotate,
    rotate_cached,
    scaled_freq,
    scores,
    shaw_terms,
    split_heads,
    t5_buckets,
    table,
    xl_score,
    xl_terms,
    xpos,
)
from jax_library import resample, resample_geometry, resample_method, resample_supports  # noqa: E402
from posenc_adapter_shared import (  # noqa: E402
    Adapter,
    require,
    validate_fairseq,
    validate_grid,
    validate_lookup,
    validate_table,
)

jax = require("jax", "jax")
jnp = jax.numpy


class _SupportsAdapter(Adapter):
    """An :class:`Adapter` whose ``supports`` refuses, with the reason, what jax.image cannot express."""

    def supports(self, op: str, params: Mapping[str, Any]) -> bool | str:
        if op not in self.capabilities:
            return f"{op} not supported"
        if op == "rope.inv_freq" and params.get("rope_type") == "longrope":
            return "LongRoPE takes its factor lists as inputs: the port computes it as rope.longrope_inv_freq"
        return resample_supports(op, params)


def _checked(value: Any, dtype: str) -> np.ndarray:
    """A JAX float array as NumPy, refusing one whose dtype is not the claimed one."""
    if value.dtype != DTYPES[dtype]:
        raise RuntimeError(f"JAX computed in {value.dtype}, the adapter claims {dtype} "
                           "(float64 needs jax_enable_x64)")
    array = np.asarray(value.astype(jnp.float32) if dtype == "bfloat16" else value)
    return array


def jax_port(dtype: str | None = None) -> Adapter:
    """The JAX port at ``dtype`` (default: float64 with x64 on, float32 without).

    Raises
    ------
    ValueError
        ``dtype="float64"`` while ``jax_enable_x64`` is off.
    """
    dtype = dtype or ("float64" if x64_enabled() else "float32")
    if dtype == "float64" and not x64_enabled():
        raise ValueError("jax-port: float64 needs jax_enable_x64 (JAX_ENABLE_X64=1 or "
                         "jax.config.update('jax_enable_x64', True)); without it JAX silently computes in float32")
    out = DTYPES[dtype]
    compute = jnp.float64 if dtype == "float64" else jnp.float32

    def run_table(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray]) -> np.ndarray:
        rows, p = validate_table(params, inputs)
        return _checked(table(rows, p, compute).astype(out), dtype)

    def run_fairseq(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        rows, emb = fairseq(validate_fairseq(params, inputs), params, compute)
        return np.asarray(rows), _checked(emb.astype(out), dtype)

    def run_grid(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray]) -> np.ndarray:
        ys, xs = validate_grid(params, inputs)
        return _checked(grid(ys, xs, params, compute).astype(out), dtype)

    def run_lookup(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray]) -> np.ndarray:
        weights, rows = validate_lookup(params, inputs)
        return _checked(jnp.take(jnp.asarray(weights, dtype=out), jnp.asarray(rows), axis=0, mode="clip"), dtype)

    def floats(value: Any) -> np.ndarray:
        return _checked(value.astype(out), dtype)

    def run_inv_freq(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray]) -> tuple[np.ndarray, ...]:
        c = checks.inv_freq(params)
        return (floats(inv_freq(c, compute)), floats(jnp.asarray([c["a"]], dtype=compute)),
                floats(jnp.asarray([c["softmax"]], dtype=compute)))

    def run_cos_sin(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        pos, inv_freq = checks.cos_sin(params, inputs)
        cos, sin = cos_sin(pos, inv_freq, params, compute)
        return floats(cos), floats(sin)

    def scaled(op: str, params: Mapping[str, Any], space: int, rd: int) -> tuple[dict[str, Any], Any]:
        """The case's params with the whole attention factor, and its S/2 scaled frequencies."""
        c = checks.scaling(op, params, space, rd)
        return {**params, "attention_factor": c["a"]}, scaled_freq(c, space, rd, compute)

    def run_apply(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray]) -> np.ndarray:
        x, pos, space, rd = checks.rope_apply(params, inputs)
        p, freq = scaled("rope.apply", params, space, rd)
        return floats(rotate(jnp.asarray(x, dtype=out).astype(compute), pos, space, rd, p, params["layout"],
                             compute, freq))

    def run_scores(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray]) -> np.ndarray:
        q, k, qp, kp, space = checks.rope_scores(params, inputs)
        rd = space if params["rotary_dim"] is None else int(params["rotary_dim"])  # < S: proportional
        p, freq = scaled("rope.scores", params, space, rd)
        qx, kx = (jnp.asarray(a, dtype=out).astype(compute) for a in (q, k))
        return floats(scores(qx, kx, qp, kp, space, rd, p, compute, freq))

    def run_rotate(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray]) -> np.ndarray:
        c = checks.rotate_cached(params, inputs)
        x, cos, sin = (held(c[n]) for n in ("x", "cos", "sin"))
        return floats(rotate_cached(x, c["positions"], cos, sin, params["layout"], params["x_layout"]))

    def run_rotate_freq(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray]) -> np.ndarray:
        c = checks.rotate_freq(params, inputs)
        space = 2 * c["inv_freq"].size
        freq = jnp.asarray(c["inv_freq"], dtype=compute)  # the caller's buffer, float32 below float64
        return floats(rotate(jnp.asarray(c["x"], dtype=out).astype(compute), c["positions"], space, space,
                             {**params, "attention_factor": c["a"]}, params["layout"], compute, freq))

    def run_xpos(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        q, k, pos = checks.xpos(params, inputs)
        qx, kx = (jnp.asarray(a, dtype=out).astype(compute) for a in (q, k))
        q_rot, k_rot = xpos(qx, kx, pos, params, compute)
        return floats(q_rot), floats(k_rot)

    def run_mrope(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        cos, sin = mrope(*checks.mrope(params, inputs), params, compute)
        return floats(cos), floats(sin)

    def run_slopes(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray]) -> np.ndarray:
        heads, rule, bias_max = checks.alibi(params)
        return floats(jnp.exp2(-jnp.asarray(checks.alibi_exponents(heads, rule, bias_max), dtype=compute)))

    def run_alibi(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray]) -> np.ndarray:
        form = checks.choice("form", params["form"], ("relative_causal", "key_only", "symmetric", "bottom_right"))
        heads, rule, bias_max = checks.alibi(params)
        q, k = checks.query_key(inputs)
        slopes = jnp.exp2(-jnp.asarray(checks.alibi_exponents(heads, rule, bias_max), dtype=compute))
        return floats(alibi_bias(q, k, slopes, form, compute))

    def run_mask_positions(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray]) -> np.ndarray:
        mask = jnp.asarray(checks.attention_mask(inputs))
        return np.asarray((jnp.cumsum(mask, axis=-1) - 1) * mask)

    def run_t5_bucket(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray]) -> np.ndarray:
        _, limit, side, direction = checks.t5(params)
        rel = checks.relative("relative_positions", inputs["relative_positions"])
        return np.asarray(t5_buckets(rel, limit, side, direction, compute))

    def run_t5_bias(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray]) -> np.ndarray:
        buckets, limit, side, direction = checks.t5(params)
        table = checks.t5_table(params, inputs, buckets)
        q, k = checks.query_key(inputs)
        rel = k[..., None, :] - q[..., :, None]
        index = t5_buckets(rel, limit, side, direction, compute)  # (..., Tq, Tk)
        values = jnp.take(jnp.asarray(table, dtype=out), index, axis=0)  # (..., Tq, Tk, H)
        return floats(jnp.moveaxis(values, -1, -3))

    def run_deberta_bucket(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray]) -> np.ndarray:
        buckets, limit, clamp = checks.deberta(params)
        delta = checks.relative("relative_positions", inputs["relative_positions"])
        return np.asarray(deberta_buckets(delta, buckets, limit, clamp, compute))

    def run_deberta_index(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray]) -> np.ndarray:
        buckets, limit, clamp = checks.deberta(params)
        q, k = checks.query_key(inputs)
        delta = q[..., :, None] - k[..., None, :]
        return np.asarray(jnp.clip(deberta_buckets(delta, buckets, limit, clamp, compute) + buckets, 0,
                                   2 * buckets - 1))

    def run_deberta_scores(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray]) -> np.ndarray:
        return floats(deberta_scores(checks.deberta_scores(params, inputs), compute, out))

    def run_shaw_index(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray]) -> np.ndarray:
        return np.asarray(jnp.asarray(checks.shaw(params, inputs, "shaw.index")["index"]))

    def run_shaw_logits(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray]) -> np.ndarray:
        a = checks.shaw(params, inputs, "shaw.logits")
        q, k, table = (jnp.asarray(a[n], dtype=out).astype(compute) for n in ("q", "k", "table"))
        per_distance = q @ table.T  # (Tq, 2K+1)
        return floats(q @ k.T + jnp.take_along_axis(per_distance, jnp.asarray(a["index"]), axis=1))

    def run_shaw_output(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray]) -> np.ndarray:
        a = checks.shaw(params, inputs, "shaw.output")
        alpha, v, table = (jnp.asarray(a[n], dtype=out).astype(compute) for n in ("weights", "v", "table"))
        onehot = jax.nn.one_hot(jnp.asarray(a["index"]), a["rows"], dtype=compute)  # (Tq, Tk, 2K+1)
        per_distance = jnp.einsum("qk,qkr->qr", alpha, onehot)  # weight of each clipped distance
        return floats(alpha @ v + per_distance @ table)

    def run_attention(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        # jax.nn.dot_product_attention computes its softmax in float32 whatever the input dtype
        # (jax/_src/nn/functions.py, _dot_product_attention_core: padded_logits.astype(np.float32)),
        # so the float64 adapter computes the output with its own port instead of claiming float64.
        output, weights = attention(attention_checks.attention(params, inputs), compute, use_library=dtype != "float64",
                                    held=out)
        return floats(output), floats(weights)

    def held(a: Any) -> Any:
        """An input held in the adapter's dtype, computed in ``compute``."""
        return jnp.asarray(a, dtype=out).astype(compute)

    def run_longrope(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        c = checks.longrope(params, inputs)
        return (floats(longrope_inv_freq(c["factors"], c["dim"], c["base"], compute)),
                floats(jnp.asarray([c["a"]], dtype=compute)))

    def run_xl_score(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray]) -> np.ndarray:
        c = checks.xl_score(params, inputs)
        q, k, u, v, w_r = (held(c[n]) for n in ("q", "k", "u", "v", "w_r"))
        return floats(xl_score(q, k, u, v, w_r, jnp.asarray(c["distance"]), c["base"], compute))

    def run_rel_shift(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        c = checks.rel_shift(params, inputs)
        shifted, valid = rel_shift(jnp.asarray(c["x"], dtype=out), c["variant"], c["k_len"])
        return _checked(shifted, dtype), np.asarray(valid)

    def resampled(x: Any, axes: tuple[int, ...], specs: tuple[dict[str, Any], ...]) -> Any:
        first = specs[0]
        method = resample_method(first["kernel"], first["antialias"], first["a"])
        if method is None:  # supports() keeps these cases away
            raise RuntimeError(f"jax.image has no {first['kernel']} a={first['a']} with antialias={first['antialias']}")
        geometry = tuple(resample_geometry(c["n"], c["m"], c["scale"], c["align_corners"]) for c in specs)
        return resample(x, axes, tuple(c["m"] for c in specs), geometry, method, first["antialias"], compute)

    def run_resample_weights(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray]) -> np.ndarray:
        c = checks.resample_weights(params, inputs)
        return floats(resampled(jnp.eye(c["n"], dtype=compute), (0,), (c,)))  # W @ I = W

    def run_resample_1d(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray]) -> np.ndarray:
        c = checks.resample_table_1d(params, inputs)
        body = resampled(held(c["rows"]), (0,), (c["axis"],))
        return floats(jnp.concatenate([held(c["prefix"]), body], axis=0))

    def run_resample_2d(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray]) -> np.ndarray:
        c = checks.resample_grid_2d(params, inputs)
        body = resampled(held(c["grid"]), (0, 1), (c["height"], c["width"]))  # (m_H, m_W, D)
        return floats(jnp.concatenate([held(c["prefix"]), body.reshape(-1, body.shape[-1])], axis=0))

    def attend(a: Mapping[str, Any]) -> tuple[np.ndarray, np.ndarray]:
        output, weights = attention(a, compute, use_library=dtype != "float64", held=out)
        return floats(output), floats(weights)

    def run_terms(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray]) -> Pair:
        a = attention_checks.attention_terms(params, inputs)
        return attend({**a, "term": held(a["term"]), "value_term": held(a["value_term"])})

    def run_pipeline(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray]) -> np.ndarray:
        c = attention_checks.attention_pipeline(params, inputs)
        pe, w_q, w_k, w_v, w_o = (held(c[n]) for n in ("pe", "w_q", "w_k", "w_v", "w_o"))
        x = jnp.take(held(c["embedding"]), jnp.asarray(c["tokens"]), axis=0)  # (B, T, d)
        if c["placement"] == "input":
            x = x + pe
        q = split_heads(x @ w_q, c["heads"])
        k, v = split_heads(x @ w_k, c["kv_heads"]), split_heads(x @ w_v, c["kv_heads"])
        b, t = c["tokens"].shape
        zero = np.zeros((1, 1, 1, 1))
        heads_out, _ = attention({"q": q, "k": k, "v": v, "groups": c["groups"], "keep": c["keep"][None, None],
                                  "scale": c["scale"], "bias": zero, "additive": zero, "policy": "zeros",
                                  "empty": np.zeros((b, c["heads"], t), dtype=bool)},
                                 compute, use_library=dtype != "float64", held=out)  # (B, H, T, D)
        y = heads_out.astype(compute).transpose(0, 2, 1, 3).reshape(b, t, -1) @ w_o
        return floats(y + pe if c["placement"] == "after_block" else y)

    def run_attention_rope(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray]) -> Pair:
        a = attention_checks.attention_rope(params, inputs)
        q, k = rope_qk(held(a["q"]), held(a["k"]), a["q_positions"], a["k_positions"], a["base"], a["layout"], compute)
        return attend({**a, "q": q, "k": k})

    def run_attention_alibi(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray]) -> Pair:
        a = attention_checks.attention_alibi(params, inputs)
        slopes = jnp.exp2(-jnp.asarray(a["exponents"], dtype=compute))
        return attend({**a, "bias": alibi_bias(a["q_positions"], a["k_positions"], slopes, a["form"], compute)})

    def run_attention_t5(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray]) -> Pair:
        a = attention_checks.attention_t5(params, inputs)
        rel = a["k_positions"][..., None, :] - a["q_positions"][..., :, None]
        index = t5_buckets(rel, a["limit"], a["side"], a["direction"], compute)  # (..., Tq, Tk)
        bias = jnp.moveaxis(jnp.take(jnp.asarray(a["table"], dtype=out), index, axis=0), -1, -3)  # (..., H, Tq, Tk)
        return attend({**a, "bias": bias.astype(compute)})

    def run_attention_shaw(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray]) -> Pair:
        a = attention_checks.attention_shaw(params, inputs)
        term, value_term = shaw_terms(held(a["q"]), a["index"], held(a["rel_keys"]), held(a["rel_values"]))
        return attend({**a, "term": term, "value_term": value_term})

    def run_attention_xl(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray]) -> Pair:
        a = attention_checks.attention_xl(params, inputs)
        k_heads = jnp.repeat(held(a["k"]), a["groups"], axis=1)  # (B, H, Tk, D)
        term = xl_terms(held(a["q"]), k_heads, held(a["u_bias"]), held(a["v_bias"]), held(a["w_r"]),
                        jnp.asarray(a["distance"]), a["base"], compute)
        return attend({**a, "term": term})

    ops = {"sinusoidal.table": run_table, "sinusoidal.fairseq": run_fairseq, "grid2d.sincos": run_grid,
           "learned.lookup": run_lookup, "rope.inv_freq": run_inv_freq, "rope.cos_sin": run_cos_sin,
           "rope.apply": run_apply, "rope.scores": run_scores, "rope.rotate": run_rotate,
           "rope.rotate_freq": run_rotate_freq, "rope.xpos": run_xpos,
           "rope.mrope_cos_sin": run_mrope, "alibi.slopes": run_slopes, "alibi.bias": run_alibi,
           "alibi.mask_positions": run_mask_positions, "t5.bucket": run_t5_bucket, "t5.bias": run_t5_bias,
           "deberta.bucket": run_deberta_bucket,
           "deberta.index": run_deberta_index, "deberta.scores": run_deberta_scores, "shaw.index": run_shaw_index,
           "shaw.logits": run_shaw_logits, "shaw.output": run_shaw_output, "attention": run_attention,
           "rope.longrope_inv_freq": run_longrope, "transformer_xl.score": run_xl_score,
           "transformer_xl.rel_shift": run_rel_shift, "resample.weights": run_resample_weights,
           "resample.table_1d": run_resample_1d, "resample.grid_2d": run_resample_2d, "attention.terms": run_terms,
           "attention.pipeline": run_pipeline, "attention.rope": run_attention_rope,
           "attention.alibi": run_attention_alibi, "attention.t5": run_attention_t5,
           "attention.shaw": run_attention_shaw, "attention.xl": run_attention_xl}
    calls = {op: "jax.numpy port (conformance/adapters/jax_adapter.py)" for op in ops}
    calls["attention"] = ("jax.nn.dot_product_attention (implementation='xla') for the output "
                          "(float32/float16/bfloat16; its softmax is float32, so float64 uses the port), "
                          "a jax.numpy softmax port for the weights")
    for op in ("attention.terms", "attention.pipeline", "attention.rope", "attention.alibi", "attention.t5",
               "attention.shaw", "attention.xl"):
        calls[op] = calls["attention"] + ", around the scheme's jax.numpy port"
    for op in ("resample.weights", "resample.table_1d", "resample.grid_2d"):
        calls[op] = ("jax.image.scale_and_translate ('cubic-pytorch' without antialias, 'cubic' with it, 'linear'; "
                     "align corners through scale and translation)")
    capabilities: dict[str, dict[str, tuple[Any, ...]]] = {op: {} for op in ops}
    capabilities["rope.inv_freq"] = {"rope_type": checks.INV_FREQ_TYPES}  # longrope: rope.longrope_inv_freq
    return _SupportsAdapter("jax-port", f"jax {jax.__version__}", dtype, ops, capabilities, calls, jax_port,
                            tuple(DTYPES))


ADAPTER = jax_port
JAX = jax_port
