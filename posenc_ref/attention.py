r"""The attention pass: one float64 scaled dot-product attention that every scheme plugs into.

Formula
-------
For query head :math:`h`, query row :math:`i` and key row :math:`j` (Vaswani et al. 2017,
arXiv:1706.03762, eq. 1, extended by the plug-ins below):

.. math::

    s_{hij} = \text{scale}\,\big(\tilde q_{hi}\cdot\tilde k_{g(h)j} + t_{hij}\big) + b_{hij} + m_{hij},
    \qquad p_{hij} = \frac{e^{s_{hij}}}{\sum_{j'} e^{s_{hij'}}},
    \qquad o_{hi} = \sum_j p_{hij}\,\big(v_{g(h)j} + u_{hij}\big)

with :math:`(\tilde q, \tilde k)` the q/k transform, :math:`t` and :math:`u` the logits and
value terms, :math:`b` the additive bias and :math:`m \in \{0, -\infty\}\cup\mathbb{R}` the mask.

Shapes: ``q`` (B, H, Tq, D), ``k`` and ``v`` (B, Hkv, Tk, D); output (B, H, Tq, D), weights
(B, H, Tq, Tk). ``H`` must be a multiple of ``Hkv`` (``Hkv = H``: multi-head; ``Hkv = 1``:
multi-query; otherwise grouped-query).

Conventions
-----------
* **Head grouping:** query head ``h`` reads kv head ``g(h) = h // (H // Hkv)`` (contiguous
  groups: flash-attn, torch SDPA ``enable_gqa``, HF ``repeat_kv``, ONNX ``Attention``). The
  modulo mapping ``h % Hkv`` is a known bug class (mutant ``gqa-modulo``).
* **Scale:** ``1/sqrt(D)`` unless given, times ``softmax_multiplier`` (default 1); it
  multiplies the dot product *after* the reduction (and multiplies the logits term, see
  below). T5 uses ``scale=1``. ``softmax_multiplier`` is DeepSeek's YaRN factor: DeepSeek-V2/V3
  (``modeling_deepseek.py``, transformers ``DeepseekV3Attention``) set
  ``softmax_scale = qk_head_dim**-0.5 * mscale**2`` with ``mscale = 0.1 * mscale_all_dim *
  ln(factor) + 1`` whenever ``rope_scaling`` is YaRN with ``mscale_all_dim`` set; that
  ``mscale**2`` is the ``softmax_scale`` output of ``rope.inv_freq``
  (:func:`posenc_ref.rope_scaling.rope_inv_freq`, 1.8738542070926265 for DeepSeek-V3),
  while the cos/sin ``attention_factor`` it returns is the ratio of the two mscales (1.0 for
  V3). Leaving the multiplier out is the mutant ``missing-softmax-multiplier``.
* **Causal alignment** (``alignment``) places query row ``i`` at key index ``i + offset``:
  ``"top_left"`` (offset 0; torch SDPA ``is_causal=True``, ONNX Runtime CPU) or
  ``"bottom_right"`` (offset ``Tk - Tq``; flash-attn ``causal=True``, ONNX ``Attention`` with a
  past cache, decoding with a KV cache, HF masks built from cache positions). They agree when
  ``Tq == Tk``. ``causal=True`` keeps key ``j`` iff ``j <= i + offset``.
* **Sliding window** ``window = W`` (an integer >= 1) keeps key ``j`` iff
  ``(i + offset) - j < W``, and also ``j - (i + offset) < W`` when not causal: a causal query
  sees ``W`` keys including its own. This is HF transformers' ``sliding_window=W``
  (``kv_idx > q_idx - W``) and flash-attn's ``window_size=(W - 1, W - 1)``; flash-attn's own
  left count ``w`` sees ``w + 1`` keys, the usual off-by-one.
* **Masks** (all combined by AND): ``mask`` boolean with True = attend (torch SDPA, ONNX,
  flash-attn) or float additive (0 keeps, ``-inf`` removes, finite values add);
  ``key_padding_mask`` (B, Tk) boolean with True = real token (HF ``attention_mask == 1``).
  Note: ``torch.nn.MultiheadAttention(key_padding_mask=...)`` uses True = *ignore*: invert it.
* **Fully masked rows** (``fully_masked``): ``"zeros"`` (output and weights 0: torch SDPA
  since 2.5 via ``_safe_softmax``, flash-attn "if the row of the mask is all zero, the output
  will be zero", ONNX ``Attention`` after the 2026 errata onnx/onnx#8068); ``"nan"`` (plain
  softmax ``0/0``: torch SDPA before 2.5, the ONNX reference evaluator before the errata);
  ``"uniform"`` (weights ``1/Tk`` over every key, output the mean of V: a finite fill such
  as HF eager ``finfo.min`` or ONNX Runtime's ``-1e30``); ``"error"`` (a :class:`~posenc_ref.errors.SpecError`
  naming the first such row). Causal top-left with ``Tq > Tk`` never empties a row;
  bottom-right does (flash-attn's README example).
* **Softmax** subtracts the row maximum over kept entries before ``exp``; masked entries get
  weight exactly 0.

Plug-ins (positional schemes)
-----------------------------
Every plug-in receives explicit positions: ``q_positions`` (Tq,) or (B, Tq) and
``k_positions`` (Tk,) or (B, Tk), integers, so decoding with a cache (``q_positions =
[past_len]``) and cross-attention (unrelated position sets) are first-class. Positions are
required whenever ``qk_transform`` or ``logits_term`` is given; masks never read them.

``bias``
    An array broadcastable to (B, H, Tq, Tk), added to the *scaled* logits (ALiBi, T5,
    any precomputed relative bias). Finite values only.
``qk_transform(q, k, q_positions, k_positions) -> (q2, k2)``
    Called once, before the dot product, with ``q`` (B, H, Tq, D) and ``k`` (B, Hkv, Tk, D)
    (kv heads not repeated); returns arrays of the same shapes (RoPE and its variants).
``logits_term(q, k, q_positions, k_positions) -> t`` or ``(t, u)``
    Called with the transformed ``q`` (B, H, Tq, D) and ``k`` *mapped to query heads*
    (B, H, Tk', D), where ``k_positions`` has the Tk' entries of that key slice (the blockwise
    path calls it once per key block, so the term of key ``j`` may depend only on ``q``, key
    ``j`` and their positions). ``t`` is broadcastable to (B, H, Tq, Tk') and is added to the
    raw dot product *before* the scale (Shaw's ``q . a^K_ij``, Transformer-XL's terms (b)-(d),
    DeBERTa's c2p/p2c with ``scale = 1/sqrt(3D)``). The optional ``u`` is broadcastable to
    (B, H, Tq, Tk', D) and is added to the values under the weights (Shaw's ``a^V_ij``).

Additive absolute encodings act before the Q/K/V projections, so they live in
:mod:`posenc_ref.attention_pipeline`. :mod:`posenc_ref.attention_positional` builds the
plug-ins of RoPE, Shaw and Transformer-XL from their modules (ALiBi and T5 are ``bias`` arrays
from :func:`~posenc_ref.alibi.alibi_bias` and :func:`~posenc_ref.t5.t5_bias`).

Blockwise path
--------------
Without weights, long inputs (or an explicit ``block_size``) are computed with an online
softmax over key blocks (running maximum, running sum, rescaled accumulator; Milakov &
Gimelshein 2018, arXiv:1805.02867): extra memory O(B H Tq (block + D)) instead of the
(B, H, Tq, Tk) weights. It equals the direct path within a few float64 ulp (a test).

Calls with at least 2**21 logits and no ``logits_term`` run in query-row tiles on a pool of
threads (:mod:`posenc_ref._attention_tiles`; ``POSENC_REF_THREADS`` sets the pool's size): the
same computation per row, in cache and on several cores.

Differences from common implementations
----------------------------------------
* The reference never computes in the input dtype: everything is float64.
* Mask conventions that differ by library are converted at the call site, never guessed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final, Literal

import numpy as np
from numpy.typing import NDArray

from posenc_ref._attention_blockwise import DEFAULT_BLOCK, F64, LogitsTerm, Pass, blockwise, direct, direct_output
from posenc_ref._attention_masks import broadcastable as _broadcastable
from posenc_ref._attention_masks import mask_array as _mask_array
from posenc_ref._attention_masks import position_array as _position_array
from posenc_ref._attention_masks import shape_error as _shape_error
from posenc_ref._attention_masks import structural_keep as _structural_keep
from posenc_ref._attention_tiles import run, tileable
from posenc_ref.errors import SpecError, check_choice, check_finite_bound, check_float, check_float_array, check_int

Alignment = Literal["top_left", "bottom_right"]
FullyMasked = Literal["zeros", "nan", "uniform", "error"]
ALIGNMENTS: Final = ("top_left", "bottom_right")
FULLY_MASKED: Final = ("zeros", "nan", "uniform", "error")
DIRECT_LIMIT: Final = 2**26
"""Above this many logits (B*H*Tq*Tk) without weights requested, the blockwise path is used."""
QKTransform = Callable[[F64, F64, NDArray[np.int64], NDArray[np.int64]], tuple[Any, Any]]


def attention(
    q: Any,
    k: Any,
    v: Any,
    /,
    *,
    scale: float | None = None,
    softmax_multiplier: float = 1.0,
    causal: bool = False,
    alignment: Alignment = "bottom_right",
    window: int | None = None,
    mask: Any = None,
    key_padding_mask: Any = None,
    bias: Any = None,
    q_positions: Any = None,
    k_positions: Any = None,
    qk_transform: QKTransform | None = None,
    logits_term: LogitsTerm | None = None,
    fully_masked: FullyMasked = "zeros",
    return_weights: bool = False,
    block_size: int | None = None,
) -> F64 | tuple[F64, F64]:
    """Scaled dot-product attention in float64 with grouped heads, masks and positional plug-ins.

    Parameters
    ----------
    q, k, v
        Queries (B, H, Tq, D), keys and values (B, Hkv, Tk, D); ``H % Hkv == 0``.
    scale
        Logit scale; ``None`` means ``1/sqrt(D)``.
    softmax_multiplier
        Multiplies the scale (DeepSeek's YaRN ``mscale**2``, the ``softmax_scale`` output of
        :func:`~posenc_ref.rope_scaling.rope_inv_freq`); finite and > 0.
    causal, alignment, window
        Structural masks (see the module notes); ``window`` is an int >= 1 or ``None``.
    mask, key_padding_mask
        Boolean (True = attend) or additive mask broadcastable to (B, H, Tq, Tk); boolean
        (B, Tk) padding mask (True = real token).
    bias
        Additive bias broadcastable to (B, H, Tq, Tk), added after the scale.
    q_positions, k_positions, qk_transform, logits_term
        Positional plug-ins and the positions they receive (module notes).
    fully_masked
        ``"zeros"``, ``"nan"``, ``"uniform"`` or ``"error"``.
    return_weights
        Also return the weights (forces the direct path).
    block_size
        Force the blockwise path with this many keys per block.

    Returns
    -------
    output : ndarray, shape (B, H, Tq, D), float64
    weights : ndarray, shape (B, H, Tq, Tk), float64
        Only with ``return_weights=True``.

    Raises
    ------
    SpecError
        ``invalid_shape``: wrong ranks, ``H`` not a multiple of ``Hkv``, mismatched D, B or
        Tk, masks or bias not broadcastable, positions of the wrong length.
        ``invalid_argument``: non-finite inputs, ``window < 1``, ``scale`` not finite,
        ``softmax_multiplier`` not a finite number > 0, a plug-in without positions, unknown
        ``alignment``/``fully_masked``, a fully masked row under ``"error"``, ``block_size``
        together with ``return_weights``.

    Examples
    --------
    Without positions, identical keys get identical weights; rows sum to 1:

    >>> q = np.ones((1, 1, 1, 2)); k = np.ones((1, 1, 3, 2)); v = np.arange(6.0).reshape(1, 1, 3, 2)
    >>> out, w = attention(q, k, v, return_weights=True)
    >>> w.tolist(), out.tolist()
    ([[[[0.3333333333333333, 0.3333333333333333, 0.3333333333333333]]]], [[[[2.0, 3.0]]]])

    Bottom-right causal decoding: the one query sees every cached key; top-left sees key 0 only.

    >>> w_br = attention(q, k, v, causal=True, return_weights=True)[1]
    >>> w_tl = attention(q, k, v, causal=True, alignment="top_left", return_weights=True)[1]
    >>> w_br[0, 0, 0].tolist(), w_tl[0, 0, 0].tolist()
    ([0.3333333333333333, 0.3333333333333333, 0.3333333333333333], [1.0, 0.0, 0.0])
    """
    if block_size is not None:
        block_size = check_int("attention", "block_size", block_size, minimum=1)
        if return_weights:
            raise SpecError("attention: block_size (the blockwise path) cannot return weights, got return_weights=True")
    spec = prepare_pass(
        q, k, v, scale=scale, causal=causal, alignment=alignment, window=window, mask=mask,
        key_padding_mask=key_padding_mask, bias=bias, q_positions=q_positions, k_positions=k_positions,
        qk_transform=qk_transform, logits_term=logits_term, fully_masked=fully_masked,
        softmax_multiplier=softmax_multiplier,
    )
    if return_weights:
        if not tileable(spec):
            return direct(spec)
        out, weights = run(spec, direct, width=spec.k.shape[2], weights=True)
        assert weights is not None
        return out, weights
    b, h, tq, _ = spec.q.shape
    tk = spec.k.shape[2]
    compute: Callable[[Pass], tuple[F64, F64 | None]] = direct_output
    width = tk
    if block_size is not None or b * h * tq * tk > DIRECT_LIMIT:
        width = min(block_size or DEFAULT_BLOCK, tk)
        compute = lambda tile: (blockwise(tile, width), None)  # noqa: E731
    return run(spec, compute, width=width, weights=False)[0] if tileable(spec) else compute(spec)[0]


def prepare_pass(
    q: Any,
    k: Any,
    v: Any,
    /,
    *,
    scale: float | None = None,
    softmax_multiplier: float = 1.0,
    causal: bool = False,
    alignment: Alignment = "bottom_right",
    window: int | None = None,
    mask: Any = None,
    key_padding_mask: Any = None,
    bias: Any = None,
    q_positions: Any = None,
    k_positions: Any = None,
    qk_transform: QKTransform | None = None,
    logits_term: LogitsTerm | None = None,
    fully_masked: FullyMasked = "zeros",
) -> Pass:
    """Validate the arguments of :func:`attention` and resolve masks and the q/k transform."""
    func = "attention"
    q = check_float_array(func, "q", q, ndim=4)
    k = check_float_array(func, "k", k, ndim=4)
    v = check_float_array(func, "v", v, ndim=4)
    b, h, tq, d = q.shape
    if k.shape != v.shape:
        raise _shape_error(func, f"k and v must have the same shape, got {k.shape} and {v.shape}")
    bk, hkv, tk, dk = k.shape
    if bk != b:
        raise _shape_error(func, f"q and k must have the same batch size, got B={b} and B={bk}")
    if dk != d:
        raise _shape_error(func, f"q and k must have the same head dim D, got D={d} and D={dk}")
    if h % hkv:
        raise _shape_error(func, f"the query heads must be a multiple of the kv heads, got H={h} and Hkv={hkv}")
    if not isinstance(causal, (bool, np.bool_)):
        raise TypeError(f"{func}: causal must be a bool, got {type(causal).__name__} {causal!r}")
    check_choice(func, "alignment", alignment, ALIGNMENTS)
    check_choice(func, "fully_masked", fully_masked, FULLY_MASKED)
    if window is not None:
        window = check_int(func, "window", window, minimum=1)
    factor = 1.0 / np.sqrt(d) if scale is None else check_float(func, "scale", scale)
    multiplier = check_float(func, "softmax_multiplier", softmax_multiplier, positive=True)
    factor = factor * multiplier  # Note: DeepSeek multiplies the scale itself, not the logits after it
    target = (b, h, tq, tk)
    additive = None if mask is None else _mask_array(func, mask, target)
    padding = None
    if key_padding_mask is not None:
        padding = np.asarray(key_padding_mask)
        if padding.dtype.kind != "b":
            raise TypeError(f"{func}: key_padding_mask must be boolean (True = real token), got dtype {padding.dtype}")
        if padding.ndim != 2 or padding.shape[1] != tk or padding.shape[0] not in (1, b):
            raise _shape_error(func, f"key_padding_mask must have shape ({b}, {tk}), got {padding.shape}")
    bias_array = None
    if bias is not None:
        bias_array = check_float_array(func, "bias", bias)
        _broadcastable(func, "bias", bias_array, target)
    if (qk_transform is not None or logits_term is not None) and (q_positions is None or k_positions is None):
        raise SpecError(f"{func}: qk_transform and logits_term need q_positions and k_positions, got None")
    qpos = None if q_positions is None else _position_array(func, "q_positions", q_positions, b, tq)
    kpos = None if k_positions is None else _position_array(func, "k_positions", k_positions, b, tk)

    if qk_transform is not None and qpos is not None and kpos is not None:
        q2, k2 = qk_transform(q, k, qpos, kpos)
        q = check_float_array(func, "qk_transform(...)[0]", q2, ndim=4)
        k = check_float_array(func, "qk_transform(...)[1]", k2, ndim=4)
        if q.shape != (b, h, tq, d) or k.shape != (b, hkv, tk, d):
            raise _shape_error(func, f"qk_transform must keep the shapes of q and k, got {q.shape} and {k.shape}")
    logits = (float(np.abs(q).max()), float(np.abs(k).max()), d * abs(factor))  # |scale * q . k| <= their product
    check_finite_bound(func, "max|q| * max|k| * D * scale (the logits)", *logits)
    added = [float(np.abs(a[np.isfinite(a)]).max(initial=0.0)) for a in (bias_array, additive)
             if a is not None and a.dtype != np.bool_]  # Note: -inf mask entries remove, they never add
    check_finite_bound(func, "the logits plus bias and mask", logits[0] * logits[1] * logits[2] + sum(added))
    offset = tk - tq if alignment == "bottom_right" else 0
    keep = _structural_keep(tq, tk, bool(causal), offset, window)
    if keep is not None:
        keep = keep[None, None]  # (1, 1, Tq, Tk)
    if padding is not None:
        pad = padding[:, None, None, :]  # (B, 1, 1, Tk)
        keep = pad if keep is None else keep & pad
    if additive is not None and additive.dtype == np.bool_:
        keep = additive if keep is None else keep & additive
        additive = None
    return Pass(q, k, v, factor, keep, additive, bias_array, qpos, kpos, logits_term, fully_masked)
