"""Library adapters for torch's own functions: ``SDPA``
(``torch.nn.functional.scaled_dot_product_attention``), ``INTERPOLATE``
(``torch.nn.functional.interpolate`` for ``resample.*``) and ``TORCH_LAYER`` (``torch.nn.Embedding``,
``torch.nn.Linear`` and SDPA for ``attention.pipeline``). How a case becomes their arguments:
conformance/README.md ("PyTorch and transformers adapters").

Run::

    posenc-ref conformance conformance/adapters/torch_functions.py:SDPA --dtype bfloat16 \\
        --expectations conformance/adapters/torch_library.toml
"""

from __future__ import annotations

import math
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

if str(Path(__file__).resolve().parent) not in sys.path:  # the shared helpers live next to this file
    sys.path.insert(0, str(Path(__file__).resolve().parent))
import posenc_adapter_attention_checks as attention_checks  # noqa: E402
from posenc_adapter_shared import Adapter, choice, integer, invalid, invalid_shape, require
from torch_common import TORCH_DTYPES, _finite_float, _numpy, _SupportsAdapter  # noqa: E402

torch = require("torch", "torch")


def _interpolate_mode(params: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    """``F.interpolate`` mode and keywords for the case's kernel/antialias/coordinates."""
    kernel = choice("kernel", params["kernel"], ("bicubic", "bilinear"))
    antialias = choice("antialias", params["antialias"], ("off", "on")) == "on"
    aligned = choice("coordinates", params["coordinates"], ("half_pixel", "align_corners")) == "align_corners"
    size_from = choice("size_from", params["size_from"], ("size", "scale_factor"))
    offset = _finite_float("scale_offset", params["scale_offset"])
    if size_from == "size" and offset != 0:
        raise invalid(f"scale_offset applies to size_from='scale_factor' only, got {offset}")
    return kernel, {"antialias": antialias, "align_corners": aligned}


def _interpolate(table: Any, sizes: tuple[int, ...], new: tuple[int, ...], params: Mapping[str, Any],
                 compute: Any) -> Any:
    """``(1, C, *sizes)`` -> ``F.interpolate`` to ``new`` (or by the DINO scale factors)."""
    mode, kwargs = _interpolate_mode(params)
    for size in new:
        integer("new size", size, 1)
    if params["size_from"] == "scale_factor":  # a 1-D table's dummy height axis keeps factor 1
        factors = tuple(1.0 if n == m == 1 else (m + float(params["scale_offset"])) / n for m, n in zip(new, sizes))
        kwargs["scale_factor"] = factors
    else:
        kwargs["size"] = new
    return torch.nn.functional.interpolate(table.to(compute), mode=mode, **kwargs)


def _resample_supports(op: str, params: Mapping[str, Any]) -> bool | str:
    if op not in ("resample.weights", "resample.table_1d", "resample.grid_2d"):
        return f"{op} not supported"
    if params.get("antialias") == "on" and params.get("coordinates") == "align_corners":
        return True  # invalid whatever a is: run it, so the library's answer is judged
    if params.get("kernel") == "bicubic" and params.get("antialias") in ("off", "on"):
        expected = -0.5 if params["antialias"] == "on" else -0.75
        if params.get("cubic_a") != expected:
            return f"F.interpolate bicubic uses a = {expected} with antialias={params['antialias'] == 'on'}"
    return True


def _resample(compute: Any) -> dict[str, Any]:
    def weights(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray]) -> np.ndarray:
        n = integer("in_size", params["in_size"], 1)
        m = integer("new_size", params["new_size"], 1)
        # channel c = unit impulse at sample c, along the width: (1, n, 1, n) -> (1, n, 1, m) holds W^T
        eye = torch.eye(n, dtype=torch.float64).reshape(1, n, 1, n)
        out = _interpolate(eye, (1, n), (1, m), params, compute)
        return _numpy(out[0, :, 0, :].T)

    def table_1d(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray]) -> np.ndarray:
        table = np.asarray(inputs["table"], dtype=np.float64)
        prefix = integer("num_prefix_tokens", params["num_prefix_tokens"], 0)
        m = integer("new_length", params["new_length"], 1)
        if table.ndim != 2 or table.shape[0] <= prefix:
            raise invalid_shape(f"table must be (prefix + n, D) with n >= 1, got shape {table.shape}")
        rows = torch.from_numpy(table[prefix:].T.copy()).reshape(1, table.shape[1], 1, -1)  # along the width
        out = _interpolate(rows, (1, rows.shape[3]), (1, m), params, compute)[0, :, 0, :].T
        return _numpy(torch.cat([torch.from_numpy(table[:prefix]).to(compute), out], dim=0))

    def grid_2d(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray]) -> np.ndarray:
        table = np.asarray(inputs["table"], dtype=np.float64)
        prefix = integer("num_prefix_tokens", params["num_prefix_tokens"], 0)
        h, w = integer("grid_height", params["grid_height"], 1), integer("grid_width", params["grid_width"], 1)
        new = (integer("new_height", params["new_height"], 1), integer("new_width", params["new_width"], 1))
        if table.ndim != 2 or table.shape[0] != prefix + h * w:
            raise invalid_shape(f"table must be (prefix + H*W, D) = ({prefix + h * w}, D), got shape {table.shape}")
        grid = torch.from_numpy(table[prefix:].T.copy()).reshape(1, table.shape[1], h, w)
        out = _interpolate(grid, (h, w), new, params, compute)  # (1, D, H', W')
        rows = out[0].reshape(table.shape[1], -1).T
        return _numpy(torch.cat([torch.from_numpy(table[:prefix]).to(compute), rows], dim=0))

    return {"resample.weights": weights, "resample.table_1d": table_1d, "resample.grid_2d": grid_2d}


