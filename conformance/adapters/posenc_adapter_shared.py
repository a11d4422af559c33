"""Shared pieces of the framework adapters in this folder (NumPy only, independent of posenc_ref).

* :func:`require` imports a framework or raises an ImportError naming the extra to install.
* The ``validate_*`` functions check each op's preconditions on the NumPy inputs and raise
  :class:`Rejected` with the corpus's error category. The library functions the adapters call
  do not validate their input (they index, divide or broadcast whatever they get), so these
  checks are the adapters' wrapper, the part a user of the library would write; where a
  library does raise by itself (Whisper's odd width, ``nn.Embedding`` out of range, the HF 2-D
  helper's width), the adapter lets the library's own exception through instead.
* :class:`Adapter` is the posenc-ref adapter protocol over a table of op functions.

Shape letters: ``T`` positions (any shape), ``D`` = ``dim``, ``N`` table rows.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

PROTOCOL_DTYPES = ("float64", "float32", "float16", "bfloat16")


class Rejected(ValueError):
    """Invalid input, with the corpus error category it belongs to."""

    def __init__(self, category: str, message: str) -> None:
        super().__init__(message)
        self.category = category


def require(module: str, extra: str) -> Any:
    """``import module``, or an ImportError that says which extra to install."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise ImportError(f"{module} is not installed ({exc}); install it with: "
                          f"pip install 'posenc-ref[{extra}]' (or pip install -e '.[{extra}]' in a checkout)") from exc


def error_category(exc: BaseException) -> str | None:
    """Rejected -> its category; IndexError -> out_of_range; other ValueError/TypeError -> invalid_argument."""
    if isinstance(exc, Rejected):
        return exc.category
    if isinstance(exc, IndexError):
        return "out_of_range"
    if isinstance(exc, (ValueError, TypeError)):
        return "invalid_argument"
    return None


def invalid(message: str) -> Rejected:
    """A :class:`Rejected` of category ``invalid_argument``."""
    return Rejected("invalid_argument", message)


def invalid_shape(message: str) -> Rejected:
    """A :class:`Rejected` of category ``invalid_shape``."""
    return Rejected("invalid_shape", message)


def choice(name: str, value: Any, choices: tuple[str, ...]) -> str:
    if value not in choices:
        raise invalid(f"{name} must be one of {choices}, got {value!r}")
    return str(value)


def integer(name: str, value: Any, minimum: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise invalid(f"{name} must be an int, got {value!r}")
    if minimum is not None and value < minimum:
        raise invalid(f"{name} must be >= {minimum}, got {value}")
    return int(value)


def base_value(value: Any) -> float:
    base = float(value)
    if not np.isfinite(base) or base <= 0:
        raise invalid(f"base must be finite and > 0, got {value!r}")
    return base


def positions(name: str, value: Any, *, nonnegative: bool = True) -> np.ndarray:
    """Whole-number positions as int64 (any shape); empty, fractional, NaN or negative are refused."""
    array = np.asarray(value)
    if array.size == 0:
        raise Rejected("invalid_shape", f"{name} must not be empty, got shape {array.shape}")
    if array.dtype.kind == "f":
        if not np.all(np.isfinite(array)) or np.any(array != np.floor(array)):
            raise invalid(f"{name} must hold finite whole numbers")
    elif array.dtype.kind not in "iu":
        raise TypeError(f"{name} must hold integers, got dtype {array.dtype}")
    out = array.astype(np.int64)
    if nonnegative and out.min() < 0:
        raise invalid(f"{name} must be >= 0, got {int(out.min())}")
    return out


def validate_table(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray]) -> tuple[np.ndarray, dict[str, Any]]:
    """``sinusoidal.table``: the rows ``positions + position_offset`` (int64) and checked params."""
    p = dict(params)
    choice("ladder", p["ladder"], ("paper", "t2t"))
    choice("layout", p["layout"], ("interleaved", "concat_sin_cos", "concat_cos_sin"))
    choice("odd_width", p["odd_width"], ("error", "zero_pad_last", "sin_gets_extra"))
    dim = integer("dim", p["dim"], 1)
    if dim % 2 and p["odd_width"] == "error":
        raise invalid(f"dim must be even under odd_width='error', got {dim}")
    if dim == 1 and p["odd_width"] == "zero_pad_last":
        raise invalid("dim must be >= 2 under odd_width='zero_pad_last'")
    p["base"] = base_value(p["base"])
    if not np.isfinite(float(p["scale"])):
        raise invalid(f"scale must be finite, got {p['scale']!r}")
    rows = positions("positions", inputs["positions"], nonnegative=False) + integer("position_offset",
                                                                                    p["position_offset"])
    if rows.min() < 0:
        raise invalid(f"positions + position_offset must be >= 0, got {int(rows.min())}")
    return rows, p


