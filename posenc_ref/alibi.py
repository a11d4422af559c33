r"""ALiBi: attention with linear biases, with the slope rule, bias form and positions named.

Formula
-------
Head :math:`h` (``h = 1..H``) adds :math:`-m_h\,(i - j)` to the logit of query position
:math:`i` and key position :math:`j` (Press et al. 2022, arXiv:2108.12409, section 3; the
paper's figure 3 shows the causal form). Slopes are powers of two, :math:`m_h = 2^{-x_h}`:

* ``slope_rule="press"`` (the authors' ``get_slopes``): for :math:`H` a power of two,
  :math:`x_h = b\,h/H`; otherwise, with :math:`c = 2^{\lfloor\log_2 H\rfloor}`, the :math:`c`
  exponents :math:`b\,h/c` followed by :math:`b\,(2t+1)/(2c)` for ``t = 0..H-c-1`` (every other
  slope of the :math:`2c`-head ladder). Non-monotone by design.
* ``slope_rule="geometric"`` (the paper's text read literally for any :math:`H`):
  :math:`x_h = b\,h/H`.

:math:`b` is ``bias_max`` (8 in the paper; MPT/llm-foundry ``alibi_bias_max``). The two rules
agree exactly when :math:`H` is a power of two.

Bias forms (``form``), for explicit query positions ``i`` and key positions ``j``:

* ``"relative_causal"``: :math:`-m_h (i - j)` (paper; positive above the diagonal, where a
  causal mask removes it).
* ``"key_only"``: :math:`+m_h\,j` (ofirpress fairseq fork, BLOOM/Falcon with mask positions,
  flash-attn causal). Differs from ``relative_causal`` by the per-row constant
  :math:`m_h i`: the same softmax, different logits.
* ``"symmetric"``: :math:`-m_h |i - j|` (llm-foundry ``full=True``, NeMo bidirectional).
* ``"bottom_right"``: :math:`-m_h |i + T_k - T_q - j|` (flash-attn non-causal: the last query
  is aligned with the last key).

Conventions
-----------
* Query and key positions are separate explicit inputs (cross-attention, decoding with a
  cache: one query at position ``past_length``). No mask is applied here; masking is the
  attention pass's business.
* Heads are numbered from 1 in the formulas; output axis ``H`` holds head 1 first.
* Computation order: ``x_h`` exactly (a dyadic rational for ``press`` when ``bias_max`` is a
  power of two), ``m_h = 2**-x_h`` in float64, then ``m_h * distance`` (one rounding).
* Positions from an attention mask (:func:`alibi_mask_positions`): BLOOM and Falcon use
  ``(cumsum(mask) - 1) * mask``, so left padding shifts nothing and padded keys read 0.

Differences from common implementations
----------------------------------------
* BLOOM/Falcon (transformers 5.24) raise a float32 base to integer powers (``torch.pow``),
  which compounds the base's rounding: up to ~5e-7 relative at ``H = 112``. The corpus's
  tolerance for slopes and biases grows with that power (see :func:`alibi_slope_ladder`).
* Falcon casts the slopes to bfloat16 before multiplying by positions.
* MLX (before ml-explore/mlx#343), Baichuan2's reading of the paper and TensorRT-LLM's proposed
  "monotone" slopes use ``geometric`` where the checkpoints were trained with ``press``.
* HF Falcon adds the bias *before* scaling by ``1/sqrt(d_head)``; BLOOM, MPT and flash-attn
  after. That placement belongs to the attention pass, not to this bias.

Derivation claims relied on (``posenc_ref.derivations``, derivations issue): the ALiBi bias
depends only on ``i - j`` and the key-only form differs from it by a per-row constant
(``alibi_relative_only``, ``alibi_key_only_row_constant``); for ``H`` a power of two the
slopes are ``2^(-8h/H)`` (``alibi_power_of_two_slopes``).
"""

from __future__ import annotations

from typing import Any, Final, Literal

import numpy as np
from numpy.typing import NDArray

from posenc_ref.errors import SpecError, check_choice, check_float, check_int, check_positions, check_size

SlopeRule = Literal["press", "geometric"]
Form = Literal["relative_causal", "key_only", "symmetric", "bottom_right"]
SLOPE_RULES: Final = ("press", "geometric")
_MAX_EXPONENT: Final = 1074.0
"""The largest ``x`` with ``2**-x`` a non-zero float64 (the smallest subnormal)."""
FORMS: Final = ("relative_causal", "key_only", "symmetric", "bottom_right")


