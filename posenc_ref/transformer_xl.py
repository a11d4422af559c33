r"""Transformer-XL / XLNet relative attention: the four-term score and the two shift tricks.

Formula
-------
For query position :math:`p_i`, key position :math:`p_j` (memory first, then the current
segment) and one head (Dai et al. 2019, arXiv:1901.02860, eq. in section 3.3):

.. math::

    A_{ij} = \underbrace{(q_i + u) \cdot k_j}_{(a) + (c)}
           + \underbrace{(q_i + v) \cdot W_R^\top R_{p_i - p_j}}_{(b) + (d)},

with :math:`u` (``r_w_bias``) and :math:`v` (``r_r_bias``) the global content and position
biases, :math:`W_R \in \mathbb{R}^{D_r \times D}` the position projection (no bias) and
:math:`R_\delta = [\sin(\delta w) \,|\, \cos(\delta w)]` the sinusoid of distance :math:`\delta`
with the paper ladder :math:`w_k = 10000^{-2k/D_r}` in the concatenated layout
(:func:`posenc_ref.sinusoidal.sinusoidal_frequencies`; for :math:`\delta \ge 0` the row equals
``sinusoidal_table([delta], dim=D_r, ladder="paper", layout="concat_sin_cos")``). The
:math:`d_{head}^{-1/2}` scale of both codebases is the caller's.

The shift tricks
----------------
Both codebases compute ``BD[i, c] = (q_i + v) . W_R^T R_{rho_c}`` against a list of row
distances :math:`\rho_c` and then move row :math:`i` left by a pad-and-reshape:

* Transformer-XL (``_rel_shift``): rows :math:`\rho_c = T_k-1-c`, ``c = 0..T_k-1``; pad one
  zero column on the left, view as ``(Tk + 1, Tq)``, drop the first row, view as ``(Tq, Tk)``.
  The result is ``BD[i, j + Tq - 1 - i]``, the direct value, **only where** :math:`j \le m + i`
  (``m = Tk - Tq`` the memory length). Above that diagonal it holds zeros and entries wrapped
  from the next row, which only a causal mask hides (kimiyoung/transformer-xl#8, #138; used in
  bidirectional Conformer encoders it leaks them, espnet/espnet#2684).
* XLNet (``rel_shift``): rows :math:`\rho_c = T_k - c`, ``c = 0..R-1`` with ``R = Tk + Tq``
  (``attn_type="bi"``) or ``Tk + 1`` (``"uni"``); view as ``(R, Tq)``, drop the first row, view
  as ``(Tq, R - 1)``, keep the first ``Tk`` columns. The result is ``BD[i, j + Tq - i]``, direct
  wherever :math:`j + T_q - i < R`: everywhere for ``"bi"`` (zihangdai/xlnet#97), on
  :math:`j \le m + i` for ``"uni"``.

:func:`xl_score` indexes directly (no shift), which is what both shifts must equal on their
valid regions, as does :func:`direct_index` on a ``BD`` matrix; :func:`rel_shift` reproduces
either shift exactly, invalid region included.

Conventions
-----------
* Relative distance :math:`p_i - p_j` (query minus key), as :math:`R_{i-j}` in the paper.
* ``clamp_len``: values <= 0 mean no clamping; otherwise distances are clipped to
  ``[-clamp_len, clamp_len]`` (XLNet; Transformer-XL has only non-negative rows and clamps them
  to ``clamp_len``, the same thing on its rows).
* Positions are explicit: memory of length ``m`` and a segment of ``Tq`` queries are
  ``k_positions = 0..m+Tq-1`` and ``q_positions = m..m+Tq-1``. Every query position must be a
  key position (self-attention with memory); a cross-attention alignment is not defined
  (:func:`posenc_ref.shaw.check_self_attention_positions`).
* One head: ``u``, ``v`` and ``W_R`` of that head. The original PyTorch code shares one
  ``(u, v)`` pair across layers; XLNet and HF TransfoXL have one per layer (``untie_r``).

Differences from common implementations
----------------------------------------
* XLNet's segment term ``ef`` and ``bi_data`` (negated distances for half the batch) are not
  part of this op.
* Both codebases build ``R`` with ``ceil(D_r / 2)`` frequencies, so an odd ``D_r`` gives
  ``D_r + 1`` columns there; here ``D_r`` must be even.

Derivation claims relied on: ``relative.shift_equals_direct_indexing`` (each shift equals
direct indexing exactly on its valid region).
"""

