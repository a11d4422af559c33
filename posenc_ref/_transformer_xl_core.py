"""The private helpers of :mod:`posenc_ref.transformer_xl` (the validated ``R_delta`` rows and the
four score terms); that module is the spec page and names the rules these follow.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from posenc_ref.errors import SpecError, check_float, check_int, check_phase_range, check_positions, check_size
from posenc_ref.sinusoidal import _frequencies


def _embedding(func: str, distances: Any, dim: Any, base: Any) -> NDArray[np.float64]:
    """:func:`xl_relative_embedding`; errors name ``func``."""
    dim = check_int(func, "dim", dim, minimum=2)
    if dim % 2:
        raise SpecError(f"{func}: dim must be even, got dim={dim}")
    base = check_float(func, "base", base, positive=True)
    delta = check_positions(func, "distances", distances, nonnegative=False)
    check_size(func, "the embeddings", delta.shape + (dim,))
    w = _frequencies(func, dim, base, "paper", "error")
    check_phase_range(func, "distances", delta, "the frequencies", w)
    theta = delta.astype(np.float64)[..., None] * w  # (..., D_r / 2)
    return np.concatenate([np.sin(theta), np.cos(theta)], axis=-1)


def _score_terms(queries: NDArray[np.float64], keys: NDArray[np.float64], biases: list[NDArray[np.float64]],
                 projection: NDArray[np.float64], q_pos: NDArray[np.int64], k_pos: NDArray[np.int64], clamp_len: int,
                 base: Any, func: str) -> NDArray[np.float64]:
    content = (queries + biases[0]) @ keys.T  # (Tq, Tk): terms (a) + (c)
    distance = q_pos[:, None] - k_pos[None, :]  # (Tq, Tk), query minus key
    if clamp_len > 0:
        np.clip(distance, -clamp_len, clamp_len, out=distance)
    distinct, inverse = np.unique(distance, return_inverse=True)
    r = _embedding(func, distinct, projection.shape[0], base) @ projection  # (U, D)
    per_distance = (queries + biases[1]) @ r.T  # (Tq, U): terms (b) + (d) for each distinct distance
    position = np.take_along_axis(per_distance, inverse.reshape(distance.shape), axis=1)
    score: NDArray[np.float64] = content + position
    return score
