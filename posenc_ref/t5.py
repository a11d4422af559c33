r"""T5 relative attention bias: the bucket function and the per-head bias lookup.

Formula
-------
The relative position is :math:`r = j - i` (key minus query; Mesh-TF's "memory_position -
query_position"). With :math:`N` = ``num_buckets`` and :math:`D` = ``max_distance``:

* bidirectional: :math:`B = \lfloor N/2 \rfloor` buckets per side, offset :math:`B` when
  :math:`r > 0`, :math:`n = |r|`;
* unidirectional (causal decoder): :math:`B = N`, :math:`n = \max(-r, 0)` (future keys share
  bucket 0).

With :math:`E = \lfloor B/2 \rfloor` (the exact region):

.. math::

    \text{bucket}(n) = \begin{cases} n & n < E \\
    \min\!\left(B - 1,\; E + \left\lfloor \dfrac{\ln(n/E)}{\ln(D/E)}\,(B - E) \right\rfloor\right) & n \ge E
    \end{cases}

(Raffel et al. 2020, arXiv:1910.10683, section 2.1; the formula is the code's, Mesh TensorFlow
``_relative_position_bucket``). ``bias[h, i, j] = table[bucket(j - i), h]`` is added to the
*unscaled* logits (T5 attention has no ``1/sqrt(d)``).

Conventions
-----------
* Sign: ``r = j - i``. Rounding: truncation toward zero (the argument is >= 0), unlike
  DeBERTa's ceil (:mod:`posenc_ref.deberta`).
* Saturation comes from the cap at ``B - 1``, **not** from clipping the distance: with
  ``(32, 128)`` bidirectional, bucket 15 starts at ``|r| = 91``; causal, bucket 31 at ``113``.
* Exact values: the buckets are the exact floor of the real-valued formula. The reference
  evaluates it in float64 (through ``log1p``) and decides every value within ``2**-44``
  (relative) of an integer ``r`` exactly, the side of :math:`n^{B-E} E^r` against
  :math:`D^r E^{B-E}` found without forming those powers (:func:`log_ladder`), so the
  boundary distances where the formula is an integer (16, 32, 64 for ``(32, 128)``
  bidirectional) are exact and the work stays bounded. Distances ``|r| >= D`` are evaluated at
  ``D`` (the cap ``B - 1`` applies from there on).
  HF's float32 ``log`` agrees there (the raw values are exactly 2.0, 4.0, 6.0 in float32).
* ``direction``: ``"bidirectional"`` (HF encoder, ``bidirectional=not is_decoder``; Mesh-TF
  when not ``fully_autoregressive``, prefix-LMs included) or ``"unidirectional"`` (decoder
  self-attention).
* ``table_layout``: ``"buckets_heads"`` (HF ``nn.Embedding(num_buckets, H)``) or
  ``"heads_buckets"`` (flaxformer/T5X ``(H, num_buckets)``): a weight-conversion trap.
* Decoding with a cache: query positions start at the cache length; cross-attention uses
  separate key positions. HF puts no bias in cross-attention (transformers#8518).

Differences from common implementations
----------------------------------------
* flaxformer adds float32 ``eps`` inside the log; the buckets agree with the exact ones for
  every non-degenerate ``(num_buckets, max_distance)`` checked (notes, convention 18).
* candle's first port had no cap (huggingface/candle#1312); MLX's first port had wrong
  buckets (ml-explore/mlx-examples#113).
* The table lives in layer 0 of each stack and is shared (T5, LongT5) or owned by every layer
  (UMT5); that is model structure, outside this op.

Derivation claims relied on (``posenc_ref.derivations``, derivations issue): buckets are
monotone in ``|r|`` on each side and equal ``|r|`` on the exact region (``t5_bucket_monotone``,
``t5_bucket_exact_region``).
"""

from __future__ import annotations

import math
from decimal import Decimal, localcontext
from fractions import Fraction
from typing import Any, Final, Literal

import numpy as np
from numpy.typing import NDArray

from posenc_ref.alibi import _query_key
from posenc_ref.errors import SpecError, check_choice, check_float_array, check_int, check_positions, check_size

Direction = Literal["bidirectional", "unidirectional"]
TableLayout = Literal["buckets_heads", "heads_buckets"]
DIRECTIONS: Final = ("bidirectional", "unidirectional")
TABLE_LAYOUTS: Final = ("buckets_heads", "heads_buckets")


