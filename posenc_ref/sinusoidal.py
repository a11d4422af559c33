r"""Sinusoidal absolute position encodings (1-D), with every library convention named.

Formula
-------
For a position :math:`p` and the :math:`n` frequencies :math:`w_k` of a *ladder*, the table row
holds :math:`\sin(p\,w_k)` and :math:`\cos(p\,w_k)` in a *layout*:

.. math::

    PE[p, 2k] = \sin(p\, w_k), \qquad PE[p, 2k+1] = \cos(p\, w_k)
    \qquad\text{(interleaved, Vaswani et al. 2017, eq. in section 3.5)}

Ladders (``d`` is the encoded width, ``n = ceil(d/2)`` the number of distinct frequencies):

* ``"paper"``: :math:`w_k = \text{base}^{-2k/d}` (arXiv:1706.03762, section 3.5).
* ``"t2t"``: :math:`w_k = \text{base}^{-k/\max(n-1,\,1)}` (tensor2tensor ``get_timing_signal_1d``).

Conventions
-----------
* Positions are explicit integers, origin 0; ``position_offset`` is added first (marian-nmt
  ``start``, tensor2tensor ``start_index``). ``positions + position_offset`` must be >= 0.
* ``ladder``: ``"paper"`` (DistilBERT, HF Marian, Transformer-XL R) or ``"t2t"``
  (tensor2tensor, fairseq, M2M100, FSMT, Whisper, marian-nmt).
* ``layout``: ``"interleaved"`` (paper, DistilBERT), ``"concat_sin_cos"`` (tensor2tensor,
  fairseq, Whisper, HF Marian with the paper ladder), ``"concat_cos_sin"`` (DiT, diffusers
  ``flip_sin_to_cos=True``).
* ``odd_width`` for odd ``dim``: ``"error"`` (Whisper, MAE, big_vision), ``"zero_pad_last"``
  (tensor2tensor, fairseq, diffusers: the ``dim - 1`` table then one zero column; the paper
  ladder then uses ``d = dim - 1``), ``"sin_gets_extra"`` (DistilBERT, HF Marian: ``ceil(d/2)``
  sine columns, ``floor(d/2)`` cosine columns, exponent over the odd ``d``).
* ``scale`` multiplies the whole table (1.0 in every library listed above).
* Computation order, which fixes the last bits: ``w = base ** -e`` with ``e = (2.0*k)/d`` (paper)
  or ``e = k/max(n-1, 1)`` (t2t), all float64; then ``angle = p * w``; then ``sin``/``cos``.

Differences from common implementations
----------------------------------------
* tensor2tensor and fairseq compute in float32; DistilBERT and HF Marian build in float64
  and cast. The corpus judges each dtype with the phase-aware tolerance, since the rounding
  error of ``p * w`` grows with the position.
* fairseq has no ``max(n - 1, 1)`` guard: ``dim = 2`` divides by zero there. Here the t2t
  ladder follows tensor2tensor's guard; :func:`fairseq_sinusoidal` refuses ``dim < 4``.
* tensor2tensor multiplies by ``min_timescale`` where it means to divide; with its default
  ``min_timescale = 1`` that is the ``"t2t"`` ladder here.
* Transformer-XL and XLNet build ``ceil(d/2)`` frequencies concatenated, giving ``d + 1``
  columns for odd ``d`` as written; that overflow is not a policy here.

fairseq padding-aware positions
-------------------------------
fairseq (and HF M2M100, XGLM, FSMT) read table row ``padding_idx + k`` for the k-th real
(non-padding) token of a row, ``k = 1, 2, ...``; padding tokens read row ``padding_idx``, which
is all zeros. In incremental decoding (``past_length > 0``) the single step reads row
``padding_idx + past_length + 1`` for every batch row, whatever the padding (fairseq's
``incremental_state`` path). See :func:`fairseq_positions` and :func:`fairseq_sinusoidal`.

Derivation claims relied on: the linear-shift map ``PE(p + k) = M_k PE(p)`` and the
offset-only dot product (``posenc_ref.derivations``, derivations issue).
"""

