r"""Resampling a learned position table to a new length or grid (ViT fine-tuning at a new resolution).

Formula
-------
The prefix rows (class, distillation, register tokens) are kept as they are. The remaining rows
form a length-``n`` sequence (1-D) or a row-major ``H x W`` grid (2-D) whose every channel is
resampled separably: along each axis, output sample ``o`` is :math:`\sum_k W_{ok}\, t_k` with
one weight matrix :math:`W \in \mathbb{R}^{m \times n}` per axis (2-D: :math:`W_H\,G\,W_W^\top`).

Kernels: Keys' cubic convolution (Keys 1981, IEEE TASSP 29(6), eq. 15) with parameter ``a``,

.. math::

    c_a(x) = \begin{cases} (a+2)|x|^3 - (a+3)|x|^2 + 1 & |x| \le 1 \\
             a|x|^3 - 5a|x|^2 + 8a|x| - 4a & 1 < |x| < 2 \\ 0 & \text{else,} \end{cases}

or the triangle :math:`\max(0, 1 - |x|)` (``"bilinear"``).

Weights (PyTorch ``upsample_bicubic2d`` / ``upsample_bilinear2d`` and their ``_aa`` variants):

* ``scale`` (input samples per output sample): ``(n-1)/(m-1)`` (``m > 1``, else 0) under
  ``coordinates="align_corners"``; otherwise ``n/m`` (``size_from="size"``) or ``1/s`` for the
  scale factor ``s = (new + scale_offset)/n`` (``size_from="scale_factor"``, which also sets
  ``m = floor(n * s)`` computed in float64, as ``torch.nn.functional.interpolate`` does).
  ``s`` is the float64 value the caller passes: DINO computes ``w0 + 0.1`` and
  ``(w0 + 0.1) / sqrt(N)`` in Python floats, so the sum and the quotient are each rounded to
  float64 by convention; the exact values of the corpus start from that float ``s``.
* ``antialias="off"``: source coordinate ``x = scale * o`` (align corners) or
  ``scale * (o + 0.5) - 0.5`` (half pixel; clamped at 0 for bilinear only). Cubic: taps
  ``floor(x) - 1 .. floor(x) + 2`` with weights ``c_a(t+1), c_a(t), c_a(1-t), c_a(2-t)``,
  ``t = x - floor(x)``; bilinear: taps ``floor(x), floor(x) + 1`` with ``1 - t, t``. Taps beyond
  the edges read the edge sample (replicate).
* ``antialias="on"`` (PIL, ``torch`` ``antialias=True``, timm, ``jax.image.resize``): centre
  ``c = scale * (o + 0.5)``; the kernel is stretched by ``f = max(scale, 1)`` (support ``2f``
  cubic, ``f`` bilinear); taps ``k`` in ``[trunc(c - support + 0.5), trunc(c + support + 0.5))``
  inside the table, weights ``kernel((k + 0.5 - c) / f)`` divided by their sum (no replication:
  the edge weights are renormalised).

Conventions
-----------
* ``cubic_a``: -0.75 (PyTorch ``bicubic``, OpenCV, HF ViT/MAE/DeiT/DINO interpolation) or -0.5
  (PIL, ``jax.image.resize("cubic")``, and PyTorch's own ``antialias=True`` path, hence timm).
* ``antialias``: ``"on"`` (timm ``resample_abs_pos_embed`` default, PIL, JAX) or ``"off"``
  (``F.interpolate`` default; HF ViT ``interpolate_pos_encoding``, MAE, DeiT, DINO).
* ``coordinates``: ``"half_pixel"`` (``align_corners=False``, every library above) or
  ``"align_corners"`` (``align_corners=True``; ``scipy.ndimage.zoom`` with ``grid_mode=False``,
  big_vision ``resample_posemb`` with ``order=1``, behaves as align-corners bilinear).
* ``size_from``: ``"size"`` (timm, HF ViT since transformers#35411, DINOv2 after dinov2#378) or
  ``"scale_factor"`` with ``scale_offset=0.1`` (DINO v1, DINOv2 before #378, older HF): the
  sampling positions move, not only the output size.
* Prefix rows first (``num_prefix_tokens``, timm default 1; 0 for timm ``no_embed_class``);
  grid rows row-major ``(H, W)``.

Differences from common implementations
----------------------------------------
* timm and PyTorch compute in float32 (timm upcasts half tables); the corpus judges each dtype
  with the ``reduction`` tolerance.
* ``antialias="on"`` with ``coordinates="align_corners"`` is refused: PyTorch accepts it with a
  centre that mixes the two conventions, and no library listed above uses it.
* ``jax.image.resize(..., "cubic", antialias=False)`` (Keys ``a = -0.5``) renormalises edge
  weights like ``"on"`` but does not stretch the kernel when downsampling; it is not one of the
  modes here. Its ``"cubic-pytorch"`` (``a = -0.75``) and ``"linear"`` methods with
  ``antialias=False`` are ``antialias="off"`` (equal to 1e-15 and exactly on the corpus sizes).

Derivation claims relied on: the cubic kernel interpolates (``c_a(0) = 1``, ``c_a(\pm 1) =
c_a(\pm 2) = 0``) and its four taps sum to 1 for every ``t`` and ``a``, so a constant table
resamples to itself (tests check both).
"""

