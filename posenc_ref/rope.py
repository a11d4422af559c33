r"""Rotary position embeddings (RoPE): cos/sin tables, rotation of q/k, and q.k scores.

Formula
-------
Pair ``i`` of a rotary space, channels ``(u, v)``, at integer position ``p`` with inverse
frequency ``w_i`` (:mod:`posenc_ref.rope_scaling`) and attention factor ``a``:

.. math::

    u' = a(u\cos p w_i - v\sin p w_i), \qquad v' = a(v\cos p w_i + u\sin p w_i),

i.e. :math:`(u + \mathrm{i}v)\,a e^{\mathrm{i} p w_i}` (RoFormer, Su et al. 2021,
arXiv:2104.09864, eq. 34). Since :math:`R_m^\top R_n = R_{n-m}`, the score
:math:`\langle R_m q, R_n k\rangle` depends on the positions only through :math:`n - m`.

Conventions
-----------
* ``layout`` (which channels form pair ``i`` of a rotary space of width ``S``):
  ``"half"``: ``(i, i + S/2)`` (transformers ``rotate_half``, GPT-NeoX, vLLM ``is_neox_style=True``,
  ONNX ``interleaved=0``, flash-attn ``interleaved=False``); ``"interleaved"``: ``(2i, 2i+1)``
  (RoFormer paper, Meta Llama complex form, GPT-J, Cohere, GLM, vLLM ``is_neox_style=False``,
  ONNX ``interleaved=1``); ``"interleaved_to_half"``: pairs read as interleaved, results written
  in half order (transformers 5.x DeepSeek-V3 ``apply_rotary_pos_emb_interleave``). The three
  differ by a fixed channel permutation (:func:`rope_layout_permutation`), so scores agree when
  q and k are permuted alike (claim: layouts related by a fixed permutation).
* ``partial``: ``"prefix"`` rotates channels ``[0, rotary_dim)`` with exponent ``2i/rotary_dim``,
  the rest pass through untouched (GPT-NeoX ``rotary_pct``, Phi, GLM, vLLM ``rotary_dim``, ONNX
  ``rotary_embedding_dim``, flash-attn); ``"proportional"`` rotates over the whole head ``h``,
  pairs ``(i, i + h/2)``, exponent ``2i/h``, frequency 0 for ``i >= rotary_dim/2`` (Gemma 4,
  Gemma JAX ``rope_proportion``).
* ``x_layout``: ``"BHTD"`` (transformers, ONNX 4-D) or ``"BTHD"`` (flash-attn, vLLM per token).
* ``width`` of a table: ``"half"`` ``(..., P)`` (ONNX caches, flash-attn, vLLM cache halves),
  ``"full"`` ``cat(t, t)`` (transformers), ``"full_interleaved"`` each value twice in a row
  (GPT-J ``repeat_interleave``).
* The attention factor multiplies cos and sin, as transformers and vLLM fold it into the tables
  (so scores scale by ``a**2``); prefix pass-through channels are not scaled.
* Positions are explicit integers >= 0, shape (T,) or (B, T); queries and keys may have
  different positions (KV cache, cross-attention).
* Computation order (float64): ``angle = float(p) * w``; ``c = a * cos(angle)``; then
  ``u * c - v * s`` and ``v * c + u * s``.

Differences from common implementations
---------------------------------------
* transformers casts cos/sin to the activation dtype and rotates in bf16; Meta Llama, Llama 4
  and Gemma JAX rotate in float32. The corpus judges each dtype with the phase tolerance.
* Scaled variants enter through :func:`rope_cos_sin` with the inverse frequencies of
  :func:`posenc_ref.rope_scaling.rope_inv_freq`; :func:`rope_apply` builds default frequencies
  from ``base``.

Derivation claims relied on (derivations issue): ``rope.relativity`` (:math:`R_m^\top R_n =
R_{n-m}`), ``rope.norm`` (rotation keeps norms), ``rope.layout_permutation`` (the layouts differ by
a fixed channel permutation that preserves q.k).
"""

