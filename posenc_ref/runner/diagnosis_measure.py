"""How well the diagnosis names the mutant catalogue's planted bugs (issue 18, item 5).

Each mutant with a nameable bug (``Mutant.diagnosis``, the phrase its diagnosis must contain)
is run through the conformance runner on the cases of its ops. A *failing output* is a compared
output whose status is ``fail``, or an ``error`` with a diagnosis (NaN outputs); an error case
the mutant accepts has no output to explain and is not counted. It is *named* when a line of
its diagnosis other than the ``unexplained: ...`` line contains the phrase. The diagnosis time
of every failing case is measured too (the search is bounded; the bar is < 1 s per case).
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from posenc_ref.opspec import OpRecord
from posenc_ref.runner import _engine_case, diagnosis, engine
from posenc_ref.runner.adapters import load_adapter
from posenc_ref.runner.mutants import MUTANTS
from posenc_ref.tolerance import Dtype


@dataclass(frozen=True)
class MutantScore:
    name: str
    phrase: str
    failing: int
    named: int
    seconds: tuple[float, ...]
    """Diagnosis time of each failing case."""
    missed: tuple[str, ...]
    """``case/output: diagnosis`` of the failing outputs not named."""

    @property
    def share(self) -> float:
        return self.named / self.failing if self.failing else 0.0


def nameable() -> list[str]:
    """The mutants whose bug has a phrase the diagnosis must contain, sorted."""
    return sorted(name for name, mutant in MUTANTS.items() if mutant.diagnosis)


def score(name: str) -> MutantScore:
    """Run mutant ``name`` on its ops' cases and count the failing outputs whose diagnosis names it."""
    mutant = MUTANTS[name]
    phrase = mutant.diagnosis or ""
    seconds: list[float] = []
    original = diagnosis.diagnose

    def timed(op: OpRecord, params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]],
              failing: Mapping[str, NDArray[Any]], dtype: Dtype) -> list[str]:
        start = time.perf_counter()
        try:
            return original(op, params, inputs, failing, dtype)
        finally:
            seconds.append(time.perf_counter() - start)

    setattr(_engine_case, "diagnose", timed)  # the engine's own call, timed (single-threaded); restored below
    try:
        run = engine.run_conformance(load_adapter(f"mutant:{name}"), spec="mutant",
                                     select=lambda entry: entry["op"] in mutant.ops)
    finally:
        setattr(_engine_case, "diagnose", original)
    failing = [r for r in run.results
               if (r.status == "fail" and r.comparison is not None) or (r.status == "error" and r.diagnosis)]
    named, missed = 0, []
    for r in failing:
        if any(phrase in line for line in r.diagnosis if not line.startswith(diagnosis.UNEXPLAINED)):
            named += 1
        else:
            missed.append(f"{r.case_id}/{r.output}: {'; '.join(r.diagnosis)}")
    if failing and not seconds:
        raise RuntimeError(f"score({name!r}): {len(failing)} failing outputs but no diagnosis was timed "
                           "(the engine no longer calls posenc_ref.runner._engine_case.diagnose)")
    return MutantScore(name, phrase, len(failing), named, tuple(seconds), tuple(missed))


def score_all(names: Iterable[str] | None = None) -> list[MutantScore]:
    return [score(name) for name in (nameable() if names is None else names)]


def summary(scores: list[MutantScore], *, bar: float = 0.9) -> tuple[float, float, float]:
    """``(share of failing outputs named, share of mutants with >= bar of theirs named, slowest case s)``."""
    failing = sum(s.failing for s in scores)
    named = sum(s.named for s in scores)
    diagnosed = sum(1 for s in scores if s.failing and s.share >= bar)
    slowest = max((t for s in scores for t in s.seconds), default=0.0)
    return (named / failing if failing else 0.0, diagnosed / len(scores) if scores else 0.0,
            float(np.round(slowest, 3)))
