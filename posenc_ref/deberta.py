r"""DeBERTa v2/v3 disentangled attention: log buckets, relative index, c2p and p2c terms.

Formula
-------
The relative position is :math:`\delta = i - j` (query minus key). With :math:`b` =
``position_buckets``, :math:`M` = ``max_relative_positions`` and ``mid`` :math:`= \lfloor b/2 \rfloor`:

.. math::

    \text{bucket}(\delta) = \begin{cases} \delta & |\delta| \le \text{mid} \\
    \operatorname{sign}(\delta)\left(\text{mid} + \left\lceil
    \dfrac{\ln(|\delta|/\text{mid})}{\ln((M-1)/\text{mid})}\,(\text{mid} - 1)\right\rceil\right) & \text{otherwise}
    \end{cases}

(He et al. 2021, arXiv:2111.09543, DeBERTaV3; the formula is the code's, ``make_log_bucket_position``.)
The row read from the relative embeddings is ``idx = clip(bucket + b, 0, 2b - 1)``. With
``Qr``/``Kr`` the projected relative embeddings (``2b`` rows per head), the logits are

.. math::

    A_{ij} = \frac{q_i\cdot k_j + q_i\cdot K_r[\text{idx}(i,j)] + k_j\cdot Q_r[\text{idx}(i,j)]}
    {\sqrt{d\,(1 + n_\text{terms})}}

(He et al. 2020, arXiv:2006.03654, eq. 4; ``n_terms`` counts c2p and p2c that are used).

Conventions
-----------
* Sign ``δ = i - j``; rounding **ceil** (T5 truncates); buckets are signed and unbounded.
* ``distance_clamp``: ``"none"`` (transformers ``deberta_v2`` 5.24, and the first releases of
  microsoft/DeBERTa) or ``"max_relative_positions"`` (microsoft/DeBERTa ``da_utils`` at HEAD
  4d7fe0b: ``δ`` is clamped to ``±(M - 1)`` before bucketing). They differ from ``|δ| >= 512``
  with the v3 configs: ``δ = 600`` is bucket 270 without the clamp and 255 with it, and every
  ``δ <= -512`` reads row 0 without the clamp but row 1 with it.
* p2c reads the **same** index ``idx(δ(i, j))`` as c2p in both codebases; the paper writes
  ``δ(j, i)`` (microsoft/DeBERTa#47; the sign slip of nntrainer#3982).
* Exact values: the ceil is exact. The reference evaluates the formula in float64 and decides
  every value within ``2**-44`` (relative) of an integer ``r`` exactly (the side of
  ``n^(mid-1) mid^r`` against ``(M-1)^r mid^(mid-1)``, without forming those powers:
  :func:`posenc_ref.t5.log_ladder`); at ``|δ| = M - 1`` the value is exactly ``mid - 1``. A
  distance whose log value reaches ``2**36`` (possible only without the clamp, with ``M - 1``
  barely above ``mid``) is refused: beyond it float64 cannot single out the integer.
* Computation order of the scores: the three dot products are summed, then divided once by
  ``sqrt(d (1 + n))`` (both codebases divide each term before summing; the difference is a few
  ulp and within the tolerance).
* Scores here use the attention-span layout of v2/v3 (``2b`` relative rows, ``share_att_key``
  projections done by the caller); v1 (no buckets) is out of scope.

Differences from common implementations
----------------------------------------
* transformers computes the log in float32; the buckets agree with the exact ones on every
  case of the corpus (the calibration emulation does exactly that).
* transformers (5.24) calls ``build_rpos`` with ``position_buckets`` and
  ``max_relative_positions`` swapped; that only matters when query and key lengths differ,
  which is why the scores op takes explicit query and key positions.

Derivation claims relied on (``posenc_ref.derivations``, derivations issue): buckets are odd
in ``δ``, monotone in ``|δ|`` and exact on ``|δ| <= mid`` (``deberta_bucket_odd_monotone``).
"""

from __future__ import annotations

import math
from typing import Any, Final, Literal

import numpy as np
from numpy.typing import NDArray

from posenc_ref.alibi import _query_key
from posenc_ref.errors import (
    SpecError,
    check_choice,
    check_finite_result,
    check_float_array,
    check_int,
    check_positions,
    check_size,
)
from posenc_ref.t5 import _ladder