def alibi_slope_ladder(
    *, num_heads: int, slope_rule: SlopeRule = "press", bias_max: float = 8.0
) -> tuple[NDArray[np.float64], NDArray[np.int64]]:
    """Per head: the exponent ``x_h`` (``m_h = 2**-x_h``) and the ladder index ``k_h``.

    ``k_h`` is the integer power to which the head's ladder base is raised (``h`` on the
    main ladder, ``2t + 1`` on the ``2c`` ladder under ``press``); an implementation that
    forms slopes as ``base ** k`` in float32 (BLOOM) compounds about ``k_h`` roundings.

    Returns
    -------
    exponents : ndarray, shape (H,), float64
    powers : ndarray, shape (H,), int64

    Examples
    --------
    >>> x, k = alibi_slope_ladder(num_heads=6)
    >>> x.tolist(), k.tolist()
    ([2.0, 4.0, 6.0, 8.0, 1.0, 3.0], [1, 2, 3, 4, 1, 3])
    """
    return _ladder("alibi_slope_ladder", num_heads, slope_rule, bias_max)


def _ladder(func: str, num_heads: Any, slope_rule: Any, bias_max: Any) -> tuple[NDArray[np.float64], NDArray[np.int64]]:
    """:func:`alibi_slope_ladder`; errors name ``func``."""
    num_heads = check_int(func, "num_heads", num_heads, minimum=1)
    check_choice(func, "slope_rule", slope_rule, SLOPE_RULES)
    bias_max = check_float(func, "bias_max", bias_max, positive=True)
    if bias_max > _MAX_EXPONENT:
        # Note: 2**-x underflows to 0 (a slope of zero, no bias) for x > 1074
        raise SpecError(f"{func}: bias_max must be <= {_MAX_EXPONENT} so that every slope 2**-x is a non-zero "
                        f"float64, got bias_max={bias_max!r}")
    check_size(func, "the slopes", (num_heads,))
    heads = np.arange(1, num_heads + 1, dtype=np.int64)
    if slope_rule == "geometric":
        return bias_max * heads / num_heads, heads
    c = 1 << (num_heads.bit_length() - 1)  # largest power of two <= H
    main = np.arange(1, c + 1, dtype=np.int64)
    odd = 2 * np.arange(num_heads - c, dtype=np.int64) + 1  # every other head of the 2c ladder
    exponents = np.concatenate([bias_max * main / c, bias_max * odd / (2 * c)])
    return exponents, np.concatenate([main, odd])


def alibi_slopes(*, num_heads: int, slope_rule: SlopeRule = "press", bias_max: float = 8.0) -> NDArray[np.float64]:
    """ALiBi slopes ``m_h = 2**-x_h`` for ``num_heads`` heads.

    Parameters
    ----------
    num_heads
        ``H >= 1``.
    slope_rule
        ``"press"`` (authors' code; BLOOM, Falcon, MPT, NeMo, flash-attn callers) or
        ``"geometric"`` (``x_h = bias_max * h / H`` for every ``H``).
    bias_max
        ``b`` in the exponents (8 in the paper; MPT ``alibi_bias_max``), > 0.

    Returns
    -------
    ndarray, shape (H,), float64

    Raises
    ------
    SpecError
        ``num_heads < 1``, ``bias_max <= 0``, an unknown rule.

    Examples
    --------
    For 8 heads the slopes are ``2^-1 ... 2^-8``:

    >>> (-np.log2(alibi_slopes(num_heads=8))).tolist()
    [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]
    >>> (-np.log2(alibi_slopes(num_heads=3))).tolist()
    [4.0, 8.0, 2.0]
    """
    return _slopes("alibi_slopes", num_heads, slope_rule, bias_max)


def _slopes(func: str, num_heads: Any, slope_rule: Any, bias_max: Any) -> NDArray[np.float64]:
    exponents, _ = _ladder(func, num_heads, slope_rule, bias_max)
    return np.exp2(-exponents)


def _query_key(func: str, query_positions: Any, key_positions: Any) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """Validated (..., Tq) and (..., Tk) integer positions with equal leading shapes."""
    q = check_positions(func, "query_positions", query_positions, min_ndim=1)
    k = check_positions(func, "key_positions", key_positions, min_ndim=1)
    if q.shape[:-1] != k.shape[:-1]:
        raise SpecError(
            f"{func}: query_positions and key_positions must share their leading (batch) shape, "
            f"got query_positions shape {q.shape} and key_positions shape {k.shape}",
            category="invalid_shape",
        )
    return q, k


