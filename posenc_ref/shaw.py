r"""Shaw et al. relative position representations: clipped distance tables for keys and values.

Formula
-------
For query position :math:`p_i`, key position :math:`p_j` and clipping distance :math:`K \ge 1`,
the table row is

.. math::

    r_{ij} = \operatorname{clip}(p_j - p_i,\, -K,\, K) + K \in [0, 2K],

and the two tables :math:`A^K, A^V \in \mathbb{R}^{(2K+1) \times D}` enter the logits and the
outputs (Shaw, Uszkoreit, Vaswani 2018, arXiv:1803.02155, eqs. 3-5):

.. math::

    e_{ij} = q_i \cdot k_j + q_i \cdot A^K_{r_{ij}}, \qquad
    o_i = \sum_j \alpha_{ij}\,(v_j + A^V_{r_{ij}}).

Conventions
-----------
* ``sign``: ``"key_minus_query"`` (:math:`p_j - p_i`; the paper, tensor2tensor
  ``_generate_relative_positions_matrix``) or ``"query_minus_key"`` (:math:`p_i - p_j`; HF
  ``position_embedding_type="relative_key"``). The two differ for any table that is not
  symmetric about row ``K``.
* Clipping to :math:`\pm K` then offset by ``K`` (tensor2tensor). HF ``relative_key`` does not
  clip: its table has ``2 * max_position_embeddings - 1`` rows, i.e. ``K = max_position_embeddings
  - 1`` here, and a distance beyond it is an ``IndexError`` there (transformers#9164).
* Logits are returned unscaled. tensor2tensor scales ``q`` by ``d_head ** -0.5`` before both
  terms, HF divides the sum by ``sqrt(d_head)``: either way both terms are scaled together,
  which the caller does.
* One head: the tables are shared across heads (tensor2tensor), so each head is a separate
  call with the same tables.
* Positions are explicit. Shaw attention is self-attention, optionally with memory or a cache
  (tensor2tensor asserts equal query and key lengths unless memory is used; with memory the
  queries are the *last* ``Tq`` key positions, in cache mode the one query is at ``Tk - 1``).
  Every query position must therefore be one of the key positions; anything else would be a
  cross-attention alignment the scheme does not define, and is a
  :class:`~posenc_ref.errors.SpecError` rather than an invented alignment.

Computation
-----------
The key term is ``(q @ A^K.T)[i, r_ij]``: a ``(Tq, 2K+1)`` product gathered by row index. The
value term sums the weights that share a table row first, ``W[i, r] = sum_{j: r_ij = r}
alpha_ij``, then ``W @ A^V``. Memory is ``O(Tq * Tk + Tq * K * D)``; the ``(Tq, Tk, D)`` gather
of the naive form is never built (``benchmarks/bench_relative.py`` measures it).

Differences from common implementations
----------------------------------------
* tensor2tensor gathers ``A^K[r]`` into a ``(Tq, Tk, D)`` tensor; the sums are the same.

Derivation claims relied on: ``relative.shift_equals_direct_indexing`` (the pad-and-reshape
forms of relative terms equal direct indexing by ``r_ij`` on their valid region; tensor2tensor's
``v2`` skewing variants rely on it).
"""

from __future__ import annotations

from typing import Any, Final, Literal

import numpy as np
from numpy.typing import NDArray

from posenc_ref.errors import (
    SpecError,
    check_choice,
    check_finite_result,
    check_float_array,
    check_int,
    check_positions,
    check_size,
)

Sign = Literal["key_minus_query", "query_minus_key"]
SIGNS: Final = ("key_minus_query", "query_minus_key")


