"""PyTorch adapters: transformers' own functions where they exist, and a torch port of every op.

Library adapters (each runs the named third-party function; nothing is re-implemented):

==================== ===================== ========================================================= =================
adapter              op                    library function called                                   computes in
==================== ===================== ========================================================= =================
``DISTILBERT``       sinusoidal.table      ``transformers.models.distilbert.modeling_distilbert``     float32 [1]_
                                           ``.create_sinusoidal_embeddings``
``MARIAN``           sinusoidal.table      ``transformers.models.marian.modeling_marian``             float32 [1]_
                                           ``.MarianSinusoidalPositionalEmbedding.create_weight``
                                           then its ``forward(position_ids=...)``
``M2M100``           sinusoidal.fairseq    ``transformers.models.m2m_100.modeling_m2m_100``           float32 [2]_
                                           ``.M2M100SinusoidalPositionalEmbedding.forward(input_ids)``
                                           and its ``create_position_ids_from_input_ids``
``WHISPER``          sinusoidal.table      ``transformers.models.whisper.modeling_whisper.sinusoids`` float64, float32
``VITMAE_2D``        grid2d.sincos         ``transformers.models.vit_mae.modeling_vit_mae``           float64, float32
                                           ``.build_2d_sinusoidal_position_embedding``
``EMBEDDING``        learned.lookup        ``torch.nn.Embedding.from_pretrained(...)(rows)``         float64, float32,
                                                                                                     float16, bfloat16
==================== ===================== ========================================================= =================

.. [1] The table is built in float64 NumPy and copied through ``torch.FloatTensor``: every
   value is rounded to float32 whatever the weight's dtype, so the adapter says float32.
.. [2] ``get_embedding`` computes in float32 (``.float()``) and casts to the default dtype
   afterwards; with a float64 default the values are still float32 values, so float64 is not
   offered.

The library functions build a table for rows ``0..n-1`` (or a grid from ``arange``); the
adapter asks for ``n = max(row) + 1`` rows and gathers the requested rows with torch indexing.
For the 2-D helper it builds a ``H x 1`` and a ``1 x W`` grid and takes the y half of one and
the x half of the other (the helper's halves depend on one axis each), so arbitrary coordinates
are covered. Preconditions the libraries do not check are checked by the adapters' wrapper
(:mod:`posenc_adapter_shared`); ``M2M100`` and ``EMBEDDING`` get no wrapper checks beyond
integer input, so their own behaviour on bad input is what the corpus sees (see
``torch_library.toml``).

Port adapter ``TORCH``: a torch port of every current op and convention (float64, float32;
float16 and bfloat16 computed in float32 and rounded once at the end, as frameworks do).

Run::

    posenc-ref conformance conformance/adapters/torch_adapter.py:WHISPER --dtype float64 \\
        --expectations conformance/adapters/torch_library.toml
    posenc-ref conformance conformance/adapters/torch_adapter.py:TORCH --dtype bfloat16

(the torch port passes every case and takes no expectations file).

Needs ``pip install 'posenc-ref[torch]'`` (torch and transformers).
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np

if str(Path(__file__).resolve().parent) not in sys.path:  # the shared helpers live next to this file
    sys.path.insert(0, str(Path(__file__).resolve().parent))
from posenc_adapter_shared import (  # noqa: E402
    Adapter,
    integer,
    positions,
    require,
    validate_fairseq,
    validate_grid,
    validate_lookup,
    validate_table,
)

torch = require("torch", "torch")

TORCH_DTYPES = {"float64": torch.float64, "float32": torch.float32, "float16": torch.float16,
                "bfloat16": torch.bfloat16}


def _numpy(tensor: Any) -> np.ndarray:
    """A tensor as NumPy; bfloat16 goes through float32 (exact)."""
    tensor = tensor.detach()
    if tensor.dtype == torch.bfloat16:
        tensor = tensor.to(torch.float32)
    return tensor.numpy()


@contextlib.contextmanager
def default_dtype(dtype: Any) -> Iterator[None]:
    """``torch.set_default_dtype`` for the duration of a call."""
    previous = torch.get_default_dtype()
    torch.set_default_dtype(dtype)
    try:
        yield
    finally:
        torch.set_default_dtype(previous)


def _gather(table: Any, rows: np.ndarray) -> Any:
    """Rows of a (N, D) table for int64 ``rows`` of any shape: (*rows.shape, D)."""
    return table[torch.from_numpy(rows)]


# ----------------------------------------------------------------------------- transformers ---

def _transformers(module: str) -> Any:
    return require(f"transformers.models.{module}", "torch")


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


def _version() -> str:
    transformers = require("transformers", "torch")
    return f"torch {torch.__version__}, transformers {transformers.__version__}"


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
                    "transformers M2M100SinusoidalPositionalEmbedding.forward + create_position_ids_from_input_ids",
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


# ------------------------------------------------------------------------------- torch port ---

def _frequencies(width: int, base: float, ladder: str, compute: Any) -> Any:
    """``base ** -e``: e = 2k/width (paper) or k/max(n-1, 1) (t2t), n = ceil(width/2) (n,)."""
    n = (width + 1) // 2
    k = torch.arange(n, dtype=compute)
    exponent = 2 * k / width if ladder == "paper" else k / max(n - 1, 1)
    return torch.pow(torch.tensor(base, dtype=compute), -exponent)


def port_table(rows: np.ndarray, p: Mapping[str, Any], compute: Any) -> Any:
    """The sinusoidal table in torch, (*rows.shape, dim)."""
    dim, odd = int(p["dim"]), int(p["dim"]) % 2 == 1
    width = dim - 1 if odd and p["odd_width"] == "zero_pad_last" else dim
    angles = torch.from_numpy(rows).to(compute)[..., None] * _frequencies(width, p["base"], p["ladder"], compute)
    n = angles.shape[-1]
    n_cos = n - 1 if odd and p["odd_width"] == "sin_gets_extra" else n
    sin, cos = torch.sin(angles), torch.cos(angles[..., :n_cos])
    pad = torch.zeros(angles.shape[:-1] + (dim - n - n_cos,), dtype=compute)
    if p["layout"] == "interleaved":
        pairs = torch.stack([sin[..., :n_cos], cos], dim=-1).flatten(-2)
        table = torch.cat([pairs, sin[..., n_cos:], pad], dim=-1)
    elif p["layout"] == "concat_sin_cos":
        table = torch.cat([sin, cos, pad], dim=-1)
    else:
        table = torch.cat([cos, sin, pad], dim=-1)
    return table * float(p["scale"])


def port_fairseq(tokens: np.ndarray, params: Mapping[str, Any], compute: Any) -> tuple[Any, Any]:
    """fairseq rows (B, T) and embedding (B, T, dim)."""
    ids, pad = torch.from_numpy(tokens), int(params["padding_idx"])
    past = int(params["past_length"])
    if past:
        rows = torch.full_like(ids, pad + past + 1)
    else:
        real = (ids != pad).to(torch.int64)
        rows = torch.cumsum(real, dim=1) * real + pad
    p = {"dim": params["dim"], "base": params["base"], "ladder": "t2t", "layout": "concat_sin_cos",
         "odd_width": "zero_pad_last", "scale": 1.0}
    table = port_table(rows.numpy(), p, compute)
    return rows, table * (rows != pad).to(compute)[..., None]


def port_grid(ys: np.ndarray, xs: np.ndarray, params: Mapping[str, Any], compute: Any) -> Any:
    """2-D sin-cos encodings (*ys.shape, dim)."""
    w = _frequencies(int(params["dim"]) // 2, params["base"], params["ladder"], compute)  # (D/4,)
    y = torch.from_numpy(ys).to(compute)[..., None] * w
    x = torch.from_numpy(xs).to(compute)[..., None] * w
    a, b = (x, y) if params["axis_order"] == "x_first" else (y, x)
    if params["block_layout"] == "sin_cos":
        return torch.cat([a.sin(), a.cos(), b.sin(), b.cos()], dim=-1)
    if params["block_layout"] == "sin_sin_cos_cos":
        return torch.cat([a.sin(), b.sin(), a.cos(), b.cos()], dim=-1)
    return torch.cat([torch.stack([a.sin(), a.cos()], -1).flatten(-2),
                      torch.stack([b.sin(), b.cos()], -1).flatten(-2)], dim=-1)


def torch_port(dtype: str = "float64") -> Adapter:
    """The torch port of every op; float16/bfloat16 computed in float32, rounded at the end."""
    out = TORCH_DTYPES[dtype]
    compute = torch.float64 if dtype == "float64" else torch.float32

    def table(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray]) -> np.ndarray:
        rows, p = validate_table(params, inputs)
        return _numpy(port_table(rows, p, compute).to(out))

    def fairseq(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        rows, emb = port_fairseq(validate_fairseq(params, inputs), params, compute)
        return _numpy(rows), _numpy(emb.to(out))

    def grid(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray]) -> np.ndarray:
        ys, xs = validate_grid(params, inputs)
        return _numpy(port_grid(ys, xs, params, compute).to(out))

    def lookup(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray]) -> np.ndarray:
        weights, rows = validate_lookup(params, inputs)
        return _numpy(torch.from_numpy(weights).to(out)[torch.from_numpy(rows)])

    ops = {"sinusoidal.table": table, "sinusoidal.fairseq": fairseq, "grid2d.sincos": grid, "learned.lookup": lookup}
    return Adapter("torch-port", f"torch {torch.__version__}", dtype, ops, {op: {} for op in ops},
                   {op: "torch port (conformance/adapters/torch_adapter.py)" for op in ops}, torch_port,
                   tuple(TORCH_DTYPES))


DISTILBERT = distilbert
MARIAN = marian
M2M100 = m2m100
WHISPER = whisper
VITMAE_2D = vitmae_2d
EMBEDDING = embedding
TORCH = torch_port
ADAPTER = torch_port
