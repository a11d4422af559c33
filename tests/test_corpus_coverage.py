"""Convention coverage of the corpus, from the registry (issue 18, item 2).

For every op and every value of each of its convention parameters: at least one normal case,
and, for ops with position inputs, at least one case whose positions reach LONG_POSITION. And
every op with error cases and conventions has an error case under a non-default convention.
What is not covered yet is listed below with the reason; the test fails when a gap opens and
when a listed gap is closed (so the list is always the true state).
"""

import dataclasses

import numpy as np

from posenc_ref.registry import OPS

LONG_POSITION = 4095
"""A case reaches long positions when the largest of its position inputs is at least this."""

OPEN_VALUES: dict[tuple[str, str, object], str] = {
    # (op, parameter, value): why no normal or long-position case exists yet (none open)
}
OPEN_ERRORS: set[str] = set()
"""Ops whose error cases all run under default conventions (none open)."""


def _reach(op, case):  # type: ignore[no-untyped-def]
    arrays = case.make_inputs()
    values = [int(np.max(np.abs(arrays[n]))) for n in op.position_inputs if n in arrays and np.size(arrays[n])]
    return max(values, default=0)


def _value_gaps(ops=OPS) -> set[tuple[str, str, object]]:  # type: ignore[no-untyped-def]
    gaps = set()
    for op in ops:
        normal = [c for c in op.cases if c.kind != "error"]
        reach = {c.id: _reach(op, c) for c in normal} if op.position_inputs else {}
        for param in (p for p in op.params if p.is_convention):
            for value in param.users:
                chosen = [c for c in normal if op.full_params(c.params).get(param.name) == value]
                long = [c for c in chosen if reach.get(c.id, 0) >= LONG_POSITION]
                if not chosen or (op.position_inputs and not long):
                    gaps.add((op.name, param.name, value))
    return gaps


def _error_gaps() -> set[str]:
    gaps = set()
    for op in OPS:
        conventions = [p for p in op.params if p.is_convention]
        errors = [c for c in op.cases if c.kind == "error"]
        if errors and conventions and not any(
                op.full_params(c.params).get(p.name, p.default) != p.default for c in errors for p in conventions):
            gaps.add(op.name)
    return gaps


def test_every_convention_value_has_a_normal_and_a_long_position_case():
    gaps = _value_gaps()
    assert gaps - set(OPEN_VALUES) == set(), "new gaps"
    assert set(OPEN_VALUES) - gaps == set(), "closed: remove from OPEN_VALUES"


def test_every_op_has_an_error_case_under_a_non_default_convention():
    gaps = _error_gaps()
    assert gaps - OPEN_ERRORS == set(), "new gaps"
    assert OPEN_ERRORS - gaps == set(), "closed: remove from OPEN_ERRORS"


def test_the_coverage_check_sees_a_missing_value():
    """The check itself: without its long-position case, width='full_interleaved' shows as a gap."""
    op = next(o for o in OPS if o.name == "rope.cos_sin")
    gap = ("rope.cos_sin", "width", "full_interleaved")
    assert gap not in _value_gaps([op])
    long_case = "rope.cos_sin.full_interleaved.d32.long"
    short = dataclasses.replace(op, cases=tuple(c for c in op.cases if c.id != long_case))
    assert _value_gaps([short]) == {gap}
