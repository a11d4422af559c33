"""The op registry: one explicit table of every checkable op.

Golden generation, the conformance runner, the tests and the docs all read :data:`OPS`; an op
that is not listed here does not exist for any of them. Records live beside their scheme family
in :mod:`posenc_ref.records`.
"""

from __future__ import annotations

from typing import Final

from posenc_ref.opspec import Case, OpRecord
from posenc_ref.records import (
    alibi,
    attention,
    deberta,
    grid2d,
    learned,
    models,
    resample,
    rope,
    rope_variants,
    shaw,
    sinusoidal,
    t5,
    transformer_xl,
)

OPS: Final[tuple[OpRecord, ...]] = (
    *sinusoidal.RECORDS,
    *grid2d.RECORDS,
    *learned.RECORDS,
    *rope.RECORDS,
    *rope_variants.RECORDS,
    *alibi.RECORDS,
    *t5.RECORDS,
    *deberta.RECORDS,
    *shaw.RECORDS,
    *transformer_xl.RECORDS,
    *resample.RECORDS,
    *attention.RECORDS,
    *models.RECORDS,
)

RETIRED: Final[tuple[tuple[str, str], ...]] = ()
"""Case ids that once existed, with the reason they were retired. Never reused."""


def get_op(name: str) -> OpRecord:
    """The record of op ``name``; ``KeyError`` listing the known ops otherwise."""
    for op in OPS:
        if op.name == name:
            return op
    raise KeyError(f"unknown op {name!r}; known ops: {', '.join(op.name for op in OPS)}")


def all_cases() -> tuple[tuple[OpRecord, Case], ...]:
    """Every (op, case) pair, in registry order."""
    return tuple((op, case) for op in OPS for case in op.cases)


def get_case(case_id: str) -> tuple[OpRecord, Case]:
    """The op and case with id ``case_id``; ``KeyError`` otherwise."""
    for op, case in all_cases():
        if case.id == case_id:
            return op, case
    raise KeyError(f"unknown case id {case_id!r}")