# Exactness of the log ladder
# ---------------------------
# The ladder is floor or ceil of v = S ln(n/E) / ln(L/E) for integers n >= E >= 1, L > E, S >= 1.
# It is evaluated as S * log1p((n - E)/E) / log1p((L - E)/E) in float64: n - E is an exact int64
# (|n| < 2**53), the two quotients are within 3u and u of the true ones (u = 2**-53; Python's
# int/int is correctly rounded), and d log1p(y) / log1p(y) <= dy / y for y > 0, so each log1p
# is within 3u + 2u (libm's own error) relative and v within about 17u relative: 2e-15 |v|.
# So wherever v lies more than _WINDOW = 2**-44 |v| (~5.7e-14 |v|, a margin of 30) from the
# nearest integer r, floor/ceil of the float value is the exact one. |v| < 2**36 keeps that
# window below 1/256, so the nearest integer is the only candidate.
# Inside the window the side of r is decided exactly (_side_of_integer): first whether
# (n/E)^S = (L/E)^r exactly, by integer roots of bounded size (no big powers: a^s = b^t with
# gcd(s, t) = 1 holds iff a = c^t and b = c^s for a rational c, and c^t <= 2**53 bounds t by 53);
# otherwise Lambda = S ln(n/E) - r ln(L/E) is non-zero and its sign is read from decimal
# logarithms at 40 digits, doubled until the error bound is below |Lambda| (it terminates
# because Lambda != 0; in practice the first 40 digits decide it). Work per decided value is
# bounded by the sizes of n, E, L, S and r, never by a power n**S.
_WINDOW: Final = 2.0**-44
LADDER_LIMIT: Final = 2**36
"""The largest ladder value the reference evaluates (beyond, the float64 window could hold two integers)."""


def _iroot(x: int, k: int) -> int | None:
    """The integer ``k``-th root of ``x >= 1`` when ``x`` is a perfect ``k``-th power, else ``None``."""
    if k == 1:
        return x
    c = int(round(x ** (1.0 / k)))
    for candidate in (c - 1, c, c + 1):
        if candidate >= 1 and candidate**k == x:
            return candidate
    return None


def _power_equal(a: Fraction, s_exp: int, b: Fraction, t_exp: int) -> bool:
    """Whether ``a**s_exp == b**t_exp`` for rationals ``a, b > 1`` and integers ``s_exp, t_exp >= 1``."""
    g = math.gcd(s_exp, t_exp)
    s_exp, t_exp = s_exp // g, t_exp // g
    # a = c^t and b = c^s with c > 1 rational; c's numerator is >= 2, so 2^t <= numerator(a)
    if t_exp > a.numerator.bit_length() or s_exp > b.numerator.bit_length():
        return False
    num, den = _iroot(a.numerator, t_exp), _iroot(a.denominator, t_exp)
    if num is None or den is None:
        return False
    return Fraction(num, den) ** s_exp == b


def _side_of_integer(n: int, exact: int, limit: int, steps: int, r: int) -> int:
    """The sign of ``steps * ln(n/exact) - r * ln(limit/exact)`` (-1, 0 or 1), exactly."""
    a, b = Fraction(n, exact), Fraction(limit, exact)
    if r == 0:
        return 0 if a == 1 else 1
    if a == 1:
        return -1
    if _power_equal(a, steps, b, r):
        return 0
    digits = 40
    while True:
        with localcontext() as ctx:
            ctx.prec = digits
            log_a = Decimal(n).ln() - Decimal(exact).ln()
            log_b = Decimal(limit).ln() - Decimal(exact).ln()
            value = steps * log_a - r * log_b
            # each ln within one unit of the digits-th digit of |ln| <= 37; two more roundings
            bound = Decimal(10) ** (2 - digits) * 40 * (steps + r)
            if abs(value) > bound:
                return 1 if value > 0 else -1
        digits *= 2


