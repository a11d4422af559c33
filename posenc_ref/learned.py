r"""Learned absolute position tables: seeded initialisation and lookup.

Formula
-------
A learned table :math:`P \in \mathbb{R}^{N \times D}` is read at row ``position + offset``:
:math:`PE(p) = P[p + \text{offset}]`.

Conventions
-----------
* ``offset``: 0 for BERT and GPT-2; 2 for BART, OPT and RoBERTa (fairseq ``padding_idx = 1``
  plus one); ``padding_idx + 1`` in general. RoBERTa's 514-row table is ``512 + 2``.
* Positions are explicit. Padding-aware position rules (fairseq/RoBERTa cumsum, OPT
  ``cumsum(mask) * mask - 1``) produce positions; see :func:`posenc_ref.sinusoidal.fairseq_positions`.
* ``out_of_range``: ``"error"`` (default; raises :class:`~posenc_ref.errors.SpecError` with
  category ``out_of_range``, naming the position and the table size) or ``"clamp"`` (plain JAX
  indexing). Observed elsewhere: PyTorch raises ``IndexError`` on CPU and a device-side assert
  on CUDA, ``jnp.take`` fills NaN, ``tf.gather`` returns zeros on GPU, ONNX Runtime's CUDA
  ``Gather`` was reported silent (onnxruntime#10234).
* Initialisation (:func:`learned_init`): independent normal draws, mean 0 and standard
  deviation ``std`` (0.02 = BERT ``initializer_range``), from NumPy's PCG64 generator seeded
  with ``seed``, in row-major order. Training changes the values; the corpus stores tables.

Differences from common implementations
----------------------------------------
* No silent clamping, NaN fill or zero fill: an out-of-range read is an error unless
  ``out_of_range="clamp"`` is asked for.
"""

from __future__ import annotations

from typing import Any, Final, Literal

import numpy as np
from numpy.typing import NDArray

from posenc_ref.errors import (
    SpecError,
    check_choice,
    check_exact_range,
    check_float,
    check_float_array,
    check_int,
    check_positions,
    check_size,
)

OutOfRange = Literal["error", "clamp"]
OUT_OF_RANGE: Final = ("error", "clamp")


def learned_init(num_positions: int, dim: int, *, seed: int, std: float = 0.02) -> NDArray[np.float64]:
    """A seeded learned table: ``numpy.random.default_rng(seed).normal(0, std, (N, D))``.

    Returns
    -------
    ndarray, shape (num_positions, dim), float64

    Examples
    --------
    >>> table = learned_init(4, 3, seed=0)
    >>> table.shape, bool((learned_init(4, 3, seed=0) == table).all())
    ((4, 3), True)
    """
    func = "learned_init"
    num_positions = check_int(func, "num_positions", num_positions, minimum=1)
    dim = check_int(func, "dim", dim, minimum=1)
    seed = check_int(func, "seed", seed, minimum=0, maximum=None)
    std = check_float(func, "std", std, nonnegative=True)
    check_size(func, "the table", (num_positions, dim))
    return np.random.default_rng(seed).normal(0.0, std, size=(num_positions, dim))


def learned_lookup(
    table: Any, positions: Any, /, *, offset: int = 0, out_of_range: OutOfRange = "error"
) -> NDArray[np.float64]:
    """Rows ``table[positions + offset]`` of a learned position table.

    Parameters
    ----------
    table
        Shape (N, D), finite floats.
    positions
        Integer positions >= 0, any shape.
    offset
        Row of position 0 (0: BERT/GPT-2; 2: BART/OPT/RoBERTa).
    out_of_range
        ``"error"`` or ``"clamp"`` (to row ``N - 1``).

    Returns
    -------
    ndarray, shape (*positions.shape, D), float64

    Raises
    ------
    SpecError
        Category ``out_of_range`` when a row ``position + offset`` is ``>= N`` under ``"error"``;
        ``invalid_argument`` for negative or non-integer positions; ``invalid_shape`` for a table
        that is not 2-D or is empty.

    Examples
    --------
    >>> table = [[0.0, 0.0], [1.0, 1.0], [2.0, 2.0]]
    >>> learned_lookup(table, [0, 1], offset=1).tolist()
    [[1.0, 1.0], [2.0, 2.0]]
    >>> learned_lookup(table, [5], out_of_range="clamp").tolist()
    [[2.0, 2.0]]
    """
    func = "learned_lookup"
    weights = check_float_array(func, "table", table, ndim=2)
    offset = check_int(func, "offset", offset, minimum=0)
    check_choice(func, "out_of_range", out_of_range, OUT_OF_RANGE)
    pos = check_positions(func, "positions", positions)
    if pos.size:
        check_exact_range(func, "positions + offset", 0, int(pos.max()) + offset)
    check_size(func, "the rows", pos.shape + weights.shape[1:])
    rows = pos + offset
    size = weights.shape[0]
    if out_of_range == "clamp":
        rows = np.minimum(rows, size - 1)
    elif rows.size and int(rows.max()) >= size:
        where = tuple(int(i) for i in np.argwhere(rows >= size)[0])
        raise SpecError(
            f"{func}: position {int(pos[where])} (row {int(rows[where])} with offset={offset}) "
            f"at index {where} is beyond the table of {size} rows",
            category="out_of_range",
        )
    return weights[rows]
