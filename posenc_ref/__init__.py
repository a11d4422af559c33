"""posenc-ref: the reference specification of transformer positional encodings.

Pure NumPy, float64. Each scheme family is one module whose docstring is its spec page:

* :mod:`posenc_ref.sinusoidal`: 1-D sinusoidal tables and the fairseq padding-aware rule
* :mod:`posenc_ref.grid2d`: 2-D sin-cos grids
* :mod:`posenc_ref.learned`: learned absolute tables

:mod:`posenc_ref.registry` lists every checkable op; :mod:`posenc_ref.corpus` reads and writes the
golden corpus; :mod:`posenc_ref.runner` checks other implementations against it.
"""

from posenc_ref.errors import SpecError
from posenc_ref.grid2d import grid_coords, grid_sincos_2d
from posenc_ref.learned import learned_init, learned_lookup
from posenc_ref.sinusoidal import fairseq_positions, fairseq_sinusoidal, sinusoidal_frequencies, sinusoidal_table

__version__ = "0.1.0"

__all__ = [
    "SpecError",
    "__version__",
    "fairseq_positions",
    "fairseq_sinusoidal",
    "grid_coords",
    "grid_sincos_2d",
    "learned_init",
    "learned_lookup",
    "sinusoidal_frequencies",
    "sinusoidal_table",
]
