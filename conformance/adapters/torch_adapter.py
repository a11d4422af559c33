"""PyTorch adapters: transformers and torch functions where they exist, and a torch port of other ops.

Library adapters (each runs the named third-party function; the adapter wires the case into it, and
where the library keeps an intermediate inside a method that returns only later results, the few
torch lines standing for that part are named in the footnotes):

==================== ===================== ========================================================= =================
adapter              op                    library function called                                   computes in
==================== ===================== ========================================================= =================
``DISTILBERT``       sinusoidal.table      ``transformers.models.distilbert.modeling_distilbert``     float32 [1]_
                                           ``.create_sinusoidal_embeddings``
``MARIAN``           sinusoidal.table      ``transformers.models.marian.modeling_marian``             float32 [1]_
                                           ``.MarianSinusoidalPositionalEmbedding.create_weight``
                                           then its ``forward(position_ids=...)``
``M2M100``           sinusoidal.fairseq    ``transformers.models.m2m_100.modeling_m2m_100``           float32 [2]_
                                           ``.M2M100SinusoidalPositionalEmbedding.forward(input_ids)``
                                           and its ``create_position_ids_from_input_ids``
``WHISPER``          sinusoidal.table      ``transformers.models.whisper.modeling_whisper.sinusoids`` float64, float32
``VITMAE_2D``        grid2d.sincos         ``transformers.models.vit_mae.modeling_vit_mae``           float64, float32
                                           ``.build_2d_sinusoidal_position_embedding``
``EMBEDDING``        learned.lookup        ``torch.nn.Embedding.from_pretrained(...)(rows)``         float64, float32,
                                                                                                     float16, bfloat16
``ROPE_INIT``        rope.inv_freq         ``LlamaRotaryEmbedding.compute_default_rope_parameters``  float32 [3]_
                                           (default); ``modeling_rope_utils.ROPE_INIT_FUNCTIONS``
                                           ``[rope_type]`` (linear, dynamic, yarn, llama3,
                                           proportional); softmax_scale: DeepSeek-V3
                                           ``yarn_apply_mscale``
``LONGROPE``         rope.longrope_inv_freq ``ROPE_INIT_FUNCTIONS["longrope"]``                      float32 [3]_
``LLAMA_ROPE``       rope.apply (half),    ``LlamaRotaryEmbedding.forward`` for cos/sin, then Llama   float32 [4]_
                     rope.cos_sin (full)   ``apply_rotary_pos_emb`` (``rotate_half``); GPT-NeoX
                                           ``apply_rotary_pos_emb`` for a partial prefix
``GPTJ_ROPE``        rope.apply            GPT-J ``create_sinusoidal_positions`` +                    float32
                     (interleaved)         ``apply_rotary_pos_emb`` (``rotate_every_two``)
``QWEN2VL_MROPE``    rope.mrope_cos_sin    ``Qwen2VLRotaryEmbedding.forward`` (its                     float32
                     (chunked)             ``recomposition_frequencies``), ``mrope_section`` from the
                                           case; width half = the first half of its table
``T5_BUCKET``        t5.bucket             ``T5Attention._relative_position_bucket``                  float32 logs,
                                                                                                     int64 out
``T5_BIAS``          t5.bias               ``T5Attention.compute_bias`` (``relative_attention_bias``  float64, float32
                                           = the case's table; one query at a time as
                                           ``past_seen_tokens``, keys ``0..max(k)`` gathered)
``DEBERTA_BUCKET``   deberta.bucket        DeBERTa-v2 ``make_log_bucket_position``                    float32 (whole
                                                                                                     numbers out)
``BLOOM_ALIBI``      alibi.slopes,         BLOOM ``build_alibi_tensor`` (slopes: its value at key     float32
                     alibi.bias (key_only), position 1; bias: on the left-padding mask that numbers
                     alibi.mask_positions  the keys; mask positions: one head, slope 2**-8, divided
                                           out exactly)
``MPT_ALIBI``        alibi.slopes          MPT ``build_mpt_alibi_tensor(alibi_bias_max=bias_max)``    float32
``SDPA``             attention             ``torch.nn.functional.scaled_dot_product_attention``       float64, float32,
                                           [5]_                                                      float16, bfloat16
``INTERPOLATE``      resample.*            ``torch.nn.functional.interpolate`` (bicubic, bilinear,    float64, float32
                                           ``antialias``, ``align_corners``, ``size`` or
                                           ``scale_factor``) [6]_
``VIT_INTERPOLATE``  resample.grid_2d      ViT ``ViTEmbeddings.interpolate_pos_encoding`` (square   float64, float32
                     (ViT settings)        grid, one CLS row, bicubic ``align_corners=False`` to a
                                           size, no antialias; other settings not_applicable)
``DEBERTA_SCORES``   deberta.scores        DeBERTa-v2 ``DisentangledSelfAttention``                   float32 [7]_
                     (distance_clamp none) ``.disentangled_attention_bias`` (``share_att_key``,
                                           ``pos_att_type``, ``scaled_size_sqrt``) on
                                           ``make_log_bucket_position`` relative positions
``SHAW_W2V_BERT``    shaw.index,           Wav2Vec2-BERT ``_apply_relative_key_position_encoding``    float64, float32
                     shaw.logits           (``relative_key``, left = right = K) [8]_
``REL_SHIFT``        transformer_xl        XLNet ``XLNetRelativeAttention.rel_shift_bnij`` (xlnet),   float64, float32,
                     .rel_shift            Parakeet ``ParakeetEncoderAttention._rel_shift``           float16, bfloat16
                                           (transformer_xl) [9]_
``XLNET``            transformer_xl.score, XLNet ``XLNetModel.relative_positional_encoding`` and      float32 [10]_
                     attention.xl          ``rel_shift_bnij`` (score); ``rel_attn_core`` (attention)
``EAGER_ATTENTION``  attention.rope,       Llama ``eager_attention_forward`` after Llama / GPT-J      float32 [11]_
                     attention.alibi,      rotary at each side's positions, BLOOM
                     attention.t5          ``build_alibi_tensor`` or T5 ``compute_bias``
``TORCH_LAYER``      attention.pipeline    ``torch.nn.Embedding``, ``torch.nn.Linear`` (no bias),     float64, float32,
                                           ``scaled_dot_product_attention`` (``is_causal``,           float16, bfloat16
                                           ``enable_gqa``)
==================== ===================== ========================================================= =================

.. [1] The table is built in float64 NumPy and copied through ``torch.FloatTensor``: every
   value is rounded to float32 whatever the weight's dtype, so the adapter says float32.
.. [2] ``get_embedding`` computes in float32 (``.float()``) and casts to the default dtype
   afterwards; with a float64 default the values are still float32 values, so float64 is not
   offered.
.. [3] Our parameters become a ``LlamaConfig`` (``head_dim = dim``, ``rope_parameters`` named as
   transformers names them; dynamic: ``max_position_embeddings = original_max_position`` and
   ``seq_len = context_length``; yarn/llama3: ``max_position_embeddings = factor *
   original_max_position``). transformers builds ``arange(0, d, 2).float() / d`` in float32, so
   the adapters say float32. They implement ``dynamic_convention="transformers"``,
   ``yarn_convention="transformers"`` and ``longrope_convention="transformers"``; ``ntk_aware``
   (no transformers type) and the vLLM conventions are not_applicable.
.. [4] ``LlamaRotaryEmbedding.forward`` computes cos/sin in float32 (autocast off) and returns
   them in the input dtype; q is given in float32. ``attention_factor`` is set as the module's
   ``attention_scaling`` (what a yarn/longrope init returns); ``rope.cos_sin`` sets the module's
   ``inv_freq`` to the case's frequencies (rounded to float32, as the buffer is).
.. [5] The case's boolean/additive ``mask``, ``key_padding_mask`` and ``bias`` become one
   ``attn_mask`` (SDPA adds it after the scale, as the reference adds its bias); ``causal``
   alone is ``is_causal=True`` (top-left) or ``torch.nn.attention.bias.causal_lower_right``
   (bottom-right, Tq <= Tk; for Tq > Tk, where that helper warns of NaN rows, the boolean
   lower-right mask); ``causal`` together with another mask is folded into the boolean mask;
   ``scale`` is SDPA's ``scale`` and grouped heads use ``enable_gqa``. The weights output is SDPA
   applied to identity values (``weights @ I``). A sliding ``window`` (no SDPA argument) and
   ``fully_masked`` other than ``"zeros"`` (torch >= 2.5 gives fully masked rows zeros) are
   not_applicable.
.. [6] One axis' weights are ``interpolate`` of unit impulses laid along the *width*: with a
   ``(N, C, n, 1)`` input and ``antialias=True`` (bicubic or bilinear), torch 2.13 CPU returns
   the first output row for every row (``arange(16.)`` reshaped ``(1, 1, 16, 1)`` to ``(7, 1)``
   gives seven copies of 0.6961; the same data along the width, or with width 2, gives
   0.6961 ... 14.3039), so the adapter never resamples along a height next to a width of 1.
   ``bicubic`` is ``a = -0.75`` without antialias and ``a = -0.5`` with it; other ``cubic_a``
   values are not_applicable.
.. [7] ``share_att_key=True``, ``hidden_size = 2 H D`` with ``attention_head_size = D``: row ``r``
   of ``rel_embeddings`` holds ``[Kr of every head | Qr of every head]`` and ``key_proj`` /
   ``query_proj`` are ``[I 0]`` / ``[0 I]`` with zero bias, so the positional layers are the
   case's ``pos_key`` and ``pos_query`` exactly. Queries and keys sit in one sequence of
   ``Tq + Tk`` slots at the case's positions (queries over zero keys, then keys over zero
   queries) and ``relative_pos`` is ``make_log_bucket_position`` of the slots' position
   differences, so ``Tq != Tk`` and arbitrary positions reach both terms (the library's own p2c
   gathers a ``(Tk, Tk)`` block: with ``Tq != Tk`` it raises a size mismatch when added to the
   ``(Tq, Tk)`` c2p term); the scores are the slots' query-by-key block. The content term is
   ``forward``'s ``bmm(q, k^T / scale)`` (``forward`` itself returns only the softmax).
   ``scaled_size_sqrt`` builds ``sqrt(d (1 + n))`` as a float32 tensor, so the adapter says
   float32. ``distance_clamp="max_relative_positions"`` is
   not_applicable (``make_log_bucket_position`` has no distance clamp).
.. [8] ``_apply_relative_key_position_encoding(module, query, key)`` numbers queries ``0..Tq-1``
   and keys ``0..Tk-1``, ``clip(j - i, -left, right) + left``: query ``i`` sits alone in batch
   ``i`` at row ``q_positions[i]`` over keys ``0..max(k_positions)``, and the case's entries are
   gathered. ``module.scaling = 1`` (the op is unscaled). ``sign="query_minus_key"`` reads row
   ``clip(i - j) + K = 2K - (clip(j - i) + K)``: the table flipped. ``shaw.index`` runs it on a
   one-column table of row numbers with queries of 1; ``shaw.logits`` adds ``q @ k.T`` (which the
   module leaves to its attention function). ``shaw.output`` is not offered: ``relative_key``
   has no relative value term.
.. [9] Both shifts only move entries; ``valid`` is the same shift applied to each entry's label
   ``1 + i R + c`` (0 = the padding column, exact in float64): an entry is direct where it came
   from its own row and its column's row distance is ``m + i - j``.
.. [10] ``relative_positional_encoding`` builds its frequencies and distances in float32
   (``.float()``), ``attn_type="bi"`` (rows ``klen .. 1 - qlen``), ``clamp_len`` as XLNet's, base
   10000 only. XLNet numbers a segment of ``qlen`` queries after ``klen - qlen`` memory keys:
   the queries sit at rows ``q_positions - min(q_positions)`` of a segment ending at
   ``max(k_positions)``, the keys at rows ``k_positions`` (zeros elsewhere; for the score one
   query per batch row, for attention the empty slots are masked). Score: ``rel_attn_core``
   returns only the softmax, so its two einsums (``ac`` with ``r_w_bias = u``, ``bd`` with
   ``r_r_bias = v``) and the forward's ``r`` projection are written here around the library's
   ``rel_shift_bnij``. Attention: ``rel_attn_core`` itself (``output_attentions``), ``W_R`` as
   the ``(D_r, H, D)`` projection of the rows, ``scale`` as ``layer.scale``, the causal mask as
   its ``attn_mask``; kv heads are repeated (XLNet has no grouped heads).
.. [11] ``eager_attention_forward`` takes its softmax in float32 (``dtype=torch.float32``), so the
   adapter says float32; the scheme's bias and the causal mask (0 or ``-inf``, the case's
   alignment) are its ``attention_mask``, ``scaling`` is the case's scale times
   ``softmax_multiplier``. RoPE: q and k rotated at their own positions (Llama ``rotate_half``;
   ``layout="interleaved"`` through GPT-J, base 10000 only). ALiBi: BLOOM's ``m_h p_j`` (the key
   positions must be BLOOM mask positions, ``0..Tk-1`` after left padding) differs from
   ``relative_causal``'s ``-m_h (p_i - p_j)`` by ``m_h p_i`` per row, which softmax cancels;
   ``form="symmetric"`` is not_applicable. T5: ``compute_bias`` as in ``T5_BIAS``.

The library functions build a table for rows ``0..n-1`` (or a grid from ``arange``); the
adapter asks for ``n = max(row) + 1`` rows and gathers the requested rows with torch indexing.
For the 2-D helper it builds a ``H x 1`` and a ``1 x W`` grid and takes the y half of one and
the x half of the other (the helper's halves depend on one axis each), so arbitrary coordinates
are covered. Preconditions the libraries do not check are checked by the adapters' wrapper
(:mod:`posenc_adapter_shared`); ``M2M100`` and ``EMBEDDING`` get no wrapper checks beyond
integer input, so their own behaviour on bad input is what the corpus sees (see
``torch_library.toml``).

Preconditions the new-op library functions do not check (odd widths, unknown conventions,
missing parameters, empty or mismatched shapes) are checked by each adapter's wrapper in this
file before the library is called; what the library itself accepts or refuses beyond that is in
``torch_library.toml``.

Port adapter ``TORCH``: a torch port of the absolute ops, ``rope.apply``, ``rope.cos_sin``,
``rope.scores`` (xPos weighting included), ``rope.xpos``, ``t5.bucket``, ``t5.bias``,
``deberta.bucket``, ``deberta.index``, ``deberta.scores``, ``alibi.slopes``, ``alibi.bias``,
``alibi.mask_positions``, ``shaw.index``, ``shaw.logits``, ``shaw.output``,
``transformer_xl.score``, ``transformer_xl.rel_shift``, ``attention``, ``attention.terms``,
``attention.pipeline`` and ``attention`` with RoPE, ALiBi, T5, Shaw and Transformer-XL plugged in
(``attention.rope`` ... ``attention.xl``: the scheme's torch port feeding the one
:func:`port_attention`), every convention of each (float64, float32; float16 and bfloat16
computed in float32 and rounded once at the end, as frameworks do). Inputs of the relative and
attention ops are checked by :mod:`posenc_adapter_checks`.

Run::

    posenc-ref conformance conformance/adapters/torch_adapter.py:WHISPER --dtype float64 \\
        --expectations conformance/adapters/torch_library.toml
    posenc-ref conformance conformance/adapters/torch_adapter.py:TORCH --dtype bfloat16

(the torch port passes every case of the ops it declares and takes no expectations file).

Needs ``pip install 'posenc-ref[torch]'`` (torch and transformers).
"""