from __future__ import annotations

from typing import Any, Final, Literal

import numpy as np
from numpy.typing import NDArray

from posenc_ref._transformer_xl_core import _embedding, _score_terms
from posenc_ref.errors import (
    SpecError,
    check_choice,
    check_finite_result,
    check_float_array,
    check_int,
    check_positions,
    check_size,
)
from posenc_ref.shaw import check_self_attention_positions

Variant = Literal["transformer_xl", "xlnet"]
VARIANTS: Final = ("transformer_xl", "xlnet")


def xl_relative_embedding(distances: Any, /, *, dim: int, base: float = 10000.0) -> NDArray[np.float64]:
    """Rows ``R_delta = [sin(delta * w) | cos(delta * w)]`` for integer distances (any sign).

    Parameters
    ----------
    distances
        Integer distances, any shape; negative values are allowed (XLNet ``"bi"``).
    dim
        Even width ``D_r``.
    base
        Ladder base (10000).

    Returns
    -------
    ndarray, shape (*distances.shape, dim), float64

    Examples
    --------
    >>> xl_relative_embedding([0], dim=4).tolist()
    [[0.0, 0.0, 1.0, 1.0]]
    >>> bool((xl_relative_embedding([-3], dim=4)[0, :2] == -xl_relative_embedding([3], dim=4)[0, :2]).all())
    True
    """
    return _embedding("xl_relative_embedding", distances, dim, base)


def shift_row_distances(q_len: int, k_len: int, *, variant: Variant, attn_type: str = "bi") -> NDArray[np.int64]:
    """The distances ``rho_c`` of the ``R`` rows each codebase builds before its shift.

    Examples
    --------
    >>> shift_row_distances(2, 4, variant="transformer_xl").tolist()
    [3, 2, 1, 0]
    >>> shift_row_distances(2, 4, variant="xlnet").tolist()
    [4, 3, 2, 1, 0, -1]
    >>> shift_row_distances(2, 4, variant="xlnet", attn_type="uni").tolist()
    [4, 3, 2, 1, 0]
    """
    func = "shift_row_distances"
    q_len = check_int(func, "q_len", q_len, minimum=1)
    k_len = check_int(func, "k_len", k_len, minimum=q_len)
    check_choice(func, "variant", variant, VARIANTS)
    check_choice(func, "attn_type", attn_type, ("bi", "uni"))
    check_size(func, "the row distances", (k_len + q_len,))
    if variant == "transformer_xl":
        return np.arange(k_len - 1, -1, -1, dtype=np.int64)
    end = -q_len if attn_type == "bi" else -1
    return np.arange(k_len, end, -1, dtype=np.int64)


def rel_shift_transformer_xl(x: Any) -> NDArray[np.float64]:
    """Transformer-XL ``_rel_shift`` of a ``(Tq, Tk)`` matrix: zero-pad left, reshape, drop, reshape.

    Examples
    --------
    >>> rel_shift_transformer_xl(np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])).tolist()
    [[2.0, 3.0, 0.0], [4.0, 5.0, 6.0]]
    """
    x = check_float_array("rel_shift_transformer_xl", "x", x, ndim=2)
    tq, tk = x.shape
    padded = np.concatenate([np.zeros((tq, 1), dtype=x.dtype), x], axis=1)  # (Tq, Tk + 1)
    return padded.reshape(tk + 1, tq)[1:].reshape(tq, tk)


def rel_shift_xlnet(x: Any, k_len: int) -> NDArray[np.float64]:
    """XLNet ``rel_shift`` of a ``(Tq, R)`` matrix: reshape, drop the first row, reshape, keep ``Tk``.

    Examples
    --------
    >>> rel_shift_xlnet(np.array([[1.0, 2.0, 3.0, 4.0], [5.0, 6.0, 7.0, 8.0]]), 2).tolist()
    [[3.0, 4.0], [6.0, 7.0]]
    """
    func = "rel_shift_xlnet"
    x = check_float_array(func, "x", x, ndim=2)
    tq, rows = x.shape
    k_len = check_int(func, "k_len", k_len, minimum=1)
    if k_len > rows - 1:
        raise SpecError(f"{func}: k_len must be <= R - 1 = {rows - 1} for x of shape {x.shape}, got k_len={k_len}")
    shifted: NDArray[np.float64] = x.reshape(rows, tq)[1:].reshape(tq, rows - 1)[:, :k_len]
    return shifted


