"""The adapter protocol, the built-in adapters, and loading adapters by name or path.

An adapter is any object with:

``name`` (str), ``dtype`` (``"float64" | "float32" | "float16" | "bfloat16"``: what it computes in)
    Required. ``dtype`` may also be a mapping from op name to dtype (with an optional
    ``"default"`` entry) for a library that computes some ops in float32 and others in float64;
    an op with neither an entry nor a default is not applicable.
``run(op, params, inputs)``
    Required, unless the adapter has ``run_model`` (a model-level adapter:
    :mod:`posenc_ref.runner.models`; its other cases are then not applicable). ``op`` is an op name
    (``"sinusoidal.table"``), ``params`` the case's full parameters (dict), ``inputs`` a dict of NumPy arrays.
    Returns the outputs: a dict by output name, a tuple in the op's output order, or a single array for
    one-output ops; anything
    :func:`numpy.asarray` accepts. To reject bad input it raises its own exception.
``version`` (str)
    Optional; recorded in reports.
``capabilities`` (dict)
    Optional. ``{op name: {param name: (supported values, ...)}}``; ops not listed, or a case
    whose parameter value is not listed, are *not applicable*. Absent: every op, every value.
``supports(op, params[, case_kind[, inputs]]) -> bool | str``
    Optional, overrides ``capabilities``; a string is the reason for not_applicable.
    ``case_kind`` (``"valid"`` or ``"error"``) and ``inputs`` (the case's arrays) are passed
    when the signature takes them; the two-argument form keeps working.
``at_dtype(dtype) -> adapter``
    Optional; the same implementation computing in another dtype (``--dtype``).
``error_category(exc) -> str | None``
    Optional; maps the adapter's exception to ``invalid_argument``, ``out_of_range`` or
    ``invalid_shape``. Default: :class:`~posenc_ref.errors.SpecError` gives its category,
    ``IndexError`` ``out_of_range``, other ``ValueError``/``TypeError`` ``invalid_argument``.

Adapters are named on the command line as a built-in name (:data:`BUILTIN`), ``module:object``,
``path/to/file.py:object`` or ``subprocess:COMMAND ARGS...`` (a child process in any language,
:mod:`posenc_ref.runner.subprocess_adapter`) (``object`` defaults to ``ADAPTER``). ``object`` may be an adapter
instance, a class or a factory function (called without arguments).
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import shlex
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Final

import numpy as np
from numpy.typing import NDArray

from posenc_ref.errors import SpecError
from posenc_ref.registry import get_op
from posenc_ref.runner.emulation import EMULATIONS, emulate, to_dtype
from posenc_ref.tolerance import DTYPES, Dtype


class AdapterLoadError(Exception):
    """An adapter could not be found, imported or does not follow the protocol."""


class AdapterCrash(Exception):
    """The adapter broke instead of answering: its process died, timed out or broke the protocol.

    Always an ``error`` for the case, also on an error case (a crash is not a rejection).
    """


def default_error_category(exc: BaseException) -> str | None:
    """The default mapping of exceptions to error categories."""
    if isinstance(exc, SpecError):
        return exc.category
    if isinstance(exc, IndexError):
        return "out_of_range"
    if isinstance(exc, (ValueError, TypeError)):
        return "invalid_argument"
    return None


def error_category(adapter: Any, exc: BaseException) -> str | None:
    mapper = getattr(adapter, "error_category", None)
    return mapper(exc) if callable(mapper) else default_error_category(exc)


CASE_KINDS: Final = ("valid", "error")
"""The third argument of ``supports``: a case with valid inputs, or an error case (its inputs
are invalid on purpose, and the adapter is expected to reject them)."""


def _positional_arity(function: Callable[..., Any]) -> int:
    """How many positional arguments ``function`` takes (4 for ``*args``; 2 when unknown)."""
    try:
        parameters = inspect.signature(function).parameters.values()
    except (TypeError, ValueError):
        return 2
    if any(p.kind is inspect.Parameter.VAR_POSITIONAL for p in parameters):
        return 4
    return sum(p.kind in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
               for p in parameters)


def supports(adapter: Any, op: str, params: Mapping[str, Any], *, case_kind: str = "valid",
             inputs: Mapping[str, NDArray[Any]] | None = None) -> str | None:
    """``None`` when the adapter runs this case, else the not_applicable reason.

    An adapter's own ``supports`` is called as ``supports(op, params)``, ``supports(op, params,
    case_kind)`` or ``supports(op, params, case_kind, inputs)``, whichever its signature takes
    (``case_kind`` is ``"valid"`` or ``"error"``, :data:`CASE_KINDS`; ``inputs`` the case's
    input arrays, copies). For error cases only the op is matched against ``capabilities``, not
    the parameter values: an invalid value (an unknown layout, say) is exactly what such a
    case checks is rejected. A per-op ``dtype`` mapping without an entry for ``op`` (and no
    ``"default"``) makes the op not applicable.
    """
    if isinstance(getattr(adapter, "dtype", None), Mapping) and dtype_for(adapter.dtype, op) is None:
        return f"{op}: no dtype declared for it in the adapter's per-op dtype mapping"
    custom = getattr(adapter, "supports", None)
    if callable(custom):
        arity = _positional_arity(custom)
        arguments: tuple[Any, ...] = (op, params, case_kind, inputs if inputs is not None else {})
        verdict = custom(*arguments[:max(2, min(arity, 4))])
        if verdict is True:
            return None
        return verdict if isinstance(verdict, str) and verdict else f"{op} not supported"
    caps = getattr(adapter, "capabilities", None)
    if caps is None:
        return None
    if op not in caps:
        return f"{op} not supported"
    for name, values in (caps[op] or {}).items():
        if case_kind == "valid" and name in params and params[name] not in values:
            return f"{op} with {name}={params[name]!r} not supported (supports {list(values)})"
    return None


def dtype_for(dtype: Any, op: str) -> Any:
    """The dtype an adapter computes ``op`` in: its ``dtype``, or from a per-op mapping the
    entry for ``op``, else its ``"default"`` entry, else ``None``."""
    if isinstance(dtype, Mapping):
        return dtype.get(op, dtype.get("default"))
    return dtype


class ReferenceAdapter:
    """``numpy``: the float64 reference itself."""

    name = "numpy"
    version = "reference"
    dtype = "float64"

    def run(self, op: str, params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]]) -> dict[str, NDArray[Any]]:
        return get_op(op).call(params, inputs)

    def at_dtype(self, dtype: str) -> Any:
        """``--dtype``: the calibration emulation for a narrower dtype."""
        return self if dtype == "float64" else load_adapter(f"numpy-{dtype}")


class EmulatedAdapter:
    """The reference computed in float32 (angles in ``angle_dtype``), rounded to ``dtype``.

    With ``round_inputs`` the op's value inputs (:attr:`~posenc_ref.opspec.OpRecord.value_inputs`)
    are first rounded to ``dtype``, as by an implementation that holds its tensors in it.
    """

    version = "emulation"

    def __init__(self, name: str, dtype: str, angle_dtype: str, *, round_inputs: bool = False) -> None:
        self.name = name
        self.dtype = dtype
        self.angle_dtype = angle_dtype
        self.round_inputs = round_inputs
        self.capabilities: dict[str, dict[str, tuple[Any, ...]]] = {op: {} for op in EMULATIONS}

    def run(self, op: str, params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]]) -> dict[str, NDArray[Any]]:
        if self.round_inputs:
            inputs = round_value_inputs(op, inputs, self.dtype)  # type: ignore[arg-type]
        return emulate(op, params, inputs, output_dtype=self.dtype, angle_dtype=self.angle_dtype)  # type: ignore[arg-type]


def round_value_inputs(op: str, inputs: Mapping[str, NDArray[Any]], dtype: Dtype) -> dict[str, NDArray[Any]]:
    """``inputs`` with the op's float value inputs rounded to ``dtype`` (carried in float64)."""
    names = set(get_op(op).value_inputs)
    return {name: to_dtype(np.asarray(a), dtype).astype(np.float64)
            if name in names and np.asarray(a).dtype.kind == "f" else a for name, a in inputs.items()}