from __future__ import annotations

from typing import Any, Final, Literal

import numpy as np
from numpy.typing import NDArray

from posenc_ref._sinusoidal_core import _column_slices as _column_slices
from posenc_ref._sinusoidal_core import _fairseq_rows
from posenc_ref._sinusoidal_core import _frequencies as _frequencies
from posenc_ref.errors import (
    SpecError,
    check_choice,
    check_exact_range,
    check_float,
    check_int,
    check_phase_range,
    check_positions,
    check_size,
)

Ladder = Literal["paper", "t2t"]
Layout = Literal["interleaved", "concat_sin_cos", "concat_cos_sin"]
OddWidth = Literal["error", "zero_pad_last", "sin_gets_extra"]
LADDERS: Final = ("paper", "t2t")
LAYOUTS: Final = ("interleaved", "concat_sin_cos", "concat_cos_sin")
ODD_WIDTHS: Final = ("error", "zero_pad_last", "sin_gets_extra")


def _validate(func: str, value: Any, base: Any, ladder: Any, odd_width: Any, *, minimum: int = 1) -> int:
    dim = check_int(func, "dim", value, minimum=minimum)
    check_float(func, "base", base, positive=True)
    check_choice(func, "ladder", ladder, LADDERS)
    check_choice(func, "odd_width", odd_width, ODD_WIDTHS)
    if dim % 2 and odd_width == "error":
        raise SpecError(f"{func}: dim must be even under odd_width='error', got dim={dim}")
    if dim == 1 and odd_width == "zero_pad_last":
        raise SpecError(f"{func}: dim must be >= 2 under odd_width='zero_pad_last', got dim=1")
    return dim


def sinusoidal_frequencies(
    *, dim: int, base: float = 10000.0, ladder: Ladder = "paper", odd_width: OddWidth = "error"
) -> NDArray[np.float64]:
    """Angular frequencies ``w_k`` of a sinusoidal table of width ``dim``.

    Parameters
    ----------
    dim
        Encoded width ``d``.
    base
        Base of the geometric ladder (10000 in every library listed in the module notes).
    ladder
        ``"paper"`` (exponent ``2k/d``) or ``"t2t"`` (exponent ``k/max(n-1, 1)``).
    odd_width
        Odd-width policy (see the module notes); decides ``d`` and ``n`` for odd ``dim``.

    Returns
    -------
    ndarray, shape (n,), float64
        ``n = ceil(d/2)`` with ``d = dim - 1`` under ``"zero_pad_last"``, else ``d = dim``.

    Raises
    ------
    SpecError
        ``dim < 1``, odd ``dim`` under ``"error"``, ``base <= 0``, unknown ladder or policy.

    Examples
    --------
    >>> sinusoidal_frequencies(dim=4).tolist()
    [1.0, 0.01]
    >>> sinusoidal_frequencies(dim=6, ladder="t2t").tolist()
    [1.0, 0.01, 0.0001]
    """
    func = "sinusoidal_frequencies"
    return _frequencies(func, _validate(func, dim, base, ladder, odd_width), float(base), ladder, odd_width)


def sinusoidal_angles(
    positions: Any,
    /,
    *,
    dim: int,
    base: float = 10000.0,
    ladder: Ladder = "paper",
    layout: Layout = "interleaved",
    odd_width: OddWidth = "error",
    position_offset: int = 0,
) -> NDArray[np.float64]:
    """The phase ``theta = p * w`` behind every column of :func:`sinusoidal_table`.

    Zero-padded columns have phase 0. The conformance runner uses these phases for its
    phase-aware tolerance; parameters are those of :func:`sinusoidal_table`.

    Returns
    -------
    ndarray, shape (*positions.shape, dim), float64

    Examples
    --------
    >>> sinusoidal_angles([2], dim=4).tolist()
    [[2.0, 2.0, 0.02, 0.02]]
    """
    theta, sin_cols, cos_cols, n_cos = _angles(
        "sinusoidal_angles", positions, dim, base, ladder, layout, odd_width, position_offset
    )
    phase = np.zeros(theta.shape[:-1] + (int(dim),), dtype=np.float64)
    phase[..., sin_cols] = theta
    phase[..., cos_cols] = theta[..., :n_cos]
    return phase