from __future__ import annotations

from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray

from posenc_ref._resample_checks import ANTIALIAS as ANTIALIAS  # re-exported
from posenc_ref._resample_checks import COORDINATES as COORDINATES
from posenc_ref._resample_checks import KERNELS as KERNELS  # re-exported
from posenc_ref._resample_checks import SIZE_FROM as SIZE_FROM
from posenc_ref._resample_checks import _split, _validate
from posenc_ref.errors import SpecError, check_finite_result, check_float, check_float_array, check_int, check_size

Kernel = Literal["bicubic", "bilinear"]
Antialias = Literal["off", "on"]
Coordinates = Literal["half_pixel", "align_corners"]
SizeFrom = Literal["size", "scale_factor"]


def cubic_kernel(x: Any, *, a: float = -0.75) -> NDArray[np.float64]:
    """Keys' cubic convolution kernel ``c_a(x)``, evaluated in PyTorch's Horner order.

    Examples
    --------
    >>> cubic_kernel([0.0, 1.0, 2.0, 0.5], a=-0.75).tolist()
    [1.0, 0.0, 0.0, 0.59375]
    >>> float(cubic_kernel([0.5], a=-0.5)[0])
    0.5625
    """
    func = "cubic_kernel"
    a = check_float(func, "a", a)
    # Note: c_a vanishes for |x| >= 2, so |x| is capped there (no overflow of x**3 for huge x)
    ax = np.minimum(np.abs(check_float_array(func, "x", x, allow_empty=True)), 2.0)
    inner = ((a + 2.0) * ax - (a + 3.0)) * ax * ax + 1.0
    outer = ((a * ax - 5.0 * a) * ax + 8.0 * a) * ax - 4.0 * a
    return np.where(ax <= 1.0, inner, np.where(ax < 2.0, outer, 0.0))


def _kernel(x: NDArray[np.float64], kernel: str, a: float) -> NDArray[np.float64]:
    if kernel == "bicubic":
        return cubic_kernel(x, a=a)
    return np.maximum(0.0, 1.0 - np.abs(x))


def output_size_and_scale(
    *, in_size: int, new_size: int, kernel: Kernel = "bicubic", cubic_a: float = -0.75, antialias: Antialias = "off",
    coordinates: Coordinates = "half_pixel", size_from: SizeFrom = "size", scale_offset: float = 0.0,
) -> tuple[int, float]:
    """The output size ``m`` of one axis and its ``scale`` (input samples per output sample).

    Examples
    --------
    The float64 floor of a scale factor loses a row where the size does not (dino#8):

    >>> output_size_and_scale(in_size=13, new_size=15, size_from="scale_factor")[0]
    14
    >>> output_size_and_scale(in_size=13, new_size=15)[0]
    15
    """
    _, m, scale = _validate("output_size_and_scale", in_size, new_size, kernel, cubic_a, antialias, coordinates,
                            size_from, scale_offset)
    return m, scale


def _axis(n: int, m: int, scale: float, kernel: str, a: float, antialias: str,
          coordinates: str) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """The (m, n) weight matrix and the number of taps landing on each entry."""
    out = np.arange(m, dtype=np.float64)
    if antialias == "on":
        taps = 4 if kernel == "bicubic" else 2
        stretch = max(scale, 1.0)
        support = taps / 2 * stretch
        centre = scale * (out + 0.5)  # (m,)
        lo = np.maximum(np.trunc(centre - support + 0.5), 0.0)
        hi = np.minimum(np.trunc(centre + support + 0.5), float(n))
        k = np.arange(n, dtype=np.float64)[None, :]
        window = ((k >= lo[:, None]) & (k < hi[:, None])).astype(np.float64)  # (m, n)
        raw = _kernel((k - centre[:, None] + 0.5) * (1.0 / stretch if scale >= 1.0 else 1.0), kernel, a) * window
        total = raw.sum(axis=1, keepdims=True)
        return raw / np.where(total != 0.0, total, 1.0), window
    source = scale * out if coordinates == "align_corners" else scale * (out + 0.5) - 0.5  # (m,)
    if kernel == "bilinear":
        source = np.maximum(source, 0.0)  # Note: PyTorch clamps linear (not cubic) source coordinates at 0
        offsets = np.arange(0, 2)
    else:
        offsets = np.arange(-1, 3)
    first = np.floor(source)
    t = source - first
    weights = _kernel(t[:, None] - offsets[None, :], kernel, a)  # (m, taps): c(t+1), c(t), c(1-t), c(2-t)
    index = np.clip(first.astype(np.int64)[:, None] + offsets[None, :], 0, n - 1)  # replicate the edges
    rows = np.broadcast_to(np.arange(m)[:, None], index.shape)
    matrix = np.zeros((m, n))
    count = np.zeros((m, n))
    np.add.at(matrix, (rows, index), weights)
    np.add.at(count, (rows, index), 1.0)
    return matrix, count