def direct_index(x: Any, row_distances: Any, q_positions: Any, k_positions: Any, /) -> NDArray[np.float64]:
    """Direct indexing: ``out[i, j] = x[i, c]`` for the row ``c`` whose distance is ``p_i - p_j``.

    What both shifts compute on their valid regions, without any reshape.

    Parameters
    ----------
    x
        Shape (Tq, R): a value per query and row distance (``BD`` of the module notes).
    row_distances
        The distance of each of the ``R`` rows (:func:`shift_row_distances`), all different.
    q_positions, k_positions
        1-D integer positions of the queries (Tq,) and the keys (Tk,).

    Returns
    -------
    ndarray, shape (Tq, Tk), float64

    Raises
    ------
    SpecError
        ``invalid_shape`` for mismatched shapes; ``out_of_range`` when a pair's distance has no
        row; ``invalid_argument`` for repeated row distances.

    Examples
    --------
    >>> x = np.array([[30.0, 20.0, 10.0, 0.0]])  # rows for distances 3, 2, 1, 0
    >>> direct_index(x, [3, 2, 1, 0], [3], [0, 1, 2, 3]).tolist()
    [[30.0, 20.0, 10.0, 0.0]]
    """
    func = "direct_index"
    bd = check_float_array(func, "x", x, ndim=2)
    rows = check_positions(func, "row_distances", row_distances, nonnegative=False, min_ndim=1)
    q_pos, k_pos = check_self_attention_positions(func, q_positions, k_positions)
    if rows.shape != (bd.shape[1],) or q_pos.size != bd.shape[0]:
        raise SpecError(f"{func}: x must have shape (len(q_positions), len(row_distances)) = "
                        f"({q_pos.size}, {rows.size}), got {bd.shape}", category="invalid_shape")
    order = np.argsort(rows, kind="stable")
    repeated = np.flatnonzero(np.diff(rows[order]) == 0)
    if repeated.size:
        raise SpecError(f"{func}: row_distances must all differ, got {int(rows[order][repeated[0]])} twice")
    check_size(func, "the output", (q_pos.size, k_pos.size))
    distance = q_pos[:, None] - k_pos[None, :]  # (Tq, Tk)
    slot = np.clip(np.searchsorted(rows[order], distance), 0, rows.size - 1)
    column = order[slot]
    missing = rows[column] != distance
    if missing.any():
        where = tuple(int(w) for w in np.argwhere(missing)[0])
        raise SpecError(f"{func}: distance {int(distance[where])} at {where} has no row among row_distances",
                        category="out_of_range")
    return np.take_along_axis(bd, column, axis=1)


def rel_shift(x: Any, /, *, variant: Variant, k_len: int) -> tuple[NDArray[np.float64], NDArray[np.int64]]:
    """Either codebase's shift of ``BD`` rows, and where it equals direct indexing.

    Parameters
    ----------
    x
        ``BD`` against the rows of :func:`shift_row_distances`, shape (Tq, R):
        ``R = Tk`` for ``"transformer_xl"``, ``R >= Tk + 1`` for ``"xlnet"``.
    variant
        ``"transformer_xl"`` (kimiyoung/transformer-xl, HF TransfoXL) or ``"xlnet"``
        (zihangdai/xlnet, HF XLNet).
    k_len
        ``Tk >= Tq``; the memory length is ``Tk - Tq``.

    Returns
    -------
    shifted : ndarray, shape (Tq, Tk), float64
        Exactly what the codebase's shift returns, invalid entries included.
    valid : ndarray, shape (Tq, Tk), int64
        1 where ``shifted[i, j]`` is the row of distance ``m + i - j`` of row ``i`` (direct
        indexing), else 0.

    Raises
    ------
    SpecError
        ``invalid_shape`` for an ``x`` that is not 2-D or has the wrong number of columns;
        ``invalid_argument`` for ``Tk < Tq`` or an unknown variant.

    Examples
    --------
    >>> shifted, valid = rel_shift(np.arange(6.0).reshape(2, 3), variant="transformer_xl", k_len=3)
    >>> valid.tolist()
    [[1, 1, 0], [1, 1, 1]]
    """
    func = "rel_shift"
    check_choice(func, "variant", variant, VARIANTS)
    bd = check_float_array(func, "x", x, ndim=2)
    tq, rows = bd.shape
    k_len = check_int(func, "k_len", k_len, minimum=1)
    if k_len < tq:
        raise SpecError(f"{func}: k_len must be >= Tq = {tq} (memory length k_len - Tq >= 0), got k_len={k_len}")
    if variant == "transformer_xl" and rows != k_len:
        raise SpecError(f"{func}: the transformer_xl shift takes R = k_len = {k_len} rows, got x of shape "
                        f"{bd.shape}", category="invalid_shape")
    if variant == "xlnet" and rows < k_len + 1:
        raise SpecError(f"{func}: the xlnet shift takes R >= k_len + 1 = {k_len + 1} rows, got x of shape {bd.shape}",
                        category="invalid_shape")
    i = np.arange(tq)[:, None]
    j = np.arange(k_len)[None, :]
    if variant == "transformer_xl":
        return rel_shift_transformer_xl(bd), (j <= k_len - tq + i).astype(np.int64)
    return rel_shift_xlnet(bd, k_len), (j + tq - i < rows).astype(np.int64)