def _angles(
    func: str, positions: Any, dim: Any, base: Any, ladder: Any, layout: Any, odd_width: Any, offset: Any
) -> tuple[NDArray[np.float64], slice, slice, int]:
    dim = _validate(func, dim, base, ladder, odd_width)
    check_choice(func, "layout", layout, LAYOUTS)
    offset = check_int(func, "position_offset", offset)
    pos = check_positions(func, "positions", positions, nonnegative=False)
    if pos.size and int(pos.min()) + offset < 0:
        raise SpecError(
            f"{func}: positions + position_offset must be >= 0, got minimum "
            f"{int(pos.min())} + {offset} = {int(pos.min()) + offset}"
        )
    if pos.size:
        check_exact_range(func, "positions + position_offset", int(pos.min()) + offset, int(pos.max()) + offset)
    check_size(func, "the table", pos.shape + (dim,))
    w = _frequencies(func, dim, float(base), ladder, odd_width)
    shifted = pos + offset
    check_phase_range(func, "positions + position_offset", shifted, "the frequencies", w)
    theta = shifted.astype(np.float64)[..., None] * w  # (..., n)
    sin_cols, cos_cols, n_cos = _column_slices(dim, w.size, layout, odd_width)
    return theta, sin_cols, cos_cols, n_cos


def sinusoidal_table(
    positions: Any,
    /,
    *,
    dim: int,
    base: float = 10000.0,
    ladder: Ladder = "paper",
    layout: Layout = "interleaved",
    odd_width: OddWidth = "error",
    position_offset: int = 0,
    scale: float = 1.0,
) -> NDArray[np.float64]:
    """Sinusoidal encodings of explicit integer positions.

    Parameters
    ----------
    positions
        Integer positions, any shape (whole-number floats accepted); ``positions +
        position_offset`` must be >= 0.
    dim, base, ladder
        See :func:`sinusoidal_frequencies`.
    layout
        ``"interleaved"``, ``"concat_sin_cos"`` or ``"concat_cos_sin"``.
    odd_width
        See :func:`sinusoidal_frequencies`.
    position_offset
        Added to every position first (marian-nmt ``start``, t2t ``start_index``).
    scale
        Multiplies the table.

    Returns
    -------
    ndarray, shape (*positions.shape, dim), float64

    Raises
    ------
    SpecError
        Any invalid parameter (see :func:`sinusoidal_frequencies`), non-integer, non-finite or
        negative positions, or empty positions.

    Examples
    --------
    Position 0 is ``[0, 1, 0, 1, ...]`` in the interleaved layout:

    >>> sinusoidal_table([0], dim=6).tolist()
    [[0.0, 1.0, 0.0, 1.0, 0.0, 1.0]]
    >>> sinusoidal_table([0], dim=5, layout="concat_sin_cos", odd_width="zero_pad_last").tolist()
    [[0.0, 0.0, 1.0, 1.0, 0.0]]
    """
    return _table("sinusoidal_table", positions, dim, base, ladder, layout, odd_width, position_offset, scale)


def _table(func: str, positions: Any, dim: Any, base: Any, ladder: Any, layout: Any, odd_width: Any, offset: Any,
           scale: Any) -> NDArray[np.float64]:
    """:func:`sinusoidal_table`; errors name ``func``."""
    scale = check_float(func, "scale", scale)
    theta, sin_cols, cos_cols, n_cos = _angles(
        func, positions, dim, base, ladder, layout, odd_width, offset
    )
    table = np.zeros(theta.shape[:-1] + (int(dim),), dtype=np.float64)
    np.sin(theta, out=table[..., sin_cols])
    np.cos(theta[..., :n_cos], out=table[..., cos_cols])
    if scale != 1.0:
        table *= scale
    return table


