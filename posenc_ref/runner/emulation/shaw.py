"""Low-precision emulations of the relative-position and resampling ops (calibration only).

Inputs are rounded to the compute dtype and every product, sum, sinusoid and interpolation
weight is computed in it, as a float32 PyTorch implementation does: ``q @ k.T`` and the
``(Tq, 2K+1)`` relative product for Shaw; the projected sinusoid and both bias terms for
Transformer-XL (its angles in the angle dtype); PyTorch's float32 ``upsample_*`` weight
arithmetic for resampling. Table rows and shifts come from the reference (integers, copies).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import numpy as np
from numpy.typing import NDArray

from posenc_ref import resample, shaw, transformer_xl
from posenc_ref.runner.emulation._common import Emulation, lowp_frequencies
from posenc_ref.sinusoidal import sinusoidal_frequencies

Inputs = Mapping[str, NDArray[Any]]


def _cast(inputs: Inputs, ct: type, *names: str) -> list[NDArray[Any]]:
    return [np.asarray(inputs[name]).astype(ct) for name in names]


def _index(params: Mapping[str, Any], inputs: Inputs) -> NDArray[np.int64]:
    return shaw.shaw_relative_index(inputs["q_positions"], inputs["k_positions"], **params)


def _shaw_index(params: Mapping[str, Any], inputs: Inputs, ct: type, at: type) -> dict[str, NDArray[Any]]:
    return {"index": _index(params, inputs)}


def _shaw_logits(params: Mapping[str, Any], inputs: Inputs, ct: type, at: type) -> dict[str, NDArray[Any]]:
    shaw.shaw_logits(*(inputs[n] for n in ("q", "k", "rel_keys", "q_positions", "k_positions")), **params)
    q, k, table = _cast(inputs, ct, "q", "k", "rel_keys")
    return {"logits": q @ k.T + np.take_along_axis(q @ table.T, _index(params, inputs), axis=1)}


def _shaw_output(params: Mapping[str, Any], inputs: Inputs, ct: type, at: type) -> dict[str, NDArray[Any]]:
    shaw.shaw_output(*(inputs[n] for n in ("weights", "v", "rel_values", "q_positions", "k_positions")), **params)
    alpha, v, table = _cast(inputs, ct, "weights", "v", "rel_values")
    index = _index(params, inputs)
    per_row: NDArray[Any] = np.zeros((alpha.shape[0], table.shape[0]), dtype=ct)
    np.add.at(per_row, (np.broadcast_to(np.arange(alpha.shape[0])[:, None], index.shape), index), alpha)
    return {"output": alpha @ v + per_row @ table}


def _xl_score(params: Mapping[str, Any], inputs: Inputs, ct: type, at: type) -> dict[str, NDArray[Any]]:
    names = ("q", "k", "u", "v", "w_r", "q_positions", "k_positions")
    transformer_xl.xl_score(*(inputs[n] for n in names), **params)
    q, k, u, v, w_r = _cast(inputs, ct, *names[:5])
    base = float(params["base"])
    distance = np.asarray(inputs["q_positions"])[:, None] - np.asarray(inputs["k_positions"])[None, :]
    if int(params["clamp_len"]) > 0:
        distance = np.clip(distance, -params["clamp_len"], params["clamp_len"])
    distinct, inverse = np.unique(distance, return_inverse=True)
    w: NDArray[Any] = lowp_frequencies(sinusoidal_frequencies(dim=w_r.shape[0], base=base), base, ct).astype(at)
    theta = distinct.astype(at)[:, None] * w
    rows: NDArray[Any] = np.concatenate([np.sin(theta), np.cos(theta)], axis=-1).astype(ct)
    position = np.take_along_axis((q + v) @ (rows @ w_r).T, inverse.reshape(distance.shape), axis=1)
    return {"score": (q + u) @ k.T + position}


def _rel_shift(params: Mapping[str, Any], inputs: Inputs, ct: type, at: type) -> dict[str, NDArray[Any]]:
    shifted, valid = transformer_xl.rel_shift(inputs["x"], **params)
    return {"shifted": shifted.astype(ct), "valid": valid}


# --- resampling: PyTorch's float32 weight arithmetic ---------------------------------------------


def _cubic32(x: NDArray[Any], a: Any) -> NDArray[Any]:
    ax = np.abs(x)
    inner = ((a + 2) * ax - (a + 3)) * ax * ax + 1
    outer = ((a * ax - 5 * a) * ax + 8 * a) * ax - 4 * a
    result: NDArray[Any] = np.where(ax <= 1, inner, np.where(ax < 2, outer, 0)).astype(ax.dtype)
    return result


def _axis32(n: int, new: int, params: Mapping[str, Any], ct: type) -> NDArray[Any]:
    mode = {key: params[key] for key in ("kernel", "cubic_a", "antialias", "coordinates", "size_from", "scale_offset")}
    m, scale64 = resample.output_size_and_scale(in_size=n, new_size=new, **mode)
    scale = ct(scale64)
    a = ct(params["cubic_a"])
    bicubic = params["kernel"] == "bicubic"

    def kernel(x: NDArray[Any]) -> NDArray[Any]:
        triangle: NDArray[Any] = np.maximum(ct(0), ct(1) - np.abs(x))
        return _cubic32(x, a) if bicubic else triangle

    out: NDArray[Any] = np.arange(m).astype(ct)
    matrix: NDArray[Any] = np.zeros((m, n), dtype=ct)
    if params["antialias"] == "on":
        stretch = max(scale, ct(1))
        support = ct(2 if bicubic else 1) * stretch
        centre = scale * (out + ct(0.5))
        lo = np.maximum(np.trunc(centre - support + ct(0.5)), 0)
        hi = np.minimum(np.trunc(centre + support + ct(0.5)), n)
        k: NDArray[Any] = np.arange(n).astype(ct)[None, :]
        inv = ct(1) / stretch if scale >= 1 else ct(1)
        raw = kernel((k - centre[:, None] + ct(0.5)) * inv) * ((k >= lo[:, None]) & (k < hi[:, None]))
        total = raw.sum(axis=1, keepdims=True, dtype=ct)
        result: NDArray[Any] = (raw / np.where(total != 0, total, ct(1))).astype(ct)
        return result
    source = scale * out if params["coordinates"] == "align_corners" else scale * (out + ct(0.5)) - ct(0.5)
    offsets = np.arange(0, 2) if not bicubic else np.arange(-1, 3)
    if not bicubic:
        source = np.maximum(source, ct(0))
    first = np.floor(source)
    weights = kernel((source - first)[:, None] - offsets.astype(ct)[None, :])
    index = np.clip(first.astype(np.int64)[:, None] + offsets[None, :], 0, n - 1)
    np.add.at(matrix, (np.broadcast_to(np.arange(m)[:, None], index.shape), index), weights)
    return matrix


def _resample_weights(params: Mapping[str, Any], inputs: Inputs, ct: type, at: type) -> dict[str, NDArray[Any]]:
    resample.resample_weights(**params)
    return {"weights": _axis32(int(params["in_size"]), int(params["new_size"]), params, ct)}


def _resample_1d(params: Mapping[str, Any], inputs: Inputs, ct: type, at: type) -> dict[str, NDArray[Any]]:
    resample.resample_table_1d(inputs["table"], **params)
    (table,) = _cast(inputs, ct, "table")
    prefix = int(params["num_prefix_tokens"])
    matrix = _axis32(table.shape[0] - prefix, int(params["new_length"]), params, ct)
    return {"table": np.concatenate([table[:prefix], matrix @ table[prefix:]])}


def _resample_2d(params: Mapping[str, Any], inputs: Inputs, ct: type, at: type) -> dict[str, NDArray[Any]]:
    resample.resample_grid_2d(inputs["table"], **params)
    (table,) = _cast(inputs, ct, "table")
    prefix, height, width = int(params["num_prefix_tokens"]), int(params["grid_height"]), int(params["grid_width"])
    w_h = _axis32(height, int(params["new_height"]), params, ct)
    w_w = _axis32(width, int(params["new_width"]), params, ct)
    grid = table[prefix:].reshape(height, width, -1)
    along_w = np.einsum("hwd,qw->hqd", grid, w_w)  # width first, then height, as a separable kernel does
    resized = np.einsum("ph,hqd->pqd", w_h, along_w)
    return {"table": np.concatenate([table[:prefix], resized.reshape(-1, table.shape[1])])}


EMULATIONS: Final[dict[str, Emulation]] = {
    "shaw.index": _shaw_index,
    "shaw.logits": _shaw_logits,
    "shaw.output": _shaw_output,
    "transformer_xl.score": _xl_score,
    "transformer_xl.rel_shift": _rel_shift,
    "resample.weights": _resample_weights,
    "resample.table_1d": _resample_1d,
    "resample.grid_2d": _resample_2d,
}
