"""The private helpers of :mod:`posenc_ref.sinusoidal` (the frequency ladders, the column layouts,
the fairseq rows); that module is the spec page and names the rules these follow.
"""

from __future__ import annotations

from typing import Any, Final

import numpy as np
from numpy.typing import NDArray

from posenc_ref.errors import SpecError, check_choice, check_exact_range, check_int, check_positions, check_size


def _frequencies(func: str, dim: int, base: float, ladder: str, odd_width: str) -> NDArray[np.float64]:
    """:func:`sinusoidal_frequencies` for validated parameters; errors name ``func``."""
    width = dim - 1 if (dim % 2 and odd_width == "zero_pad_last") else dim
    count = (width + 1) // 2
    check_size(func, "the frequencies", (count,))
    k = np.arange(count, dtype=np.float64)
    if ladder == "paper":
        exponent = (2.0 * k) / width
    else:
        exponent = k / max(count - 1, 1)
    with np.errstate(over="ignore"):
        w = np.power(base, -exponent)
    if not np.isfinite(w).all():
        raise SpecError(f"{func}: base={base!r} gives frequencies base**-e beyond float64 for dim={dim}")
    return w


def _column_slices(dim: int, count: int, layout: str, odd_width: str) -> tuple[slice, slice, int]:
    """Column slices holding the sines and the cosines, and the number of cosine columns."""
    n_sin = count
    n_cos = count - 1 if (dim % 2 and odd_width == "sin_gets_extra") else count
    if layout == "interleaved":
        return slice(0, 2 * n_sin, 2), slice(1, 2 * n_cos, 2), n_cos
    if layout == "concat_sin_cos":
        return slice(0, n_sin), slice(n_sin, n_sin + n_cos), n_cos
    return slice(n_cos, n_cos + n_sin), slice(0, n_cos), n_cos


CACHE_RULES: Final = ("fairseq", "m2m100")


def _fairseq_rows(func: str, tokens: Any, padding_idx: Any, past_length: Any,
                  cache_rule: Any = "fairseq") -> NDArray[np.int64]:
    """:func:`fairseq_positions`; errors name ``func``."""
    check_choice(func, "cache_rule", cache_rule, CACHE_RULES)
    padding_idx = check_int(func, "padding_idx", padding_idx, minimum=0)
    past_length = check_int(func, "past_length", past_length, minimum=0)
    ids = check_positions(func, "tokens", tokens, nonnegative=True)
    if ids.ndim != 2:
        raise SpecError(f"{func}: tokens must have shape (B, T), got shape {ids.shape}", category="invalid_shape")
    check_exact_range(func, "padding_idx + past_length + the number of tokens", 0,
                      padding_idx + past_length + ids.shape[1] + 1)
    real = (ids != padding_idx).astype(np.int64)
    if cache_rule == "m2m100":  # Note: any chunk after the cache; padding in the chunk keeps the padding row
        m2m: NDArray[np.int64] = (np.cumsum(real, axis=1) + past_length) * real + padding_idx
        return m2m
    if past_length:
        if ids.shape[1] != 1:
            raise SpecError(
                f"{func}: an incremental step (past_length={past_length}) takes one token per row, "
                f"got tokens of shape {ids.shape}"
            )
        return np.full(ids.shape, padding_idx + past_length + 1, dtype=np.int64)
    rows: NDArray[np.int64] = np.cumsum(real, axis=1) * real + padding_idx
    return rows