def validate_fairseq(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray]) -> np.ndarray:
    """``sinusoidal.fairseq``: the (B, T) token ids as int64.

    Rows: ``cache_rule="fairseq"``: past 0: ``pad + cumsum(real) * real``; past > 0: one token,
    row ``pad + past + 1``. ``"m2m100"``: ``(cumsum(real) + past) * real + pad`` for any T."""
    integer("dim", params["dim"], 4)
    integer("padding_idx", params["padding_idx"], 0)
    past = integer("past_length", params["past_length"], 0)
    base_value(params["base"])
    rule = choice("cache_rule", params.get("cache_rule", "fairseq"), ("fairseq", "m2m100"))
    tokens = positions("tokens", inputs["tokens"])
    if tokens.ndim != 2:
        raise Rejected("invalid_shape", f"tokens must have shape (B, T), got {tokens.shape}")
    if past and tokens.shape[1] != 1 and rule == "fairseq":
        raise invalid(f"an incremental step (past_length={past}) takes one token per row, got {tokens.shape}")
    return tokens


def validate_grid(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """``grid2d.sincos``: the coordinates ``(ys, xs)`` as int64."""
    dim = integer("dim", params["dim"], 4)
    if dim % 4:
        raise invalid(f"dim must be a multiple of 4, got {dim}")
    choice("axis_order", params["axis_order"], ("x_first", "y_first"))
    choice("block_layout", params["block_layout"], ("sin_cos", "sin_sin_cos_cos", "interleaved"))
    choice("ladder", params["ladder"], ("paper", "t2t"))
    base_value(params["base"])
    ys, xs = positions("ys", inputs["ys"]), positions("xs", inputs["xs"])
    if ys.shape != xs.shape:
        raise Rejected("invalid_shape", f"ys and xs must have the same shape, got {ys.shape} and {xs.shape}")
    return ys, xs


def validate_lookup(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray], *,
                    check_rows: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """``learned.lookup``: the (N, D) table and the rows ``positions + offset`` (int64).

    ``check_rows=False`` leaves negative and beyond-the-table rows to the library.
    """
    table = np.asarray(inputs["table"])
    if table.ndim != 2 or table.size == 0:
        raise Rejected("invalid_shape", f"table must be a non-empty (N, D) array, got shape {table.shape}")
    offset = integer("offset", params["offset"], 0)
    policy = choice("out_of_range", params["out_of_range"], ("error", "clamp"))
    rows = positions("positions", inputs["positions"], nonnegative=check_rows) + offset
    if policy == "clamp":
        rows = np.minimum(rows, table.shape[0] - 1)
    elif check_rows and rows.max() >= table.shape[0]:
        raise IndexError(f"row {int(rows.max())} is beyond the table of {table.shape[0]} rows")
    return table, rows


class Adapter:
    """The posenc-ref adapter protocol over ``ops``: ``{op name: function(params, inputs) -> outputs}``.

    ``calls`` names, per op, the library function (or port) that computes it; it is shown by
    ``describe()`` and in the module docs. ``make(dtype)`` builds the same adapter at another
    dtype for ``at_dtype``; ``dtypes`` lists the dtypes it really computes in.
    """

    def __init__(self, name: str, version: str, dtype: str, ops: Mapping[str, Callable[..., Any]],
                 capabilities: Mapping[str, Mapping[str, tuple[Any, ...]]], calls: Mapping[str, str],
                 make: Callable[[str], Adapter] | None = None, dtypes: tuple[str, ...] = ()) -> None:
        if dtype not in PROTOCOL_DTYPES:
            raise ValueError(f"{name}: unknown dtype {dtype!r}")
        self.name, self.version, self.dtype = name, version, dtype
        self._ops = dict(ops)
        self.capabilities = {op: dict(values) for op, values in capabilities.items()}
        self.calls = dict(calls)
        self._make = make
        self.dtypes = dtypes or (dtype,)

    def run(self, op: str, params: Mapping[str, Any], inputs: Mapping[str, np.ndarray]) -> Any:
        return self._ops[op](params, inputs)

    def error_category(self, exc: BaseException) -> str | None:
        return error_category(exc)

    def at_dtype(self, dtype: str) -> Adapter:
        if dtype not in self.dtypes or self._make is None:
            raise ValueError(f"{self.name} computes in {', '.join(self.dtypes)}, not {dtype}")
        return self._make(dtype)

    def describe(self) -> str:
        return "\n".join(f"{op}: {call}" for op, call in self.calls.items())
