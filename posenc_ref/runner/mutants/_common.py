"""The mutant record and helpers for building mutants from the reference."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from numpy.typing import NDArray

from posenc_ref.registry import get_op

Run = Callable[[str, Mapping[str, Any], Mapping[str, NDArray[Any]]], Any]


@dataclass(frozen=True)
class Mutant:
    name: str
    mistake: str
    source: str
    ops: tuple[str, ...]
    run: Run
    dtype: str = "float64"
    diagnosis: str | None = None

    def adapter(self) -> Any:
        return _MutantAdapter(self)


class _MutantAdapter:
    version = "mutant"

    def __init__(self, mutant: Mutant) -> None:
        self.mutant = mutant
        self.name = f"mutant:{mutant.name}"
        self.dtype = mutant.dtype
        self.capabilities: dict[str, dict[str, tuple[Any, ...]]] = {op: {} for op in mutant.ops}

    def run(self, op: str, params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]]) -> Any:
        return self.mutant.run(op, params, inputs)


def with_params(change: Callable[[str, dict[str, Any]], None]) -> Run:
    def run(op: str, params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]]) -> Any:
        changed = dict(params)
        change(op, changed)
        return get_op(op).call(changed, inputs)
    return run


def swap(name: str, mapping: Mapping[str, str]) -> Callable[[str, dict[str, Any]], None]:
    def change(op: str, params: dict[str, Any]) -> None:
        if name in params:
            params[name] = mapping.get(params[name], params[name])
    return change