DistanceClamp = Literal["none", "max_relative_positions"]
PosAttType = Literal["c2p|p2c", "c2p", "p2c"]
DISTANCE_CLAMPS: Final = ("none", "max_relative_positions")
POS_ATT_TYPES: Final = ("c2p|p2c", "c2p", "p2c")


def _validate(func: str, position_buckets: Any, max_relative_positions: Any, distance_clamp: Any) -> tuple[int, int]:
    check_choice(func, "distance_clamp", distance_clamp, DISTANCE_CLAMPS)
    buckets = check_int(func, "position_buckets", position_buckets, minimum=4)
    limit = check_int(func, "max_relative_positions", max_relative_positions, minimum=1)
    mid = buckets // 2
    if limit - 1 <= mid:
        raise SpecError(
            f"{func}: max_relative_positions - 1 must be above the exact region (> {mid} = position_buckets // 2; "
            f"the log ratio ln((M-1)/mid) must be > 0), got max_relative_positions={limit}"
        )
    return buckets, limit


def deberta_bucket(
    relative_positions: Any,
    /,
    *,
    position_buckets: int = 256,
    max_relative_positions: int = 512,
    distance_clamp: DistanceClamp = "none",
) -> NDArray[np.int64]:
    """DeBERTa v2/v3 log buckets of relative positions ``δ = i - j``.

    Parameters
    ----------
    relative_positions
        Integers ``i - j``, any shape.
    position_buckets
        ``b >= 4`` (256 in the v3 configs).
    max_relative_positions
        ``M`` with ``M - 1 > b // 2`` (512 in the v3 configs, via ``max_position_embeddings``).
    distance_clamp
        ``"none"`` (transformers) or ``"max_relative_positions"`` (microsoft/DeBERTa HEAD).

    Returns
    -------
    ndarray, same shape, int64 (signed, same sign as ``δ``)

    Raises
    ------
    SpecError
        ``position_buckets < 4``, ``M - 1 <= b // 2``, an unknown clamp, non-integer or empty input.

    Examples
    --------
    >>> deberta_bucket([127, 128, 129, 200, 511, -600]).tolist()
    [127, 128, 129, 169, 255, -270]
    >>> deberta_bucket([-600], distance_clamp="max_relative_positions").tolist()
    [-255]
    """
    func = "deberta_bucket"
    buckets, limit = _validate(func, position_buckets, max_relative_positions, distance_clamp)
    delta = check_positions(func, "relative_positions", relative_positions, nonnegative=False)
    return _bucket(func, delta, buckets, limit, distance_clamp)


def _bucket(func: str, delta: NDArray[np.int64], buckets: int, limit: int, distance_clamp: str) -> NDArray[np.int64]:
    if distance_clamp == "max_relative_positions":
        delta = np.clip(delta, -(limit - 1), limit - 1)
    mid = buckets // 2
    n = np.abs(delta)
    ladder = _ladder(func, np.maximum(n, mid), mid, limit - 1, mid - 1, "ceil")
    result: NDArray[np.int64] = np.asarray(np.where(n <= mid, delta, np.sign(delta) * (mid + ladder)))
    return result


def deberta_index(
    query_positions: Any,
    key_positions: Any,
    /,
    *,
    position_buckets: int = 256,
    max_relative_positions: int = 512,
    distance_clamp: DistanceClamp = "none",
) -> NDArray[np.int64]:
    """Relative-embedding rows ``clip(bucket(i - j) + b, 0, 2b - 1)`` for explicit positions.

    Returns
    -------
    ndarray, shape (..., Tq, Tk), int64, values in ``[0, 2b)``

    Examples
    --------
    >>> deberta_index([0], [0, 1, 600]).tolist()
    [[256, 255, 0]]
    >>> deberta_index([0], [600], distance_clamp="max_relative_positions").tolist()
    [[1]]
    """
    func = "deberta_index"
    buckets, limit = _validate(func, position_buckets, max_relative_positions, distance_clamp)
    q, k = _query_key(func, query_positions, key_positions)
    return _index(func, q, k, buckets, limit, distance_clamp)


def _index(func: str, q: NDArray[np.int64], k: NDArray[np.int64], buckets: int, limit: int, distance_clamp: str
           ) -> NDArray[np.int64]:
    check_size(func, "the relative index", q.shape + k.shape[-1:])
    delta = q[..., :, None] - k[..., None, :]  # (..., Tq, Tk)
    bucket = _bucket(func, delta, buckets, limit, distance_clamp)
    index: NDArray[np.int64] = np.clip(bucket + buckets, 0, 2 * buckets - 1)
    return index


