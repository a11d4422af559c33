"""Mutants of the 2-D sin-cos grid (see :mod:`posenc_ref.runner.mutants`)."""

from __future__ import annotations

from typing import Final

from posenc_ref.runner.mutants._common import Mutant, swap, with_params

MUTANTS: Final[tuple[Mutant, ...]] = (
    Mutant("grid2d-axes-swapped", "x and y halves of a 2-D encoding exchanged",
           "facebookresearch/mae#18; huggingface/transformers#41380",
           ("grid2d.sincos",), with_params(swap("axis_order", {"x_first": "y_first", "y_first": "x_first"})),
           diagnosis="axis_order="),
    Mutant("grid2d-blocks-timm", "timm's [sin|sin|cos|cos] blocks where per-axis [sin|cos] is meant",
           "timm build_sincos2d_pos_embed interleave_sin_cos",
           ("grid2d.sincos",),
           with_params(swap("block_layout", {"sin_cos": "sin_sin_cos_cos", "sin_sin_cos_cos": "sin_cos",
                                               "interleaved": "sin_cos"})),
           diagnosis="block_layout="),
)
