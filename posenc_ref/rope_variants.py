r"""RoPE variants with structured positions or scales: xPos and multimodal RoPE (MRoPE).

xPos (Sun et al. 2022, A Length-Extrapolatable Transformer, arXiv:2212.10554, eq. 7)
-------------------------------------------------------------------------------------
Pair ``i`` of a rotary space of width ``S`` has the base scale
:math:`\zeta_i = (2i + 0.4S)/(1.4S)`. With scale base ``B`` and centre ``c``, the token at
position ``p`` gets the power :math:`\pi = (p - c)/B`; queries are
:math:`\zeta^{\pi} \odot R(p) q` and keys :math:`\zeta^{-\pi} \odot R(p) k` (the scale multiplies
both channels of the pair). Since :math:`\zeta^{\pi_m}\zeta^{-\pi_n} = \zeta^{(m-n)/B}`, q.k
depends on ``m - n`` only and the centre cancels: compare implementations through
:func:`posenc_ref.rope.rope_scores` (``xpos_scale_base``) when their centres differ.

MRoPE (Qwen2-VL, arXiv:2409.12191, section 2.1)
-----------------------------------------------
Three position streams (temporal, height, width); ``mrope_section = (s_t, s_h, s_w)`` with
``s_t + s_h + s_w = d/2`` assigns each frequency index ``i`` one stream, whose position
multiplies :math:`w_i = b^{-2i/d}`. Text tokens have equal streams, which reduces MRoPE to
plain RoPE.

Conventions
-----------
* xPos ``centring``: ``"lucidrains"`` (rotary-embedding-torch ``use_xpos``: ``c = T // 2``) or
  ``"torchscale"`` (microsoft/torchscale ``XPOS``: powers from ``-(T // 2 + T % 2)``, i.e.
  ``c = ceil(T/2)``); ``T`` is the window length. They differ for odd ``T``.
* xPos ``layout``: ``"interleaved"`` in both libraries; ``"half"`` offered for half-split models.
* ``mrope_layout``: ``"chunked"`` (Qwen2-VL, Qwen2.5-VL, Qwen2.5-Omni: ``i < s_t`` from T, then
  ``s_h`` from H, rest from W) or ``"interleaved"`` (Qwen3-VL, vLLM ``mrope_interleaved``: ``i``
  from H when ``i % 3 == 1 and i < 3 s_h``, from W when ``i % 3 == 2 and i < 3 s_w``, else T).
* ``width`` as in :func:`posenc_ref.rope.rope_cos_sin` (``"half"`` or ``"full"``).

Differences from common implementations
---------------------------------------
* lucidrains builds xPos positions in the dtype of ``t`` (bfloat16 inputs give bfloat16
  positions); here positions are exact integers.
* Qwen-VL's position construction (vision grids, ``rope_delta``) is the caller's: positions here
  are explicit.

Derivation claims relied on (derivations issue): ``xpos.relative_scores`` (xPos scores depend on
``m - n`` only), and those of :mod:`posenc_ref.rope`.
"""

from __future__ import annotations

from typing import Any, Final, Literal

import numpy as np
from numpy.typing import NDArray

from posenc_ref import rope
from posenc_ref.errors import (
    SpecError,
    check_choice,
    check_float,
    check_int,
    check_phase_range,
    check_positions,
    check_size,
    raised_by,
)

CENTRINGS: Final = ("lucidrains", "torchscale")
MROPE_LAYOUTS: Final = ("chunked", "interleaved")


def xpos_centre(length: int, centring: str) -> int:
    """The window centre ``c`` of the two xPos centring conventions.

    Examples
    --------
    >>> xpos_centre(5, "lucidrains"), xpos_centre(5, "torchscale"), xpos_centre(4, "torchscale")
    (2, 3, 2)
    """
    return length // 2 if centring == "lucidrains" else -(-length // 2)