def fairseq_positions(tokens: Any, /, *, padding_idx: int, past_length: int = 0,
                      cache_rule: Literal["fairseq", "m2m100"] = "fairseq") -> NDArray[np.int64]:
    """fairseq's padding-aware table rows for a batch of token ids.

    Parameters
    ----------
    tokens
        Integer token ids, shape (B, T).
    padding_idx
        The padding token id; also the (zero) table row that padding tokens read.
    past_length
        Tokens already decoded. ``0``: full pass, row ``padding_idx + cumsum(non_pad)`` for real
        tokens and ``padding_idx`` for padding. ``> 0``: one incremental step (``T`` must be 1),
        every batch row reads ``padding_idx + past_length + 1`` (fairseq ignores padding there).
    cache_rule
        The rule for tokens after a cache. ``"fairseq"`` is as above. ``"m2m100"`` is transformers'
        ``create_position_ids_from_input_ids(input_ids, padding_idx, past_key_values_length)``
        (M2M100, NLLB-MoE). It takes a chunk of any length T after ``past_length`` tokens: each
        real token reads ``padding_idx + past_length + cumsum(non_pad)``, counted within the chunk,
        and padding keeps row ``padding_idx``. For ``T = 1`` and a real token the two rules agree.

    Returns
    -------
    ndarray, shape (B, T), int64

    Examples
    --------
    Left padding with ``padding_idx=1``: the first real token reads row 2.

    >>> fairseq_positions([[1, 1, 7, 8], [5, 6, 7, 8]], padding_idx=1).tolist()
    [[1, 1, 2, 3], [2, 3, 4, 5]]

    A chunk of three tokens after a cache of five, the last one padding:

    >>> fairseq_positions([[7, 8, 1]], padding_idx=1, past_length=5, cache_rule="m2m100").tolist()
    [[7, 8, 1]]
    """
    return _fairseq_rows("fairseq_positions", tokens, padding_idx, past_length, cache_rule)


def fairseq_sinusoidal(
    tokens: Any, /, *, dim: int, padding_idx: int, past_length: int = 0, base: float = 10000.0,
    cache_rule: Literal["fairseq", "m2m100"] = "fairseq",
) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
    """fairseq ``SinusoidalPositionalEmbedding``: padding-aware rows of the t2t/concat table.

    Parameters
    ----------
    tokens
        See :func:`fairseq_positions`.
    dim
        Width, >= 4 (fairseq divides by ``dim // 2 - 1``); odd widths get a zero last column.
    padding_idx, past_length
        See :func:`fairseq_positions`.
    base
        Ladder base (10000).
    cache_rule
        See :func:`fairseq_positions`.

    Returns
    -------
    positions : ndarray, shape (B, T), int64
        The table rows read (:func:`fairseq_positions`).
    embedding : ndarray, shape (B, T, dim), float64
        ``sinusoidal_table(rows, ladder="t2t", layout="concat_sin_cos",
        odd_width="zero_pad_last")`` with the rows of padding tokens set to zero.

    Examples
    --------
    >>> rows, emb = fairseq_sinusoidal([[1, 9]], dim=4, padding_idx=1)
    >>> rows.tolist(), emb[0, 0].tolist()
    ([[1, 2]], [0.0, 0.0, 0.0, 0.0])
    """
    func = "fairseq_sinusoidal"
    dim = check_int(func, "dim", dim, minimum=4)
    rows = _fairseq_rows(func, tokens, padding_idx, past_length, cache_rule)
    table = _table(func, rows, dim, base, "t2t", "concat_sin_cos", "zero_pad_last", 0, 1.0)
    table[rows == padding_idx] = 0.0  # Note: fairseq zeroes the padding row of its table.
    return rows, table
