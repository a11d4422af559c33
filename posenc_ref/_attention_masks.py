"""Private checks of :func:`posenc_ref.attention.attention`'s masks and positions, and the structural mask."""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from posenc_ref.errors import SpecError, check_positions


def shape_error(func: str, message: str) -> SpecError:
    return SpecError(f"{func}: {message}", category="invalid_shape")


def broadcastable(func: str, name: str, array: NDArray[Any], target: tuple[int, ...]) -> None:
    if array.ndim > len(target) or any(
        a not in (1, t) for a, t in zip(array.shape[::-1], target[::-1])
    ):
        raise shape_error(func, f"{name} must be broadcastable to (B, H, Tq, Tk) = {target}, got shape {array.shape}")


def mask_array(func: str, mask: Any, target: tuple[int, ...]) -> NDArray[Any]:
    """A boolean mask, or a float additive mask whose entries are finite or -inf."""
    array = np.asarray(mask)
    if array.dtype.kind not in "bf":
        # Note: an integer 0/1 mask (HF attention_mask) is refused rather than read as additive
        raise TypeError(f"{func}: mask must be boolean (True = attend) or float additive, got dtype {array.dtype}")
    broadcastable(func, "mask", array, target)
    if array.dtype.kind == "b":
        return array
    additive = array.astype(np.float64)
    bad = np.isnan(additive) | (additive == np.inf)
    if bad.any():
        where = tuple(int(i) for i in np.argwhere(bad)[0])
        raise SpecError(f"{func}: an additive mask holds finite values or -inf, got {additive[where]!r} at {where}")
    return additive


def position_array(func: str, name: str, value: Any, batch: int, length: int) -> NDArray[np.int64]:
    positions = check_positions(func, name, value, min_ndim=1)
    rows_ok = positions.ndim == 1 or positions.shape[0] in (1, batch)
    if positions.ndim > 2 or positions.shape[-1] != length or not rows_ok:
        raise shape_error(func, f"{name} must have shape ({length},) or ({batch}, {length}), got {positions.shape}")
    return positions


def structural_keep(tq: int, tk: int, causal: bool, offset: int, window: int | None) -> NDArray[np.bool_] | None:
    """(Tq, Tk) keep-mask of the causal and window rules, ``None`` when neither applies."""
    if not causal and window is None:
        return None
    distance = (np.arange(tq)[:, None] + offset) - np.arange(tk)[None, :]  # (Tq, Tk): aligned query - key
    keep = distance >= 0 if causal else np.ones((tq, tk), dtype=bool)
    if window is not None:
        keep &= distance < window
        if not causal:
            keep &= -distance < window
    return keep