def _ladder(func: str, n: NDArray[np.int64], exact: int, limit: int, steps: int, rounding: str) -> NDArray[np.int64]:
    """:func:`log_ladder` for validated arguments; errors name ``func``."""
    flat = np.asarray(n, dtype=np.int64).reshape(-1)
    value = steps * (np.log1p((flat - exact) / exact) / math.log1p((limit - exact) / exact))
    if flat.size and float(value.max()) >= LADDER_LIMIT:
        where = int(np.argmax(value))
        raise SpecError(f"{func}: distance {int(flat[where])} gives a log-bucket value {float(value[where]):.6g} "
                        f"beyond 2**36, outside the range evaluated exactly; reduce the distances or widen the "
                        f"log range (exact region {exact}, limit {limit}, {steps} steps)")
    nearest = np.rint(value)
    result = (np.floor(value) if rounding == "floor" else np.ceil(value)).astype(np.int64)
    ambiguous = np.abs(value - nearest) <= _WINDOW * np.maximum(1.0, value)
    near = np.flatnonzero(ambiguous)
    if near.size:  # decides each distinct distance whose value is (nearly) an integer once
        distances, first, inverse = np.unique(flat[near], return_index=True, return_inverse=True)
        candidates = nearest[near][first].astype(np.int64)
        decided = []
        for distance, r in zip(distances.tolist(), candidates.tolist()):
            side = _side_of_integer(distance, exact, limit, steps, r)
            if rounding == "floor":
                decided.append(r if side >= 0 else r - 1)
            else:
                decided.append(r if side <= 0 else r + 1)
        result[near] = np.asarray(decided, dtype=np.int64)[inverse.reshape(-1)]
    return result.reshape(np.shape(n))


def log_ladder(n: Any, exact: int, limit: int, steps: int, *, rounding: Literal["floor", "ceil"]
               ) -> NDArray[np.int64]:
    """``floor`` or ceil of ``steps * ln(n/exact) / ln(limit/exact)``, exactly, for integers ``n >= exact``.

    The value is computed in float64; wherever it lies within ``2**-44`` (relative) of an
    integer ``r``, the side is decided exactly (see the comment above the function): the work
    is bounded by the sizes of the arguments, never a power ``n**steps``.

    Raises
    ------
    SpecError
        ``exact < 1``, ``limit <= exact``, ``steps < 1``, an unknown rounding, ``n < exact``,
        non-integer ``n``, or a value beyond ``2**36``.

    Examples
    --------
    At ``n = 16, 32, 64`` the T5 ``(32, 128)`` value is exactly 2, 4, 6:

    >>> log_ladder(np.array([15, 16, 32, 64]), 8, 128, 8, rounding="floor").tolist()
    [1, 2, 4, 6]
    """
    func = "log_ladder"
    exact = check_int(func, "exact", exact, minimum=1)
    limit = check_int(func, "limit", limit, minimum=exact + 1)
    steps = check_int(func, "steps", steps, minimum=1)
    check_choice(func, "rounding", rounding, ("floor", "ceil"))
    values = check_positions(func, "n", n, allow_empty=True)
    if values.size and int(values.min()) < exact:
        raise SpecError(f"{func}: n must be >= exact = {exact}, got {int(values.min())}")
    return _ladder(func, values, exact, limit, steps, rounding)


def _side(direction: str, num_buckets: int) -> int:
    return num_buckets // 2 if direction == "bidirectional" else num_buckets


def _validate(func: str, num_buckets: Any, max_distance: Any, direction: Any) -> tuple[int, int, int, int]:
    check_choice(func, "direction", direction, DIRECTIONS)
    num_buckets = check_int(func, "num_buckets", num_buckets, minimum=1)
    max_distance = check_int(func, "max_distance", max_distance, minimum=1)
    side = _side(direction, num_buckets)
    if side < 2:
        need = 4 if direction == "bidirectional" else 2
        raise SpecError(
            f"{func}: num_buckets must be >= {need} under direction={direction!r} to hold an exact region "
            f"and a log region, got num_buckets={num_buckets}"
        )
    exact = side // 2
    if max_distance <= exact:
        raise SpecError(
            f"{func}: max_distance must be above the exact region (> {exact} for num_buckets={num_buckets}, "
            f"direction={direction!r}; the log ratio ln(max_distance/{exact}) must be > 0), "
            f"got max_distance={max_distance}"
        )
    return num_buckets, max_distance, side, exact


