r"""The positional schemes as plug-ins of :func:`posenc_ref.attention.attention`.

Each builder turns one scheme module into the plug-in it fills, computed from the explicit
query and key positions the pass hands over (so a decode step and cross-attention need
nothing special):

* RoPE (:mod:`posenc_ref.rope`) is a ``qk_transform``: ``q`` rotated at ``q_positions`` and
  ``k`` at ``k_positions``, ``v`` untouched (Su et al. 2021, arXiv:2104.09864, eq. 14).
* ALiBi (:mod:`posenc_ref.alibi`) and T5 (:mod:`posenc_ref.t5`) are a ``bias``, added to the
  *scaled* logits; build it with :func:`~posenc_ref.alibi.alibi_bias` or
  :func:`~posenc_ref.t5.t5_bias` from the same positions (no wrapper needed).
* Shaw (:mod:`posenc_ref.shaw`) is a ``logits_term`` with a value term: ``t_ij = q_i .
  A^K[r_ij]`` inside the scale and ``u_ij = A^V[r_ij]`` under the weights (Shaw et al. 2018,
  arXiv:1803.02155, eqs. 3-4).
* Transformer-XL (:mod:`posenc_ref.transformer_xl`) is a ``logits_term``: terms (b)-(d) of
  Dai et al. 2019 (arXiv:1901.02860, section 3.3), ``t_ij = u_h . k_j + (q_i + v_h) .
  W_{R,h}^T R_{p_i - p_j}``; term (a), ``q_i . k_j``, is the pass's own dot product.

Conventions
-----------
* Shaw and Transformer-XL read 1-D positions (one position set for the whole batch), as
  their modules do; ALiBi, T5 and RoPE also take (B, T) positions.
* Shaw and Transformer-XL define relative positions within one sequence: every query
  position must be a key position. The plug-ins see one key block at a time on the blockwise
  path, so they cannot check it; check the whole position sets once with
  :func:`~posenc_ref.shaw.check_self_attention_positions` (the ``attention.shaw`` and
  ``attention.xl`` ops do).
* Transformer-XL's ``u``, ``v`` are per query head, shape (H, D), and ``W_R`` is per head,
  shape (H, D_r, D) (the original ``r_net`` output split into heads).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from posenc_ref._attention_blockwise import F64, LogitsTerm
from posenc_ref.attention import QKTransform
from posenc_ref.errors import SpecError, check_choice, check_float, check_float_array, check_int
from posenc_ref.rope import LAYOUTS, Layout, rope_apply
from posenc_ref.shaw import SIGNS, Sign, shaw_relative_index
from posenc_ref.transformer_xl import xl_relative_embedding


def rope_qk(*, base: float = 10000.0, layout: Layout = "half") -> QKTransform:
    """The RoPE ``qk_transform``: rotate ``q`` at its positions and ``k`` at its own.

    Parameters
    ----------
    base, layout
        As in :func:`~posenc_ref.rope.rope_apply` (``"half"``: HF/Llama ``rotate_half``;
        ``"interleaved"``: Meta Llama, GPT-J).

    Returns
    -------
    callable ``(q, k, q_positions, k_positions) -> (q_rot, k_rot)``

    Examples
    --------
    The rotation keeps norms:

    >>> q = np.ones((1, 1, 2, 4)); k = np.ones((1, 1, 3, 4))
    >>> q2, k2 = rope_qk()(q, k, np.array([5, 6]), np.array([0, 1, 2]))
    >>> [round(float(x), 12) for x in np.linalg.norm(q2, axis=-1).ravel()]
    [2.0, 2.0]
    """

    check_float("rope_qk", "base", base, positive=True)
    check_choice("rope_qk", "layout", layout, LAYOUTS)

    def transform(q: F64, k: F64, q_positions: NDArray[np.int64], k_positions: NDArray[np.int64]) -> tuple[F64, F64]:
        return (rope_apply(q, q_positions, base=base, layout=layout),
                rope_apply(k, k_positions, base=base, layout=layout))

    return transform


def _one_d(func: str, name: str, positions: NDArray[np.int64]) -> NDArray[np.int64]:
    if positions.ndim == 2 and positions.shape[0] == 1:
        row: NDArray[np.int64] = positions[0]
        return row
    if positions.ndim != 1:
        raise SpecError(f"{func}: {name} must be 1-D (one position set for the batch), got shape {positions.shape}",
                        category="invalid_shape")
    return positions


def shaw_terms(rel_keys: Any, rel_values: Any, /, *, max_relative_position: int,
               sign: Sign = "key_minus_query") -> LogitsTerm:
    """Shaw's relative key and value terms as a ``logits_term``.

    Parameters
    ----------
    rel_keys, rel_values
        ``A^K`` and ``A^V``, shape (2K + 1, D); row ``K`` is distance 0.
    max_relative_position, sign
        As in :func:`~posenc_ref.shaw.shaw_relative_index`.

    Returns
    -------
    callable ``(q, k, q_positions, k_positions) -> (t, u)`` with ``t`` (B, H, Tq, Tk) and
    ``u`` (Tq, Tk, D).

    Examples
    --------
    Zero key tables leave the logits alone; the value term is the table row of each distance:

    >>> a_v = np.arange(6.0).reshape(3, 2)
    >>> t, u = shaw_terms(np.zeros((3, 2)), a_v, max_relative_position=1)(
    ...     np.ones((1, 1, 1, 2)), np.ones((1, 1, 2, 2)), np.array([1]), np.array([0, 1]))
    >>> t.tolist(), u.tolist()
    ([[[[0.0, 0.0]]]], [[[0.0, 1.0], [2.0, 3.0]]])
    """
    func = "shaw_terms"
    check_int(func, "max_relative_position", max_relative_position, minimum=1)
    check_choice(func, "sign", sign, SIGNS)
    keys = check_float_array(func, "rel_keys", rel_keys, ndim=2)
    values = check_float_array(func, "rel_values", rel_values, ndim=2)
    if keys.shape != values.shape or keys.shape[0] != 2 * max_relative_position + 1:
        raise SpecError(f"{func}: rel_keys and rel_values must both have shape (2K + 1, D) with "
                        f"K={max_relative_position}, got {keys.shape} and {values.shape}", category="invalid_shape")

    def term(q: F64, k: F64, q_positions: NDArray[np.int64], k_positions: NDArray[np.int64]) -> tuple[F64, F64]:
        q_pos, k_pos = _one_d(func, "q_positions", q_positions), _one_d(func, "k_positions", k_positions)
        # Note: the blockwise path hands over one key block, which need not hold the query
        # positions; the query positions are appended as keys so the module's self-attention
        # rule is met, and only the block's columns are kept.
        index = shaw_relative_index(q_pos, np.concatenate([k_pos, q_pos]), max_relative_position=max_relative_position,
                                    sign=sign)[:, :k_pos.size]  # (Tq, Tk)
        per_distance = q @ keys.T  # (B, H, Tq, 2K + 1): q_i . A^K[r] for every table row
        t: F64 = np.take_along_axis(per_distance, np.broadcast_to(index, q.shape[:2] + index.shape), axis=-1)
        return t, values[index]  # u: (Tq, Tk, D)

    return term


def xl_terms(u: Any, v: Any, w_r: Any, /, *, base: float = 10000.0) -> LogitsTerm:
    """Transformer-XL's terms (b)-(d) as a ``logits_term``.

    Parameters
    ----------
    u, v
        Content and position biases per query head, shape (H, D).
    w_r
        Position projections per head, shape (H, D_r, D), ``D_r`` even.
    base
        Sinusoid base of ``R`` (:func:`~posenc_ref.transformer_xl.xl_relative_embedding`).

    Returns
    -------
    callable ``(q, k, q_positions, k_positions) -> t`` with ``t`` (B, H, Tq, Tk).

    Examples
    --------
    With zero queries and ``v = 0`` only the global content term ``u . k_j`` remains:

    >>> term = xl_terms(np.array([[1.0, 0.0]]), np.zeros((1, 2)), np.ones((1, 2, 2)))
    >>> term(np.zeros((1, 1, 1, 2)), np.array([[[[1.0, 0.0], [2.0, 0.0]]]]), np.array([1]), np.array([0, 1])).tolist()
    [[[[1.0, 2.0]]]]
    """
    func = "xl_terms"
    check_float(func, "base", base, positive=True)
    content = check_float_array(func, "u", u, ndim=2)
    position = check_float_array(func, "v", v, ndim=2)
    projection = check_float_array(func, "w_r", w_r, ndim=3)
    heads, dim = content.shape
    if position.shape != (heads, dim) or projection.shape[0] != heads or projection.shape[2] != dim:
        raise SpecError(f"{func}: u and v must have shape (H, D) and w_r (H, D_r, D), got {content.shape}, "
                        f"{position.shape} and {projection.shape}", category="invalid_shape")
    if projection.shape[1] % 2:
        raise SpecError(f"{func}: the rows D_r of w_r are the sinusoid's dim, and dim must be even, "
                        f"got dim={projection.shape[1]} (w_r of shape {projection.shape})")

    def term(q: F64, k: F64, q_positions: NDArray[np.int64], k_positions: NDArray[np.int64]) -> F64:
        if q.shape[1] != heads or q.shape[-1] != dim:
            raise SpecError(f"{func}: u, v and w_r are for H={heads}, D={dim}, got queries of shape {q.shape}",
                            category="invalid_shape")
        distance = _one_d(func, "q_positions", q_positions)[:, None] - _one_d(func, "k_positions", k_positions)
        distinct, inverse = np.unique(distance, return_inverse=True)  # (U,): each distance embedded once
        r = np.einsum("uc,hcd->hud", xl_relative_embedding(distinct, dim=projection.shape[1], base=base),
                      projection)  # (H, U, D)
        per_distance = (q + position[:, None, :]) @ r.transpose(0, 2, 1)  # (B, H, Tq, U): terms (b) + (d)
        index = np.broadcast_to(inverse.reshape(distance.shape), q.shape[:2] + distance.shape)
        t: F64 = np.take_along_axis(per_distance, index, axis=-1)
        t += np.einsum("hd,bhkd->bhk", content, k)[:, :, None, :]  # term (c): u . k_j
        return t

    return term