BUILTIN: Final[dict[str, tuple[str, Callable[[], Any]]]] = {
    "numpy": ("the float64 reference (must pass everything)", ReferenceAdapter),
    "numpy-float32": ("the reference computed as a typical float32 framework does (calibration)",
                      lambda: EmulatedAdapter("numpy-float32", "float32", "float32")),
    "numpy-float16": ("float32 angles, outputs rounded to float16 (calibration)",
                      lambda: EmulatedAdapter("numpy-float16", "float16", "float32")),
    "numpy-bfloat16": ("float32 angles, outputs rounded to bfloat16 (calibration)",
                       lambda: EmulatedAdapter("numpy-bfloat16", "bfloat16", "float32")),
    "numpy-float16-inputs": ("inputs held in float16, then as numpy-float16 (calibration)",
                             lambda: EmulatedAdapter("numpy-float16-inputs", "float16", "float32", round_inputs=True)),
    "numpy-bfloat16-inputs": ("inputs held in bfloat16, then as numpy-bfloat16 (calibration)",
                              lambda: EmulatedAdapter("numpy-bfloat16-inputs", "bfloat16", "float32",
                                                      round_inputs=True)),
    "numpy-float16-angles": ("angles computed in float16: the known-bad calibration point (must fail)",
                             lambda: EmulatedAdapter("numpy-float16-angles", "float16", "float16")),
}


