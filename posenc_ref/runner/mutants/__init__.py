"""The mutant catalogue: deliberately wrong implementations, one per bug class seen in the wild.

Every mutant must fail at least one golden case, and the reference must pass them all (both
are tests). Where the mistake is a known convention slip, the runner's diagnosis must name it;
``Mutant.diagnosis`` holds the phrase it must contain. Run one with
``posenc-ref conformance mutant:NAME`` to see what a user with that bug sees. One module per
scheme family.
"""

from __future__ import annotations

from typing import Final

from posenc_ref.runner.emulation._common import NameTable
from posenc_ref.runner.mutants import (
    alibi,
    attention,
    deberta,
    grid2d,
    learned,
    resample,
    rope,
    shaw,
    sinusoidal,
    t5,
    transformer_xl,
)
from posenc_ref.runner.mutants._common import Mutant

MUTANTS: Final[NameTable[Mutant]] = NameTable({m.name: m for m in (
    *sinusoidal.MUTANTS,
    *grid2d.MUTANTS,
    *learned.MUTANTS,
    *attention.MUTANTS,
    *shaw.MUTANTS,
    *transformer_xl.MUTANTS,
    *resample.MUTANTS,
    *rope.MUTANTS,
    *alibi.MUTANTS,
    *t5.MUTANTS,
    *deberta.MUTANTS,
)}, "runner.mutants.MUTANTS (mutant name)")

__all__ = ["MUTANTS", "Mutant"]
