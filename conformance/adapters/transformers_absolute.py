"""Library adapters for the absolute position tables: transformers' and torch's own functions.

``DISTILBERT`` (``create_sinusoidal_embeddings``), ``MARIAN``
(``MarianSinusoidalPositionalEmbedding``), ``M2M100`` (``M2M100SinusoidalPositionalEmbedding``),
``WHISPER`` (``sinusoids``), ``VITMAE_2D`` (``build_2d_sinusoidal_position_embedding``),
``EMBEDDING`` (``torch.nn.Embedding``) and ``VIT_INTERPOLATE`` (ViT's
``interpolate_pos_encoding`` of a learned table). What each calls, the dtype it really computes
in and how the case is wired in: conformance/README.md ("PyTorch and transformers adapters").

Run::

    posenc-ref conformance conformance/adapters/transformers_absolute.py:WHISPER --dtype float64 \\
        --expectations conformance/adapters/torch_library.toml
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

if str(Path(__file__).resolve().parent) not in sys.path:  # the shared helpers live next to this file
    sys.path.insert(0, str(Path(__file__).resolve().parent))
import posenc_adapter_checks as checks  # noqa: E402
from posenc_adapter_shared import (  # noqa: E402
    Adapter,
    choice,
    integer,
    positions,
    require,
    validate_grid,
    validate_lookup,
    validate_table,
)
from torch_common import TORCH_DTYPES, _gather, _numpy, _SupportsAdapter, _transformers, _version, default_dtype  # noqa: E402

torch = require("torch", "torch")


def _distilbert(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray]) -> np.ndarray:
    rows, p = validate_table(params, inputs)
    create = _transformers("distilbert.modeling_distilbert").create_sinusoidal_embeddings
    n_pos = int(rows.max()) + 1
    out = torch.empty(n_pos, p["dim"], dtype=torch.float32)
    create(n_pos, p["dim"], out)
    return _numpy(_gather(out, rows))


def _marian(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray]) -> np.ndarray:
    rows, p = validate_table(params, inputs)
    module = _transformers("marian.modeling_marian").MarianSinusoidalPositionalEmbedding(int(rows.max()) + 1,
                                                                                         p["dim"])
    with torch.no_grad():
        module.weight.copy_(module.create_weight())  # what MarianPreTrainedModel._init_weights does
        out = module(None, position_ids=torch.from_numpy(rows))
    return _numpy(out)


def _m2m100(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    # create_position_ids_from_input_ids numbers every real token on from past_key_values_length:
    # cache_rule="m2m100" itself; under "fairseq" the rows agree wherever fairseq defines them (T == 1 with a cache)
    choice("cache_rule", params.get("cache_rule", "fairseq"), ("fairseq", "m2m100"))
    tokens = torch.from_numpy(positions("tokens", inputs["tokens"]))
    padding_idx, past = integer("padding_idx", params["padding_idx"], 0), integer("past_length",
                                                                                  params["past_length"], 0)
    cls = _transformers("m2m_100.modeling_m2m_100").M2M100SinusoidalPositionalEmbedding
    module = cls(tokens.shape[-1] + past, int(params["dim"]), padding_idx)
    embedding = module(tokens, None, past)  # positional: the keyword is past_key_values_length or cache_length
    rows = cls.create_position_ids_from_input_ids(tokens, padding_idx, past)
    return _numpy(rows), _numpy(embedding)


def _whisper(compute: Any) -> Any:
    def run(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray]) -> np.ndarray:
        rows, p = validate_table(params, inputs)
        sinusoids = _transformers("whisper.modeling_whisper").sinusoids
        with default_dtype(compute):  # sinusoids builds in the default dtype
            table = sinusoids(int(rows.max()) + 1, p["dim"], max_timescale=p["base"])
        if table.dtype != compute:
            raise RuntimeError(f"sinusoids returned {table.dtype}, expected {compute}")
        return _numpy(_gather(table, rows))
    return run


def _vitmae_2d(compute: Any) -> Any:
    def run(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray]) -> np.ndarray:
        ys, xs = validate_grid(params, inputs)
        build = _transformers("vit_mae.modeling_vit_mae").build_2d_sinusoidal_position_embedding
        dim, half = int(params["dim"]), int(params["dim"]) // 2
        by_y = build(int(ys.max()) + 1, 1, embed_dim=dim, temperature=params["base"], dtype=compute)  # row = y
        by_x = build(1, int(xs.max()) + 1, embed_dim=dim, temperature=params["base"], dtype=compute)  # row = x
        return _numpy(torch.cat([_gather(by_y, ys)[..., :half], _gather(by_x, xs)[..., half:]], dim=-1))
    return run


def _embedding(compute: Any) -> Any:
    def run(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray]) -> np.ndarray:
        table, rows = validate_lookup(params, inputs, check_rows=False)
        layer = torch.nn.Embedding.from_pretrained(torch.from_numpy(table).to(compute))
        with torch.no_grad():
            return _numpy(layer(torch.from_numpy(rows)))
    return run


_TABLE_ANY_POSITION = {"scale": (1.0,), "base": (10000.0,)}


def _library(name: str, op: str, call: str, dtype: str, dtypes: tuple[str, ...], fn: Any,
             caps: Mapping[str, tuple[Any, ...]]) -> Adapter:
    compute = TORCH_DTYPES[dtype]

    def make(d: str) -> Adapter:
        return _library(name, op, call, d, dtypes, fn, caps)
    return Adapter(name, _version(), dtype, {op: fn(compute)}, {op: caps}, {op: call}, make, dtypes)


def _fixed(fn: Any) -> Any:
    """An op function that does not depend on the compute dtype."""
    return lambda compute: fn


def distilbert() -> Adapter:
    return _library("transformers-distilbert", "sinusoidal.table",
                    "transformers DistilBERT create_sinusoidal_embeddings", "float32", ("float32",),
                    _fixed(_distilbert),
                    {"ladder": ("paper",), "layout": ("interleaved",), "odd_width": ("error", "sin_gets_extra"),
                     **_TABLE_ANY_POSITION})


def marian() -> Adapter:
    return _library("transformers-marian", "sinusoidal.table",
                    "transformers MarianSinusoidalPositionalEmbedding.create_weight + forward", "float32",
                    ("float32",), _fixed(_marian),
                    {"ladder": ("paper",), "layout": ("concat_sin_cos",), "odd_width": ("error", "sin_gets_extra"),
                     **_TABLE_ANY_POSITION})


def m2m100() -> Adapter:
    return _library("transformers-m2m100", "sinusoidal.fairseq",
                    "transformers M2M100SinusoidalPositionalEmbedding.forward + create_position_ids_from_input_ids "
                    "(past_key_values_length = past_length: cache_rule='m2m100')",
                    "float32", ("float32",), _fixed(_m2m100), {"base": (10000.0,)})


def whisper(dtype: str = "float64") -> Adapter:
    return _library("transformers-whisper", "sinusoidal.table", "transformers Whisper sinusoids", dtype,
                    ("float64", "float32"), _whisper,
                    {"ladder": ("t2t",), "layout": ("concat_sin_cos",), "odd_width": ("error",), "scale": (1.0,)})


def vitmae_2d(dtype: str = "float64") -> Adapter:
    return _library("transformers-vit-mae-2d", "grid2d.sincos",
                    "transformers ViT-MAE build_2d_sinusoidal_position_embedding", dtype, ("float64", "float32"),
                    _vitmae_2d, {"axis_order": ("y_first",), "block_layout": ("sin_cos",), "ladder": ("paper",)})


def embedding(dtype: str = "float64") -> Adapter:
    return _library("torch-nn-embedding", "learned.lookup", "torch.nn.Embedding.from_pretrained(table)(rows)", dtype,
                    tuple(TORCH_DTYPES), _embedding, {"out_of_range": ("error",)})


VIT_RESAMPLE = {"kernel": "bicubic", "cubic_a": -0.75, "antialias": "off", "coordinates": "half_pixel",
                "size_from": "size", "num_prefix_tokens": 1}


"""The ``resample.grid_2d`` settings ViT's ``interpolate_pos_encoding`` hard-codes (one CLS row, bicubic
``align_corners=False`` to a size, no antialias)."""


def _vit_supports(op: str, params: Mapping[str, Any]) -> bool | str:
    if op != "resample.grid_2d":
        return f"{op} not supported"
    fixed = {name: params.get(name) for name in VIT_RESAMPLE if params.get(name) != VIT_RESAMPLE[name]}
    if fixed:
        return f"ViT interpolate_pos_encoding fixes {VIT_RESAMPLE}; the case has {fixed}"
    if params.get("grid_height") != params.get("grid_width"):
        return "ViT interpolate_pos_encoding reads a square source grid (sqrt of the patch count)"
    return True


def _vit_interpolate(compute: Any) -> Any:
    def grid_2d(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray]) -> np.ndarray:
        from transformers import ViTConfig
        from transformers.models.vit.modeling_vit import ViTEmbeddings

        a = checks.resample_grid_2d(params, inputs)
        side, dim = a["grid"].shape[0], a["grid"].shape[2]
        new_h, new_w = a["height"]["m"], a["width"]["m"]
        # patch_size 1: an image of side n has n x n patches, and height // patch_size is the new grid height
        config = ViTConfig(hidden_size=dim, image_size=side, patch_size=1, num_attention_heads=1)
        module = ViTEmbeddings(config).to(compute)
        with torch.no_grad():
            module.position_embeddings.copy_(torch.from_numpy(np.asarray(inputs["table"], dtype=np.float64))[None])
            embeddings = torch.zeros(1, 1 + new_h * new_w, dim, dtype=compute)
            return _numpy(module.interpolate_pos_encoding(embeddings, new_h, new_w)[0])

    return grid_2d


def vit_interpolate(dtype: str = "float64") -> Adapter:
    call = ("transformers ViTEmbeddings.interpolate_pos_encoding (position_embeddings = the case's table, "
            "patch_size 1, height/width = the new grid)")
    ops = {"resample.grid_2d": _vit_interpolate(TORCH_DTYPES[dtype])}
    return _SupportsAdapter("transformers-vit-interpolate", _version(), dtype, ops, {"resample.grid_2d": {}},
                            {"resample.grid_2d": call}, vit_interpolate, ("float64", "float32"),
                            supports=_vit_supports)


DISTILBERT = distilbert
MARIAN = marian
M2M100 = m2m100
WHISPER = whisper
VITMAE_2D = vitmae_2d
EMBEDDING = embedding
VIT_INTERPOLATE = vit_interpolate