from __future__ import annotations

import contextlib
import math
import sys
import warnings
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np

if str(Path(__file__).resolve().parent) not in sys.path:  # the shared helpers live next to this file
    sys.path.insert(0, str(Path(__file__).resolve().parent))
import posenc_adapter_checks as checks  # noqa: E402
from posenc_adapter_shared import (  # noqa: E402
    Adapter,
    Rejected,
    base_value,
    choice,
    integer,
    positions,
    require,
    validate_fairseq,
    validate_grid,
    validate_lookup,
    validate_table,
)

torch = require("torch", "torch")

TORCH_DTYPES = {"float64": torch.float64, "float32": torch.float32, "float16": torch.float16,
                "bfloat16": torch.bfloat16}


def _numpy(tensor: Any) -> np.ndarray:
    """A tensor as NumPy; bfloat16 goes through float32 (exact)."""
    tensor = tensor.detach()
    if tensor.dtype == torch.bfloat16:
        tensor = tensor.to(torch.float32)
    return tensor.numpy()


@contextlib.contextmanager
def default_dtype(dtype: Any) -> Iterator[None]:
    """``torch.set_default_dtype`` for the duration of a call."""
    previous = torch.get_default_dtype()
    torch.set_default_dtype(dtype)
    try:
        yield
    finally:
        torch.set_default_dtype(previous)


def _gather(table: Any, rows: np.ndarray) -> Any:
    """Rows of a (N, D) table for int64 ``rows`` of any shape: (*rows.shape, D)."""
    return table[torch.from_numpy(rows)]


# ----------------------------------------------------------------------------- transformers ---

def _transformers(module: str) -> Any:
    return require(f"transformers.models.{module}", "torch")


def _distilbert(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray]) -> np.ndarray:
    rows, p = validate_table(params, inputs)
    create = _transformers("distilbert.modeling_distilbert").create_sinusoidal_embeddings
    n_pos = int(rows.max()) + 1
    out = torch.empty(n_pos, p["dim"], dtype=torch.float32)
    create(n_pos, p["dim"], out)
    return _numpy(_gather(out, rows))


def _marian(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray]) -> np.ndarray:
    rows, p = validate_table(params, inputs)
    module = _transformers("marian.modeling_marian").MarianSinusoidalPositionalEmbedding(int(rows.max()) + 1,
                                                                                         p["dim"])
    with torch.no_grad():
        module.weight.copy_(module.create_weight())  # what MarianPreTrainedModel._init_weights does
        out = module(None, position_ids=torch.from_numpy(rows))
    return _numpy(out)


def _m2m100(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    tokens = torch.from_numpy(positions("tokens", inputs["tokens"]))
    padding_idx, past = integer("padding_idx", params["padding_idx"], 0), integer("past_length",
                                                                                  params["past_length"], 0)
    cls = _transformers("m2m_100.modeling_m2m_100").M2M100SinusoidalPositionalEmbedding
    module = cls(tokens.shape[-1] + past, int(params["dim"]), padding_idx)
    embedding = module(tokens, None, past)  # positional: the keyword is past_key_values_length or cache_length
    rows = cls.create_position_ids_from_input_ids(tokens, padding_idx, past)
    return _numpy(rows), _numpy(embedding)


def _whisper(compute: Any) -> Any:
    def run(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray]) -> np.ndarray:
        rows, p = validate_table(params, inputs)
        sinusoids = _transformers("whisper.modeling_whisper").sinusoids
        with default_dtype(compute):  # sinusoids builds in the default dtype
            table = sinusoids(int(rows.max()) + 1, p["dim"], max_timescale=p["base"])
        if table.dtype != compute:
            raise RuntimeError(f"sinusoids returned {table.dtype}, expected {compute}")
        return _numpy(_gather(table, rows))
    return run


def _vitmae_2d(compute: Any) -> Any:
    def run(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray]) -> np.ndarray:
        ys, xs = validate_grid(params, inputs)
        build = _transformers("vit_mae.modeling_vit_mae").build_2d_sinusoidal_position_embedding
        dim, half = int(params["dim"]), int(params["dim"]) // 2
        by_y = build(int(ys.max()) + 1, 1, embed_dim=dim, temperature=params["base"], dtype=compute)  # row = y
        by_x = build(1, int(xs.max()) + 1, embed_dim=dim, temperature=params["base"], dtype=compute)  # row = x
        return _numpy(torch.cat([_gather(by_y, ys)[..., :half], _gather(by_x, xs)[..., half:]], dim=-1))
    return run


def _embedding(compute: Any) -> Any:
    def run(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray]) -> np.ndarray:
        table, rows = validate_lookup(params, inputs, check_rows=False)
        layer = torch.nn.Embedding.from_pretrained(torch.from_numpy(table).to(compute))
        with torch.no_grad():
            return _numpy(layer(torch.from_numpy(rows)))
    return run


def _version() -> str:
    transformers = require("transformers", "torch")
    return f"torch {torch.__version__}, transformers {transformers.__version__}"


_TABLE_ANY_POSITION = {"scale": (1.0,), "base": (10000.0,)}


def _library(name: str, op: str, call: str, dtype: str, dtypes: tuple[str, ...], fn: Any,
             caps: Mapping[str, tuple[Any, ...]]) -> Adapter:
    compute = TORCH_DTYPES[dtype]

    def make(d: str) -> Adapter:
        return _library(name, op, call, d, dtypes, fn, caps)
    return Adapter(name, _version(), dtype, {op: fn(compute)}, {op: caps}, {op: call}, make, dtypes)


def _fixed(fn: Any) -> Any:
    """An op function that does not depend on the compute dtype."""
    return lambda compute: fn


def distilbert() -> Adapter:
    return _library("transformers-distilbert", "sinusoidal.table",
                    "transformers DistilBERT create_sinusoidal_embeddings", "float32", ("float32",),
                    _fixed(_distilbert),
                    {"ladder": ("paper",), "layout": ("interleaved",), "odd_width": ("error", "sin_gets_extra"),
                     **_TABLE_ANY_POSITION})


def marian() -> Adapter:
    return _library("transformers-marian", "sinusoidal.table",
                    "transformers MarianSinusoidalPositionalEmbedding.create_weight + forward", "float32",
                    ("float32",), _fixed(_marian),
                    {"ladder": ("paper",), "layout": ("concat_sin_cos",), "odd_width": ("error", "sin_gets_extra"),
                     **_TABLE_ANY_POSITION})


def m2m100() -> Adapter:
    return _library("transformers-m2m100", "sinusoidal.fairseq",
                    "transformers M2M100SinusoidalPositionalEmbedding.forward + create_position_ids_from_input_ids",
                    "float32", ("float32",), _fixed(_m2m100), {"base": (10000.0,)})


def whisper(dtype: str = "float64") -> Adapter:
    return _library("transformers-whisper", "sinusoidal.table", "transformers Whisper sinusoids", dtype,
                    ("float64", "float32"), _whisper,
                    {"ladder": ("t2t",), "layout": ("concat_sin_cos",), "odd_width": ("error",), "scale": (1.0,)})


def vitmae_2d(dtype: str = "float64") -> Adapter:
    return _library("transformers-vit-mae-2d", "grid2d.sincos",
                    "transformers ViT-MAE build_2d_sinusoidal_position_embedding", dtype, ("float64", "float32"),
                    _vitmae_2d, {"axis_order": ("y_first",), "block_layout": ("sin_cos",), "ladder": ("paper",)})


def embedding(dtype: str = "float64") -> Adapter:
    return _library("torch-nn-embedding", "learned.lookup", "torch.nn.Embedding.from_pretrained(table)(rows)", dtype,
                    tuple(TORCH_DTYPES), _embedding, {"out_of_range": ("error",)})


# ------------------------------------------------------- transformers RoPE, T5, ALiBi, DeBERTa ---

def _invalid(message: str) -> Rejected:
    return Rejected("invalid_argument", message)


def _shape(message: str) -> Rejected:
    return Rejected("invalid_shape", message)


def _finite_float(name: str, value: Any, *, positive: bool = False, minimum: float | None = None) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise _invalid(f"{name} must be a number, got {value!r}")
    number = float(value)
    if not np.isfinite(number) or (positive and number <= 0) or (minimum is not None and number < minimum):
        bound = "> 0" if positive else f">= {minimum}" if minimum is not None else "finite"
        raise _invalid(f"{name} must be finite and {bound}, got {value!r}")
    return number