def deberta_scores(
    query_positions: Any,
    key_positions: Any,
    q: Any,
    k: Any,
    pos_key: Any,
    pos_query: Any,
    /,
    *,
    position_buckets: int = 256,
    max_relative_positions: int = 512,
    distance_clamp: DistanceClamp = "none",
    pos_att_type: PosAttType = "c2p|p2c",
) -> NDArray[np.float64]:
    """Disentangled attention logits: content-content plus c2p and p2c, scaled by ``sqrt(d (1 + n))``.

    Parameters
    ----------
    query_positions, key_positions
        1-D integer positions, lengths ``Tq`` and ``Tk``.
    q, k
        Per-head queries ``(H, Tq, D)`` and keys ``(H, Tk, D)``.
    pos_key, pos_query
        Projected relative embeddings ``Kr`` and ``Qr``, ``(H, 2b, D)`` each (``pos_query`` is
        unused without p2c, ``pos_key`` without c2p).
    position_buckets, max_relative_positions, distance_clamp
        See :func:`deberta_bucket`.
    pos_att_type
        ``"c2p|p2c"`` (v2/v3 configs), ``"c2p"`` or ``"p2c"``; ``n`` is the number of terms.

    Returns
    -------
    ndarray, shape (H, Tq, Tk), float64

    Raises
    ------
    SpecError
        Bad parameters, positions that are not 1-D, arrays whose shapes disagree.

    Examples
    --------
    With zero relative embeddings only ``q.k / sqrt(3 d)`` remains:

    >>> q = np.ones((1, 1, 3)); kr = np.zeros((1, 8, 3))
    >>> deberta_scores([0], [0], q, q, kr, kr, position_buckets=4, max_relative_positions=8).tolist()
    [[[1.0]]]
    """
    func = "deberta_scores"
    check_choice(func, "pos_att_type", pos_att_type, POS_ATT_TYPES)
    buckets, limit = _validate(func, position_buckets, max_relative_positions, distance_clamp)
    qp = check_positions(func, "query_positions", query_positions)
    kp = check_positions(func, "key_positions", key_positions)
    if qp.ndim != 1 or kp.ndim != 1:
        raise SpecError(f"{func}: query_positions and key_positions must be 1-D, got shapes {qp.shape} and "
                        f"{kp.shape}", category="invalid_shape")
    arrays = {name: check_float_array(func, name, value, ndim=3)
              for name, value in (("q", q), ("k", k), ("pos_key", pos_key), ("pos_query", pos_query))}
    heads, _, dim = arrays["q"].shape
    wanted = {"q": ((heads, qp.size, dim), "(H, Tq, D)"), "k": ((heads, kp.size, dim), "(H, Tk, D)"),
              "pos_key": ((heads, 2 * buckets, dim), "(H, 2 * position_buckets, D)"),
              "pos_query": ((heads, 2 * buckets, dim), "(H, 2 * position_buckets, D)")}
    for name, (shape, letters) in wanted.items():
        if arrays[name].shape != shape:
            raise SpecError(f"{func}: {name} must have shape {letters} = {shape}, got shape {arrays[name].shape}",
                            category="invalid_shape")
    check_size(func, "the relative logits", (heads, qp.size + kp.size, 2 * buckets + kp.size))
    index = _index(func, qp, kp, buckets, limit, distance_clamp)  # (Tq, Tk)
    terms = pos_att_type.split("|")
    with np.errstate(over="ignore", invalid="ignore"):
        scores = arrays["q"] @ np.swapaxes(arrays["k"], -1, -2)  # (H, Tq, Tk)
        if "c2p" in terms:
            c2p = arrays["q"] @ np.swapaxes(arrays["pos_key"], -1, -2)  # (H, Tq, 2b): every query against every row
            scores = scores + np.take_along_axis(c2p, np.broadcast_to(index, (heads,) + index.shape), axis=-1)
        if "p2c" in terms:
            p2c = arrays["k"] @ np.swapaxes(arrays["pos_query"], -1, -2)  # (H, Tk, 2b)
            scores = scores + p2c[:, np.arange(kp.size)[None, :], index]  # Note: idx(i - j), not the paper's
        result: NDArray[np.float64] = scores / math.sqrt(dim * (1 + len(terms)))
    return check_finite_result(func, "the scores (from q, k, pos_key and pos_query)", result)