def _instantiate(obj: Any, spec: str) -> Any:
    if isinstance(obj, type) or (callable(obj) and not hasattr(obj, "run")):
        try:
            obj = obj()
        except BaseException as exc:  # adapter code: even sys.exit() there is only a failed load
            raise AdapterLoadError(f"creating adapter {spec!r} raised {_describe(exc)}") from exc
    return check_adapter(obj, spec)


def _describe(exc: BaseException) -> str:
    kind = type(exc).__name__
    try:
        message = str(exc)
    except BaseException:  # an exception whose str() raises
        message = "<str() of the exception raised>"
    return f"{kind}: {message}" if message else kind


def check_adapter(obj: Any, spec: str) -> Any:
    """``obj`` if it follows the protocol; :class:`AdapterLoadError` naming what is missing."""
    for attribute in ("name", "dtype", "run"):
        try:
            value = getattr(obj, attribute)
        except AttributeError:
            if attribute == "run" and hasattr(obj, "run_model"):
                continue  # a model-level adapter (posenc_ref.runner.models): its op cases are not applicable
            if attribute == "run":
                raise AdapterLoadError(f"adapter {spec!r} has neither 'run' nor 'run_model' "
                                       "(see conformance/README.md)") from None
            raise AdapterLoadError(f"adapter {spec!r} has no {attribute!r} (see conformance/README.md)") from None
        except BaseException as exc:  # a property is adapter code
            raise AdapterLoadError(f"adapter {spec!r}: reading {attribute!r} raised {_describe(exc)}") from exc
        if attribute == "name" and not isinstance(value, str):
            raise AdapterLoadError(f"adapter {spec!r}: 'name' must be a str, got {type(value).__name__}")
    dtype = obj.dtype
    if isinstance(dtype, Mapping):
        bad = {str(k): v for k, v in dtype.items() if v not in DTYPES or not isinstance(k, str)}
        unknown = [k for k in dtype if isinstance(k, str) and k != "default" and not _is_op(k)]
        if bad or unknown or not dtype:
            raise AdapterLoadError(f"adapter {spec!r} declares a per-op dtype mapping {dict(dtype)!r}; expected "
                                   f"op names (or 'default') mapped to one of {', '.join(DTYPES)}")
    elif not isinstance(dtype, str) or dtype not in DTYPES:
        raise AdapterLoadError(f"adapter {spec!r} declares dtype {dtype!r}; expected one of {', '.join(DTYPES)} "
                               "or a mapping from op name to one of them")
    return obj


def _is_op(name: str) -> bool:
    try:
        get_op(name)
    except KeyError:
        return False
    return True