def resample_weights(
    *, in_size: int, new_size: int, kernel: Kernel = "bicubic", cubic_a: float = -0.75, antialias: Antialias = "off",
    coordinates: Coordinates = "half_pixel", size_from: SizeFrom = "size", scale_offset: float = 0.0,
) -> NDArray[np.float64]:
    """The (m, n) matrix of one axis' interpolation weights.

    Parameters
    ----------
    in_size
        ``n >= 1`` samples along the axis.
    new_size
        Requested size (>= 1); the output size ``m`` equals it under ``size_from="size"``.
    kernel, cubic_a, antialias, coordinates, size_from, scale_offset
        See the module notes.

    Returns
    -------
    ndarray, shape (m, n), float64; every row sums to 1.

    Raises
    ------
    SpecError
        ``new_size < 1`` or an output size below 1, ``in_size < 1``, an unknown mode,
        ``scale_offset`` under ``size_from="size"``, antialias with align-corners coordinates.

    Examples
    --------
    Doubling: output 3 samples ``x = 0.5 * 3.5 - 0.5 = 1.25``, i.e. ``c(1.25), c(0.25), c(0.75),
    c(1.75)`` on inputs 0..3; at output 0 the tap at -1 reads input 0 (replicated edge):

    >>> resample_weights(in_size=4, new_size=8)[3].tolist()
    [-0.10546875, 0.87890625, 0.26171875, -0.03515625]
    >>> resample_weights(in_size=4, new_size=8)[0].tolist()
    [1.10546875, -0.10546875, 0.0, 0.0]
    >>> resample_weights(in_size=3, new_size=5, kernel="bilinear", coordinates="align_corners")[1].tolist()
    [0.5, 0.5, 0.0]
    """
    func = "resample_weights"
    n, m, scale = _validate(func, in_size, new_size, kernel, cubic_a, antialias, coordinates, size_from, scale_offset)
    return _axis(n, m, scale, kernel, float(cubic_a), antialias, coordinates)[0]


def tap_counts(
    *, in_size: int, new_size: int, kernel: Kernel = "bicubic", cubic_a: float = -0.75, antialias: Antialias = "off",
    coordinates: Coordinates = "half_pixel", size_from: SizeFrom = "size", scale_offset: float = 0.0,
) -> NDArray[np.float64]:
    """How many kernel taps land on each entry of :func:`resample_weights` (edge taps pile up).

    Examples
    --------
    >>> tap_counts(in_size=4, new_size=8)[0].tolist()
    [3.0, 1.0, 0.0, 0.0]
    """
    func = "tap_counts"
    n, m, scale = _validate(func, in_size, new_size, kernel, cubic_a, antialias, coordinates, size_from, scale_offset)
    return _axis(n, m, scale, kernel, float(cubic_a), antialias, coordinates)[1]


