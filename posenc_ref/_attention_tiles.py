"""Large attention calls split into independent (batch, head, query-row) tiles, run on threads.

Every query row of attention is computed from that row's logits alone, so a call can be cut
into tiles of ``rows`` query rows of one query head (with its key/value head) and each tile
run through the same :func:`~posenc_ref._attention_blockwise.direct` or
:func:`~posenc_ref._attention_blockwise.blockwise` code as the whole call. A row goes through the
same sequence of operations: the products are BLAS products on fewer rows, the reductions
run along the same contiguous key axis. One thing may differ in the last bit: an optimized
BLAS computes the rows at the edge of a product with other micro-kernels (OpenBLAS does, for
some shapes), so a row's dot products can round differently depending on where the row falls
in the product, tiled or not. The tests hold tiled and untiled results to 8 float64 ulp of
each element's scale; at B=1, H=8, T=2048, D=64 they are bitwise equal. What changes is
speed: a tile's logits (``rows x Tk``) stay in the core's cache through the eight steps of
the softmax instead of streaming the whole ``(B, H, Tq, Tk)`` array through memory eight
times, and the tiles run on several cores at once.

Threads: each worker asks OpenBLAS to run its own products on one thread
(``openblas_set_num_threads_local``, which changes only the calling thread), so that the
workers do not oversubscribe the cores with BLAS threads of their own. When NumPy's BLAS is
not an OpenBLAS exposing that call, the tiles run one after the other on the calling thread.
``POSENC_REF_THREADS`` sets the number of workers (``1``: no threads); the default is the
number of CPUs this process may run on.

Row tiling is not used when a ``logits_term`` is plugged in: its contract lets the term of a
query row depend on all of ``q`` (see :func:`posenc_ref.attention.attention`).
"""

from __future__ import annotations

import ctypes
import functools
import os
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path
from typing import Any, Final

import numpy as np

from posenc_ref._attention_blockwise import F64, Pass

TILE_LOGITS: Final = 2**19
"""Logits per tile (4 MiB in float64): about one core's L2 cache on current x86 servers."""
TILING_MIN: Final = 2**21
"""Calls with fewer logits (B*H*Tq*Tk) than this run untiled: threads would cost more than they save."""


@functools.cache
def _openblas_local_threads() -> Callable[[int], int] | None:
    """``openblas_set_num_threads_local`` of the OpenBLAS NumPy loaded, or ``None``."""
    root = Path(np.__file__).parent
    candidates = [*sorted((root.parent / "numpy.libs").glob("*openblas*")),  # Linux and Windows wheels
                  *sorted((root / ".dylibs").glob("*openblas*"))]  # macOS wheels
    maps = Path("/proc/self/maps")  # Linux: a system OpenBLAS NumPy was linked against
    if maps.exists():
        loaded = {line.split()[-1] for line in maps.read_text().splitlines() if "openblas" in line.lower()}
        candidates += sorted(Path(name) for name in loaded if name.startswith("/"))
    for path in candidates:
        try:
            library = ctypes.CDLL(str(path))  # already loaded by NumPy: the same handle comes back
            setter = library.openblas_set_num_threads_local
        except (OSError, AttributeError):
            continue
        setter.argtypes, setter.restype = [ctypes.c_int], ctypes.c_int
        return setter
    return None


def workers() -> int:
    """Threads for a tiled call: ``POSENC_REF_THREADS`` or the CPUs available; 1 without the OpenBLAS call."""
    setting = os.environ.get("POSENC_REF_THREADS", "").strip()
    if setting:
        try:
            count = int(setting)
        except ValueError:
            raise ValueError(f"POSENC_REF_THREADS must be a whole number >= 1, got {setting!r}") from None
        if count < 1:
            raise ValueError(f"POSENC_REF_THREADS must be a whole number >= 1, got {setting!r}")
    else:
        count = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    return count if count == 1 or _openblas_local_threads() is not None else 1


def _single_threaded_blas() -> None:
    setter = _openblas_local_threads()
    if setter is not None:
        setter(1)


def _part(array: Any, b: int, h: int, rows: slice) -> Any:
    """The (batch b, head h, rows) part of an array broadcastable to (B, H, Tq, Tk), 4-D."""
    if array is None:
        return None
    array = array.reshape((1,) * (4 - array.ndim) + array.shape)
    return array[
        slice(b, b + 1) if array.shape[0] > 1 else slice(0, 1),
        slice(h, h + 1) if array.shape[1] > 1 else slice(0, 1),
        rows if array.shape[2] > 1 else slice(0, 1),
    ]


def tiles(p: Pass, width: int) -> Iterator[tuple[tuple[int, int, slice], Pass]]:
    """The tiles of a pass without a logits term (see :func:`tileable`), in (b, h, first row) order,
    each as its own one-head pass.

    ``width`` is how many keys the computation holds at once (all of them for the direct path,
    one key block for the blockwise path): a tile has ``TILE_LOGITS // width`` rows.
    """
    b, h, tq, _ = p.q.shape
    step = max(1, TILE_LOGITS // width)
    for i in range(b):
        for j in range(h):
            kv = slice(j // p.groups, j // p.groups + 1)
            for start in range(0, tq, step):
                rows = slice(start, min(start + step, tq))
                yield (i, j, rows), replace(
                    p,
                    q=p.q[i : i + 1, j : j + 1, rows],
                    k=p.k[i : i + 1, kv],
                    v=p.v[i : i + 1, kv],
                    keep=_part(p.keep, i, j, rows),
                    additive=_part(p.additive, i, j, rows),
                    bias=_part(p.bias, i, j, rows),
                    q_positions=None,  # read only by a logits_term, and passes with one are never tiled
                    k_positions=None,
                    origin=(i, j, start),
                )


def tileable(p: Pass) -> bool:
    """Whether :func:`run` applies: a plain pass (no logits term) with at least ``TILING_MIN`` logits."""
    b, h, tq, _ = p.q.shape
    return p.logits_term is None and b * h * tq * p.k.shape[2] >= TILING_MIN


def run(p: Pass, compute: Callable[[Pass], tuple[F64, F64 | None]], *, width: int,
        weights: bool) -> tuple[F64, F64 | None]:
    """``compute`` (direct or blockwise, returning output and weights or ``None``) over every tile of ``p``.

    ``width``: the keys ``compute`` holds at once (see :func:`tiles`); ``weights``: collect them.

    A tile that raises (a fully masked row under ``fully_masked="error"``) raises here; the
    error of the first such tile in (b, h, row) order wins, as in the untiled call.
    """
    b, h, tq, d = p.q.shape
    out = np.empty((b, h, tq, d))
    all_weights = np.empty((b, h, tq, p.k.shape[2])) if weights else None
    jobs = list(tiles(p, width))

    def one(job: tuple[tuple[int, int, slice], Pass]) -> None:
        (i, j, rows), tile = job
        tile_out, tile_weights = compute(tile)
        out[i, j, rows] = tile_out[0, 0]
        if all_weights is not None and tile_weights is not None:
            all_weights[i, j, rows] = tile_weights[0, 0]

    count = min(workers(), len(jobs))
    if count == 1:
        for job in jobs:
            one(job)
    else:
        with ThreadPoolExecutor(count, initializer=_single_threaded_blas) as pool:
            for _ in pool.map(one, jobs):  # in submission order: the first failing tile raises first
                pass
    return out, all_weights
