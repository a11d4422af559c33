r"""2-D sin-cos position encodings for a grid of patches or pixels.

Formula
-------
Each axis gets half of the width. With ``D/4`` frequencies ``w_k`` per axis (the 1-D ladders of
:mod:`posenc_ref.sinusoidal` applied to the per-axis width ``D/2``), a coordinate ``(y, x)``
maps to the four blocks :math:`\sin(y w), \cos(y w), \sin(x w), \cos(x w)`, arranged by
``axis_order`` and ``block_layout``:

.. math::

    \text{sin\_cos, x\_first:}\quad [\sin(x w) \,|\, \cos(x w) \,|\, \sin(y w) \,|\, \cos(y w)]

Conventions
-----------
* Coordinates are explicit integers ``(ys, xs)`` of the same shape; :func:`grid_coords` gives
  the row-major grid with a chosen origin (0 for MAE/timm/big_vision, 1 for DETR's mask cumsum).
* ``axis_order``: ``"x_first"`` (MAE effective order, big_vision, DETR learned) or
  ``"y_first"`` (DETR sine, HF ``build_2d_sinusoidal_position_embedding``, timm default,
  tensor2tensor n-d).
* ``block_layout``: ``"sin_cos"`` per axis ``[sin|cos]`` (MAE, big_vision, HF helper),
  ``"sin_sin_cos_cos"`` ``[sin_a|sin_b|cos_a|cos_b]`` (timm ``build_sincos2d_pos_embed``
  default), ``"interleaved"`` per axis (DETR ``PositionEmbeddingSine``).
* ``ladder``: ``"paper"`` = exponent ``k/(D/4)`` (MAE, HF, timm, DETR) or ``"t2t"`` = exponent
  ``k/(D/4 - 1)`` (big_vision ``posemb_sincos_2d``).
* ``dim`` must be a multiple of 4.

Library settings (all with ``base = 10000``):

======================== ============ =================== ======== ======
library                  axis_order   block_layout        ladder   origin
======================== ============ =================== ======== ======
MAE                      x_first      sin_cos             paper    0
HF helper (ViT-MAE swaps) y_first     sin_cos             paper    0
timm default             y_first      sin_sin_cos_cos     paper    0
big_vision               x_first      sin_cos             t2t      0
DETR sine (no normalize) y_first      interleaved         paper    1
======================== ============ =================== ======== ======

Differences from common implementations
----------------------------------------
* MAE names its first block ``emb_h`` but, because ``meshgrid`` is called as ``(w, h)``, the
  first block encodes x: ``x_first`` here (facebookresearch/mae#18).
* DETR with ``normalize=True`` feeds real-valued coordinates ``y / (y_last + eps) * 2 pi``; the
  coordinates here are integers, so that setting is outside this op.
* Square grids hide axis swaps (transformers#41380): the corpus uses non-square grids.
"""

from __future__ import annotations

from typing import Any, Final, Literal

import numpy as np
from numpy.typing import NDArray

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
from posenc_ref.sinusoidal import LADDERS, Ladder, _frequencies

AxisOrder = Literal["x_first", "y_first"]
BlockLayout = Literal["sin_cos", "sin_sin_cos_cos", "interleaved"]
AXIS_ORDERS: Final = ("x_first", "y_first")
BLOCK_LAYOUTS: Final = ("sin_cos", "sin_sin_cos_cos", "interleaved")


def grid_coords(height: int, width: int, *, origin: int = 0) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """Row-major coordinates of an ``height x width`` grid.

    Returns
    -------
    ys, xs : ndarray, shape (height * width,), int64
        Patch ``r * width + c`` has ``ys = origin + r`` and ``xs = origin + c``.

    Examples
    --------
    >>> ys, xs = grid_coords(2, 3)
    >>> ys.tolist(), xs.tolist()
    ([0, 0, 0, 1, 1, 1], [0, 1, 2, 0, 1, 2])
    """
    func = "grid_coords"
    height = check_int(func, "height", height, minimum=1)
    width = check_int(func, "width", width, minimum=1)
    origin = check_int(func, "origin", origin, minimum=0)
    check_size(func, "the grid", (height, width))
    check_exact_range(func, "origin + height", 0, origin + height)
    check_exact_range(func, "origin + width", 0, origin + width)
    ys, xs = np.divmod(np.arange(height * width, dtype=np.int64), width)
    return ys + origin, xs + origin