def alibi_bias(
    query_positions: Any,
    key_positions: Any,
    /,
    *,
    num_heads: int,
    form: Form = "relative_causal",
    slope_rule: SlopeRule = "press",
    bias_max: float = 8.0,
) -> NDArray[np.float64]:
    """The ALiBi bias added to the logits of every (head, query, key).

    Parameters
    ----------
    query_positions, key_positions
        Integer positions >= 0, shapes ``(..., Tq)`` and ``(..., Tk)`` with equal leading
        (batch) shapes; ``Tq != Tk`` and offsets are allowed.
    num_heads
        See :func:`alibi_slopes`.
    form
        ``"relative_causal"``, ``"key_only"``, ``"symmetric"`` or ``"bottom_right"`` (module notes).
    slope_rule, bias_max
        See :func:`alibi_slopes`.

    Returns
    -------
    ndarray, shape (..., H, Tq, Tk), float64

    Raises
    ------
    SpecError
        Bad parameters (see :func:`alibi_slopes`), an unknown form, non-integer or negative
        positions, empty positions, positions whose leading shapes differ.

    Examples
    --------
    One head with ``bias_max=1`` has slope 1/2; the bias falls off linearly with distance:

    >>> alibi_bias([2], [0, 1, 2], num_heads=1, bias_max=1.0).tolist()
    [[[-1.0, -0.5, 0.0]]]

    Bottom-right alignment puts query 0 of 2 opposite key 1 of 3:

    >>> alibi_bias([0, 1], [0, 1, 2], num_heads=1, bias_max=1.0, form="bottom_right").tolist()[0][0]
    [-0.5, 0.0, -0.5]
    """
    func = "alibi_bias"
    check_choice(func, "form", form, FORMS)
    slopes = _slopes(func, num_heads, slope_rule, bias_max)
    q, k = _query_key(func, query_positions, key_positions)
    check_size(func, "the bias", q.shape[:-1] + (slopes.size, q.shape[-1], k.shape[-1]))
    i = q[..., :, None]  # (..., Tq, 1)
    j = k[..., None, :]  # (..., 1, Tk)
    if form == "relative_causal":
        signed = j - i
    elif form == "key_only":
        signed = np.broadcast_to(j, i.shape[:-1] + j.shape[-1:])
    elif form == "symmetric":
        signed = -np.abs(i - j)
    else:
        signed = -np.abs(i + (k.shape[-1] - q.shape[-1]) - j)
    distance = signed.astype(np.float64)  # (..., Tq, Tk)
    if distance.ndim > 2:  # batched positions: heads go after the batch axes
        distance = distance[..., None, :, :]
    bias: NDArray[np.float64] = slopes[:, None, None] * distance  # (..., H, Tq, Tk)
    return bias


def alibi_mask_positions(attention_mask: Any, /) -> NDArray[np.int64]:
    """Key positions from a padding mask as BLOOM and Falcon build them: ``(cumsum(mask) - 1) * mask``.

    Parameters
    ----------
    attention_mask
        Shape (B, T), 1 for real tokens and 0 for padding.

    Returns
    -------
    ndarray, shape (B, T), int64
        The k-th real token of a row has position ``k - 1``; padding has position 0.

    Raises
    ------
    SpecError
        A mask that is not (B, T) or holds values other than 0 and 1.

    Examples
    --------
    Left padding shifts nothing:

    >>> alibi_mask_positions([[0, 0, 1, 1, 1], [1, 1, 1, 1, 1]]).tolist()
    [[0, 0, 0, 1, 2], [0, 1, 2, 3, 4]]
    """
    func = "alibi_mask_positions"
    mask = check_positions(func, "attention_mask", attention_mask)
    if mask.ndim != 2:
        raise SpecError(f"{func}: attention_mask must have shape (B, T), got shape {mask.shape}",
                        category="invalid_shape")
    if mask.max() > 1:
        where = tuple(int(i) for i in np.argwhere(mask > 1)[0])
        raise SpecError(f"{func}: attention_mask must hold 0 or 1, got {int(mask[where])} at index {where}")
    positions: NDArray[np.int64] = (np.cumsum(mask, axis=-1) - 1) * mask
    return positions