def xpos_zeta(width: int, /, *, dtype: type = np.float64) -> NDArray[Any]:
    """xPos's base scale of each pair, ``zeta_i = (2i + 0.4 S) / (1.4 S)``, ``i = 0 .. S/2 - 1``.

    ``width`` is the rotary width ``S`` (even, >= 2). ``dtype`` is float64 for the spec; the
    runner's low-precision emulation asks for float32, every step then rounding to it.

    Examples
    --------
    >>> xpos_zeta(4).tolist() == [0.4 * 4 / (1.4 * 4), (2 + 0.4 * 4) / (1.4 * 4)]
    True
    """
    width = check_int("xpos_zeta", "width", width, minimum=2)
    if width % 2:
        raise SpecError(f"xpos_zeta: width must be even, got width={width}")
    check_size("xpos_zeta", "the scales of width", (width // 2,))
    t = np.dtype(dtype).type
    zeta: NDArray[Any] = (np.arange(width // 2, dtype=t) * t(2) + t(0.4 * width)) / t(1.4 * width)  # (P,)
    return zeta


def rope_xpos(
    q: Any, k: Any, positions: Any, /, *, base: float = 10000.0, scale_base: float = 512.0,
    centring: Literal["lucidrains", "torchscale"] = "lucidrains",
    layout: Literal["interleaved", "half"] = "interleaved", x_layout: Literal["BHTD", "BTHD"] = "BHTD",
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """xPos-rotated queries and keys at explicit positions (one shared window of length T).

    Parameters
    ----------
    q, k
        Shape (B, H, T, D) or (B, T, H, D), the same shape.
    positions
        Integer positions >= 0, shape (T,) or (B, T).
    base
        ``rope_theta``, as in :func:`posenc_ref.rope.rope_apply`.
    scale_base
        ``B`` (512 in both libraries), > 0.
    centring
        ``"lucidrains"`` or ``"torchscale"`` (module notes).
    layout, x_layout
        As in :func:`posenc_ref.rope.rope_apply` (whole head rotated).

    Returns
    -------
    q_rot, k_rot : ndarray, shape of q, float64

    Examples
    --------
    At the centre the scale is 1 and xPos is plain RoPE:

    >>> q = np.ones((1, 1, 3, 4))
    >>> qr, kr = rope_xpos(q, q, [0, 1, 2])
    >>> bool(np.allclose(qr[0, 0, 1], rope.rope_apply(q, [0, 1, 2], layout="interleaved")[0, 0, 1]))
    True
    """
    func = "rope_xpos"
    check_choice(func, "centring", centring, CENTRINGS)
    check_choice(func, "layout", layout, ("interleaved", "half"))
    scale_base = check_float(func, "scale_base", scale_base, positive=True)
    with raised_by(func, "rope_apply"):
        qr = rope.rope_apply(q, positions, base=base, layout=layout, x_layout=x_layout)
        kr = rope.rope_apply(k, positions, base=base, layout=layout, x_layout=x_layout)
    if qr.shape != kr.shape:
        raise SpecError(f"{func}: q and k must have the same shape, got {qr.shape} and {kr.shape}",
                        category="invalid_shape")
    t_axis = 2 if x_layout == "BHTD" else 1
    width = qr.shape[-1]
    zeta = xpos_zeta(width)  # (P,)
    pos = check_positions(func, "positions", positions).reshape(-1, qr.shape[t_axis])
    power = (pos - xpos_centre(qr.shape[t_axis], centring)).astype(np.float64) / scale_base  # (B|1, T)
    power = power[:, None, :, None] if x_layout == "BHTD" else power[:, :, None, None]
    with np.errstate(over="ignore", divide="ignore"):  # an overflow is reported below
        up = zeta**power  # (B|1, 1, T, P) or (B|1, T, 1, P)
        finite = np.isfinite(up).all() and np.isfinite(1.0 / up).all()
    if not finite:
        raise SpecError(f"{func}: positions {int(pos.min())}..{int(pos.max())} put zeta**(+-power) beyond float64 "
                        f"with scale_base={scale_base}", category="out_of_range")
    scale = np.repeat(up, 2, axis=-1) if layout == "interleaved" else np.concatenate([up, up], axis=-1)
    return qr * scale, kr / scale


def mrope_stream(pairs: int, section: tuple[int, int, int], mrope_layout: str) -> NDArray[np.int64]:
    """For each frequency index: the stream (0 = T, 1 = H, 2 = W) its angle comes from.

    Examples
    --------
    >>> mrope_stream(6, (2, 2, 2), "chunked").tolist()
    [0, 0, 1, 1, 2, 2]
    >>> mrope_stream(6, (2, 2, 2), "interleaved").tolist()
    [0, 1, 2, 0, 1, 2]
    """
    i = np.arange(pairs)
    if mrope_layout == "chunked":
        return np.searchsorted(np.cumsum(section), i, side="right").astype(np.int64)
    stream = np.zeros(pairs, dtype=np.int64)
    stream[(i % 3 == 1) & (i < 3 * section[1])] = 1
    stream[(i % 3 == 2) & (i < 3 * section[2])] = 2
    return stream


def mrope_cos_sin(
    positions: Any, mrope_section: Any, /, *, dim: int, base: float = 10000.0,
    mrope_layout: Literal["chunked", "interleaved"] = "chunked", width: Literal["half", "full"] = "full",
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """MRoPE cos/sin tables from three position streams.

    Parameters
    ----------
    positions
        Integer positions >= 0, shape (3, ...): temporal, height, width streams.
    mrope_section
        Three non-negative integers summing to ``dim / 2``.
    dim
        Rotary width ``d`` (even).
    base, mrope_layout, width
        See the module notes.

    Returns
    -------
    cos, sin : ndarray, shape (*positions.shape[1:], d/2 or d), float64

    Examples
    --------
    >>> c, s = mrope_cos_sin([[0], [0], [0]], [1, 1, 0], dim=4)
    >>> c.tolist()
    [[1.0, 1.0, 1.0, 1.0]]
    """
    func = "mrope_cos_sin"
    dim = check_int(func, "dim", dim, minimum=2)
    if dim % 2:
        raise SpecError(f"{func}: dim must be even, got dim={dim}")
    check_choice(func, "mrope_layout", mrope_layout, MROPE_LAYOUTS)
    check_choice(func, "width", width, ("half", "full"))
    section = check_positions(func, "mrope_section", mrope_section, min_ndim=1)
    if section.shape != (3,) or int(section.sum()) != dim // 2:
        raise SpecError(f"{func}: mrope_section must be 3 integers summing to dim/2 = {dim // 2}, "
                        f"got {section.tolist()}")
    pos = check_positions(func, "positions", positions, min_ndim=1)
    if pos.shape[0] != 3:
        raise SpecError(f"{func}: positions must have shape (3, ...), got {pos.shape}", category="invalid_shape")
    check_float(func, "base", base, positive=True)
    w = rope.rotary_frequencies(dim, base=base, rotary_dim=dim, partial="prefix", func=func)[1]
    stream = mrope_stream(dim // 2, (int(section[0]), int(section[1]), int(section[2])), mrope_layout)
    chosen = np.moveaxis(pos[stream], 0, -1).astype(np.float64)  # (..., P): each pair's own stream
    check_phase_range(func, "positions", pos, "the frequencies", w)
    angle = chosen * w
    cos, sin = np.cos(angle), np.sin(angle)
    if width == "full":
        return np.concatenate([cos, cos], axis=-1), np.concatenate([sin, sin], axis=-1)
    return cos, sin