def _required(p: Mapping[str, Any], name: str, hf_name: str) -> Any:
    if p.get(name) is None:
        raise _invalid(f"rope_type={p['rope_type']!r} needs {name} ({hf_name} in transformers' rope_parameters)")
    return p[name]


ROPE_INIT_TYPES = ("default", "linear", "dynamic", "yarn", "llama3", "proportional")


def _rope_parameters(p: Mapping[str, Any]) -> tuple[dict[str, Any], int, int | None]:
    """Our ``rope.inv_freq`` parameters as transformers ``rope_parameters``, the head_dim and ``seq_len``.

    The wrapper's checks (transformers' init functions validate nothing): even ``dim``, a known
    type, required parameters present, ``factor >= 1`` (linear, dynamic, yarn, llama3),
    ``low_freq_factor < high_freq_factor``, ``0 < partial_rotary_factor <= 1``, ``base > 0``.
    transformers' dynamic bracket uses ``max(context_length, M)`` and is always >= 1.
    """
    rope_type = choice("rope_type", p["rope_type"], ROPE_INIT_TYPES + ("ntk_aware", "longrope"))
    dim = integer("dim", p["dim"], 2)
    if dim % 2:
        raise _invalid(f"dim must be even, got {dim}")
    base = base_value(p["base"])
    out: dict[str, Any] = {"rope_type": rope_type, "rope_theta": base}
    rho = _finite_float("partial_rotary_factor", p["partial_rotary_factor"], positive=True)
    if rho > 1:
        raise _invalid(f"partial_rotary_factor must be in (0, 1], got {rho}")
    seq_len = None
    if rope_type in ("linear", "dynamic", "yarn", "llama3"):
        factor = _finite_float("factor", _required(p, "factor", "factor"), minimum=1.0)
        out["factor"] = factor
    if rope_type == "proportional":
        out["partial_rotary_factor"] = rho
        if p.get("factor") is not None:
            out["factor"] = _finite_float("factor", p["factor"], positive=True)
    if rope_type in ("dynamic", "yarn", "llama3"):
        out["original_max_position_embeddings"] = integer(
            "original_max_position", _required(p, "original_max_position", "original_max_position_embeddings"), 1)
    if rope_type == "dynamic":
        seq_len = integer("context_length", _required(p, "context_length", "max(position_ids) + 1"), 1)
    if rope_type == "yarn":
        for name in ("beta_fast", "beta_slow", "mscale", "mscale_all_dim", "attention_factor"):
            if p.get(name) is not None:
                out[name] = _finite_float(name, p[name])
        out["truncate"] = bool(p["truncate"])
    if rope_type == "llama3":
        low = _finite_float("low_freq_factor", _required(p, "low_freq_factor", "low_freq_factor"), positive=True)
        high = _finite_float("high_freq_factor", _required(p, "high_freq_factor", "high_freq_factor"), positive=True)
        if low >= high:
            raise _invalid(f"low_freq_factor must be < high_freq_factor, got {low} and {high}")
        out.update(low_freq_factor=low, high_freq_factor=high)
    return out, dim, seq_len


def _llama_config(rope_parameters: Mapping[str, Any], head_dim: int, max_position: int) -> Any:
    config_cls = require("transformers", "torch").LlamaConfig
    return config_cls(hidden_size=head_dim, num_attention_heads=1, num_key_value_heads=1, head_dim=head_dim,
                      max_position_embeddings=max_position, rope_parameters=dict(rope_parameters))


def _rope_init(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray]) -> tuple[np.ndarray, ...]:
    rope_parameters, dim, seq_len = _rope_parameters(params)
    rope_type = rope_parameters["rope_type"]
    trained = rope_parameters.get("original_max_position_embeddings", 4096)
    if rope_type == "dynamic":  # transformers' dynamic M is max_position_embeddings
        rope_parameters.pop("original_max_position_embeddings")
    # yarn and llama3: max_position_embeddings = factor * original, as their configs have it
    max_position = int(round(rope_parameters["factor"] * trained)) if rope_type in ("yarn", "llama3") else trained
    config = _llama_config(rope_parameters, dim, max_position)
    if rope_type == "default":
        llama = _transformers("llama.modeling_llama")
        inv_freq, attention_factor = llama.LlamaRotaryEmbedding.compute_default_rope_parameters(config)
    else:
        init = require("transformers.modeling_rope_utils", "torch").ROPE_INIT_FUNCTIONS[rope_type]
        inv_freq, attention_factor = init(config, None, seq_len)
    mscale = 1.0  # DeepSeek-V3's attention multiplies its softmax scale for yarn only
    if rope_type == "yarn":
        mscale = _transformers("deepseek_v3.modeling_deepseek_v3").yarn_apply_mscale(config.rope_parameters, 1.0)
    return (_numpy(inv_freq), np.array([float(attention_factor)]), np.array([float(mscale)]))


def _rope_x(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray],
            layouts: tuple[str, ...]) -> tuple[np.ndarray, np.ndarray, int]:
    """``rope.apply``'s wrapper checks: x (B, H, T, D) as BHTD, positions (B, T), rotary_dim."""
    choice("layout", params["layout"], ("half", "interleaved", "interleaved_to_half"))
    x_layout = choice("x_layout", params["x_layout"], ("BHTD", "BTHD"))
    choice("partial", params["partial"], ("prefix", "proportional"))
    _finite_float("attention_factor", params["attention_factor"], positive=True)
    base_value(params["base"])
    x = np.asarray(inputs["x"], dtype=np.float64)
    if x.ndim != 4:
        raise _shape(f"x must be (B, H, T, D) or (B, T, H, D), got shape {x.shape}")
    if not np.all(np.isfinite(x)):
        raise _invalid("x must be finite")
    if x_layout == "BTHD":
        x = x.transpose(0, 2, 1, 3)
    d = x.shape[-1]
    if d % 2:
        raise _invalid(f"the head width must be even, got {d}")
    rotary = d if params.get("rotary_dim") is None else integer("rotary_dim", params["rotary_dim"], 2)
    if rotary % 2 or rotary > d:
        raise _invalid(f"rotary_dim must be even and <= {d}, got {rotary}")
    pos = positions("positions", inputs["positions"])
    if pos.shape[-1] != x.shape[2] or pos.ndim > 2 or (pos.ndim == 2 and pos.shape[0] != x.shape[0]):
        raise _shape(f"positions must be (T,) or (B, T) with T={x.shape[2]}, got {pos.shape}")
    choice("layout", params["layout"], layouts)  # a layout the library does not rotate in, after the checks
    return x, np.broadcast_to(pos, (x.shape[0], x.shape[2])), rotary


def _back(y: Any, x_layout: str) -> np.ndarray:
    return _numpy(y.transpose(1, 2) if x_layout == "BTHD" else y)


def _llama_apply(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray]) -> np.ndarray:
    x, pos, rotary = _rope_x(params, inputs, ("half",))
    llama = _transformers("llama.modeling_llama")
    config = _llama_config({"rope_type": "default", "rope_theta": base_value(params["base"])}, rotary, 4096)
    embedding = llama.LlamaRotaryEmbedding(config)
    embedding.attention_scaling = float(params["attention_factor"])  # what a yarn init sets
    xt = torch.from_numpy(x).to(torch.float32)
    with torch.no_grad():
        cos, sin = embedding(xt, torch.from_numpy(np.array(pos)))  # (B, T, rotary), float32
        if rotary == x.shape[-1]:
            y, _ = llama.apply_rotary_pos_emb(xt, xt, cos, sin)
        else:  # GPT-NeoX rotates the prefix cos.shape[-1] and passes the rest through
            y, _ = _transformers("gpt_neox.modeling_gpt_neox").apply_rotary_pos_emb(xt, xt, cos, sin)
    return _back(y, params["x_layout"])