def check_self_attention_positions(func: str, q_positions: Any, k_positions: Any) -> tuple[
        NDArray[np.int64], NDArray[np.int64]]:
    """Validate 1-D query and key positions of self-attention (optionally with memory or cache).

    Every query position must be one of the key positions: relative positions between two
    different sequences (cross-attention) are not defined by Shaw et al., Transformer-XL or
    XLNet.
    """
    q_pos = check_positions(func, "q_positions", q_positions, min_ndim=1)
    k_pos = check_positions(func, "k_positions", k_positions, min_ndim=1)
    for name, pos in (("q_positions", q_pos), ("k_positions", k_pos)):
        if pos.ndim != 1:
            raise SpecError(f"{func}: {name} must be 1-D, got shape {pos.shape}", category="invalid_shape")
    outside = ~np.isin(q_pos, k_pos)
    if outside.any():
        where = int(np.argmax(outside))
        raise SpecError(
            f"{func}: query position {int(q_pos[where])} (q_positions[{where}]) is not among the key positions; "
            "the scheme defines relative positions within one sequence (self-attention, with memory or a cache), "
            "and a cross-attention alignment is not defined"
        )
    return q_pos, k_pos


def _table(func: str, name: str, value: Any, k: int, dim: int | None) -> NDArray[np.float64]:
    table = check_float_array(func, name, value, ndim=2)
    rows = 2 * k + 1
    if table.shape[0] != rows or (dim is not None and table.shape[1] != dim):
        want = f"({rows}, {dim})" if dim is not None else f"({rows}, D)"
        raise SpecError(
            f"{func}: {name} must have shape {want} for max_relative_position={k}, got {table.shape}",
            category="invalid_shape",
        )
    return table


def _rows(func: str, name: str, value: Any, length: int, what: str) -> NDArray[np.float64]:
    array = check_float_array(func, name, value, ndim=2)
    if array.shape[0] != length:
        raise SpecError(
            f"{func}: {name} has {array.shape[0]} rows but {what} has {length} positions",
            category="invalid_shape",
        )
    return array


def shaw_relative_index(
    q_positions: Any, k_positions: Any, /, *, max_relative_position: int, sign: Sign = "key_minus_query"
) -> NDArray[np.int64]:
    """Table rows ``r_ij = clip(d_ij, -K, K) + K`` for every query/key pair.

    Parameters
    ----------
    q_positions, k_positions
        1-D integer positions >= 0, shapes (Tq,) and (Tk,); every query position must be a key
        position (self-attention, with memory or a cache).
    max_relative_position
        ``K >= 1``; the tables have ``2K + 1`` rows.
    sign
        ``"key_minus_query"`` (``d = p_j - p_i``, Shaw/tensor2tensor) or ``"query_minus_key"``
        (HF ``relative_key``).

    Returns
    -------
    ndarray, shape (Tq, Tk), int64, values in ``[0, 2K]``

    Raises
    ------
    SpecError
        ``K < 1``, unknown sign, non-1-D or empty positions, a query position not among the key
        positions.

    Examples
    --------
    Row ``K`` is distance 0; distances beyond ``K`` share the end rows:

    >>> shaw_relative_index([3], [0, 1, 2, 3], max_relative_position=2).tolist()
    [[0, 0, 1, 2]]
    >>> shaw_relative_index([0, 1], [0, 1], max_relative_position=1, sign="query_minus_key").tolist()
    [[1, 0], [2, 1]]
    """
    return _relative_index("shaw_relative_index", q_positions, k_positions, max_relative_position, sign)


def _relative_index(func: str, q_positions: Any, k_positions: Any, max_relative_position: Any, sign: Any
                    ) -> NDArray[np.int64]:
    """:func:`shaw_relative_index`; errors name ``func``."""
    k = check_int(func, "max_relative_position", max_relative_position, minimum=1)
    check_choice(func, "sign", sign, SIGNS)
    q_pos, k_pos = check_self_attention_positions(func, q_positions, k_positions)
    check_size(func, "the relative index", (q_pos.size, k_pos.size))
    distance = k_pos[None, :] - q_pos[:, None]  # (Tq, Tk)
    if sign == "query_minus_key":
        np.negative(distance, out=distance)
    np.clip(distance, -k, k, out=distance)
    distance += k
    return distance


