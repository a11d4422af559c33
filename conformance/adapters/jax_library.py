"""JAX's own functions behind the JAX adapter (:mod:`jax_port`): ``jax.image.scale_and_translate``
for ``resample.*`` (its ``cubic-pytorch``, ``cubic`` and ``linear`` kernels, and which kernel
parameters it has no form for) and ``jax.nn.dot_product_attention`` for the attention output
below float64.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

if str(Path(__file__).resolve().parent) not in sys.path:  # the shared helpers live next to this file
    sys.path.insert(0, str(Path(__file__).resolve().parent))

from posenc_adapter_shared import require  # noqa: E402

jax = require("jax", "jax")
jnp = jax.numpy


def resample_method(kernel: str, antialias: bool, cubic_a: float) -> str | None:
    """The ``jax.image`` method with the case's kernel, or None where jax.image has none: its
    antialiased cubic is Keys a=-0.5 ("cubic"; "cubic-pytorch" falls back to it), its cubic without
    antialias that replicates the edges as PyTorch does is a=-0.75 ("cubic-pytorch"; plain "cubic"
    renormalises the edge weights instead), and "linear" is the triangle either way."""
    if kernel == "bilinear":
        return "linear"
    if antialias:
        return "cubic" if cubic_a == -0.5 else None
    return "cubic-pytorch" if cubic_a == -0.75 else None


def resample_geometry(n: int, m: int, step: float, align_corners: bool) -> tuple[float, float]:
    """``jax.image.scale_and_translate``'s (scale, translation) for ``n -> m`` samples, ``step`` input
    samples per output sample: ``1 / step`` (half-pixel centres; ``m / n``, or the scale factor);
    align corners as its docstring says, ``(m-1)/(n-1)`` and ``0.5 (1 - scale)`` (one output sample
    reads sample 0; one input sample is read everywhere)."""
    if not align_corners:
        return 1 / step, 0.0
    if m == 1:
        return 1.0, 0.0
    if n == 1:
        return float(m), 0.0
    scale = (m - 1) / (n - 1)
    return scale, 0.5 * (1 - scale)


def resample(x: Any, axes: tuple[int, ...], sizes: tuple[int, ...], geometry: tuple[tuple[float, float], ...],
             method: str, antialias: bool, compute: Any) -> Any:
    """``jax.image.scale_and_translate`` of x along ``axes`` to ``sizes`` (scale, translation per axis)."""
    shape = list(x.shape)
    for axis, size in zip(axes, sizes):
        shape[axis] = size
    scale = jnp.asarray([g[0] for g in geometry], dtype=compute)
    translation = jnp.asarray([g[1] for g in geometry], dtype=compute)
    return jax.image.scale_and_translate(x.astype(compute), tuple(shape), axes, scale, translation, method,
                                         antialias=antialias)


def resample_supports(op: str, params: Mapping[str, Any]) -> bool | str:
    """True, or why jax.image has no resampling with these parameters (not_applicable). Invalid
    combinations run, so the wrapper's refusal is judged."""
    if not op.startswith("resample.") or params.get("kernel") != "bicubic":
        return True
    antialias, a = params.get("antialias"), params.get("cubic_a")
    if antialias == "on" and params.get("coordinates") == "half_pixel" and a != -0.5:
        return ("jax.image's antialiased cubic is Keys a=-0.5 (scale_and_translate 'cubic'; 'cubic-pytorch' "
                f"falls back to it with antialias=True), not a={a}")
    if antialias == "off" and a != -0.75:
        return ("jax.image's cubic without antialias that replicates the edges is PyTorch's a=-0.75 "
                f"('cubic-pytorch'); its a=-0.5 'cubic' renormalises the edge weights instead, so a={a} has none")
    return True


def dot_product_attention(a: Mapping[str, Any], bias: Any, held: Any) -> Any:
    """``jax.nn.dot_product_attention(implementation="xla")`` (B, H, Tq, D) of a checked attention case
    (:func:`posenc_adapter_attention_checks.attention`): its q, k, v held in ``held``, ``bias``
    (broadcastable to (B, H, Tq, Tk)) and its keep mask, in the library's (B, T, N, H) layout. The
    library fills a fully masked row with the mean of V (a finite fill); those rows are set as the
    case's ``fully_masked`` policy says, as a caller does."""
    qh, kh, vh = (jnp.asarray(a[n], dtype=held) for n in ("q", "k", "v"))  # the library runs at the held dtype
    shape = (qh.shape[0], qh.shape[1], qh.shape[2], kh.shape[2])
    out = jax.nn.dot_product_attention(  # (B, T, N, H) layout
        qh.transpose(0, 2, 1, 3), kh.transpose(0, 2, 1, 3), vh.transpose(0, 2, 1, 3),
        bias=jnp.broadcast_to(bias.astype(held), shape), mask=jnp.broadcast_to(jnp.asarray(a["keep"]), shape),
        scale=float(a["scale"]), implementation="xla").transpose(0, 2, 1, 3)
    empty = jnp.asarray(a["empty"])[..., None]
    if a["policy"] == "zeros":
        out = jnp.where(empty, 0, out)
    elif a["policy"] == "nan":
        out = jnp.where(empty, jnp.nan, out)
    return out