def _gptj_apply(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray]) -> np.ndarray:
    x, pos, rotary = _rope_x(params, inputs, ("interleaved",))
    gptj = _transformers("gptj.modeling_gptj")
    table = gptj.create_sinusoidal_positions(int(pos.max()) + 1, rotary)  # (N, rotary): [sin | cos], base 10^4
    sincos = table[torch.from_numpy(np.array(pos))]  # (B, T, rotary)
    sin, cos = torch.split(sincos, rotary // 2, dim=-1)
    xt = torch.from_numpy(x).to(torch.float32).transpose(1, 2)  # GPT-J rotates (B, T, H, D)
    with torch.no_grad():
        y = torch.cat([gptj.apply_rotary_pos_emb(xt[..., :rotary], sin, cos), xt[..., rotary:]], dim=-1)
    return _back(y.transpose(1, 2), params["x_layout"])


def _llama_cos_sin(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    choice("width", params["width"], ("half", "full", "full_interleaved"))
    factor = _finite_float("attention_factor", params["attention_factor"], positive=True)
    inv_freq = np.asarray(inputs["inv_freq"], dtype=np.float64)
    if inv_freq.ndim != 1 or inv_freq.size == 0:
        raise _shape(f"inv_freq must be a non-empty (P,) array, got shape {inv_freq.shape}")
    pos = positions("positions", inputs["positions"])
    llama = _transformers("llama.modeling_llama")
    embedding = llama.LlamaRotaryEmbedding(_llama_config({"rope_type": "default", "rope_theta": 10000.0},
                                                         2 * inv_freq.size, 4096))
    embedding.inv_freq = torch.from_numpy(inv_freq).to(torch.float32)  # the frequencies under test
    embedding.attention_scaling = factor
    flat = torch.from_numpy(pos.reshape(1, -1))
    with torch.no_grad():
        cos, sin = embedding(torch.zeros(1, dtype=torch.float32), flat)  # (1, N, 2P) = [freqs | freqs]
    shape = pos.shape + (2 * inv_freq.size,)
    return _numpy(cos.reshape(shape)), _numpy(sin.reshape(shape))


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


def _qwen2vl_mrope(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    width = choice("width", params["width"], ("half", "full"))
    choice("mrope_layout", params["mrope_layout"], ("chunked", "interleaved"))
    dim = integer("dim", params["dim"], 2)
    base = base_value(params["base"])
    section = positions("mrope_section", inputs["mrope_section"]).tolist()
    if dim % 2 or len(section) != 3 or sum(section) != dim // 2:
        raise _invalid(f"need an even dim and three mrope_section entries summing to dim/2, got {dim} and {section}")
    pos = positions("positions", inputs["positions"])
    if pos.ndim != 2 or pos.shape[0] != 3:
        raise _shape(f"positions must be (3, T): temporal, height, width streams, got {pos.shape}")
    choice("mrope_layout", params["mrope_layout"], ("chunked",))  # Qwen2-VL's layout, after the checks
    qwen2vl = _transformers("qwen2_vl.modeling_qwen2_vl")
    config = qwen2vl.Qwen2VLTextConfig(hidden_size=dim, num_attention_heads=1, num_key_value_heads=1,
                                       rope_parameters={"rope_type": "default", "rope_theta": base,
                                                        "mrope_section": section})
    rotary = qwen2vl.Qwen2VLRotaryEmbedding(config)
    with torch.no_grad():
        cos, sin = rotary(torch.zeros(1, dtype=torch.float32), torch.from_numpy(pos)[:, None, :])  # (1, T, dim)
    if width == "half":
        cos, sin = cos[..., : dim // 2], sin[..., : dim // 2]
    return _numpy(cos[0]), _numpy(sin[0])


def _deberta_bucket(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray]) -> np.ndarray:
    choice("distance_clamp", params["distance_clamp"], ("none",))
    buckets = integer("position_buckets", params["position_buckets"], 1)
    max_position = integer("max_relative_positions", params["max_relative_positions"], 1)
    if buckets // 2 < 2 or max_position - 1 <= buckets // 2:  # log((max_position - 1) / mid) divides
        raise _invalid(f"need position_buckets // 2 >= 2 and max_relative_positions - 1 > position_buckets // 2, "
                       f"got {buckets} and {max_position}")
    rel = positions("relative_positions", inputs["relative_positions"], nonnegative=False)
    return _numpy(_deberta_v2().make_log_bucket_position(torch.from_numpy(rel), buckets, max_position))


def _deberta_v2() -> Any:
    with warnings.catch_warnings():  # the module decorates helpers with torch.jit.script, deprecated in torch 2.13
        warnings.filterwarnings("ignore", "`torch.jit.script` is deprecated", DeprecationWarning)
        return _transformers("deberta_v2.modeling_deberta_v2")


def _alibi_slopes_check(params: Mapping[str, Any]) -> int:
    choice("slope_rule", params["slope_rule"], ("press", "geometric"))
    _finite_float("bias_max", params["bias_max"], positive=True)
    return integer("num_heads", params["num_heads"], 1)


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
    mask = np.asarray(inputs["attention_mask"])
    if mask.ndim != 2 or mask.size == 0:
        raise _shape(f"attention_mask must be a non-empty (B, T) array, got shape {mask.shape}")
    if not np.all((mask == 0) | (mask == 1)):
        raise _invalid("attention_mask must hold 0 and 1 only")
    bloom = _transformers("bloom.modeling_bloom")
    # one head: slope 2**-8 exactly, so alibi / slope is the position BLOOM multiplies (exact in float64)
    alibi = bloom.build_alibi_tensor(torch.from_numpy(mask.astype(np.int64)), 1, torch.float64)  # (B, 1, T)
    return _numpy(torch.round(alibi[:, 0, :] * 2.0 ** 8).to(torch.int64))


def _longrope(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    dim = integer("dim", params["dim"], 2)
    if dim % 2:
        raise _invalid(f"dim must be even, got {dim}")
    short, long = (np.asarray(inputs[n], dtype=np.float64) for n in ("short_factor", "long_factor"))
    if short.shape != (dim // 2,) or long.shape != (dim // 2,):
        raise _invalid(f"short_factor and long_factor must have length dim/2 = {dim // 2}, "
                       f"got {short.shape}, {long.shape}")
    trained = integer("original_max_position", params["original_max_position"], 1)
    rope_parameters: dict[str, Any] = {
        "rope_type": "longrope", "rope_theta": base_value(params["base"]), "short_factor": short.tolist(),
        "long_factor": long.tolist(), "original_max_position_embeddings": trained,
        "factor": _finite_float("factor", params["factor"], positive=True)}
    if params["attention_factor"] is not None:
        rope_parameters["attention_factor"] = _finite_float("attention_factor", params["attention_factor"],
                                                            positive=True)
    seq_len = integer("context_length", params["context_length"], 1)
    config = _llama_config(rope_parameters, dim, max(int(rope_parameters["factor"] * trained), 1))
    init = require("transformers.modeling_rope_utils", "torch").ROPE_INIT_FUNCTIONS["longrope"]
    inv_freq, attention_factor = init(config, None, seq_len)
    return _numpy(inv_freq), np.array([float(attention_factor)])


def _bloom_bias(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray]) -> np.ndarray:
    heads = _alibi_slopes_check(params)
    choice("form", params["form"], ("relative_causal", "key_only", "symmetric", "bottom_right"))
    q = positions("query_positions", inputs["query_positions"])
    k = positions("key_positions", inputs["key_positions"])
    if k.shape[:-1] != q.shape[:-1] or q.ndim > 2:
        raise _shape(f"query_positions and key_positions must agree on the batch, got {q.shape} and {k.shape}")
    choice("form", params["form"], ("key_only",))
    masks = _bloom_key_masks(k)  # BLOOM numbers keys (cumsum(mask) - 1) * mask
    bloom = _transformers("bloom.modeling_bloom")
    alibi = bloom.build_alibi_tensor(torch.from_numpy(masks), heads, torch.float32)  # (B*H, 1, Tk)
    bias = alibi.reshape(len(masks), heads, 1, k.shape[-1]).expand(-1, -1, q.shape[-1], -1)
    return _numpy(bias.reshape(k.shape[:-1] + (heads, q.shape[-1], k.shape[-1])))


def _interpolate_mode(params: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    """``F.interpolate`` mode and keywords for the case's kernel/antialias/coordinates."""
    kernel = choice("kernel", params["kernel"], ("bicubic", "bilinear"))
    antialias = choice("antialias", params["antialias"], ("off", "on")) == "on"
    aligned = choice("coordinates", params["coordinates"], ("half_pixel", "align_corners")) == "align_corners"
    size_from = choice("size_from", params["size_from"], ("size", "scale_factor"))
    offset = _finite_float("scale_offset", params["scale_offset"])
    if size_from == "size" and offset != 0:
        raise _invalid(f"scale_offset applies to size_from='scale_factor' only, got {offset}")
    return kernel, {"antialias": antialias, "align_corners": aligned}


def _interpolate(table: Any, sizes: tuple[int, ...], new: tuple[int, ...], params: Mapping[str, Any],
                 compute: Any) -> Any:
    """``(1, C, *sizes)`` -> ``F.interpolate`` to ``new`` (or by the DINO scale factors)."""
    mode, kwargs = _interpolate_mode(params)
    for size in new:
        integer("new size", size, 1)
    if params["size_from"] == "scale_factor":  # a 1-D table's dummy height axis keeps factor 1
        factors = tuple(1.0 if n == m == 1 else (m + float(params["scale_offset"])) / n for m, n in zip(new, sizes))
        kwargs["scale_factor"] = factors
    else:
        kwargs["size"] = new
    return torch.nn.functional.interpolate(table.to(compute), mode=mode, **kwargs)


def _resample_supports(op: str, params: Mapping[str, Any]) -> bool | str:
    if op not in ("resample.weights", "resample.table_1d", "resample.grid_2d"):
        return f"{op} not supported"
    if params.get("antialias") == "on" and params.get("coordinates") == "align_corners":
        return True  # invalid whatever a is: run it, so the library's answer is judged
    if params.get("kernel") == "bicubic" and params.get("antialias") in ("off", "on"):
        expected = -0.5 if params["antialias"] == "on" else -0.75
        if params.get("cubic_a") != expected:
            return f"F.interpolate bicubic uses a = {expected} with antialias={params['antialias'] == 'on'}"
    return True


def _resample(compute: Any) -> dict[str, Any]:
    def weights(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray]) -> np.ndarray:
        n = integer("in_size", params["in_size"], 1)
        m = integer("new_size", params["new_size"], 1)
        # channel c = unit impulse at sample c, along the width: (1, n, 1, n) -> (1, n, 1, m) holds W^T
        eye = torch.eye(n, dtype=torch.float64).reshape(1, n, 1, n)
        out = _interpolate(eye, (1, n), (1, m), params, compute)
        return _numpy(out[0, :, 0, :].T)

    def table_1d(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray]) -> np.ndarray:
        table = np.asarray(inputs["table"], dtype=np.float64)
        prefix = integer("num_prefix_tokens", params["num_prefix_tokens"], 0)
        m = integer("new_length", params["new_length"], 1)
        if table.ndim != 2 or table.shape[0] <= prefix:
            raise _shape(f"table must be (prefix + n, D) with n >= 1, got shape {table.shape}")
        rows = torch.from_numpy(table[prefix:].T.copy()).reshape(1, table.shape[1], 1, -1)  # along the width
        out = _interpolate(rows, (1, rows.shape[3]), (1, m), params, compute)[0, :, 0, :].T
        return _numpy(torch.cat([torch.from_numpy(table[:prefix]).to(compute), out], dim=0))

    def grid_2d(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray]) -> np.ndarray:
        table = np.asarray(inputs["table"], dtype=np.float64)
        prefix = integer("num_prefix_tokens", params["num_prefix_tokens"], 0)
        h, w = integer("grid_height", params["grid_height"], 1), integer("grid_width", params["grid_width"], 1)
        new = (integer("new_height", params["new_height"], 1), integer("new_width", params["new_width"], 1))
        if table.ndim != 2 or table.shape[0] != prefix + h * w:
            raise _shape(f"table must be (prefix + H*W, D) = ({prefix + h * w}, D), got shape {table.shape}")
        grid = torch.from_numpy(table[prefix:].T.copy()).reshape(1, table.shape[1], h, w)
        out = _interpolate(grid, (h, w), new, params, compute)  # (1, D, H', W')
        rows = out[0].reshape(table.shape[1], -1).T
        return _numpy(torch.cat([torch.from_numpy(table[:prefix]).to(compute), rows], dim=0))

    return {"resample.weights": weights, "resample.table_1d": table_1d, "resample.grid_2d": grid_2d}


def _sdpa_weights_and_output(q: Any, k: Any, v: Any, **kwargs: Any) -> tuple[Any, Any]:
    """SDPA's output, and its weights as SDPA applied to identity values (weights @ I = weights)."""
    sdpa = torch.nn.functional.scaled_dot_product_attention
    eye = torch.eye(k.shape[-2], dtype=k.dtype).expand(k.shape[0], k.shape[1], -1, -1)
    return sdpa(q, k, v, **kwargs), sdpa(q, k, eye, **kwargs)


def _sdpa(compute: Any) -> Any:
    def run(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        q, k, v = (np.asarray(inputs[n], dtype=np.float64) for n in ("q", "k", "v"))
        if q.ndim != 4 or k.ndim != 4 or v.ndim != 4:
            raise _shape(f"q, k, v must be rank 4, got {q.shape}, {k.shape}, {v.shape}")
        b, h, tq, d = q.shape
        if k.shape[0] != b or k.shape[-1] != d or v.shape[:3] != k.shape[:3] or h % k.shape[1]:
            raise _shape(f"q {q.shape}, k {k.shape}, v {v.shape}: need equal B and D and H % Hkv == 0")
        tk = k.shape[2]
        alignment = choice("alignment", params["alignment"], ("top_left", "bottom_right"))
        choice("fully_masked", params["fully_masked"], ("zeros", "nan", "uniform", "error"))
        if params["window"] is not None:
            integer("window", params["window"], 1)
        mask, padding, bias = inputs["mask"], np.asarray(inputs["key_padding_mask"]), np.asarray(inputs["bias"])
        if padding.shape[-1] != tk:
            raise _shape(f"key_padding_mask must have length Tk={tk}, got {padding.shape}")
        try:
            np.broadcast_shapes(np.shape(mask), (b, h, tq, tk))
            np.broadcast_shapes(bias.shape, (b, h, tq, tk))
        except ValueError as exc:
            raise _shape(f"mask and bias must broadcast to {(b, h, tq, tk)}: {exc}") from exc
        # one additive attn_mask: SDPA adds it after the scale, as the reference adds its bias
        allowed = np.broadcast_to(padding[:, None, None, :], (b, 1, tq, tk)).astype(bool)
        additive = np.broadcast_to(bias, (b, h, tq, tk)).astype(np.float64)
        mask = np.asarray(mask)
        if mask.dtype == np.bool_:
            allowed = allowed & mask
        else:
            additive = additive + mask
        # SDPA's scale is the whole softmax scale: the reference's scale times softmax_multiplier
        base_scale = 1.0 / math.sqrt(d) if params["scale"] is None else float(params["scale"])
        kwargs: dict[str, Any] = {"scale": base_scale * float(params.get("softmax_multiplier", 1.0)),
                                  "enable_gqa": h != k.shape[1]}
        neutral = bool(allowed.all()) and not additive.any()
        if params["causal"] and not neutral:
            allowed = allowed & np.tril(np.ones((tq, tk), dtype=bool), k=tk - tq if alignment == "bottom_right" else 0)
            neutral = False
        if params["fully_masked"] == "error" and not np.broadcast_to(allowed, (b, h, tq, tk)).any(-1).all():
            raise _invalid("a query row has every key masked")
        if params["causal"] and neutral and alignment == "top_left":
            kwargs["is_causal"] = True
        elif params["causal"] and neutral and tq <= tk:
            kwargs["attn_mask"] = require("torch.nn.attention.bias", "torch").causal_lower_right(tq, tk)
        elif params["causal"] and neutral:  # causal_lower_right warns of NaN rows when Tq > Tk: pass the mask
            kwargs["attn_mask"] = torch.from_numpy(np.tril(np.ones((tq, tk), dtype=bool), k=tk - tq))
        elif not neutral:
            kwargs["attn_mask"] = torch.from_numpy(np.where(allowed, additive, -np.inf)).to(compute)
        tensors = (torch.from_numpy(a).to(compute) for a in (q, k, v))
        with torch.no_grad():
            output, weights = _sdpa_weights_and_output(*tensors, **kwargs)
        return _numpy(output), _numpy(weights)
    return run


def _sdpa_supports(op: str, params: Mapping[str, Any]) -> bool | str:
    if params.get("window") is not None and params["window"] != 0:
        return "SDPA has no sliding-window argument (a band mask would be the adapter's, not SDPA's)"
    if params.get("fully_masked") in ("nan", "uniform"):
        return "SDPA (torch >= 2.5) gives a fully masked row zeros; 'nan' and 'uniform' are other libraries'"
    return True


class _SupportsAdapter(Adapter):
    """An :class:`Adapter` whose ``supports`` refuses what the library cannot express, with the reason."""

    def __init__(self, *args: Any, supports: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._supports = supports

    def supports(self, op: str, params: Mapping[str, Any]) -> bool | str:
        if op not in self.capabilities:
            return f"{op} not supported"
        return self._supports(op, params)


def rope_init() -> Adapter:
    calls = {"rope.inv_freq": "transformers LlamaRotaryEmbedding.compute_default_rope_parameters (default) and "
                              "modeling_rope_utils.ROPE_INIT_FUNCTIONS[rope_type] (linear, dynamic, yarn, llama3, "
                              "proportional) on a LlamaConfig; softmax_scale from DeepSeek-V3's yarn_apply_mscale"}
    caps = {"rope.inv_freq": {"rope_type": ROPE_INIT_TYPES, "dynamic_convention": ("transformers",),
                              "yarn_convention": ("transformers",)}}
    return Adapter("transformers-rope-init", _version(), "float32", {"rope.inv_freq": _rope_init}, caps, calls)


def llama_rope() -> Adapter:
    calls = {"rope.apply": "transformers LlamaRotaryEmbedding.forward + Llama apply_rotary_pos_emb (rotate_half); "
                           "GPT-NeoX apply_rotary_pos_emb for a partial prefix",
             "rope.cos_sin": "transformers LlamaRotaryEmbedding.forward with the case's inv_freq"}
    caps = {"rope.apply": {"layout": ("half",), "partial": ("prefix",)}, "rope.cos_sin": {"width": ("full",)}}
    return Adapter("transformers-llama-rope", _version(), "float32",
                   {"rope.apply": _llama_apply, "rope.cos_sin": _llama_cos_sin}, caps, calls)


def gptj_rope() -> Adapter:
    calls = {"rope.apply": "transformers GPT-J create_sinusoidal_positions + apply_rotary_pos_emb (rotate_every_two)"}
    caps = {"rope.apply": {"layout": ("interleaved",), "partial": ("prefix",), "base": (10000.0,),
                           "attention_factor": (1.0,)}}
    return Adapter("transformers-gptj-rope", _version(), "float32", {"rope.apply": _gptj_apply}, caps, calls)


def t5_bucket() -> Adapter:
    calls = {"t5.bucket": "transformers T5Attention._relative_position_bucket"}
    return Adapter("transformers-t5-bucket", _version(), "float32", {"t5.bucket": _t5_bucket},
                   {"t5.bucket": {}}, calls)


def t5_bias(dtype: str = "float64") -> Adapter:
    calls = {"t5.bias": "transformers T5Attention.compute_bias (one query at past_seen_tokens = its position, "
                        "keys 0..max(k), the case's keys gathered) with relative_attention_bias = the table"}
    return Adapter("transformers-t5-bias", _version(), dtype, {"t5.bias": _t5_compute_bias(TORCH_DTYPES[dtype])},
                   {"t5.bias": {}}, calls, t5_bias, ("float64", "float32"))


def qwen2vl_mrope() -> Adapter:
    calls = {"rope.mrope_cos_sin": "transformers Qwen2VLRotaryEmbedding.forward (recomposition_frequencies) "
                                   "with rope_parameters['mrope_section'] = the case's sections"}
    return Adapter("transformers-qwen2vl-mrope", _version(), "float32", {"rope.mrope_cos_sin": _qwen2vl_mrope},
                   {"rope.mrope_cos_sin": {"mrope_layout": ("chunked",)}}, calls)


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
    return Adapter("transformers-bloom-alibi", _version(), "float32",
                   {"alibi.slopes": _bloom_slopes, "alibi.mask_positions": _bloom_mask_positions,
                    "alibi.bias": _bloom_bias}, caps, calls)


def mpt_alibi() -> Adapter:
    calls = {"alibi.slopes": "transformers MPT build_mpt_alibi_tensor(alibi_bias_max=bias_max)"}
    caps = {"alibi.slopes": {"slope_rule": ("press",)}}
    return Adapter("transformers-mpt-alibi", _version(), "float32", {"alibi.slopes": _mpt_slopes}, caps, calls)


def longrope() -> Adapter:
    calls = {"rope.longrope_inv_freq": "transformers modeling_rope_utils.ROPE_INIT_FUNCTIONS['longrope'] "
                                       "(_compute_longrope_parameters) on a LlamaConfig"}
    return Adapter("transformers-longrope", _version(), "float32", {"rope.longrope_inv_freq": _longrope},
                   {"rope.longrope_inv_freq": {"longrope_convention": ("transformers",)}}, calls)


def interpolate(dtype: str = "float64") -> Adapter:
    call = "torch.nn.functional.interpolate (bicubic/bilinear, antialias, align_corners, size or scale_factor)"
    ops = _resample(TORCH_DTYPES[dtype])
    return _SupportsAdapter("torch-interpolate", f"torch {torch.__version__}", dtype, ops, {op: {} for op in ops},
                            {op: call for op in ops}, interpolate, ("float64", "float32"), supports=_resample_supports)


VIT_RESAMPLE = {"kernel": "bicubic", "cubic_a": -0.75, "antialias": "off", "coordinates": "half_pixel",
                "size_from": "size", "num_prefix_tokens": 1}
"""The ``resample.grid_2d`` settings ViT's ``interpolate_pos_encoding`` hard-codes (one CLS row, bicubic
``align_corners=False`` to a size, no antialias)."""


def _vit_supports(op: str, params: Mapping[str, Any]) -> bool | str:
    if op != "resample.grid_2d":
        return f"{op} not supported"
    fixed = {name: params.get(name) for name in VIT_RESAMPLE if params.get(name) != VIT_RESAMPLE[name]}
    if fixed:
        return f"ViT interpolate_pos_encoding fixes {VIT_RESAMPLE}; the case has {fixed}"
    if params.get("grid_height") != params.get("grid_width"):
        return "ViT interpolate_pos_encoding reads a square source grid (sqrt of the patch count)"
    return True


def _vit_interpolate(compute: Any) -> Any:
    def grid_2d(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray]) -> np.ndarray:
        from transformers import ViTConfig
        from transformers.models.vit.modeling_vit import ViTEmbeddings

        a = checks.resample_grid_2d(params, inputs)
        side, dim = a["grid"].shape[0], a["grid"].shape[2]
        new_h, new_w = a["height"]["m"], a["width"]["m"]
        # patch_size 1: an image of side n has n x n patches, and height // patch_size is the new grid height
        config = ViTConfig(hidden_size=dim, image_size=side, patch_size=1, num_attention_heads=1)
        module = ViTEmbeddings(config).to(compute)
        with torch.no_grad():
            module.position_embeddings.copy_(torch.from_numpy(np.asarray(inputs["table"], dtype=np.float64))[None])
            embeddings = torch.zeros(1, 1 + new_h * new_w, dim, dtype=compute)
            return _numpy(module.interpolate_pos_encoding(embeddings, new_h, new_w)[0])

    return grid_2d


def vit_interpolate(dtype: str = "float64") -> Adapter:
    call = ("transformers ViTEmbeddings.interpolate_pos_encoding (position_embeddings = the case's table, "
            "patch_size 1, height/width = the new grid)")
    ops = {"resample.grid_2d": _vit_interpolate(TORCH_DTYPES[dtype])}
    return _SupportsAdapter("transformers-vit-interpolate", _version(), dtype, ops, {"resample.grid_2d": {}},
                            {"resample.grid_2d": call}, vit_interpolate, ("float64", "float32"),
                            supports=_vit_supports)


def sdpa(dtype: str = "float64") -> Adapter:
    calls = {"attention": "torch.nn.functional.scaled_dot_product_attention (is_causal, "
                          "torch.nn.attention.bias.causal_lower_right, attn_mask, scale, enable_gqa); "
                          "weights as SDPA on identity values"}
    ops = {"attention": _sdpa(TORCH_DTYPES[dtype])}
    return _SupportsAdapter("torch-sdpa", f"torch {torch.__version__}", dtype, ops, {"attention": {}}, calls, sdpa,
                            ("float64", "float32", "float16", "bfloat16"),
                            supports=_sdpa_supports)


# ---------------------------------------------- transformers DeBERTa scores, Shaw relative keys ---

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


# ---------------------------------------------------------- transformers XLNet / Parakeet shifts ---

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
    a = checks.attention_xl(params, inputs)
    xlnet = _xlnet()
    qp, kp = (positions(n, inputs[n]).reshape(-1) for n in ("q_positions", "k_positions"))
    if np.unique(qp).size != qp.size:
        raise _invalid(f"XLNet numbers one query per position, got repeated q_positions {qp.tolist()}")
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


# ------------------------------------------ transformers eager attention with a scheme plugged in ---

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
    a = checks.attention_rope(params, inputs)
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


def _eager_alibi(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    a = checks.attention_alibi(params, inputs)
    choice("form", a["form"], ("relative_causal",))  # the form BLOOM's key-only bias equals under softmax
    heads, kp = a["q"].shape[1], a["k_positions"]
    masks = _bloom_key_masks(kp)
    bloom = _transformers("bloom.modeling_bloom")
    alibi = bloom.build_alibi_tensor(torch.from_numpy(masks), heads, torch.float32)  # (rows * H, 1, Tk): m_h * p_j
    bias = alibi.reshape(kp.shape[:-1] + (heads, 1, kp.shape[-1]))
    q, k = (torch.from_numpy(a[n]).to(torch.float32) for n in ("q", "k"))
    return _eager_attention(a, q, k, bias)


def _eager_t5(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    a = checks.attention_t5(params, inputs)
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


def _torch_layer(compute: Any) -> Any:
    def run(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray]) -> np.ndarray:
        a = checks.attention_pipeline(params, inputs)
        b, t = a["tokens"].shape
        heads, kv_heads, d = a["heads"], a["kv_heads"], a["head_dim"]

        def linear(name: str) -> Any:  # torch.nn.Linear(bias=False) holding the case's (in, out) matrix
            weight = torch.from_numpy(np.ascontiguousarray(a[name].T)).to(compute)
            layer = torch.nn.Linear(weight.shape[1], weight.shape[0], bias=False, dtype=compute)
            layer.weight.copy_(weight)
            return layer

        with torch.no_grad():
            x = torch.nn.Embedding.from_pretrained(torch.from_numpy(a["embedding"]).to(compute))(
                torch.from_numpy(a["tokens"]))
            pe = torch.from_numpy(a["pe"]).to(compute)
            if a["placement"] == "input":
                x = x + pe
            q, k, v = (linear(w)(x).reshape(b, t, n, d).transpose(1, 2)
                       for w, n in (("w_q", heads), ("w_k", kv_heads), ("w_v", kv_heads)))
            out = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=a["causal"],
                                                                   enable_gqa=heads != kv_heads)
            y = linear("w_o")(out.transpose(1, 2).reshape(b, t, heads * d))
        return _numpy(y + pe if a["placement"] == "after_block" else y)
    return run


def torch_layer(dtype: str = "float64") -> Adapter:
    calls = {"attention.pipeline": "torch.nn.Embedding.from_pretrained, torch.nn.Linear (bias=False) projections, "
                                   "torch.nn.functional.scaled_dot_product_attention (is_causal, enable_gqa)"}
    return Adapter("torch-nn-layer", f"torch {torch.__version__}", dtype,
                   {"attention.pipeline": _torch_layer(TORCH_DTYPES[dtype])}, {"attention.pipeline": {}}, calls,
                   torch_layer, tuple(TORCH_DTYPES))


# ------------------------------------------------------------------------------- torch port ---

def _frequencies(width: int, base: float, ladder: str, compute: Any) -> Any:
    """``base ** -e``: e = 2k/width (paper) or k/max(n-1, 1) (t2t), n = ceil(width/2) (n,)."""
    n = (width + 1) // 2
    k = torch.arange(n, dtype=compute)
    exponent = 2 * k / width if ladder == "paper" else k / max(n - 1, 1)
    return torch.pow(torch.tensor(base, dtype=compute), -exponent)


def port_table(rows: np.ndarray, p: Mapping[str, Any], compute: Any) -> Any:
    """The sinusoidal table in torch, (*rows.shape, dim)."""
    dim, odd = int(p["dim"]), int(p["dim"]) % 2 == 1
    width = dim - 1 if odd and p["odd_width"] == "zero_pad_last" else dim
    angles = torch.from_numpy(rows).to(compute)[..., None] * _frequencies(width, p["base"], p["ladder"], compute)
    n = angles.shape[-1]
    n_cos = n - 1 if odd and p["odd_width"] == "sin_gets_extra" else n
    sin, cos = torch.sin(angles), torch.cos(angles[..., :n_cos])
    pad = torch.zeros(angles.shape[:-1] + (dim - n - n_cos,), dtype=compute)
    if p["layout"] == "interleaved":
        pairs = torch.stack([sin[..., :n_cos], cos], dim=-1).flatten(-2)
        table = torch.cat([pairs, sin[..., n_cos:], pad], dim=-1)
    elif p["layout"] == "concat_sin_cos":
        table = torch.cat([sin, cos, pad], dim=-1)
    else:
        table = torch.cat([cos, sin, pad], dim=-1)
    return table * float(p["scale"])


def port_fairseq(tokens: np.ndarray, params: Mapping[str, Any], compute: Any) -> tuple[Any, Any]:
    """fairseq rows (B, T) and embedding (B, T, dim)."""
    ids, pad = torch.from_numpy(tokens), int(params["padding_idx"])
    past = int(params["past_length"])
    if past:
        rows = torch.full_like(ids, pad + past + 1)
    else:
        real = (ids != pad).to(torch.int64)
        rows = torch.cumsum(real, dim=1) * real + pad
    p = {"dim": params["dim"], "base": params["base"], "ladder": "t2t", "layout": "concat_sin_cos",
         "odd_width": "zero_pad_last", "scale": 1.0}
    table = port_table(rows.numpy(), p, compute)
    return rows, table * (rows != pad).to(compute)[..., None]


def port_grid(ys: np.ndarray, xs: np.ndarray, params: Mapping[str, Any], compute: Any) -> Any:
    """2-D sin-cos encodings (*ys.shape, dim)."""
    w = _frequencies(int(params["dim"]) // 2, params["base"], params["ladder"], compute)  # (D/4,)
    y = torch.from_numpy(ys).to(compute)[..., None] * w
    x = torch.from_numpy(xs).to(compute)[..., None] * w
    a, b = (x, y) if params["axis_order"] == "x_first" else (y, x)
    if params["block_layout"] == "sin_cos":
        return torch.cat([a.sin(), a.cos(), b.sin(), b.cos()], dim=-1)
    if params["block_layout"] == "sin_sin_cos_cos":
        return torch.cat([a.sin(), b.sin(), a.cos(), b.cos()], dim=-1)
    return torch.cat([torch.stack([a.sin(), a.cos()], -1).flatten(-2),
                      torch.stack([b.sin(), b.cos()], -1).flatten(-2)], dim=-1)


def _t5_params(params: Mapping[str, Any]) -> tuple[str, int, int, int]:
    """(direction, N, D, exact region E) after the wrapper's checks."""
    direction = choice("direction", params["direction"], ("bidirectional", "unidirectional"))
    buckets = integer("num_buckets", params["num_buckets"], 1)
    distance = integer("max_distance", params["max_distance"], 1)
    exact = buckets // 2 // 2 if direction == "bidirectional" else buckets // 2
    if exact < 1 or distance <= exact:
        raise _invalid(f"num_buckets={buckets}, max_distance={distance}: need an exact region >= 1 below max_distance")
    return direction, buckets, distance, exact


def _t5_bias_inputs(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray]) -> tuple[
        np.ndarray, np.ndarray, np.ndarray, tuple[str, int, int, int]]:
    """``t5.bias`` after the wrapper's checks: the table as contiguous (N, H), query and key
    positions, and :func:`_t5_params`."""
    layout = choice("table_layout", params["table_layout"], ("buckets_heads", "heads_buckets"))
    conventions = _t5_params(params)
    table = np.asarray(inputs["table"], dtype=np.float64)
    per_bucket = table if layout == "buckets_heads" else table.T
    if table.ndim != 2 or per_bucket.shape[0] != conventions[1]:
        raise _shape(f"table must be (num_buckets, H) or (H, num_buckets) with num_buckets={conventions[1]}, "
                     f"got shape {table.shape}")
    qp, kp = positions("query_positions", inputs["query_positions"]), positions("key_positions",
                                                                                 inputs["key_positions"])
    if qp.shape[:-1] != kp.shape[:-1]:
        raise _shape(f"query and key positions must share their batch shape, got {qp.shape} and {kp.shape}")
    return np.ascontiguousarray(per_bucket), qp, kp, conventions


def port_t5_bucket(rel: Any, direction: str, buckets: int, distance: int, exact: int) -> Any:
    """T5 buckets of ``r = j - i`` in torch: the log region floors in float64, capped at the last bucket."""
    side = buckets // 2 if direction == "bidirectional" else buckets
    offset = (rel > 0).to(torch.int64) * side if direction == "bidirectional" else torch.zeros_like(rel)
    n = rel.abs() if direction == "bidirectional" else torch.clamp(-rel, min=0)
    large = exact + torch.floor(torch.log(n.clamp(min=1).to(torch.float64) / exact) / math.log(distance / exact)
                                * (side - exact)).to(torch.int64)
    return offset + torch.where(n < exact, n, torch.clamp(large, max=side - 1))


def _deberta_params(params: Mapping[str, Any]) -> tuple[int, int, str]:
    clamp = choice("distance_clamp", params["distance_clamp"], ("none", "max_relative_positions"))
    buckets = integer("position_buckets", params["position_buckets"], 1)
    max_position = integer("max_relative_positions", params["max_relative_positions"], 1)
    if buckets // 2 < 2 or max_position - 1 <= buckets // 2:
        raise _invalid(f"need position_buckets // 2 >= 2 and max_relative_positions - 1 > position_buckets // 2, "
                       f"got {buckets} and {max_position}")
    return buckets, max_position, clamp


def port_deberta_bucket(delta: Any, buckets: int, max_position: int, clamp: str) -> Any:
    """Signed log buckets of ``delta = i - j`` in float64 torch (ceil), optionally clamped first."""
    if clamp == "max_relative_positions":
        delta = delta.clamp(-(max_position - 1), max_position - 1)
    mid = buckets // 2
    size = delta.abs()
    scaled = torch.ceil(torch.log(size.clamp(min=1).to(torch.float64) / mid) / math.log((max_position - 1) / mid)
                        * (mid - 1))
    log_bucket = (scaled.to(torch.int64) + mid) * torch.sign(delta)
    return torch.where(size <= mid, delta, log_bucket)


def port_alibi_slopes(heads: int, rule: str, bias_max: float, compute: Any) -> Any:
    """``2 ** -x_h`` with the press or geometric exponents (exact dyadic exponents built in float64)."""
    power = 2 ** int(math.floor(math.log2(heads)))
    if rule == "geometric" or power == heads:
        exponents = bias_max * torch.arange(1, heads + 1, dtype=torch.float64) / heads
    else:
        exponents = torch.cat([bias_max * torch.arange(1, power + 1, dtype=torch.float64) / power,
                               bias_max * torch.arange(1, 2 * (heads - power), 2, dtype=torch.float64) / (2 * power)])
    return torch.exp2(-exponents).to(compute)


def port_rope_apply(x: np.ndarray, pos: np.ndarray, rotary: int, params: Mapping[str, Any], compute: Any) -> Any:
    """Rotate x (B, H, T, D) at positions (B, T) in torch; (B, H, T, D)."""
    d = x.shape[-1]
    space = rotary if params["partial"] == "prefix" else d
    i = torch.arange(space // 2, dtype=compute)
    w = torch.where(i < rotary // 2, torch.tensor(float(params["base"]), dtype=compute) ** (-(2 * i) / space),
                    torch.zeros((), dtype=compute))
    angle = torch.from_numpy(np.array(pos)).to(compute)[:, None, :, None] * w  # (B, 1, T, S/2)
    factor = float(params["attention_factor"])
    cos, sin = torch.cos(angle) * factor, torch.sin(angle) * factor
    xt = torch.from_numpy(x).to(compute)
    n = space // 2
    if params["layout"] == "half":
        u, v = xt[..., :n], xt[..., n:space]
    else:
        u, v = xt[..., 0:space:2], xt[..., 1:space:2]
    ru, rv = u * cos - v * sin, u * sin + v * cos
    interleaved = params["layout"] == "interleaved"
    rotated = torch.stack([ru, rv], dim=-1).flatten(-2) if interleaved else torch.cat([ru, rv], dim=-1)
    return torch.cat([rotated, xt[..., space:]], dim=-1)


def port_softmax_attention(q: Any, k: Any, v: Any, keep: Any, scale: float, *, groups: int = 1,
                           biases: tuple[Any, ...] = (), term: Any = None, value: Any = None,
                           policy: str = "zeros") -> tuple[Any, Any]:
    """Attention in torch: ``(q . k + term) * scale + biases``, softmax over the kept keys, then
    ``weights @ v`` plus ``value(weights)`` (the value term); (output, weights).

    q (B, H, Tq, D); k, v (B, Hkv, Tk, D) with query head h reading kv head h // groups; keep
    (boolean) and the biases broadcast to (B, H, Tq, Tk). A row with every key masked gets
    zeros, NaN or uniform weights (``policy``)."""
    kt, vt = k.repeat_interleave(groups, dim=1), v.repeat_interleave(groups, dim=1)
    dot = q @ kt.transpose(-1, -2)
    if term is not None:
        dot = dot + term
    logits = dot * scale
    for bias in biases:
        logits = logits + bias
    keep = keep.expand(logits.shape)
    empty = ~keep.any(dim=-1, keepdim=True)
    masked = logits.masked_fill(~keep, -math.inf)
    top = masked.amax(dim=-1, keepdim=True).masked_fill(empty, 0.0)
    e = torch.exp(masked - top)
    weights = e / e.sum(dim=-1, keepdim=True).masked_fill(empty, 1.0)
    if policy == "nan":
        weights = weights.masked_fill(empty, math.nan)
    elif policy == "uniform":
        weights = torch.where(empty, torch.full_like(weights, 1.0 / kt.shape[2]), weights)
    output = weights @ vt
    return (output if value is None else output + value(weights)), weights


def port_attention(a: Mapping[str, Any], compute: Any, *, q: Any = None, k: Any = None, bias: Any = None,
                   term: Any = None, value: Any = None) -> tuple[Any, Any]:
    """:func:`port_softmax_attention` of a checked ``attention`` case (:func:`posenc_adapter_checks.attention`:
    masks, padding, window and causal folded into ``keep``, the bias and the additive mask added
    after the scale); a scheme passes its rotated ``q``/``k``, its ``bias``, or its ``term`` and
    ``value`` (Shaw, Transformer-XL)."""
    def tensor(name: str) -> Any:
        return torch.from_numpy(np.ascontiguousarray(a[name])).to(compute)

    biases = (tensor("bias"), tensor("additive")) + (() if bias is None else (bias,))
    keep = torch.from_numpy(np.ascontiguousarray(a["keep"]))
    return port_softmax_attention(tensor("q") if q is None else q, tensor("k") if k is None else k, tensor("v"),
                                  keep, float(a["scale"]), groups=a["groups"], biases=biases, term=term, value=value,
                                  policy=a["policy"])


def port_alibi_bias(qp: np.ndarray, kp: np.ndarray, slopes: Any, form: str, compute: Any) -> Any:
    """ALiBi bias ``m_h * signed distance`` (..., H, Tq, Tk) of (..., Tq) and (..., Tk) positions."""
    i, j = torch.from_numpy(qp)[..., :, None], torch.from_numpy(kp)[..., None, :]
    signed = {"relative_causal": j - i, "key_only": j.expand(i.shape[:-1] + j.shape[-1:]),
              "symmetric": -(i - j).abs(), "bottom_right": -(i + kp.shape[-1] - qp.shape[-1] - j).abs()}[form]
    return slopes[:, None, None] * signed[..., None, :, :].to(compute)


def port_t5_bias(qp: np.ndarray, kp: np.ndarray, per_bucket: Any, conventions: tuple[str, int, int, int]) -> Any:
    """T5 bias ``table[bucket(j - i), h]`` (..., H, Tq, Tk) of a (N, H) table."""
    rel = torch.from_numpy(kp)[..., None, :] - torch.from_numpy(qp)[..., :, None]  # (..., Tq, Tk)
    return torch.movedim(per_bucket[port_t5_bucket(rel, *conventions)], -1, -3)


def port_xl_position(q: Any, v_bias: Any, w_r: Any, distance: np.ndarray, base: float, compute: Any) -> Any:
    """Transformer-XL terms (b) + (d), ``(q_i + v_h) . (R_{d_ij} @ W_R[h])`` with ``R_d = [sin(d w) | cos(d w)]``,
    ``w_k = base ** (-2k / D_r)``: q (..., H, Tq, D), v_bias (H, D), w_r (H, D_r, D), distance (Tq, Tk);
    each distinct distance is embedded once. (..., H, Tq, Tk)."""
    distinct, inverse = torch.unique(torch.from_numpy(distance), return_inverse=True)
    width = w_r.shape[-2]
    w = torch.tensor(base, dtype=compute) ** (-(2 * torch.arange(width // 2, dtype=compute)) / width)
    theta = distinct.to(compute)[:, None] * w  # (U, D_r / 2)
    r = torch.einsum("uc,hcd->hud", torch.cat([theta.sin(), theta.cos()], dim=-1), w_r)  # (H, U, D)
    per_distance = (q + v_bias[:, None, :]) @ r.transpose(-1, -2)  # (..., H, Tq, U)
    return torch.take_along_dim(per_distance, inverse.expand(per_distance.shape[:-2] + inverse.shape), dim=-1)


def port_rel_shift(x: Any, variant: str, k_len: int) -> tuple[Any, Any]:
    """The codebases' shifts of BD rows (Tq, R) in torch: Transformer-XL pads a zero column on the
    left and reshapes (R = Tk); XLNet reshapes, drops a row and keeps Tk columns. (shifted, valid)."""
    tq, rows = x.shape
    i, j = torch.arange(tq)[:, None], torch.arange(k_len)[None, :]
    if variant == "transformer_xl":
        padded = torch.nn.functional.pad(x, (1, 0))  # (Tq, Tk + 1)
        return padded.reshape(k_len + 1, tq)[1:].reshape(tq, k_len), (j <= k_len - tq + i).to(torch.int64)
    return x.reshape(rows, tq)[1:].reshape(tq, rows - 1)[:, :k_len], (j + tq - i < rows).to(torch.int64)


def port_xpos(q: np.ndarray, k: np.ndarray, pos: np.ndarray, params: Mapping[str, Any],
              compute: Any) -> tuple[Any, Any]:
    """xPos in torch: RoPE over the whole head, then q times and k divided by ``zeta ** ((p - c) / B)``."""
    bthd = params["x_layout"] == "BTHD"
    qx, kx = (x.transpose(0, 2, 1, 3) if bthd else x for x in (q, k))  # (B, H, T, D)
    width, t = qx.shape[-1], pos.shape[-1]
    rope = {"base": params["base"], "partial": "prefix", "layout": params["layout"], "attention_factor": 1.0}
    qr, kr = (port_rope_apply(x, pos, width, rope, compute) for x in (qx, kx))
    centre = t // 2 if params["centring"] == "lucidrains" else -(-t // 2)
    zeta = (2 * torch.arange(width // 2, dtype=compute) + 0.4 * width) / (1.4 * width)  # (P,)
    power = (torch.from_numpy(pos) - centre).to(compute)[:, None, :, None] / float(params["scale_base"])
    up = zeta**power  # (B|1, 1, T, P)
    if not bool(torch.isfinite(up).all() & torch.isfinite(1 / up).all()):
        raise Rejected("out_of_range", f"zeta ** (+-(p - c) / {params['scale_base']}) overflows {compute}")
    scale = up.repeat_interleave(2, dim=-1) if params["layout"] == "interleaved" else torch.cat([up, up], dim=-1)
    qs, ks = qr * scale, kr / scale
    return (qs.transpose(1, 2), ks.transpose(1, 2)) if bthd else (qs, ks)


def port_deberta_scores(a: Mapping[str, Any], compute: Any) -> Any:
    """DeBERTa's disentangled logits in torch: c2p gathers ``q Kr^T`` at ``idx(i - j)``, p2c gathers
    ``k Qr^T`` at the same ``idx(i - j)``, all over ``sqrt(d (1 + n))``; (H, Tq, Tk)."""
    q, k, kr, qr = (torch.from_numpy(a[n]).to(compute) for n in ("q", "k", "pos_key", "pos_query"))
    b = a["buckets"]
    delta = torch.from_numpy(a["qp"][:, None] - a["kp"][None, :])
    index = torch.clamp(port_deberta_bucket(delta, b, a["limit"], a["clamp"]) + b, 0, 2 * b - 1)  # (Tq, Tk)
    heads, tk = q.shape[0], k.shape[1]
    scores = q @ k.transpose(-1, -2)
    if "c2p" in a["terms"]:
        scores = scores + torch.take_along_dim(q @ kr.transpose(-1, -2), index.expand(heads, -1, -1), dim=-1)
    if "p2c" in a["terms"]:
        scores = scores + (k @ qr.transpose(-1, -2))[:, torch.arange(tk)[None, :], index]
    return scores / math.sqrt(q.shape[-1] * (1 + len(a["terms"])))


def port_shaw_index(qp: np.ndarray, kp: np.ndarray, k: int, sign: str) -> Any:
    """Shaw's clipped table rows ``clip(d, -K, K) + K`` in torch, d = p_j - p_i or p_i - p_j; (Tq, Tk)."""
    distance = torch.from_numpy(kp)[None, :] - torch.from_numpy(qp)[:, None]
    return torch.clamp(-distance if sign == "query_minus_key" else distance, -k, k) + k


def port_shaw_key_term(q: Any, table: Any, index: Any) -> Any:
    """``q_i . A^K[r_ij]`` (..., Tq, Tk): every query against the 2K + 1 rows, then gathered (no (Tq, Tk, D) gather)."""
    per_row = q @ table.transpose(-1, -2)  # (..., Tq, 2K + 1)
    return torch.take_along_dim(per_row, index.expand(per_row.shape[:-1] + index.shape[-1:]), dim=-1)


def port_shaw_value_term(weights: Any, table: Any, index: Any) -> Any:
    """``sum_j alpha_ij A^V[r_ij]`` (..., Tq, D): the weights summed per table row, times the rows."""
    per_row = torch.zeros(weights.shape[:-1] + (table.shape[0],), dtype=weights.dtype)
    return per_row.scatter_add(-1, index.expand(weights.shape), weights) @ table  # (..., Tq, 2K + 1) @ (2K + 1, D)


def port_shaw_logits(q: Any, k: Any, table: Any, index: Any) -> Any:
    """``q_i . k_j + q_i . A^K[r_ij]`` (..., Tq, Tk)."""
    return q @ k.transpose(-1, -2) + port_shaw_key_term(q, table, index)


def port_shaw_output(weights: Any, v: Any, table: Any, index: Any) -> Any:
    """``sum_j alpha_ij (v_j + A^V[r_ij])`` (..., Tq, D)."""
    return weights @ v + port_shaw_value_term(weights, table, index)


def torch_port(dtype: str = "float64") -> Adapter:
    """The torch port of its ops; float16/bfloat16 computed in float32, rounded at the end."""
    out = TORCH_DTYPES[dtype]
    compute = torch.float64 if dtype == "float64" else torch.float32

    def table(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray]) -> np.ndarray:
        rows, p = validate_table(params, inputs)
        return _numpy(port_table(rows, p, compute).to(out))

    def fairseq(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        rows, emb = port_fairseq(validate_fairseq(params, inputs), params, compute)
        return _numpy(rows), _numpy(emb.to(out))

    def grid(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray]) -> np.ndarray:
        ys, xs = validate_grid(params, inputs)
        return _numpy(port_grid(ys, xs, params, compute).to(out))

    def lookup(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray]) -> np.ndarray:
        weights, rows = validate_lookup(params, inputs)
        return _numpy(torch.from_numpy(weights).to(out)[torch.from_numpy(rows)])

    def rope_apply(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray]) -> np.ndarray:
        x, pos, rotary = _rope_x(params, inputs, ("half", "interleaved", "interleaved_to_half"))
        return _back(port_rope_apply(x, pos, rotary, params, compute).to(out), params["x_layout"])

    def rope_scores(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray]) -> np.ndarray:
        layouts = ("half", "interleaved")
        q, qpos, rotary = _rope_x(params, {"x": inputs["q"], "positions": inputs["q_positions"]}, layouts)
        k, kpos, _ = _rope_x(params, {"x": inputs["k"], "positions": inputs["k_positions"]}, layouts)
        if q.shape[0] != k.shape[0] or q.shape[1] != k.shape[1] or q.shape[-1] != k.shape[-1]:
            raise _shape(f"q and k must agree on B, H and D, got {inputs['q'].shape} and {inputs['k'].shape}")
        scale_base = params["xpos_scale_base"]
        if scale_base is not None:
            scale_base = _finite_float("xpos_scale_base", scale_base, positive=True)
        qr, kr = port_rope_apply(q, qpos, rotary, params, compute), port_rope_apply(k, kpos, rotary, params, compute)
        if scale_base is None:
            return _numpy((qr @ kr.transpose(-1, -2)).to(out))
        space = rotary if params["partial"] == "prefix" else q.shape[-1]
        n = space // 2
        u, v = (slice(0, n), slice(n, space)) if params["layout"] == "half" else (slice(0, space, 2),
                                                                                  slice(1, space, 2))
        pairs = qr[..., None, u] * kr[..., None, :, u] + qr[..., None, v] * kr[..., None, :, v]  # (B, H, Tq, Tk, P)
        zeta = (2.0 * torch.arange(n, dtype=compute) + 0.4 * space) / (1.4 * space)
        offset = torch.from_numpy(np.array(qpos))[:, :, None] - torch.from_numpy(np.array(kpos))[:, None, :]
        weight = zeta ** (offset.to(compute)[:, None, :, :, None] / scale_base)  # xPos: zeta_i ** ((m - n) / B)
        rest = qr[..., space:] @ kr[..., space:].transpose(-1, -2)
        return _numpy(((pairs * weight).sum(-1) + rest).to(out))

    def t5_bucket(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray]) -> np.ndarray:
        conventions = _t5_params(params)
        rel = positions("relative_positions", inputs["relative_positions"], nonnegative=False)
        return _numpy(port_t5_bucket(torch.from_numpy(rel), *conventions))

    def t5_bias(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray]) -> np.ndarray:
        per_bucket, qp, kp, conventions = _t5_bias_inputs(params, inputs)
        return _numpy(port_t5_bias(qp, kp, torch.from_numpy(per_bucket).to(out), conventions))

    def alibi_slopes(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray]) -> np.ndarray:
        heads = _alibi_slopes_check(params)
        return _numpy(port_alibi_slopes(heads, params["slope_rule"], float(params["bias_max"]), compute).to(out))

    def alibi_bias(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray]) -> np.ndarray:
        heads = _alibi_slopes_check(params)
        form = choice("form", params["form"], ("relative_causal", "key_only", "symmetric", "bottom_right"))
        qp, kp = positions("query_positions", inputs["query_positions"]), positions("key_positions",
                                                                                     inputs["key_positions"])
        if qp.shape[:-1] != kp.shape[:-1]:
            raise _shape(f"query and key positions must share their batch shape, got {qp.shape} and {kp.shape}")
        m = port_alibi_slopes(heads, params["slope_rule"], float(params["bias_max"]), compute)
        return _numpy(port_alibi_bias(qp, kp, m, form, compute).to(out))

    def alibi_mask_positions(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray]) -> np.ndarray:
        mask = np.asarray(inputs["attention_mask"])
        if mask.ndim != 2 or mask.size == 0:
            raise _shape(f"attention_mask must be a non-empty (B, T) array, got shape {mask.shape}")
        if not np.all((mask == 0) | (mask == 1)):
            raise _invalid("attention_mask must hold 0 and 1 only")
        m = torch.from_numpy(mask.astype(np.int64))
        return _numpy((m.cumsum(-1) - 1) * m)

    def pair(result: tuple[Any, Any]) -> tuple[np.ndarray, np.ndarray]:
        return _numpy(result[0].to(out)), _numpy(result[1].to(out))

    def tensor(array: np.ndarray) -> Any:
        return torch.from_numpy(np.ascontiguousarray(array)).to(compute)

    def attention(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        return pair(port_attention(checks.attention(params, inputs), compute))

    def attention_terms(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        a = checks.attention_terms(params, inputs)
        value_term = tensor(a["value_term"])
        return pair(port_attention(a, compute, term=tensor(a["term"]),
                                   value=lambda w: (w[..., None] * value_term).sum(dim=-2)))

    def attention_rope(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        a = checks.attention_rope(params, inputs)
        rope = {"base": a["base"], "partial": "prefix", "layout": a["layout"], "attention_factor": 1.0}
        d = a["q"].shape[-1]
        return pair(port_attention(a, compute, q=port_rope_apply(a["q"], a["q_positions"], d, rope, compute),
                                   k=port_rope_apply(a["k"], a["k_positions"], d, rope, compute)))

    def attention_alibi(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        a = checks.attention_alibi(params, inputs)
        slopes = port_alibi_slopes(a["q"].shape[1], "press", 8.0, compute)
        return pair(port_attention(a, compute, bias=port_alibi_bias(a["q_positions"], a["k_positions"], slopes,
                                                                    a["form"], compute)))

    def attention_t5(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        a = checks.attention_t5(params, inputs)
        conventions = (a["direction"], a["buckets"], a["limit"], a["side"] // 2)
        return pair(port_attention(a, compute, bias=port_t5_bias(a["q_positions"], a["k_positions"],
                                                                 tensor(a["table"]), conventions)))

    def attention_shaw(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        a = checks.attention_shaw(params, inputs)
        qp, kp = (positions(n, inputs[n]).reshape(-1) for n in ("q_positions", "k_positions"))
        index = port_shaw_index(qp, kp, int(params["max_relative_position"]), params["sign"])
        keys, values = tensor(a["rel_keys"]), tensor(a["rel_values"])
        q = tensor(a["q"])
        return pair(port_attention(a, compute, q=q, term=port_shaw_key_term(q, keys, index),
                                   value=lambda w: port_shaw_value_term(w, values, index)))

    def attention_xl(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        a = checks.attention_xl(params, inputs)
        q, k = tensor(a["q"]), tensor(a["k"]).repeat_interleave(a["groups"], dim=1)  # k mapped to query heads
        content = torch.einsum("hd,bhkd->bhk", tensor(a["u_bias"]), k)[:, :, None, :]  # term (c): u_h . k_j
        position = port_xl_position(q, tensor(a["v_bias"]), tensor(a["w_r"]), a["distance"], a["base"], compute)
        return pair(port_attention(a, compute, q=q, term=position + content))

    def attention_pipeline(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray]) -> np.ndarray:
        a = checks.attention_pipeline(params, inputs)
        b, t = a["tokens"].shape
        heads, kv_heads, d = a["heads"], a["kv_heads"], a["head_dim"]
        x = tensor(a["embedding"])[torch.from_numpy(a["tokens"])]  # (B, T, width)
        pe = tensor(a["pe"])
        if a["placement"] == "input":
            x = x + pe
        q, k, v = ((x @ tensor(a[w])).reshape(b, t, n, d).transpose(1, 2)
                   for w, n in (("w_q", heads), ("w_k", kv_heads), ("w_v", kv_heads)))
        output, _ = port_softmax_attention(q, k, v, torch.from_numpy(a["keep"]), float(a["scale"]), groups=a["groups"])
        y = output.transpose(1, 2).reshape(b, t, heads * d) @ tensor(a["w_o"])
        return _numpy((y + pe if a["placement"] == "after_block" else y).to(out))

    def xl_score(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray]) -> np.ndarray:
        a = checks.xl_score(params, inputs)
        q = tensor(a["q"])
        position = port_xl_position(q[None], tensor(a["v"])[None], tensor(a["w_r"])[None], a["distance"], a["base"],
                                    compute)[0]
        return _numpy(((q + tensor(a["u"])) @ tensor(a["k"]).T + position).to(out))

    def rel_shift(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        a = checks.rel_shift(params, inputs)
        shifted, valid = port_rel_shift(tensor(a["x"]), a["variant"], a["k_len"])
        return _numpy(shifted.to(out)), _numpy(valid)

    def rope_cos_sin(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        width = choice("width", params["width"], ("half", "full", "full_interleaved"))
        factor = _finite_float("attention_factor", params["attention_factor"], positive=True)
        inv_freq = np.asarray(inputs["inv_freq"], dtype=np.float64)
        if inv_freq.ndim != 1 or inv_freq.size == 0:
            raise _shape(f"inv_freq must be a non-empty (P,) array, got shape {inv_freq.shape}")
        pos = positions("positions", inputs["positions"])
        angle = torch.from_numpy(pos).to(compute)[..., None] * torch.from_numpy(inv_freq).to(compute)
        if width == "full":
            angle = torch.cat([angle, angle], dim=-1)
        elif width == "full_interleaved":
            angle = angle.repeat_interleave(2, dim=-1)
        return _numpy((torch.cos(angle) * factor).to(out)), _numpy((torch.sin(angle) * factor).to(out))

    def deberta_bucket(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray]) -> np.ndarray:
        conventions = _deberta_params(params)
        rel = positions("relative_positions", inputs["relative_positions"], nonnegative=False)
        return _numpy(port_deberta_bucket(torch.from_numpy(rel), *conventions))

    def deberta_index(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray]) -> np.ndarray:
        conventions = _deberta_params(params)
        qp, kp = positions("query_positions", inputs["query_positions"]), positions("key_positions",
                                                                                     inputs["key_positions"])
        if qp.shape[:-1] != kp.shape[:-1]:
            raise _shape(f"query and key positions must share their batch shape, got {qp.shape} and {kp.shape}")
        delta = torch.from_numpy(qp)[..., :, None] - torch.from_numpy(kp)[..., None, :]
        span = conventions[0]
        return _numpy(torch.clamp(port_deberta_bucket(delta, *conventions) + span, 0, 2 * span - 1))

    def xpos(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        q, k, pos = checks.xpos(params, inputs)
        qs, ks = port_xpos(q, k, pos, params, compute)
        return _numpy(qs.to(out)), _numpy(ks.to(out))

    def deberta_scores(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray]) -> np.ndarray:
        return _numpy(port_deberta_scores(checks.deberta_scores(params, inputs), compute).to(out))

    def shaw(op: str) -> Any:
        def run(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray]) -> np.ndarray:
            a = checks.shaw(params, inputs, op)
            qp, kp = (positions(n, inputs[n]) for n in ("q_positions", "k_positions"))
            index = port_shaw_index(qp, kp, int(params["max_relative_position"]), params["sign"])
            if op == "shaw.index":
                return _numpy(index)
            first, second = ("q", "k") if op == "shaw.logits" else ("weights", "v")
            x, y, table = (torch.from_numpy(a[n]).to(compute) for n in (first, second, "table"))
            port = port_shaw_logits if op == "shaw.logits" else port_shaw_output
            return _numpy(port(x, y, table, index).to(out))
        return run

    ops = {"sinusoidal.table": table, "sinusoidal.fairseq": fairseq, "grid2d.sincos": grid, "learned.lookup": lookup,
           "rope.cos_sin": rope_cos_sin, "deberta.bucket": deberta_bucket, "deberta.index": deberta_index,
           "rope.apply": rope_apply, "rope.scores": rope_scores, "t5.bucket": t5_bucket, "t5.bias": t5_bias,
           "alibi.slopes": alibi_slopes, "alibi.bias": alibi_bias, "alibi.mask_positions": alibi_mask_positions,
           "attention": attention, "rope.xpos": xpos, "deberta.scores": deberta_scores,
           **{op: shaw(op) for op in ("shaw.index", "shaw.logits", "shaw.output")},
           "transformer_xl.score": xl_score, "transformer_xl.rel_shift": rel_shift,
           "attention.terms": attention_terms, "attention.pipeline": attention_pipeline,
           "attention.rope": attention_rope, "attention.alibi": attention_alibi, "attention.t5": attention_t5,
           "attention.shaw": attention_shaw, "attention.xl": attention_xl}
    return Adapter("torch-port", f"torch {torch.__version__}", dtype, ops, {op: {} for op in ops},
                   {op: "torch port (conformance/adapters/torch_adapter.py)" for op in ops}, torch_port,
                   tuple(TORCH_DTYPES))


DISTILBERT = distilbert
MARIAN = marian
M2M100 = m2m100
WHISPER = whisper
VITMAE_2D = vitmae_2d
EMBEDDING = embedding
ROPE_INIT = rope_init
LLAMA_ROPE = llama_rope
GPTJ_ROPE = gptj_rope
T5_BUCKET = t5_bucket
T5_BIAS = t5_bias
QWEN2VL_MROPE = qwen2vl_mrope
DEBERTA_BUCKET = deberta_bucket
BLOOM_ALIBI = bloom_alibi
MPT_ALIBI = mpt_alibi
SDPA = sdpa
LONGROPE = longrope
INTERPOLATE = interpolate
VIT_INTERPOLATE = vit_interpolate
DEBERTA_SCORES = deberta_scores
SHAW_W2V_BERT = shaw_w2v_bert
REL_SHIFT = rel_shift
XLNET = xlnet
EAGER_ATTENTION = eager_attention
TORCH_LAYER = torch_layer
TORCH = torch_port
ADAPTER = torch_port