def xl_score(
    q: Any, k: Any, u: Any, v: Any, w_r: Any, q_positions: Any, k_positions: Any, /, *,
    base: float = 10000.0, clamp_len: int = -1,
) -> NDArray[np.float64]:
    """The four-term score ``(q_i + u) . k_j + (q_i + v) . W_R^T R_{p_i - p_j}`` by direct indexing.

    Parameters
    ----------
    q, k
        One head's queries (Tq, D) and keys (Tk, D); keys cover memory and segment.
    u, v
        Content and position biases, shape (D,).
    w_r
        Position projection ``W_R``, shape (D_r, D) with ``D_r`` even: ``r = R_delta @ w_r``.
    q_positions, k_positions
        1-D integer positions >= 0 of the queries (Tq,) and keys (Tk,); every query position
        must be a key position.
    base
        Sinusoid base (10000).
    clamp_len
        Clip distances to ``[-clamp_len, clamp_len]`` when > 0.

    Returns
    -------
    ndarray, shape (Tq, Tk), float64 (unscaled; both codebases multiply by ``D ** -0.5``)

    Raises
    ------
    SpecError
        ``invalid_shape`` for mismatched shapes; ``invalid_argument`` for an odd ``D_r``,
        ``clamp_len < -1``, bad positions or a query position that is not a key position.

    Examples
    --------
    With zero queries and ``v = 0`` only the global content term ``u . k_j`` remains:

    >>> keys = [[1.0, 0.0], [2.0, 0.0]]
    >>> xl_score([[0.0, 0.0]], keys, [1.0, 0.0], [0.0, 0.0], np.ones((2, 2)), [1], [0, 1]).tolist()
    [[1.0, 2.0]]
    """
    func = "xl_score"
    q_pos, k_pos = check_self_attention_positions(func, q_positions, k_positions)
    clamp_len = check_int(func, "clamp_len", clamp_len, minimum=-1)
    queries = check_float_array(func, "q", q, ndim=2)
    keys = check_float_array(func, "k", k, ndim=2)
    projection = check_float_array(func, "w_r", w_r, ndim=2)
    dim = queries.shape[1]
    for name, array, want in (("q", queries, (q_pos.size, dim)), ("k", keys, (k_pos.size, dim)),
                              ("w_r", projection, (projection.shape[0], dim))):
        if array.shape != want:
            raise SpecError(f"{func}: {name} must have shape {want} (positions and the width of q), "
                            f"got {array.shape}", category="invalid_shape")
    if projection.shape[0] % 2:
        raise SpecError(f"{func}: the rows D_r of w_r are the sinusoid's dim, and dim must be even, "
                        f"got dim={projection.shape[0]} (w_r of shape {projection.shape})")
    biases = []
    for name, value in (("u", u), ("v", v)):
        bias = check_float_array(func, name, value, ndim=1)
        if bias.shape != (dim,):
            raise SpecError(f"{func}: {name} must have shape ({dim},), got {bias.shape}", category="invalid_shape")
        biases.append(bias)
    check_size(func, "the score", (q_pos.size, k_pos.size))
    with np.errstate(over="ignore", invalid="ignore"):
        score = _score_terms(queries, keys, biases, projection, q_pos, k_pos, clamp_len, base, func)
    return check_finite_result(func, "the score (from q, k, u, v and w_r)", score)


