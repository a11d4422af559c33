"""What the PyTorch and transformers adapters share: the torch import, dtypes and tensor
conversion, the transformers module loader and version string, and the wrapper checks several
adapters (library and port alike) run before calling torch: number parameters, the ``rope.apply``
inputs, the ALiBi, T5 and DeBERTa conventions.

The adapters themselves live in :mod:`transformers_absolute`, :mod:`transformers_rope`,
:mod:`transformers_relative`, :mod:`transformers_attention`, :mod:`torch_functions` (transformers'
and torch's own functions) and :mod:`torch_port` (a torch port of the ops); conformance/README.md
("PyTorch and transformers adapters") says what each calls and how a case is wired into it.

Needs ``pip install 'posenc-ref[torch]'`` (torch and transformers).
"""

from __future__ import annotations

import contextlib
import sys
import warnings
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np

if str(Path(__file__).resolve().parent) not in sys.path:  # the shared helpers live next to this file
    sys.path.insert(0, str(Path(__file__).resolve().parent))
import posenc_adapter_checks as checks  # noqa: E402
from posenc_adapter_shared import (
    Adapter,
    base_value,
    choice,
    integer,
    invalid,
    invalid_shape,
    positions,
    require,
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


def _transformers(module: str) -> Any:
    return require(f"transformers.models.{module}", "torch")


def _version() -> str:
    transformers = require("transformers", "torch")
    return f"torch {torch.__version__}, transformers {transformers.__version__}"


def _finite_float(name: str, value: Any, *, positive: bool = False, minimum: float | None = None) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise invalid(f"{name} must be a number, got {value!r}")
    number = float(value)
    if not np.isfinite(number) or (positive and number <= 0) or (minimum is not None and number < minimum):
        bound = "> 0" if positive else f">= {minimum}" if minimum is not None else "finite"
        raise invalid(f"{name} must be finite and {bound}, got {value!r}")
    return number


def _llama_config(rope_parameters: Mapping[str, Any], head_dim: int, max_position: int) -> Any:
    config_cls = require("transformers", "torch").LlamaConfig
    return config_cls(hidden_size=head_dim, num_attention_heads=1, num_key_value_heads=1, head_dim=head_dim,
                      max_position_embeddings=max_position, rope_parameters=dict(rope_parameters))


def _rope_x(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray],
            layouts: tuple[str, ...]) -> tuple[np.ndarray, np.ndarray, int]:
    """``rope.apply``'s wrapper checks: x (B, H, T, D) as BHTD, positions (B, T), rotary_dim."""
    choice("layout", params["layout"], ("half", "interleaved", "interleaved_to_half"))
    x_layout = choice("x_layout", params["x_layout"], ("BHTD", "BTHD"))
    choice("partial", params["partial"], ("prefix", "proportional"))
    _finite_float("attention_factor", params["attention_factor"], positive=True)
    base_value(params["base"])
    x = np.asarray(inputs["x"], dtype=np.float64)
    if x.ndim != 4:
        raise invalid_shape(f"x must be (B, H, T, D) or (B, T, H, D), got shape {x.shape}")
    if not np.all(np.isfinite(x)):
        raise invalid("x must be finite")
    if x_layout == "BTHD":
        x = x.transpose(0, 2, 1, 3)
    d = x.shape[-1]
    if d % 2:
        raise invalid(f"the head width must be even, got {d}")
    rotary = d if params.get("rotary_dim") is None else integer("rotary_dim", params["rotary_dim"], 2)
    if rotary % 2 or rotary > d:
        raise invalid(f"rotary_dim must be even and <= {d}, got {rotary}")
    pos = positions("positions", inputs["positions"])
    if pos.shape[-1] != x.shape[2] or pos.ndim > 2 or (pos.ndim == 2 and pos.shape[0] != x.shape[0]):
        raise invalid_shape(f"positions must be (T,) or (B, T) with T={x.shape[2]}, got {pos.shape}")
    choice("layout", params["layout"], layouts)  # a layout the library does not rotate in, after the checks
    return x, np.broadcast_to(pos, (x.shape[0], x.shape[2])), rotary


def _rope_scaling(op: str, params: Mapping[str, Any], x: np.ndarray, rotary: int) -> dict[str, Any]:
    """The scaling of a ``rope.apply``/``rope.scores`` case checked by :func:`_rope_x` (x as BHTD):
    :func:`posenc_adapter_checks.scaling` over its rotary space (``rotary_dim`` for ``partial="prefix"``,
    the head for ``"proportional"``)."""
    return checks.scaling(op, params, rotary if params["partial"] == "prefix" else x.shape[-1], rotary)


def _back(y: Any, x_layout: str) -> np.ndarray:
    return _numpy(y.transpose(1, 2) if x_layout == "BTHD" else y)


def _deberta_v2() -> Any:
    with warnings.catch_warnings():  # the module decorates helpers with torch.jit.script, deprecated in torch 2.13
        warnings.filterwarnings("ignore", "`torch.jit.script` is deprecated", DeprecationWarning)
        return _transformers("deberta_v2.modeling_deberta_v2")


def _alibi_slopes_check(params: Mapping[str, Any]) -> int:
    """The number of heads, after the shared ALiBi checks (:func:`posenc_adapter_checks.alibi`)."""
    return checks.alibi(params)[0]


class _SupportsAdapter(Adapter):
    """An :class:`Adapter` whose ``supports`` refuses what the library cannot express, with the reason."""

    def __init__(self, *args: Any, supports: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._supports = supports

    def supports(self, op: str, params: Mapping[str, Any]) -> bool | str:
        if op not in self.capabilities:
            return f"{op} not supported"
        return self._supports(op, params)


class _ExplainedAdapter(Adapter):
    """An :class:`Adapter` whose ``capabilities`` refusals also say why the library cannot run the value
    (``reasons``: ``{(op, param): why}``); error cases, as with plain capabilities, are matched on the op only."""

    def __init__(self, *args: Any, reasons: Mapping[tuple[str, str], str], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._reasons = dict(reasons)

    def supports(self, op: str, params: Mapping[str, Any], case_kind: str = "valid") -> bool | str:
        if op not in self.capabilities:
            return f"{op} not supported"
        if case_kind != "valid":
            return True
        for name, values in self.capabilities[op].items():
            if name in params and params[name] not in values:
                why = self._reasons.get((op, name))
                return (f"{op} with {name}={params[name]!r} not supported (supports {list(values)})"
                        + (f": {why}" if why else ""))
        return True


def _t5_params(params: Mapping[str, Any]) -> tuple[str, int, int, int]:
    """(direction, N, D, exact region E) after the shared T5 checks (:func:`posenc_adapter_checks.t5`)."""
    buckets, distance, side, direction = checks.t5(params)
    return direction, buckets, distance, side // 2


def _t5_bias_inputs(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray]) -> tuple[
        np.ndarray, np.ndarray, np.ndarray, tuple[str, int, int, int]]:
    """``t5.bias`` after the shared checks: the table as contiguous (N, H), query and key
    positions, and :func:`_t5_params`."""
    conventions = _t5_params(params)
    per_bucket = checks.t5_table(params, inputs, conventions[1])
    qp, kp = checks.query_key(inputs)
    return np.ascontiguousarray(per_bucket), qp, kp, conventions


def _deberta_params(params: Mapping[str, Any]) -> tuple[int, int, str]:
    """(position_buckets, max_relative_positions, distance_clamp) after the shared DeBERTa checks."""
    return checks.deberta(params)