from __future__ import annotations

from typing import Any, Final, Literal

import numpy as np
from numpy.typing import NDArray

from posenc_ref._rope_rotation import X_LAYOUTS as X_LAYOUTS  # public here: rope.X_LAYOUTS
from posenc_ref._rope_rotation import finite as _finite
from posenc_ref._rope_rotation import rotate_pairs as _rotate_pairs
from posenc_ref._rope_rotation import validate_x as _validate_x
from posenc_ref._rope_rotation import xpos_scores
from posenc_ref.errors import (
    SpecError,
    check_choice,
    check_float,
    check_float_array,
    check_int,
    check_phase_range,
    check_positions,
    check_size,
    raised_by,
)
from posenc_ref.rope_scaling import rope_inv_freq

Layout = Literal["half", "interleaved", "interleaved_to_half"]
LAYOUTS: Final = ("half", "interleaved", "interleaved_to_half")
PARTIALS: Final = ("prefix", "proportional")
WIDTHS: Final = ("half", "full", "full_interleaved")


def rope_cos_sin(
    positions: Any, inv_freq: Any, /, *, attention_factor: float = 1.0,
    width: Literal["half", "full", "full_interleaved"] = "full",
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """cos and sin tables ``a * cos(p * w_i)``, ``a * sin(p * w_i)`` for explicit positions.

    Parameters
    ----------
    positions
        Integer positions >= 0, any shape.
    inv_freq
        Inverse frequencies, shape (P,) (:func:`posenc_ref.rope_scaling.rope_inv_freq`).
    attention_factor
        Multiplies both tables (> 0).
    width
        ``"half"`` (P columns), ``"full"`` (``cat(t, t)``) or ``"full_interleaved"``.

    Returns
    -------
    cos, sin : ndarray, shape (*positions.shape, P or 2P), float64

    Examples
    --------
    >>> c, s = rope_cos_sin([0], [1.0, 0.5], width="full")
    >>> c.tolist(), s.tolist()
    ([[1.0, 1.0, 1.0, 1.0]], [[0.0, 0.0, 0.0, 0.0]])
    """
    func = "rope_cos_sin"
    check_choice(func, "width", width, WIDTHS)
    factor = check_float(func, "attention_factor", attention_factor, positive=True)
    pos = check_positions(func, "positions", positions)
    w = check_float_array(func, "inv_freq", inv_freq, ndim=1)
    check_size(func, "the tables", pos.shape + (2 * w.size,))
    check_phase_range(func, "positions", pos, "inv_freq", w)
    angle = pos.astype(np.float64)[..., None] * w  # (..., P)
    cos, sin = factor * np.cos(angle), factor * np.sin(angle)
    if width == "full":
        return np.concatenate([cos, cos], axis=-1), np.concatenate([sin, sin], axis=-1)
    if width == "full_interleaved":
        return np.repeat(cos, 2, axis=-1), np.repeat(sin, 2, axis=-1)
    return cos, sin


def rope_layout_permutation(rotary_dim: int, /, *, from_layout: str, to_layout: str) -> NDArray[np.int64]:
    """Channel indices ``perm`` with ``x_to = x_from[..., perm]`` (what checkpoint converters apply).

    Examples
    --------
    >>> rope_layout_permutation(6, from_layout="interleaved", to_layout="half").tolist()
    [0, 2, 4, 1, 3, 5]
    >>> rope_layout_permutation(6, from_layout="half", to_layout="interleaved").tolist()
    [0, 3, 1, 4, 2, 5]
    """
    func = "rope_layout_permutation"
    dim = check_int(func, "rotary_dim", rotary_dim, minimum=2)
    if dim % 2:
        raise SpecError(f"{func}: rotary_dim must be even, got rotary_dim={dim}")
    check_choice(func, "from_layout", from_layout, ("half", "interleaved"))
    check_choice(func, "to_layout", to_layout, ("half", "interleaved"))
    check_size(func, "the permutation", (dim,))
    if from_layout == to_layout:
        return np.arange(dim, dtype=np.int64)
    j = np.arange(dim, dtype=np.int64)
    if to_layout == "half":  # half channel j holds interleaved channel 2j (first half) or 2(j - P) + 1
        return np.where(j < dim // 2, 2 * j, 2 * (j - dim // 2) + 1)
    return np.where(j % 2 == 0, j // 2, j // 2 + dim // 2)


def rotary_frequencies(head_dim: int, *, base: float, rotary_dim: int | None, partial: str,
                       func: str) -> tuple[int, NDArray[np.float64]]:
    """The rotary space width ``S`` and its ``S/2`` frequencies for :func:`rope_apply`'s options.

    Examples
    --------
    >>> rotary_frequencies(8, base=100.0, rotary_dim=4, partial="prefix", func="f")[1].tolist()
    [1.0, 0.1]
    >>> rotary_frequencies(8, base=10000.0, rotary_dim=4, partial="proportional", func="f")[1].tolist()
    [1.0, 0.1, 0.0, 0.0]
    """
    base = check_float(func, "base", base, positive=True)
    check_choice(func, "partial", partial, PARTIALS)
    if head_dim % 2 and (partial == "proportional" or rotary_dim is None):
        raise SpecError(f"{func}: the head dim must be even to rotate it whole (partial={partial!r}, "
                        f"rotary_dim={rotary_dim}), got head dim {head_dim}")
    rd = head_dim if rotary_dim is None else check_int(func, "rotary_dim", rotary_dim, minimum=2)
    if rd % 2:
        raise SpecError(f"{func}: rotary_dim must be even, got rotary_dim={rd}")
    if rd > head_dim:
        raise SpecError(f"{func}: rotary_dim must be <= the head dim {head_dim}, got rotary_dim={rd}")
    space = rd if partial == "prefix" else head_dim
    i = np.arange(space // 2, dtype=np.float64)
    return space, np.where(i < rd // 2, base ** -((2.0 * i) / space), 0.0)


SCALING: Final = {
    "rope_type": "default", "factor": None, "original_max_position": None, "context_length": None,
    "low_freq_factor": None, "high_freq_factor": None, "beta_fast": None, "beta_slow": None, "mscale": None,
    "mscale_all_dim": None, "scaling_attention_factor": None, "truncate": True, "ext_factor": 1.0,
    "short_factor": None, "long_factor": None, "dynamic_convention": "transformers", "yarn_convention": "transformers",
}
"""The scaling keywords of :func:`rope_apply` and :func:`rope_scores`, with their defaults: those of
:func:`posenc_ref.rope_scaling.rope_inv_freq`, with its ``attention_factor`` named
``scaling_attention_factor`` (the op's own ``attention_factor`` multiplies on top) and without
``dim`` and ``partial_rotary_factor``, which the rotary space gives."""


def scaled_frequencies(head_dim: int, *, base: float, rotary_dim: int | None, partial: str, func: str,
                       **scaling: Any) -> tuple[int, NDArray[np.float64], float]:
    """The rotary space width ``S``, its ``S/2`` frequencies and the scaling's attention factor.

    ``scaling`` holds keywords of :data:`SCALING` (the rest take their defaults). The variant's
    frequencies are :func:`posenc_ref.rope_scaling.rope_inv_freq` at ``dim = S`` (the exponent
    width: ``rotary_dim`` for ``partial="prefix"``, the head for ``"proportional"``, whose pairs
    from ``rotary_dim/2`` on then turn at frequency 0). ``rope_type="proportional"`` is that
    rotation with the frequencies divided by ``factor``, so it needs ``partial="proportional"``.
    The default type gives :func:`rotary_frequencies` bit for bit and factor 1.

    Examples
    --------
    >>> space, w, a = scaled_frequencies(8, base=100.0, rotary_dim=4, partial="prefix", func="f",
    ...                                  rope_type="linear", factor=2.0)
    >>> space, w.tolist(), a
    (4, [0.5, 0.05], 1.0)
    """
    unknown = sorted(set(scaling) - set(SCALING))
    if unknown:
        raise SpecError(f"{func}: unknown keyword {unknown[0]!r}; the scaling keywords are "
                        f"{', '.join(SCALING)}")
    options = {**SCALING, **scaling}
    rope_type = options.pop("rope_type")
    space, w = rotary_frequencies(head_dim, base=base, rotary_dim=rotary_dim, partial=partial, func=func)
    if rope_type == "default" and all(options[k] is None if SCALING[k] is None else options[k] is SCALING[k]
                                      or options[k] == SCALING[k] for k in options):
        return space, w, 1.0
    if rope_type == "proportional" and partial != "proportional":
        raise SpecError(f"{func}: rope_type='proportional' rotates over the whole head and needs "
                        f"partial='proportional', got partial={partial!r}")
    explicit = options.pop("scaling_attention_factor")
    with raised_by(func, "rope_inv_freq"):
        scaled, factor, _ = rope_inv_freq(dim=space, base=base, rope_type=rope_type, attention_factor=explicit,
                                          **options)
    turning = space // 2 if rotary_dim is None or partial == "prefix" else int(rotary_dim) // 2
    scaled[turning:] = 0.0  # Note: proportional rotation: pairs past rotary_dim / 2 never turn
    return space, scaled, float(factor[0])


def _token_positions(func: str, name: str, positions: Any, x_shape: tuple[int, ...],
                     x_layout: str) -> NDArray[np.int64]:
    """``positions`` checked as integers >= 0 of shape (T,) or (B, T) against x of ``x_shape``."""
    t_axis = 2 if x_layout == "BHTD" else 1
    pos = check_positions(func, name, positions, min_ndim=1)
    if pos.ndim > 2 or pos.shape[-1] != x_shape[t_axis] or (pos.ndim == 2 and pos.shape[0] not in (1, x_shape[0])):
        raise SpecError(f"{func}: {name} must have shape (T,) or (B, T) with T={x_shape[t_axis]}, "
                        f"B={x_shape[0]}, got shape {pos.shape}", category="invalid_shape")
    return pos


def _angles(func: str, positions: Any, w: NDArray[np.float64], x_shape: tuple[int, ...], x_layout: str,
            name: str) -> NDArray[np.float64]:
    """Angles broadcastable against the (B, H or T, T or H, P) view of x."""
    pos = _token_positions(func, name, positions, x_shape, x_layout)
    check_phase_range(func, name, pos, "the frequencies", w)
    angle = pos.reshape(-1, pos.shape[-1]).astype(np.float64)[..., None] * w  # (B or 1, T, P)
    return angle[:, None] if x_layout == "BHTD" else angle[:, :, None]


def rope_rotate(x: Any, cos: Any, sin: Any, /, *, layout: Layout = "half") -> NDArray[np.float64]:
    """The RoPE rotation itself: each pair ``(u, v)`` of ``x`` turned by its ``cos`` and ``sin``.

    This is the formula of the spec, written as it reads; :func:`rope_apply` and
    :func:`rope_scores` compute the same values, bit for bit, with an in-place path that holds
    one half-size temporary instead of four (a test).

    Parameters
    ----------
    x
        Queries or keys, shape (..., D); the first ``S = 2P`` channels rotate, the rest pass
        through untouched (``partial="prefix"``).
    cos, sin
        The same shape, broadcastable to (..., P) against ``x``: ``a cos(p w_i)`` and
        ``a sin(p w_i)`` (``a`` the attention factor), e.g. ``width="half"`` tables of
        :func:`rope_cos_sin`.
    layout
        Which channels form pair ``i`` (module notes).

    Returns
    -------
    ndarray, shape of x, float64

    Raises
    ------
    SpecError
        Non-finite or empty inputs, ``cos`` and ``sin`` of different shapes, ``2P > D``,
        tables not broadcastable against ``x``, unknown ``layout``.

    Examples
    --------
    A quarter turn sends ``(u, v) = (1, 0)`` to ``(0, 1)``:

    >>> rope_rotate([[1.0, 0.0]], [[0.0]], [[1.0]]).tolist()
    [[0.0, 1.0]]
    """
    func = "rope_rotate"
    check_choice(func, "layout", layout, LAYOUTS)
    values = check_float_array(func, "x", x)
    c, s = check_float_array(func, "cos", cos), check_float_array(func, "sin", sin)
    if c.shape != s.shape:
        raise SpecError(f"{func}: cos and sin must have the same shape, got {c.shape} and {s.shape}",
                        category="invalid_shape")
    n = c.shape[-1]
    space = 2 * n
    if values.ndim == 0 or space > values.shape[-1]:
        raise SpecError(f"{func}: x must have at least 2P = {space} channels for tables of P = {n} pairs, "
                        f"got shape {values.shape}", category="invalid_shape")
    pairs = values.shape[:-1] + (n,)
    if c.ndim > len(pairs) or any(a not in (1, t) for a, t in zip(c.shape[::-1], pairs[::-1])):
        raise SpecError(f"{func}: cos and sin must broadcast to the pairs of x, {pairs}, got {c.shape}",
                        category="invalid_shape")
    if layout == "half":
        u, v = values[..., :n], values[..., n:space]
    else:
        u, v = values[..., 0:space:2], values[..., 1:space:2]
    out = values.copy()  # Note: channels past 2P pass through untouched
    with np.errstate(over="ignore", invalid="ignore"):  # overflow is reported by _finite
        if layout == "interleaved":
            out[..., 0:space:2] = u * c - v * s
            out[..., 1:space:2] = v * c + u * s
        else:
            out[..., :n] = u * c - v * s
            out[..., n:space] = v * c + u * s
    return _finite(func, out)


def rope_rotate_cached(
    x: Any, positions: Any, cos_cache: Any, sin_cache: Any, /, *, layout: Literal["half", "interleaved"] = "half",
    x_layout: Literal["BHTD", "BTHD"] = "BHTD",
) -> NDArray[np.float64]:
    """Rotate ``x`` with caller-given cos/sin caches, row ``positions[t]`` for token ``t``.

    The contract of ONNX ``RotaryEmbedding`` (``position_ids`` into ``cos_cache``/``sin_cache``),
    vLLM's ``cos_sin_cache`` indexed by ``positions`` and flash-attn's ``apply_rotary_emb`` (rows
    from ``seqlen_offsets``): the rotation uses the numbers given, whatever frequencies, scaling
    or attention factor made them, so a cache need not hold true cosines.

    Parameters
    ----------
    x
        Queries or keys, shape (B, H, T, D) (``x_layout="BHTD"``) or (B, T, H, D).
    positions
        Integer rows of the caches, >= 0 and < N, shape (T,) or (B, T).
    cos_cache, sin_cache
        Shape (N, P), the same: ``a cos(p w_i)``, ``a sin(p w_i)`` at row ``p`` (``width="half"``
        tables of :func:`rope_cos_sin`). The first ``2P <= D`` channels rotate (ONNX
        ``rotary_embedding_dim = 2P``); the rest pass through untouched.
    layout
        ``"half"`` (ONNX ``interleaved=0``, flash-attn ``interleaved=False``, vLLM
        ``is_neox_style=True``) or ``"interleaved"``.
    x_layout
        Axis order of x.

    Returns
    -------
    ndarray, same shape as x, float64

    Raises
    ------
    SpecError
        Caches not 2-D or of different shapes, ``2P > D``, a position outside the caches
        (``out_of_range``), positions not matching T, non-finite inputs.

    Examples
    --------
    >>> x = np.array([[[[1.0, 0.0]]]])
    >>> rope_rotate_cached(x, [1], [[1.0], [0.0]], [[0.0], [1.0]]).tolist()
    [[[[0.0, 1.0]]]]
    """
    func = "rope_rotate_cached"
    check_choice(func, "layout", layout, ("half", "interleaved"))
    values = _validate_x(func, "x", x, x_layout)
    cos = check_float_array(func, "cos_cache", cos_cache, ndim=2)
    sin = check_float_array(func, "sin_cache", sin_cache, ndim=2)
    if cos.shape != sin.shape:
        raise SpecError(f"{func}: cos_cache and sin_cache must have the same shape (N, P), got {cos.shape} and "
                        f"{sin.shape}", category="invalid_shape")
    if 2 * cos.shape[1] > values.shape[-1]:
        raise SpecError(f"{func}: the caches rotate 2P = {2 * cos.shape[1]} channels, more than the head dim "
                        f"{values.shape[-1]} of x", category="invalid_shape")
    pos = _token_positions(func, "positions", positions, values.shape, x_layout)
    if pos.size and int(pos.max()) >= cos.shape[0]:
        where = tuple(int(i) for i in np.argwhere(pos >= cos.shape[0])[0])
        raise SpecError(f"{func}: positions must be < the cache length N = {cos.shape[0]}, got {int(pos[where])} at "
                        f"index {where}", category="out_of_range")
    rows = pos.reshape(-1, pos.shape[-1])  # (B or 1, T)
    c, s = cos[rows], sin[rows]  # (B or 1, T, P)
    c, s = (c[:, None], s[:, None]) if x_layout == "BHTD" else (c[:, :, None], s[:, :, None])
    with raised_by(func, "rope_rotate"):
        return rope_rotate(values, c, s, layout=layout)


def rope_rotate_freq(
    x: Any, positions: Any, inv_freq: Any, /, *, layout: Literal["half", "interleaved"] = "half",
    x_layout: Literal["BHTD", "BTHD"] = "BHTD", attention_factor: float = 1.0,
) -> NDArray[np.float64]:
    """Rotate ``x`` at caller-given inverse frequencies: angle ``positions[t] * inv_freq[i]``.

    The contract of MLX ``mx.fast.rope(..., base=None, freqs=f)`` (MLX takes the periods
    ``f_i = 1 / w_i``: an MLX adapter passes ``1 / inv_freq``), of a transformers rotary module
    whose ``inv_freq`` buffer is set by the caller, and of vLLM's cos/sin cache built from a
    given ``inv_freq``. With the frequencies of :func:`scaled_frequencies` it is
    :func:`rope_apply`, bit for bit (a test).

    Parameters
    ----------
    x
        Queries or keys, shape (B, H, T, D) (``x_layout="BHTD"``) or (B, T, H, D).
    positions
        Integer positions >= 0, shape (T,) or (B, T).
    inv_freq
        Shape (P,), finite, >= 0 (0: a pair that never turns, as proportional rotation has). The
        first ``2P <= D`` channels rotate; the rest pass through untouched.
    layout
        ``"half"`` or ``"interleaved"`` (module notes).
    x_layout
        Axis order of x.
    attention_factor
        Multiplies cos and sin (> 0); pass-through channels are not scaled.

    Returns
    -------
    ndarray, same shape as x, float64

    Raises
    ------
    SpecError
        ``inv_freq`` not 1-D, empty, negative or non-finite, ``2P > D``, positions not matching
        T, unknown conventions, non-finite ``x``.

    Notes
    -----
    Computation order as :func:`rope_apply`: ``angle = float(p) * w`` in float64, then
    ``c = a * cos(angle)``, ``u * c - v * s`` and ``v * c + u * s``.

    Examples
    --------
    >>> x = np.array([[[[1.0, 0.0, 5.0]]]])
    >>> np.round(rope_rotate_freq(x, [2], [0.25 * np.pi]), 12).tolist()
    [[[[0.0, 1.0, 5.0]]]]
    """
    func = "rope_rotate_freq"
    check_choice(func, "layout", layout, ("half", "interleaved"))
    factor = check_float(func, "attention_factor", attention_factor, positive=True)
    values = _validate_x(func, "x", x, x_layout)
    w = check_float_array(func, "inv_freq", inv_freq, ndim=1)
    if (w < 0).any():
        where = int(np.flatnonzero(w < 0)[0])
        raise SpecError(f"{func}: inv_freq must be >= 0, got {float(w[where])!r} at index {where}")
    space = 2 * w.size
    if space > values.shape[-1]:
        raise SpecError(f"{func}: inv_freq of P = {w.size} pairs rotates 2P = {space} channels, more than the head "
                        f"dim {values.shape[-1]} of x", category="invalid_shape")
    angle = _angles(func, positions, w, values.shape, x_layout, "positions")
    return _finite(func, _rotate(values, angle, space, layout, factor))


def _rotate(x: NDArray[np.float64], angle: NDArray[np.float64], space: int, layout: str,
            factor: float) -> NDArray[np.float64]:
    """:func:`rope_rotate` of ``x`` at ``angle`` with factor ``a``, through the memory-lean path."""
    with np.errstate(over="ignore", invalid="ignore"):  # overflow is reported by the callers' _finite
        return _rotate_pairs(x, angle, space, layout, factor)


def rope_apply(
    x: Any, positions: Any, /, *, base: float = 10000.0, rotary_dim: int | None = None,
    partial: Literal["prefix", "proportional"] = "prefix", layout: Layout = "half",
    x_layout: Literal["BHTD", "BTHD"] = "BHTD", attention_factor: float = 1.0, **scaling: Any,
) -> NDArray[np.float64]:
    """Rotate ``x`` at explicit positions, at the frequencies of any RoPE scaling (default ``base**(-2i/S)``).

    Parameters
    ----------
    x
        Queries or keys, shape (B, H, T, D) (``x_layout="BHTD"``) or (B, T, H, D).
    positions
        Integer positions >= 0, shape (T,) or (B, T).
    base
        ``rope_theta`` (> 0).
    rotary_dim
        Rotated channels (even, <= D); None: the whole head.
    partial, layout, x_layout
        Conventions (module notes).
    attention_factor
        Multiplies cos and sin (> 0), on top of the scaling's own factor.
    **scaling
        The scaling variant (:data:`SCALING`): ``rope_type`` and its parameters, as
        :func:`posenc_ref.rope_scaling.rope_inv_freq` reads them, computed over the rotary
        exponent width (:func:`scaled_frequencies`); its attention factor (YaRN's ``g(s)``,
        LongRoPE's, or ``scaling_attention_factor`` where given) also multiplies cos and sin.
        ``short_factor``/``long_factor`` are lists of ``S/2`` floats.

    Returns
    -------
    ndarray, same shape as x, float64

    Raises
    ------
    SpecError
        Odd ``rotary_dim``, ``rotary_dim > D``, unknown conventions, positions not matching T,
        non-finite ``x``, any error of the scaling parameters (as ``rope_inv_freq`` raises it).

    Examples
    --------
    Rotation keeps the norm of every pair:

    >>> x = np.arange(8.0).reshape(1, 1, 2, 4)
    >>> y = rope_apply(x, [3, 1000])
    >>> bool(np.allclose(np.linalg.norm(y, axis=-1), np.linalg.norm(x, axis=-1)))
    True
    >>> rope_apply(x, [0, 0]).tolist() == x.tolist()
    True
    """
    func = "rope_apply"
    check_choice(func, "layout", layout, LAYOUTS)
    factor = check_float(func, "attention_factor", attention_factor, positive=True)
    values = _validate_x(func, "x", x, x_layout)
    space, w, scaled = scaled_frequencies(values.shape[-1], base=base, rotary_dim=rotary_dim, partial=partial,
                                          func=func, **scaling)
    angle = _angles(func, positions, w, values.shape, x_layout, "positions")
    return _finite(func, _rotate(values, angle, space, layout, factor if scaled == 1.0 else factor * scaled))


def rope_scores(
    q: Any, k: Any, q_positions: Any, k_positions: Any, /, *, base: float = 10000.0,
    rotary_dim: int | None = None, partial: Literal["prefix", "proportional"] = "prefix",
    layout: Literal["half", "interleaved"] = "half", x_layout: Literal["BHTD", "BTHD"] = "BHTD",
    attention_factor: float = 1.0, xpos_scale_base: float | None = None, **scaling: Any,
) -> NDArray[np.float64]:
    """Logits ``<R(m) q_m, R(n) k_n>`` after rotating q at its positions and k at its own.

    Parameters are those of :func:`rope_apply` (any scaling; the DeepSeek softmax multiplier
    is the attention pass's, not part of the logits); with ``xpos_scale_base = B`` (> 0) pair ``i`` of
    the product is also weighted by ``zeta_i ** ((m - n) / B)``, ``zeta_i = (2i + 0.4 S)/(1.4 S)``
    (xPos, Sun et al. 2022, arXiv:2212.10554, eq. 7), whatever centre an implementation uses.

    Returns
    -------
    ndarray, shape (B, H, Tq, Tk), float64

    Examples
    --------
    Scores depend on the offset only:

    >>> rng = np.random.default_rng(0)
    >>> q, k = rng.normal(size=(1, 1, 1, 8)), rng.normal(size=(1, 1, 1, 8))
    >>> a = rope_scores(q, k, [5], [2])
    >>> b = rope_scores(q, k, [905], [902])
    >>> bool(np.isclose(a, b).all())
    True
    """
    func = "rope_scores"
    check_choice(func, "layout", layout, ("half", "interleaved"))
    factor = check_float(func, "attention_factor", attention_factor, positive=True)
    qv, kv = _validate_x(func, "q", q, x_layout), _validate_x(func, "k", k, x_layout)
    h_axis = 1 if x_layout == "BHTD" else 2
    if qv.shape[0] != kv.shape[0] or qv.shape[h_axis] != kv.shape[h_axis] or qv.shape[-1] != kv.shape[-1]:
        raise SpecError(f"{func}: q and k must agree on B, H and D, got {qv.shape} and {kv.shape}",
                        category="invalid_shape")
    space, w, scaled = scaled_frequencies(qv.shape[-1], base=base, rotary_dim=rotary_dim, partial=partial,
                                          func=func, **scaling)
    factor = factor if scaled == 1.0 else factor * scaled
    qr = _rotate(qv, _angles(func, q_positions, w, qv.shape, x_layout, "q_positions"), space, layout, factor)
    kr = _rotate(kv, _angles(func, k_positions, w, kv.shape, x_layout, "k_positions"), space, layout, factor)
    if x_layout == "BTHD":
        qr, kr = qr.transpose(0, 2, 1, 3), kr.transpose(0, 2, 1, 3)
    if xpos_scale_base is None:
        return _finite(func, np.asarray(np.einsum("bhqd,bhkd->bhqk", qr, kr), dtype=np.float64))
    scale_base = check_float(func, "xpos_scale_base", xpos_scale_base, positive=True)
    qp = check_positions(func, "q_positions", q_positions).reshape(-1, qr.shape[2])
    kp = check_positions(func, "k_positions", k_positions).reshape(-1, kr.shape[2])
    return _finite(func, xpos_scores(func, qr, kr, qp, kp, space, layout, scale_base))
