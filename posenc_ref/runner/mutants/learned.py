"""Mutants of the learned-table lookup (see :mod:`posenc_ref.runner.mutants`)."""

from __future__ import annotations

from typing import Final

from posenc_ref.runner.mutants._common import Mutant, swap, with_params

MUTANTS: Final[tuple[Mutant, ...]] = (
    Mutant("learned-offset-ignored", "BART/OPT's offset of 2 left out of the table lookup",
           "huggingface/transformers#20761", ("learned.lookup",),
           with_params(lambda op, params: params.update(offset=0)), diagnosis="offset=0"),
    Mutant("learned-clamp-instead-of-error", "out-of-range learned positions clamped silently",
           "jax.numpy indexing; microsoft/onnxruntime#10234",
           ("learned.lookup",), with_params(swap("out_of_range", {"error": "clamp"}))),
)