def _axis_angles(func: str, ys: Any, xs: Any, dim: int, base: Any, ladder: Any) -> tuple[
    NDArray[np.float64], NDArray[np.float64]
]:
    y = check_positions(func, "ys", ys)
    x = check_positions(func, "xs", xs)
    if y.shape != x.shape:
        raise SpecError(f"{func}: ys and xs must have the same shape, got {y.shape} and {x.shape}",
                        category="invalid_shape")
    base = check_float(func, "base", base, positive=True)
    check_choice(func, "ladder", ladder, LADDERS)
    check_size(func, "the encodings", y.shape + (dim,))
    w = _frequencies(func, dim // 2, base, ladder, "error")  # (D/4,)
    check_phase_range(func, "ys", y, "the frequencies", w)
    check_phase_range(func, "xs", x, "the frequencies", w)
    return y.astype(np.float64)[..., None] * w, x.astype(np.float64)[..., None] * w


def _validate(func: str, value: Any, axis_order: Any, block_layout: Any) -> int:
    dim = check_int(func, "dim", value, minimum=4)
    if dim % 4:
        raise SpecError(f"{func}: dim must be a multiple of 4, got dim={dim}")
    check_choice(func, "axis_order", axis_order, AXIS_ORDERS)
    check_choice(func, "block_layout", block_layout, BLOCK_LAYOUTS)
    return dim


def _assemble(
    a: NDArray[np.float64], b: NDArray[np.float64], block_layout: str, sin: Any, cos: Any
) -> NDArray[np.float64]:
    """Place ``sin``/``cos`` of the first axis ``a`` and the second axis ``b`` into blocks."""
    q = a.shape[-1]
    out = np.empty(a.shape[:-1] + (4 * q,), dtype=np.float64)
    if block_layout == "sin_cos":
        for angles, start in ((a, 0), (b, 2 * q)):
            sin(angles, out=out[..., start : start + q])
            cos(angles, out=out[..., start + q : start + 2 * q])
    elif block_layout == "sin_sin_cos_cos":
        sin(a, out=out[..., 0:q])
        sin(b, out=out[..., q : 2 * q])
        cos(a, out=out[..., 2 * q : 3 * q])
        cos(b, out=out[..., 3 * q :])
    else:
        sin(a, out=out[..., 0 : 2 * q : 2])
        cos(a, out=out[..., 1 : 2 * q : 2])
        sin(b, out=out[..., 2 * q :: 2])
        cos(b, out=out[..., 2 * q + 1 :: 2])
    return out


def _copy(angles: NDArray[np.float64], out: NDArray[np.float64]) -> None:
    out[...] = angles


def grid_sincos_2d(
    ys: Any,
    xs: Any,
    /,
    *,
    dim: int,
    base: float = 10000.0,
    ladder: Ladder = "paper",
    axis_order: AxisOrder = "x_first",
    block_layout: BlockLayout = "sin_cos",
) -> NDArray[np.float64]:
    """2-D sin-cos encodings of integer grid coordinates.

    Parameters
    ----------
    ys, xs
        Row and column coordinates, same shape, integers >= 0.
    dim
        Encoded width, a multiple of 4.
    base, ladder
        Frequency ladder over the per-axis width ``dim/2`` (see the module notes).
    axis_order
        ``"x_first"`` or ``"y_first"``.
    block_layout
        ``"sin_cos"``, ``"sin_sin_cos_cos"`` or ``"interleaved"``.

    Returns
    -------
    ndarray, shape (*ys.shape, dim), float64

    Raises
    ------
    SpecError
        ``dim`` not a multiple of 4, unknown convention, negative or non-integer coordinates,
        mismatched shapes.

    Examples
    --------
    >>> ys, xs = grid_coords(1, 2)
    >>> grid_sincos_2d(ys, xs, dim=4)[1].round(6).tolist()
    [0.841471, 0.540302, 0.0, 1.0]
    """
    func = "grid_sincos_2d"
    dim = _validate(func, dim, axis_order, block_layout)
    y, x = _axis_angles(func, ys, xs, dim, base, ladder)
    first, second = (x, y) if axis_order == "x_first" else (y, x)
    return _assemble(first, second, block_layout, np.sin, np.cos)


def grid_sincos_2d_angles(
    ys: Any,
    xs: Any,
    /,
    *,
    dim: int,
    base: float = 10000.0,
    ladder: Ladder = "paper",
    axis_order: AxisOrder = "x_first",
    block_layout: BlockLayout = "sin_cos",
) -> NDArray[np.float64]:
    """The phase behind every column of :func:`grid_sincos_2d` (same parameters and shape).

    Examples
    --------
    >>> grid_sincos_2d_angles([3], [5], dim=4, axis_order="y_first").tolist()
    [[3.0, 3.0, 5.0, 5.0]]
    """
    func = "grid_sincos_2d_angles"
    dim = _validate(func, dim, axis_order, block_layout)
    y, x = _axis_angles(func, ys, xs, dim, base, ladder)
    first, second = (x, y) if axis_order == "x_first" else (y, x)
    return _assemble(first, second, block_layout, _copy, _copy)
