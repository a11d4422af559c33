"""JAX adapter: a ``jax.numpy`` port of every current op (sinusoidal.table, sinusoidal.fairseq,
grid2d.sincos, learned.lookup).

JAX computes in float32 unless ``jax_enable_x64`` is on, and then it *silently* downcasts a
requested float64 to float32. So the adapter's dtype follows the flag: ``ADAPTER`` is float64
when x64 is on and float32 when it is off; ``at_dtype("float64")`` refuses when x64 is off, and
every run checks the dtype of what JAX returned, so the adapter never claims float64 for
float32 values. float16 and bfloat16 are computed in float32 and rounded once at the end.

``learned.lookup``: JAX indexing never raises; an index past the end reads the last row (the
``out_of_range="clamp"`` policy, ``jnp.take(..., mode="clip")``). The ``"error"`` policy is the
wrapper's check before the lookup (:mod:`posenc_adapter_shared`).

Run::

    JAX_ENABLE_X64=1 posenc-ref conformance conformance/adapters/jax_adapter.py:ADAPTER       # float64
    posenc-ref conformance conformance/adapters/jax_adapter.py:ADAPTER                        # float32
    posenc-ref conformance conformance/adapters/jax_adapter.py:ADAPTER --dtype bfloat16

Needs ``pip install 'posenc-ref[jax]'``.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

if str(Path(__file__).resolve().parent) not in sys.path:  # the shared helpers live next to this file
    sys.path.insert(0, str(Path(__file__).resolve().parent))
from posenc_adapter_shared import (  # noqa: E402
    Adapter,
    require,
    validate_fairseq,
    validate_grid,
    validate_lookup,
    validate_table,
)

jax = require("jax", "jax")
jnp = jax.numpy

DTYPES = {"float64": jnp.float64, "float32": jnp.float32, "float16": jnp.float16, "bfloat16": jnp.bfloat16}


def x64_enabled() -> bool:
    return bool(jax.config.jax_enable_x64)


def _frequencies(width: int, base: float, ladder: str, compute: Any) -> Any:
    """``base ** -e``: e = 2k/width (paper) or k/max(n-1, 1) (t2t), n = ceil(width/2) (n,)."""
    n = (width + 1) // 2
    k = jnp.arange(n, dtype=compute)
    exponent = 2 * k / width if ladder == "paper" else k / max(n - 1, 1)
    return jnp.power(jnp.asarray(base, dtype=compute), -exponent)


def table(rows: np.ndarray, p: Mapping[str, Any], compute: Any) -> Any:
    """The sinusoidal table (*rows.shape, dim)."""
    dim, odd = int(p["dim"]), int(p["dim"]) % 2 == 1
    width = dim - 1 if odd and p["odd_width"] == "zero_pad_last" else dim
    angles = jnp.asarray(rows).astype(compute)[..., None] * _frequencies(width, p["base"], p["ladder"], compute)
    n = angles.shape[-1]
    n_cos = n - 1 if odd and p["odd_width"] == "sin_gets_extra" else n
    sin, cos = jnp.sin(angles), jnp.cos(angles[..., :n_cos])
    pad = jnp.zeros(angles.shape[:-1] + (dim - n - n_cos,), dtype=compute)
    if p["layout"] == "interleaved":
        pairs = jnp.stack([sin[..., :n_cos], cos], axis=-1).reshape(angles.shape[:-1] + (2 * n_cos,))
        out = jnp.concatenate([pairs, sin[..., n_cos:], pad], axis=-1)
    elif p["layout"] == "concat_sin_cos":
        out = jnp.concatenate([sin, cos, pad], axis=-1)
    else:
        out = jnp.concatenate([cos, sin, pad], axis=-1)
    return out * jnp.asarray(p["scale"], dtype=compute)


def fairseq(tokens: np.ndarray, params: Mapping[str, Any], compute: Any) -> tuple[Any, Any]:
    """fairseq rows (B, T) and embedding (B, T, dim)."""
    ids, pad, past = jnp.asarray(tokens), int(params["padding_idx"]), int(params["past_length"])
    if past:
        rows = jnp.full(ids.shape, pad + past + 1)
    else:
        real = (ids != pad).astype(ids.dtype)
        rows = jnp.cumsum(real, axis=1) * real + pad
    p = {"dim": params["dim"], "base": params["base"], "ladder": "t2t", "layout": "concat_sin_cos",
         "odd_width": "zero_pad_last", "scale": 1.0}
    emb = table(np.asarray(rows), p, compute) * (rows != pad).astype(compute)[..., None]
    return rows, emb


def grid(ys: np.ndarray, xs: np.ndarray, params: Mapping[str, Any], compute: Any) -> Any:
    """2-D sin-cos encodings (*ys.shape, dim)."""
    w = _frequencies(int(params["dim"]) // 2, params["base"], params["ladder"], compute)  # (D/4,)
    y = jnp.asarray(ys).astype(compute)[..., None] * w
    x = jnp.asarray(xs).astype(compute)[..., None] * w
    a, b = (x, y) if params["axis_order"] == "x_first" else (y, x)
    if params["block_layout"] == "sin_cos":
        return jnp.concatenate([jnp.sin(a), jnp.cos(a), jnp.sin(b), jnp.cos(b)], axis=-1)
    if params["block_layout"] == "sin_sin_cos_cos":
        return jnp.concatenate([jnp.sin(a), jnp.sin(b), jnp.cos(a), jnp.cos(b)], axis=-1)
    shape = a.shape[:-1] + (2 * a.shape[-1],)
    return jnp.concatenate([jnp.stack([jnp.sin(a), jnp.cos(a)], -1).reshape(shape),
                            jnp.stack([jnp.sin(b), jnp.cos(b)], -1).reshape(shape)], axis=-1)


def _checked(value: Any, dtype: str) -> np.ndarray:
    """A JAX float array as NumPy, refusing one whose dtype is not the claimed one."""
    if value.dtype != DTYPES[dtype]:
        raise RuntimeError(f"JAX computed in {value.dtype}, the adapter claims {dtype} "
                           "(float64 needs jax_enable_x64)")
    array = np.asarray(value.astype(jnp.float32) if dtype == "bfloat16" else value)
    return array


def jax_port(dtype: str | None = None) -> Adapter:
    """The JAX port at ``dtype`` (default: float64 with x64 on, float32 without).

    Raises
    ------
    ValueError
        ``dtype="float64"`` while ``jax_enable_x64`` is off.
    """
    dtype = dtype or ("float64" if x64_enabled() else "float32")
    if dtype == "float64" and not x64_enabled():
        raise ValueError("jax-port: float64 needs jax_enable_x64 (JAX_ENABLE_X64=1 or "
                         "jax.config.update('jax_enable_x64', True)); without it JAX silently computes in float32")
    out = DTYPES[dtype]
    compute = jnp.float64 if dtype == "float64" else jnp.float32

    def run_table(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray]) -> np.ndarray:
        rows, p = validate_table(params, inputs)
        return _checked(table(rows, p, compute).astype(out), dtype)

    def run_fairseq(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        rows, emb = fairseq(validate_fairseq(params, inputs), params, compute)
        return np.asarray(rows), _checked(emb.astype(out), dtype)

    def run_grid(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray]) -> np.ndarray:
        ys, xs = validate_grid(params, inputs)
        return _checked(grid(ys, xs, params, compute).astype(out), dtype)

    def run_lookup(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray]) -> np.ndarray:
        weights, rows = validate_lookup(params, inputs)
        return _checked(jnp.take(jnp.asarray(weights, dtype=out), jnp.asarray(rows), axis=0, mode="clip"), dtype)

    ops = {"sinusoidal.table": run_table, "sinusoidal.fairseq": run_fairseq, "grid2d.sincos": run_grid,
           "learned.lookup": run_lookup}
    return Adapter("jax-port", f"jax {jax.__version__}", dtype, ops, {op: {} for op in ops},
                   {op: "jax.numpy port (conformance/adapters/jax_adapter.py)" for op in ops}, jax_port, tuple(DTYPES))


ADAPTER = jax_port
JAX = jax_port
