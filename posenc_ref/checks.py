"""Debugging checks for a model's position handling: scale, length extrapolation, order.

Three small checks from the usual failure reports, each runnable on plain arrays:

* :func:`scale_check`: is the position signal on the scale of the token embeddings, or does
  it drown them ("position dominates semantics")?
* :func:`extrapolation_check`: evaluate an encoder at twice the trained length: does it
  raise, return non-finite rows, or repeat its last trained row (a clamped learned table)?
* :func:`order_check`: put a token at position 0 and its copy at position 5: without position
  information the two copies get identical attention weights.

:func:`order_check` computes a plain scaled-dot-product attention itself, ``softmax(Q K^T /
sqrt(K))`` with ``Q = X W_q``, ``K = X W_k`` and ``X = tokens + encodings``. It moves onto the
reference attention op once that op is part of the specification, so that relative schemes
(which act inside attention, not on its input) can be checked the same way.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from posenc_ref.errors import SpecError, check_float, check_float_array, check_int, check_size


@dataclass(frozen=True)
class ScaleCheck:
    """Result of :func:`scale_check`.

    Attributes
    ----------
    embedding_norm : float
        Mean L2 norm of the token-embedding rows.
    encoding_norm : float
        Mean L2 norm of the position-encoding rows.
    ratio : float
        ``encoding_norm / embedding_norm``.
    max_ratio : float
        The largest ratio accepted.
    passed : bool
        ``ratio <= max_ratio``.
    """

    embedding_norm: float
    encoding_norm: float
    ratio: float
    max_ratio: float
    passed: bool


def _mean_row_norm(rows: NDArray[np.float64]) -> float:
    """Mean L2 row norm, each row scaled by its largest magnitude first (no overflow of the squares)."""
    peak = np.abs(rows).max(axis=1)
    with np.errstate(over="ignore"):
        norms = peak * np.linalg.norm(rows / np.where(peak == 0.0, 1.0, peak)[:, None], axis=1)
        return float(norms.mean())


def scale_check(embeddings: Any, encodings: Any, /, *, max_ratio: float = 1.0) -> ScaleCheck:
    """Compare the size of position encodings with the size of token embeddings.

    When position vectors are much larger than token embeddings, their sum is mostly position
    and the content is hard to read back. The usual fix is to scale the position vectors to a
    fraction of the embedding norm (or the embeddings up: the original Transformer multiplies
    them by ``sqrt(d_model)``) and check again.

    Parameters
    ----------
    embeddings
        Token-embedding rows, shape (N, D), finite, not all zero.
    encodings
        Position-encoding rows, shape (T, D), finite.
    max_ratio
        The largest accepted ratio of mean row norms, > 0.

    Returns
    -------
    ScaleCheck
        Mean row norms, their ratio and the verdict.

    Raises
    ------
    SpecError
        ``invalid_shape`` for inputs that are not 2-D or whose widths differ;
        ``invalid_argument`` for non-finite values, all-zero embeddings or ``max_ratio <= 0``.

    Examples
    --------
    Rows of norm 2 against embeddings of norm 1:

    >>> result = scale_check([[1.0, 0.0], [0.0, 1.0]], [[2.0, 0.0]])
    >>> result.ratio, result.passed
    (2.0, False)
    """
    func = "scale_check"
    emb = check_float_array(func, "embeddings", embeddings, ndim=2)
    enc = check_float_array(func, "encodings", encodings, ndim=2)
    max_ratio = check_float(func, "max_ratio", max_ratio, positive=True)
    if emb.shape[1] != enc.shape[1]:
        raise SpecError(
            f"{func}: embeddings and encodings must have the same width, got {emb.shape[1]} and {enc.shape[1]}",
            category="invalid_shape",
        )
    embedding_norm, encoding_norm = _mean_row_norm(emb), _mean_row_norm(enc)
    for name, norm in (("embeddings", embedding_norm), ("encodings", encoding_norm)):
        if not np.isfinite(norm):
            raise SpecError(f"{func}: the mean row norm of {name} overflows float64, got {norm!r}")
    if embedding_norm == 0.0:
        raise SpecError(f"{func}: embeddings must not be all zero, got mean row norm 0.0")
    ratio = encoding_norm / embedding_norm
    return ScaleCheck(embedding_norm, encoding_norm, ratio, max_ratio, ratio <= max_ratio)


@dataclass(frozen=True)
class ExtrapolationCheck:
    """Result of :func:`extrapolation_check`.

    Attributes
    ----------
    trained_length : int
        Positions ``0 .. trained_length - 1`` were seen in training.
    evaluated_length : int
        Positions ``0 .. evaluated_length - 1`` were asked for.
    error : str or None
        The message of the :class:`~posenc_ref.errors.SpecError` raised for the positions beyond
        the trained range, or ``None``.
    nonfinite_rows : int
        Rows beyond the trained range holding a NaN or an infinity.
    repeated_rows : int
        Rows beyond the trained range equal to the last trained row (a clamped table).
    passed : bool
        No error, no non-finite row, no repeated row.
    """

    trained_length: int
    evaluated_length: int
    error: str | None
    nonfinite_rows: int
    repeated_rows: int
    passed: bool


def _rows(func: str, result: Any, count: int) -> NDArray[np.float64]:
    rows = np.asarray(result, dtype=np.float64)
    if rows.ndim != 2 or rows.shape[0] != count:
        raise SpecError(f"{func}: encode must return shape ({count}, D) for {count} positions, got shape {rows.shape}",
                        category="invalid_shape")
    return rows


def extrapolation_check(
    encode: Callable[[NDArray[np.int64]], Any], /, *, trained_length: int, factor: float = 2.0
) -> ExtrapolationCheck:
    """Evaluate a position encoder beyond its trained length (by default at twice that length).

    A learned absolute table has no row for an unseen position: depending on the framework it
    raises, returns garbage, or (clamped) returns its last row again and again. An analytic
    encoding continues. Only a :class:`~posenc_ref.errors.SpecError` raised by ``encode`` for
    the positions beyond the trained range is recorded; any other exception propagates.

    Parameters
    ----------
    encode
        Maps int64 positions of shape (T,) to rows of shape (T, D).
    trained_length
        Number of positions seen in training, >= 1.
    factor
        Evaluate positions ``0 .. ceil(factor * trained_length) - 1``; > 1.

    Returns
    -------
    ExtrapolationCheck
        What happened beyond the trained range.

    Raises
    ------
    SpecError
        ``invalid_argument`` for ``trained_length < 1`` or ``factor <= 1``, and whatever
        ``encode`` raises for the trained positions themselves; ``invalid_shape`` when
        ``encode`` returns the wrong shape.
    TypeError
        ``encode`` is not callable.

    Examples
    --------
    A clamped 4-row table repeats its last row for positions 4 .. 7:

    >>> table = [[0.0], [1.0], [2.0], [3.0]]
    >>> result = extrapolation_check(lambda p: [table[min(i, 3)] for i in p], trained_length=4)
    >>> result.evaluated_length, result.repeated_rows, result.passed
    (8, 4, False)
    """
    func = "extrapolation_check"
    if not callable(encode):
        raise TypeError(f"{func}: encode must be callable, got {type(encode).__name__}")
    trained_length = check_int(func, "trained_length", trained_length, minimum=1)
    factor = check_float(func, "factor", factor, positive=True)
    if factor <= 1.0:
        raise SpecError(f"{func}: factor must be > 1, got factor={factor!r}")
    evaluated = int(np.ceil(factor * trained_length))
    check_size(func, "the evaluated positions", (evaluated,))
    inside = _rows(func, encode(np.arange(trained_length, dtype=np.int64)), trained_length)
    try:
        result = encode(np.arange(trained_length, evaluated, dtype=np.int64))
    except SpecError as exc:
        return ExtrapolationCheck(trained_length, evaluated, str(exc), 0, 0, False)
    beyond = _rows(func, result, evaluated - trained_length)
    nonfinite = int((~np.isfinite(beyond)).any(axis=1).sum())
    repeated = int((beyond == inside[-1]).all(axis=1).sum())
    return ExtrapolationCheck(trained_length, evaluated, None, nonfinite, repeated, nonfinite == 0 and repeated == 0)


@dataclass(frozen=True)
class OrderCheck:
    """Result of :func:`order_check`.

    Attributes
    ----------
    first, second : int
        The two positions holding the same token.
    weights_first, weights_second : ndarray, shape (T,), float64
        The attention weights of the two copies over every key.
    max_difference : float
        ``max |weights_first - weights_second|``.
    passed : bool
        ``max_difference > atol``: the two copies are told apart.
    """

    first: int
    second: int
    weights_first: NDArray[np.float64]
    weights_second: NDArray[np.float64]
    max_difference: float
    passed: bool


def _projection(func: str, name: str, value: Any, dim: int) -> NDArray[np.float64]:
    if value is None:
        return np.eye(dim)
    matrix = check_float_array(func, name, value, ndim=2)
    if matrix.shape[0] != dim:
        raise SpecError(f"{func}: {name} must have {dim} rows (the token width), got shape {matrix.shape}",
                        category="invalid_shape")
    return matrix


def order_check(
    tokens: Any,
    /,
    *,
    encodings: Any = None,
    first: int = 0,
    second: int = 5,
    w_q: Any = None,
    w_k: Any = None,
    atol: float = 1e-9,
) -> OrderCheck:
    """The order test: can attention tell a token at ``first`` from its copy at ``second``.

    With no position information, the two copies have the same query, hence the same attention
    weights over every key: the model cannot know which comes first. Added position encodings
    make the weights differ. Weights, not raw scores, are compared: a per-query constant added
    to the scores changes nothing after the softmax.

    Parameters
    ----------
    tokens
        Token embeddings of one sequence, shape (T, D); rows ``first`` and ``second`` must be
        equal (the same token).
    encodings
        Position encodings added to ``tokens``, shape (T, D), or ``None`` for none.
    first, second
        The two positions, distinct, in ``0 .. T - 1``.
    w_q, w_k
        Query and key projections, shape (D, K) each; ``None`` is the identity.
    atol
        Differences up to ``atol`` count as identical; >= 0.

    Returns
    -------
    OrderCheck
        Both weight rows, their largest difference and the verdict.

    Raises
    ------
    SpecError
        ``invalid_argument`` when the two rows of ``tokens`` differ or the positions coincide;
        ``out_of_range`` for a position outside the sequence; ``invalid_shape`` for inputs of
        the wrong rank or width.

    Examples
    --------
    >>> tokens = [[1.0, 0.0]] + [[0.0, 1.0]] * 4 + [[1.0, 0.0]]
    >>> order_check(tokens).passed
    False
    >>> order_check(tokens, encodings=[[float(p), 0.0] for p in range(6)]).passed
    True
    """
    func = "order_check"
    x = check_float_array(func, "tokens", tokens, ndim=2)
    first = check_int(func, "first", first, minimum=0)
    second = check_int(func, "second", second, minimum=0)
    atol = check_float(func, "atol", atol, nonnegative=True)
    length, dim = x.shape
    for name, position in (("first", first), ("second", second)):
        if position >= length:
            raise SpecError(f"{func}: {name}={position} is beyond the sequence of {length} tokens",
                            category="out_of_range")
    if first == second:
        raise SpecError(f"{func}: first and second must differ, got {first} and {second}")
    if not np.array_equal(x[first], x[second]):
        raise SpecError(f"{func}: tokens[{first}] and tokens[{second}] must be the same token, got different rows")
    if encodings is not None:
        enc = check_float_array(func, "encodings", encodings, ndim=2)
        if enc.shape != x.shape:
            raise SpecError(f"{func}: encodings must have the shape of tokens {x.shape}, got {enc.shape}",
                            category="invalid_shape")
        x = x + enc
    q = x[[first, second]] @ _projection(func, "w_q", w_q, dim)  # (2, K)
    k = x @ _projection(func, "w_k", w_k, dim)  # (T, K)
    if q.shape[1] != k.shape[1]:
        raise SpecError(f"{func}: w_q and w_k must have the same number of columns, got {q.shape[1]} and {k.shape[1]}",
                        category="invalid_shape")
    scores = q @ k.T / np.sqrt(k.shape[1])  # (2, T)
    weights = np.exp(scores - scores.max(axis=1, keepdims=True))
    weights /= weights.sum(axis=1, keepdims=True)
    difference = float(np.abs(weights[0] - weights[1]).max())
    return OrderCheck(first, second, weights[0], weights[1], difference, difference > atol)


__all__ = [
    "ExtrapolationCheck",
    "OrderCheck",
    "ScaleCheck",
    "extrapolation_check",
    "order_check",
    "scale_check",
]
