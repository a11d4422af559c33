"""What a conformance run finds: the statuses, one :class:`Result` per (case, output) and the
:class:`Run` that reports are rendered from.

Part of :mod:`posenc_ref.runner.engine` (whose docstring defines the statuses), which re-exports
everything public here.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from posenc_ref.runner.expectations import Expectation
from posenc_ref.tolerance import Comparison

STATUSES: Final = ("pass", "pass_relaxed", "fail", "error", "wrong_error", "not_applicable", "xfail", "xpass", "skip")

FAILING: Final = frozenset({"fail", "error", "wrong_error", "xpass"})

EXECUTED: Final = frozenset({"pass", "pass_relaxed", "fail", "error", "wrong_error", "xfail", "xpass"})

ERROR_OUTPUT: Final = "error"
"""Output name under which error cases report (they have no arrays)."""


@dataclass
class Result:
    """The verdict on one (case, output)."""

    case_id: str
    op: str
    family: str
    output: str
    status: str
    message: str = ""
    comment: str = ""
    params: Mapping[str, Any] = field(default_factory=dict)
    level: str = "must"
    comparison: Comparison | None = None
    tolerance: str | None = None
    tolerance_source: str | None = None
    diagnosis: list[str] = field(default_factory=list)
    expectation: Expectation | None = None
    rerun: str = ""
    seconds: float = 0.0
    adapter: str = ""
    """The adapter's name, so that every failure block says whose it is."""
    exception: dict[str, Any] | None = None
    """For an ``error`` (or ``wrong_error``) from adapter code: its type, message and last frames."""


@dataclass
class Run:
    """Everything one conformance run found; reports are rendered from this."""

    adapter: dict[str, Any]
    corpus: dict[str, Any]
    results: list[Result]
    expectation_errors: list[str]
    started: str
    seconds: float
    command: str
    environment: dict[str, str]

    def counts(self) -> dict[str, int]:
        counter = Counter(r.status for r in self.results)
        return {status: counter.get(status, 0) for status in STATUSES}

    @property
    def executed(self) -> int:
        return sum(r.status in EXECUTED for r in self.results)

    @property
    def passed(self) -> bool:
        return not self.expectation_errors and self.executed > 0 and not any(r.status in FAILING for r in self.results)

    @property
    def exit_code(self) -> int:
        return 0 if self.passed else 1