def load_adapter(spec: str) -> Any:
    """An adapter from a built-in name, ``module:object`` or ``file.py[:object]``."""
    if spec in BUILTIN:
        return _instantiate(BUILTIN[spec][1](), spec)
    if spec.startswith("mutant:"):
        from posenc_ref.runner.mutants import MUTANTS

        name = spec.split(":", 1)[1]
        if name not in MUTANTS:
            raise AdapterLoadError(f"unknown mutant {name!r}; known: {', '.join(MUTANTS)}")
        return MUTANTS[name].adapter()
    if spec.startswith("subprocess:"):
        from posenc_ref.runner.subprocess_adapter import ProtocolError, SubprocessAdapter, timeout_from_env

        command = spec.split(":", 1)[1]
        try:
            argv = shlex.split(command)
        except ValueError as exc:
            raise AdapterLoadError(
                f"adapter {spec!r}: the command cannot be split like a shell would ({exc})") from None
        try:
            child = SubprocessAdapter(argv, timeout=timeout_from_env())
        except ValueError as exc:
            raise AdapterLoadError(f"adapter {spec!r}: {exc}") from None
        except ProtocolError as exc:
            raise AdapterLoadError(str(exc)) from exc
        return check_adapter(child, spec)
    target, _, attribute = spec.partition(":") if not spec.endswith(".py") else (spec, "", "")
    attribute = attribute or "ADAPTER"
    if target.endswith(".py"):
        path = Path(target)
        if not path.is_file():
            raise AdapterLoadError(f"adapter file {target!r} does not exist")
        module_name = f"_posenc_adapter_{abs(hash(path.resolve()))}"
        loader_spec = importlib.util.spec_from_file_location(module_name, path)
        if loader_spec is None or loader_spec.loader is None:
            raise AdapterLoadError(f"cannot import adapter file {target!r}")
        module = importlib.util.module_from_spec(loader_spec)
        sys.modules[module_name] = module
        try:
            loader_spec.loader.exec_module(module)
        except BaseException as exc:  # adapter code: even sys.exit() at import is only a failed load
            raise AdapterLoadError(f"importing {target!r} failed: {_describe(exc)}") from exc
    elif ":" in spec:
        try:
            module = importlib.import_module(target)
        except BaseException as exc:  # adapter code: even sys.exit() at import is only a failed load
            raise AdapterLoadError(f"importing module {target!r} failed: {_describe(exc)}") from exc
    else:
        known = ", ".join(BUILTIN)
        raise AdapterLoadError(f"unknown adapter {spec!r}: give a built-in name ({known}), "
                               "mutant:NAME, module:object, path/to/file.py[:object] or subprocess:COMMAND")
    if not hasattr(module, attribute):
        raise AdapterLoadError(f"{target!r} has no attribute {attribute!r}")
    return _instantiate(getattr(module, attribute), spec)


def normalise_outputs(result: Any, names: tuple[str, ...]) -> dict[str, Any]:
    """Map an adapter's return value to ``{output name: value}`` (values not yet checked)."""
    if isinstance(result, Mapping):
        return {name: result.get(name) for name in names}
    if isinstance(result, (tuple, list)) and len(names) > 1:
        if len(result) != len(names):
            raise ValueError(f"returned {len(result)} outputs, the op has {len(names)} ({', '.join(names)})")
        return dict(zip(names, result))
    if len(names) == 1:
        return {names[0]: result}
    raise ValueError(f"returned a single value, the op has outputs {', '.join(names)}")


def as_output_array(value: Any, expected: NDArray[Any], exact: bool) -> tuple[NDArray[Any] | None, str | None]:
    """Convert one returned output; ``(None, reason)`` when it is garbage."""
    if value is None:
        return None, "returned None"
    try:
        array = np.asarray(value)
    except Exception as exc:  # an adapter may return anything
        return None, f"returned something numpy.asarray refuses ({type(exc).__name__}: {exc})"
    kind = array.dtype.kind
    if exact and kind not in "iu":
        if not (kind == "f" and np.all(np.isfinite(array)) and np.array_equal(array, np.round(array))):
            return None, f"returned dtype {array.dtype} where integers are expected"
    if not exact and kind not in "f" and array.dtype.name != "bfloat16":
        return None, f"returned dtype {array.dtype} where floats are expected"
    if array.shape != expected.shape:
        return None, f"returned shape {array.shape}, expected {expected.shape}"
    if kind == "f" or array.dtype.name == "bfloat16":
        as64 = array.astype(np.float64)
        surprise = ~np.isfinite(as64) & np.isfinite(expected.astype(np.float64))
        if surprise.any():
            where = tuple(int(i) for i in np.argwhere(surprise)[0])
            return None, f"returned {as64[where]} at {where} where a finite value is expected"
        return as64, None
    return array.astype(np.int64), None
