"""Tolerance inputs of the corpus: the phase, error scale and input scale of every output element.

One module per scheme family, beside :mod:`posenc_ref.records`: a record's ``Output`` names
the functions here that give, for a case's parameters and inputs, the ``phase`` (or error
scale) and the ``input_scale`` that :mod:`posenc_ref.tolerance` reads. Records hold metadata and
cases only.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from numpy.typing import NDArray

Inputs = Mapping[str, NDArray[Any]]
"""A case's named input arrays."""