def _sdpa_weights_and_output(q: Any, k: Any, v: Any, **kwargs: Any) -> tuple[Any, Any]:
    """SDPA's output, and its weights as SDPA applied to identity values (weights @ I = weights)."""
    sdpa = torch.nn.functional.scaled_dot_product_attention
    eye = torch.eye(k.shape[-2], dtype=k.dtype).expand(k.shape[0], k.shape[1], -1, -1)
    return sdpa(q, k, v, **kwargs), sdpa(q, k, eye, **kwargs)


def _sdpa(compute: Any) -> Any:
    def run(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        q, k, v = (np.asarray(inputs[n], dtype=np.float64) for n in ("q", "k", "v"))
        if q.ndim != 4 or k.ndim != 4 or v.ndim != 4:
            raise invalid_shape(f"q, k, v must be rank 4, got {q.shape}, {k.shape}, {v.shape}")
        b, h, tq, d = q.shape
        if k.shape[0] != b or k.shape[-1] != d or v.shape[:3] != k.shape[:3] or h % k.shape[1]:
            raise invalid_shape(f"q {q.shape}, k {k.shape}, v {v.shape}: need equal B and D and H % Hkv == 0")
        tk = k.shape[2]
        alignment = choice("alignment", params["alignment"], ("top_left", "bottom_right"))
        choice("fully_masked", params["fully_masked"], ("zeros", "nan", "uniform", "error"))
        if params["window"] is not None:
            integer("window", params["window"], 1)
        mask, padding, bias = inputs["mask"], np.asarray(inputs["key_padding_mask"]), np.asarray(inputs["bias"])
        if padding.shape[-1] != tk:
            raise invalid_shape(f"key_padding_mask must have length Tk={tk}, got {padding.shape}")
        try:
            np.broadcast_shapes(np.shape(mask), (b, h, tq, tk))
            np.broadcast_shapes(bias.shape, (b, h, tq, tk))
        except ValueError as exc:
            raise invalid_shape(f"mask and bias must broadcast to {(b, h, tq, tk)}: {exc}") from exc
        # one additive attn_mask: SDPA adds it after the scale, as the reference adds its bias
        allowed = np.broadcast_to(padding[:, None, None, :], (b, 1, tq, tk)).astype(bool)
        additive = np.broadcast_to(bias, (b, h, tq, tk)).astype(np.float64)
        mask = np.asarray(mask)
        if mask.dtype == np.bool_:
            allowed = allowed & mask
        else:
            additive = additive + mask
        # SDPA's scale is the whole softmax scale: the reference's scale times softmax_multiplier
        base_scale = 1.0 / math.sqrt(d) if params["scale"] is None else float(params["scale"])
        kwargs: dict[str, Any] = {"scale": base_scale * float(params.get("softmax_multiplier", 1.0)),
                                  "enable_gqa": h != k.shape[1]}
        neutral = bool(allowed.all()) and not additive.any()
        if params["causal"] and not neutral:
            allowed = allowed & np.tril(np.ones((tq, tk), dtype=bool), k=tk - tq if alignment == "bottom_right" else 0)
            neutral = False
        if params["fully_masked"] == "error" and not np.broadcast_to(allowed, (b, h, tq, tk)).any(-1).all():
            raise invalid("a query row has every key masked")
        if params["causal"] and neutral and alignment == "top_left":
            kwargs["is_causal"] = True
        elif params["causal"] and neutral and tq <= tk:
            kwargs["attn_mask"] = require("torch.nn.attention.bias", "torch").causal_lower_right(tq, tk)
        elif params["causal"] and neutral:  # causal_lower_right warns of NaN rows when Tq > Tk: pass the mask
            kwargs["attn_mask"] = torch.from_numpy(np.tril(np.ones((tq, tk), dtype=bool), k=tk - tq))
        elif not neutral:
            kwargs["attn_mask"] = torch.from_numpy(np.where(allowed, additive, -np.inf)).to(compute)
        tensors = (torch.from_numpy(a).to(compute) for a in (q, k, v))
        with torch.no_grad():
            output, weights = _sdpa_weights_and_output(*tensors, **kwargs)
        return _numpy(output), _numpy(weights)
    return run


def _sdpa_supports(op: str, params: Mapping[str, Any]) -> bool | str:
    if params.get("window") is not None and params["window"] != 0:
        return "SDPA has no sliding-window argument (a band mask would be the adapter's, not SDPA's)"
    if params.get("fully_masked") in ("nan", "uniform"):
        return "SDPA (torch >= 2.5) gives a fully masked row zeros; 'nan' and 'uniform' are other libraries'"
    return True


def interpolate(dtype: str = "float64") -> Adapter:
    call = "torch.nn.functional.interpolate (bicubic/bilinear, antialias, align_corners, size or scale_factor)"
    ops = _resample(TORCH_DTYPES[dtype])
    return _SupportsAdapter("torch-interpolate", f"torch {torch.__version__}", dtype, ops, {op: {} for op in ops},
                            {op: call for op in ops}, interpolate, ("float64", "float32"), supports=_resample_supports)


def sdpa(dtype: str = "float64") -> Adapter:
    calls = {"attention": "torch.nn.functional.scaled_dot_product_attention (is_causal, "
                          "torch.nn.attention.bias.causal_lower_right, attn_mask, scale, enable_gqa); "
                          "weights as SDPA on identity values"}
    ops = {"attention": _sdpa(TORCH_DTYPES[dtype])}
    return _SupportsAdapter("torch-sdpa", f"torch {torch.__version__}", dtype, ops, {"attention": {}}, calls, sdpa,
                            ("float64", "float32", "float16", "bfloat16"),
                            supports=_sdpa_supports)


def _torch_layer(compute: Any) -> Any:
    def run(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray]) -> np.ndarray:
        a = attention_checks.attention_pipeline(params, inputs)
        b, t = a["tokens"].shape
        heads, kv_heads, d = a["heads"], a["kv_heads"], a["head_dim"]

        def linear(name: str) -> Any:  # torch.nn.Linear(bias=False) holding the case's (in, out) matrix
            weight = torch.from_numpy(np.ascontiguousarray(a[name].T)).to(compute)
            layer = torch.nn.Linear(weight.shape[1], weight.shape[0], bias=False, dtype=compute)
            layer.weight.copy_(weight)
            return layer

        with torch.no_grad():
            x = torch.nn.Embedding.from_pretrained(torch.from_numpy(a["embedding"]).to(compute))(
                torch.from_numpy(a["tokens"]))
            pe = torch.from_numpy(a["pe"]).to(compute)
            if a["placement"] == "input":
                x = x + pe
            q, k, v = (linear(w)(x).reshape(b, t, n, d).transpose(1, 2)
                       for w, n in (("w_q", heads), ("w_k", kv_heads), ("w_v", kv_heads)))
            out = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=a["causal"],
                                                                   enable_gqa=heads != kv_heads)
            y = linear("w_o")(out.transpose(1, 2).reshape(b, t, heads * d))
        return _numpy(y + pe if a["placement"] == "after_block" else y)
    return run


def torch_layer(dtype: str = "float64") -> Adapter:
    calls = {"attention.pipeline": "torch.nn.Embedding.from_pretrained, torch.nn.Linear (bias=False) projections, "
                                   "torch.nn.functional.scaled_dot_product_attention (is_causal, enable_gqa)"}
    return Adapter("torch-nn-layer", f"torch {torch.__version__}", dtype,
                   {"attention.pipeline": _torch_layer(TORCH_DTYPES[dtype])}, {"attention.pipeline": {}}, calls,
                   torch_layer, tuple(TORCH_DTYPES))


SDPA = sdpa
INTERPOLATE = interpolate
TORCH_LAYER = torch_layer