def resample_table_1d(
    table: Any, /, *, new_length: int, num_prefix_tokens: int = 1, kernel: Kernel = "bicubic",
    cubic_a: float = -0.75, antialias: Antialias = "off", coordinates: Coordinates = "half_pixel",
    size_from: SizeFrom = "size", scale_offset: float = 0.0,
) -> NDArray[np.float64]:
    """Resample the rows of a learned 1-D table after its prefix rows to ``new_length`` rows.

    Parameters
    ----------
    table
        Shape (num_prefix_tokens + L, D).
    new_length
        Requested number of non-prefix rows (>= 1).
    num_prefix_tokens
        Leading rows kept as they are (>= 0).
    kernel, cubic_a, antialias, coordinates, size_from, scale_offset
        See the module notes.

    Returns
    -------
    ndarray, shape (num_prefix_tokens + m, D), float64

    Raises
    ------
    SpecError
        ``invalid_shape`` when the table has no row beyond its prefix or is not 2-D; otherwise
        as :func:`resample_weights`.

    Examples
    --------
    The prefix row is kept; a linear ramp stays linear inside under align-corners bilinear:

    >>> table = [[-1.0], [0.0], [1.0], [2.0]]
    >>> resample_table_1d(table, new_length=5, kernel="bilinear", coordinates="align_corners").ravel().tolist()
    [-1.0, 0.0, 0.5, 1.0, 1.5, 2.0]
    """
    func = "resample_table_1d"
    weights = check_float_array(func, "table", table, ndim=2)
    prefix_count = check_int(func, "num_prefix_tokens", num_prefix_tokens, minimum=0)
    if weights.shape[0] <= prefix_count:
        raise SpecError(f"{func}: table has {weights.shape[0]} rows, expected num_prefix_tokens = {prefix_count} "
                        "prefix rows and at least one more", category="invalid_shape")
    prefix, rows = weights[:prefix_count], weights[prefix_count:]
    n, m, scale = _validate(func, rows.shape[0], new_length, kernel, cubic_a, antialias, coordinates, size_from,
                            scale_offset, "new_length")
    check_size(func, "the resampled table", (prefix_count + m, rows.shape[1]))
    matrix = _axis(n, m, scale, kernel, float(cubic_a), antialias, coordinates)[0]
    with np.errstate(over="ignore", invalid="ignore"):
        resampled = matrix @ rows
    return np.concatenate([prefix, check_finite_result(func, "the resampled table", resampled)], axis=0)


def resample_grid_2d(
    table: Any, /, *, grid_height: int, grid_width: int, new_height: int, new_width: int, num_prefix_tokens: int = 1,
    kernel: Kernel = "bicubic", cubic_a: float = -0.75, antialias: Antialias = "off",
    coordinates: Coordinates = "half_pixel", size_from: SizeFrom = "size", scale_offset: float = 0.0,
) -> NDArray[np.float64]:
    """Resample a ViT position table's ``H x W`` grid rows to ``new_height x new_width``.

    Parameters
    ----------
    table
        Shape (num_prefix_tokens + H * W, D); grid rows in row-major ``(H, W)`` order.
    grid_height, grid_width
        The declared grid ``H x W`` (>= 1 each).
    new_height, new_width
        Requested grid (>= 1 each).
    num_prefix_tokens
        Leading rows kept as they are (timm default 1).
    kernel, cubic_a, antialias, coordinates, size_from, scale_offset
        See the module notes; the same mode along both axes.

    Returns
    -------
    ndarray, shape (num_prefix_tokens + m_H * m_W, D), float64

    Raises
    ------
    SpecError
        ``invalid_shape`` when the table length is not ``num_prefix_tokens + H * W``; otherwise
        as :func:`resample_weights`.

    Examples
    --------
    A constant grid resamples to the same constant, whatever the kernel and size:

    >>> table = np.vstack([[[7.0]], np.full((6, 1), 2.0)])
    >>> out = resample_grid_2d(table, grid_height=2, grid_width=3, new_height=3, new_width=5)
    >>> out.shape, float(out[0, 0]), bool(np.allclose(out[1:], 2.0, rtol=0, atol=1e-14))
    ((16, 1), 7.0, True)
    """
    func = "resample_grid_2d"
    height = check_int(func, "grid_height", grid_height, minimum=1)
    width = check_int(func, "grid_width", grid_width, minimum=1)
    described = f"grid_height * grid_width ({height} x {width})"
    prefix, rows = _split(func, table, num_prefix_tokens, height * width, described)
    n_h, m_h, scale_h = _validate(func, height, new_height, kernel, cubic_a, antialias, coordinates, size_from,
                                  scale_offset, "new_height")
    n_w, m_w, scale_w = _validate(func, width, new_width, kernel, cubic_a, antialias, coordinates, size_from,
                                  scale_offset, "new_width")
    check_size(func, "the resampled table", (prefix.shape[0] + m_h * m_w, rows.shape[1]))
    w_h = _axis(n_h, m_h, scale_h, kernel, float(cubic_a), antialias, coordinates)[0]
    w_w = _axis(n_w, m_w, scale_w, kernel, float(cubic_a), antialias, coordinates)[0]
    grid = rows.reshape(height, width, -1)  # (H, W, D)
    with np.errstate(over="ignore", invalid="ignore"):
        resized = np.einsum("ph,hwd,qw->pqd", w_h, grid, w_w, optimize=True)  # (m_H, m_W, D)
    check_finite_result(func, "the resampled table", resized)
    return np.concatenate([prefix, resized.reshape(m_h * m_w, -1)], axis=0)
