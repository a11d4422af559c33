"""The record types of the op registry: what an op, its parameters, outputs and cases are.

An **op** is one checkable function with named array inputs (positional) and parameters
(keyword). Its record says everything the golden generator, the conformance runner, the tests
and the docs need, so none of them restates anything about the op.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Literal

import numpy as np
from numpy.typing import NDArray

from posenc_ref.errors import ErrorCategory

ToleranceClass = Literal["exact", "ulp", "phase", "normwise", "reduction", "power"]
CaseKind = Literal["normal", "edge", "long_position", "error"]
Level = Literal["must", "should"]
CASE_KINDS: Final = ("normal", "edge", "long_position", "error")


class _Required:
    def __repr__(self) -> str:
        return "REQUIRED"


REQUIRED: Final = _Required()
"""Default of a parameter that has none."""


@dataclass(frozen=True)
class Param:
    """One keyword parameter of an op.

    ``kind`` is the JSON type (``"int"``, ``"float"``, ``"str"``). A *convention* parameter is
    one on which real libraries disagree; ``users`` maps each of its values to who uses it.
    ``suspects`` are further values the runner's diagnosis tries when an output fails (a
    table offset of 0 where 2 is meant, say); convention choices are always tried.
    """

    name: str
    kind: Literal["int", "float", "str", "bool"]
    default: Any = REQUIRED
    choices: tuple[Any, ...] = ()
    users: Mapping[Any, str] = field(default_factory=dict)
    doc: str = ""
    suspects: tuple[Any, ...] = ()

    @property
    def is_convention(self) -> bool:
        return bool(self.users)


@dataclass(frozen=True)
class Output:
    """One output array of an op and how it is compared.

    ``phase`` (for the ``"phase"`` tolerance class) computes, from the case's parameters and
    inputs, the phase ``theta`` behind each element (broadcastable to the output); for the
    ``"reduction"`` class it computes the element's error scale ``m`` instead, and for a
    ``"normwise"`` output (attention with RoPE) the phase scale ``m`` its angles carry through
    the softmax (see :mod:`posenc_ref.tolerance`).

    ``input_scale`` computes the element's *input scale* ``s``: the sum over the terms of the
    element of ``|term|`` times the number of the term's factors that are value inputs of the
    op (:attr:`OpRecord.value_inputs`). Rounding every value input to a dtype of unit
    roundoff ``u`` moves the element by at most ``u s`` to first order; the policies of the
    narrow dtypes allow a multiple of that (:mod:`posenc_ref.tolerance`). Outputs that copy an
    input (``ulp`` class) and the ``normwise`` class have none.
    """

    name: str
    dtype: Literal["float64", "int64"]
    tolerance: ToleranceClass
    phase: Callable[[Mapping[str, Any], Mapping[str, NDArray[Any]]], NDArray[np.float64]] | None = None
    input_scale: Callable[[Mapping[str, Any], Mapping[str, NDArray[Any]]], NDArray[np.float64]] | None = None


InputMaker = Callable[[np.random.Generator], Mapping[str, NDArray[Any]]]


@dataclass(frozen=True)
class Case:
    """One golden case: parameters, inputs and why it exists.

    ``inputs`` is either the arrays themselves or a function of a NumPy generator seeded from
    the case id (:func:`case_rng`), so adding a case never shifts another. Error cases name
    the expected error category instead of producing outputs.
    """

    id: str
    params: Mapping[str, Any]
    inputs: Mapping[str, Any] | InputMaker
    comment: str
    kind: CaseKind = "normal"
    level: Level = "must"
    flags: tuple[str, ...] = ()
    error: ErrorCategory | None = None

    def make_inputs(self) -> dict[str, NDArray[Any]]:
        """The case's input arrays (generated from the case-id seed when given as a function)."""
        raw = self.inputs(case_rng(self.id)) if callable(self.inputs) else self.inputs
        return {name: np.asarray(value) for name, value in raw.items()}


@dataclass(frozen=True)
class OpRecord:
    """One registered op."""

    name: str
    family: str
    function: Callable[..., Any]
    inputs: tuple[str, ...]
    outputs: tuple[Output, ...]
    params: tuple[Param, ...]
    summary: str
    citation: str
    cases: tuple[Case, ...]
    position_inputs: tuple[str, ...] = ()
    value_inputs: tuple[str, ...] = ()
    """The float *data* inputs (activations, tables, weights) that an implementation may hold in
    its own dtype, so that a float16 implementation receives them rounded to float16. Never
    positions, frequencies or factors an angle is computed from: rounding those to a narrow
    dtype is the float16-angle bug class, which the ``phase`` policies fail by design."""
    intermediates: str = ""
    """The transcendental intermediates the op computes inside, when its outputs do not show
    them: ``"angles"`` (sines/cosines of phases) or ``"logarithms"`` (log buckets). Phase
    outputs imply ``"angles"``. The runner's diagnosis then tries those intermediates computed
    in float32 and float16."""

    @property
    def low_precision_intermediates(self) -> str:
        """What the float32/float16 diagnosis calls the op's rounded intermediates ("" for none)."""
        if self.intermediates:
            return self.intermediates
        return "angles" if any(out.tolerance == "phase" for out in self.outputs) else ""

    def param(self, name: str) -> Param:
        for p in self.params:
            if p.name == name:
                return p
        raise KeyError(f"{self.name}: no parameter {name!r}")

    @property
    def conventions(self) -> tuple[Param, ...]:
        return tuple(p for p in self.params if p.is_convention)

    def full_params(self, params: Mapping[str, Any]) -> dict[str, Any]:
        """``params`` with every default filled in, in the record's parameter order.

        Unknown names are kept (so that error cases can pass them through to the function).
        """
        full = {p.name: params[p.name] if p.name in params else p.default for p in self.params}
        full = {k: v for k, v in full.items() if v is not REQUIRED}
        full.update({k: v for k, v in params.items() if k not in full})
        return full

    def call(self, params: Mapping[str, Any], inputs: Mapping[str, Any]) -> dict[str, NDArray[Any]]:
        """Run the reference function; returns ``{output name: array}``."""
        result = self.function(*(inputs[name] for name in self.inputs), **params)
        values = result if isinstance(result, tuple) else (result,)
        if len(values) != len(self.outputs):
            raise RuntimeError(f"{self.name}: the reference returned {len(values)} arrays")
        return {out.name: np.asarray(v) for out, v in zip(self.outputs, values)}


_ErrorRow = tuple[str, Mapping[str, Any], Any, ErrorCategory, str]
"""``(name, params, inputs, category, why)`` of one error case."""


def error_cases(prefix: str, rows: Sequence[_ErrorRow]) -> list[Case]:
    """Error cases ``<prefix>.error.<name>``, each expecting its category, commented ``error: why``."""
    return [Case(f"{prefix}.error.{name}", params, inputs, f"error: {why}", kind="error", error=category)
            for name, params, inputs, category, why in rows]


def case_rng(case_id: str) -> np.random.Generator:
    """A PCG64 generator seeded by the first 8 bytes of ``sha256(case_id)``."""
    seed = int.from_bytes(hashlib.sha256(case_id.encode()).digest()[:8], "little")
    return np.random.default_rng(seed)