def t5_bucket(
    relative_positions: Any,
    /,
    *,
    num_buckets: int = 32,
    max_distance: int = 128,
    direction: Direction = "bidirectional",
) -> NDArray[np.int64]:
    """T5 buckets of relative positions ``r = j - i``.

    Parameters
    ----------
    relative_positions
        Integers ``j - i``, any shape.
    num_buckets
        ``N``: >= 4 bidirectional, >= 2 unidirectional.
    max_distance
        ``D``: above the exact region ``E``.
    direction
        ``"bidirectional"`` or ``"unidirectional"``.

    Returns
    -------
    ndarray, same shape, int64, values in ``[0, N)``

    Raises
    ------
    SpecError
        ``num_buckets`` too small for an exact and a log region, ``max_distance <= E``, an
        unknown direction, non-integer or empty input.

    Examples
    --------
    The bidirectional ``(32, 128)`` buckets of ``r = -10..10`` (negative: 0..15, positive: 16..31):

    >>> t5_bucket(np.arange(-10, 11)).tolist()
    [8, 8, 8, 7, 6, 5, 4, 3, 2, 1, 0, 17, 18, 19, 20, 21, 22, 23, 24, 24, 24]
    """
    func = "t5_bucket"
    _, max_distance, side, exact = _validate(func, num_buckets, max_distance, direction)
    rel = check_positions(func, "relative_positions", relative_positions, nonnegative=False)
    return _buckets(func, rel, max_distance, side, exact, direction)


def _buckets(func: str, rel: NDArray[np.int64], max_distance: int, side: int, exact: int, direction: str
             ) -> NDArray[np.int64]:
    if direction == "bidirectional":
        offset = np.where(rel > 0, side, 0)
        n = np.abs(rel)
    else:
        offset = np.zeros_like(rel)
        n = np.maximum(-rel, 0)
    # n >= D gives ladder >= B - E, capped at B - 1 below: evaluating min(n, D) changes nothing
    ladder = _ladder(func, np.clip(n, exact, max_distance), exact, max_distance, side - exact, "floor")
    buckets: NDArray[np.int64] = np.asarray(offset + np.where(n < exact, n, np.minimum(exact + ladder, side - 1)))
    return buckets


def t5_bias(
    query_positions: Any,
    key_positions: Any,
    table: Any,
    /,
    *,
    num_buckets: int = 32,
    max_distance: int = 128,
    direction: Direction = "bidirectional",
    table_layout: TableLayout = "buckets_heads",
) -> NDArray[np.float64]:
    """T5 bias ``table[bucket(j - i), h]`` for explicit query and key positions.

    Parameters
    ----------
    query_positions, key_positions
        Integer positions >= 0, shapes ``(..., Tq)`` and ``(..., Tk)`` with equal leading
        shapes (with a cache, queries start at the cache length).
    table
        The learned bias table: ``(num_buckets, H)`` under ``"buckets_heads"``, ``(H,
        num_buckets)`` under ``"heads_buckets"``.
    num_buckets, max_distance, direction
        See :func:`t5_bucket`.
    table_layout
        ``"buckets_heads"`` (HF) or ``"heads_buckets"`` (flaxformer/T5X).

    Returns
    -------
    ndarray, shape (..., H, Tq, Tk), float64

    Raises
    ------
    SpecError
        Bad parameters, a table whose shape does not match ``num_buckets`` and the layout,
        bad positions or mismatched leading shapes.

    Examples
    --------
    >>> table = np.arange(32.0)[:, None]  # one head, bias = bucket number
    >>> t5_bias([0, 1], [0, 1], table).tolist()
    [[[0.0, 17.0], [1.0, 0.0]]]
    """
    func = "t5_bias"
    check_choice(func, "table_layout", table_layout, TABLE_LAYOUTS)
    num_buckets, max_distance, side, exact = _validate(func, num_buckets, max_distance, direction)
    values = check_float_array(func, "table", table, ndim=2)
    per_bucket = values if table_layout == "buckets_heads" else values.T  # (N, H)
    if per_bucket.shape[0] != num_buckets:
        expected = "(num_buckets, H)" if table_layout == "buckets_heads" else "(H, num_buckets)"
        raise SpecError(
            f"{func}: table must have shape {expected} under table_layout={table_layout!r} with "
            f"num_buckets={num_buckets}, got shape {values.shape}",
            category="invalid_shape",
        )
    q, k = _query_key(func, query_positions, key_positions)
    check_size(func, "the bias", q.shape[:-1] + (per_bucket.shape[1], q.shape[-1], k.shape[-1]))
    rel = k[..., None, :] - q[..., :, None]  # (..., Tq, Tk)
    low, high = int(rel.min()), int(rel.max())
    if high - low < rel.size:  # buckets depend on r only: evaluate each distinct r once, then look up
        buckets = _buckets(func, np.arange(low, high + 1), max_distance, side, exact, direction)[rel - low]
    else:
        buckets = _buckets(func, rel, max_distance, side, exact, direction)
    bias: NDArray[np.float64] = np.moveaxis(per_bucket.T[:, buckets], 0, -3)  # (H, ..., Tq, Tk) -> (..., H, Tq, Tk)
    return bias