def shaw_logits(
    q: Any, k: Any, rel_keys: Any, q_positions: Any, k_positions: Any, /, *,
    max_relative_position: int, sign: Sign = "key_minus_query",
) -> NDArray[np.float64]:
    """Logits ``e_ij = q_i . k_j + q_i . A^K[r_ij]`` (unscaled).

    Parameters
    ----------
    q, k
        Shapes (Tq, D) and (Tk, D): one head's queries and keys.
    rel_keys
        ``A^K``, shape (2K + 1, D); row ``K`` is distance 0.
    q_positions, k_positions, max_relative_position, sign
        See :func:`shaw_relative_index`.

    Returns
    -------
    ndarray, shape (Tq, Tk), float64

    Raises
    ------
    SpecError
        As :func:`shaw_relative_index`; ``invalid_shape`` when the row counts do not match the
        positions, the widths differ or the table is not (2K + 1, D).

    Examples
    --------
    With zero keys only the relative term remains, and it reads row ``r_ij`` of the table:

    >>> table = [[1.0], [10.0], [100.0]]
    >>> shaw_logits([[1.0], [1.0]], [[0.0], [0.0]], table, [0, 1], [0, 1], max_relative_position=1).tolist()
    [[10.0, 100.0], [1.0, 10.0]]
    """
    func = "shaw_logits"
    index = _relative_index(func, q_positions, k_positions, max_relative_position, sign)
    tq, tk = index.shape
    queries = _rows(func, "q", q, tq, "q_positions")
    keys = _rows(func, "k", k, tk, "k_positions")
    if keys.shape[1] != queries.shape[1]:
        raise SpecError(f"{func}: q and k must have the same width, got {queries.shape[1]} and {keys.shape[1]}",
                        category="invalid_shape")
    table = _table(func, "rel_keys", rel_keys, int(max_relative_position), queries.shape[1])
    with np.errstate(over="ignore", invalid="ignore"):
        per_distance = queries @ table.T  # (Tq, 2K+1): one dot product per distinct clipped distance
        logits: NDArray[np.float64] = queries @ keys.T + np.take_along_axis(per_distance, index, axis=1)
    return check_finite_result(func, "the logits (from q, k and rel_keys)", logits)


def shaw_output(
    weights: Any, v: Any, rel_values: Any, q_positions: Any, k_positions: Any, /, *,
    max_relative_position: int, sign: Sign = "key_minus_query",
) -> NDArray[np.float64]:
    """Outputs ``o_i = sum_j alpha_ij (v_j + A^V[r_ij])`` for given attention weights.

    Parameters
    ----------
    weights
        ``alpha``, shape (Tq, Tk): the attention weights (any real values; softmax is the
        caller's).
    v
        Values, shape (Tk, D).
    rel_values
        ``A^V``, shape (2K + 1, D).
    q_positions, k_positions, max_relative_position, sign
        See :func:`shaw_relative_index`.

    Returns
    -------
    ndarray, shape (Tq, D), float64

    Raises
    ------
    SpecError
        As :func:`shaw_logits`.

    Examples
    --------
    Uniform weights over two keys at distances 0 and +1 average their value rows:

    >>> table = [[0.0], [1.0], [3.0]]
    >>> shaw_output([[0.5, 0.5]], [[0.0], [0.0]], table, [0], [0, 1], max_relative_position=1).tolist()
    [[2.0]]
    """
    func = "shaw_output"
    index = _relative_index(func, q_positions, k_positions, max_relative_position, sign)
    tq, tk = index.shape
    alpha = check_float_array(func, "weights", weights, ndim=2)
    if alpha.shape != (tq, tk):
        raise SpecError(f"{func}: weights must have shape ({tq}, {tk}) from the positions, got {alpha.shape}",
                        category="invalid_shape")
    values = _rows(func, "v", v, tk, "k_positions")
    rows = 2 * int(max_relative_position) + 1
    table = _table(func, "rel_values", rel_values, int(max_relative_position), values.shape[1])
    # W[i, r] = sum of the weights of row i whose key sits at clipped distance r: (Tq, 2K+1)
    flat = (np.arange(tq, dtype=np.int64)[:, None] * rows + index).ravel()
    with np.errstate(over="ignore", invalid="ignore"):
        per_distance = np.bincount(flat, weights=alpha.ravel(), minlength=tq * rows).reshape(tq, rows)
        output: NDArray[np.float64] = alpha @ values + per_distance @ table
    return check_finite_result(func, "the output (from weights, v and rel_values)", output)
