"""Speed and memory of the absolute-position references against minimal hand-written NumPy.

Two pairs, measured side by side in one run:

* ``sinusoidal_table(np.arange(8192), dim=1024)`` against the paper's formula written out
  (``pe[:, 0::2] = sin(p * w)``, ``pe[:, 1::2] = cos(p * w)``);
* ``grid_sincos_2d(*grid_coords(64, 64), dim=768)`` against an MAE-style expression (per-axis
  ``concatenate([sin, cos])``, then ``concatenate([x block, y block])``).

For each: the median wall time over ``--repeats`` calls (``time.perf_counter``, the two
functions alternating, after one warm-up call each), their ratio, and the peak memory that
``tracemalloc`` sees during one call as a multiple of the output's size (the output itself
counts, so 1.0x is the floor). The two are first checked to compute the same values.

Bars: time ratio reference / hand-written <= 1.3, reference peak memory <= 2x its output.
Exit status 1 when a bar fails.

    python benchmarks/bench_absolute.py [--repeats N]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import tracemalloc
from collections.abc import Callable
from typing import Any

import numpy as np

from posenc_ref import grid_coords, grid_sincos_2d, sinusoidal_table

TIME_RATIO_BAR = 1.3
MEMORY_BAR = 2.0


def sinusoid_by_hand(length: int = 8192, dim: int = 1024, base: float = 10000.0) -> np.ndarray:
    """Vaswani et al. 2017, section 3.5, interleaved: the minimal NumPy expression."""
    p = np.arange(length, dtype=np.float64)[:, None]
    w = base ** (-(2.0 * np.arange(dim // 2)) / dim)
    pe = np.empty((length, dim))
    pe[:, 0::2] = np.sin(p * w)
    pe[:, 1::2] = np.cos(p * w)
    return pe


def mae_by_hand(height: int = 64, width: int = 64, dim: int = 768, base: float = 10000.0) -> np.ndarray:
    """MAE-style 2-D sin-cos: [sin(x w) | cos(x w) | sin(y w) | cos(y w)], row-major patches."""
    def axis(d: int, coords: np.ndarray) -> np.ndarray:
        omega = 1.0 / base ** (np.arange(d // 2, dtype=np.float64) / (d / 2.0))
        angles = np.outer(coords.reshape(-1), omega)
        return np.concatenate([np.sin(angles), np.cos(angles)], axis=1)

    xs, ys = np.meshgrid(np.arange(width, dtype=np.float64), np.arange(height, dtype=np.float64))
    return np.concatenate([axis(dim // 2, xs), axis(dim // 2, ys)], axis=1)


def peak_memory(fn: Callable[[], Any]) -> int:
    """Peak bytes traced by ``tracemalloc`` during one call of ``fn`` (its result included)."""
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        before = tracemalloc.get_traced_memory()[0]
        result = fn()
        peak = tracemalloc.get_traced_memory()[1] - before
        del result
    finally:
        tracemalloc.stop()
    return peak


def median_times(fns: list[Callable[[], Any]], repeats: int) -> list[float]:
    """Median seconds per call of each function, calls alternating, one warm-up call each."""
    for fn in fns:
        fn()
    samples: list[list[float]] = [[] for _ in fns]
    for _ in range(repeats):
        for fn, times in zip(fns, samples):
            start = time.perf_counter()
            fn()
            times.append(time.perf_counter() - start)
    return [statistics.median(times) for times in samples]


def verdict(ok: bool) -> str:
    return "PASS" if ok else "FAIL"


def compare(title: str, reference: Callable[[], np.ndarray], by_hand: Callable[[], np.ndarray],
            repeats: int) -> bool:
    ref_out, hand_out = reference(), by_hand()
    same = ref_out.shape == hand_out.shape and bool(np.allclose(ref_out, hand_out, rtol=0.0, atol=1e-12))
    diff = float(np.abs(ref_out - hand_out).max()) if ref_out.shape == hand_out.shape else float("nan")
    size = ref_out.nbytes
    del ref_out, hand_out
    t_ref, t_hand = median_times([reference, by_hand], repeats)
    m_ref, m_hand = peak_memory(reference) / size, peak_memory(by_hand) / size
    ratio = t_ref / t_hand
    time_ok, memory_ok = ratio <= TIME_RATIO_BAR, m_ref <= MEMORY_BAR
    print(f"{title}  (output {size / 2**20:.1f} MiB, median of {repeats})")
    print(f"  reference      {t_ref * 1e3:8.1f} ms   peak memory {m_ref:.2f}x output")
    print(f"  hand-written   {t_hand * 1e3:8.1f} ms   peak memory {m_hand:.2f}x output")
    print(f"  same values    {verdict(same)}  (np.allclose, atol 1e-12; max |difference| {diff:.3g})")
    print(f"  time ratio     {verdict(time_ok)}  reference / hand-written = {ratio:.2f} (bar <= {TIME_RATIO_BAR})")
    print(f"  memory         {verdict(memory_ok)}  reference peak = {m_ref:.2f}x output (bar <= {MEMORY_BAR:g}x)")
    return same and time_ok and memory_ok


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=15, help="timed calls per function (default 15)")
    args = parser.parse_args(argv)
    results = [
        compare("sinusoidal_table(np.arange(8192), dim=1024) vs interleaved formula by hand",
                lambda: sinusoidal_table(np.arange(8192), dim=1024), sinusoid_by_hand, args.repeats),
        compare("grid_sincos_2d(*grid_coords(64, 64), dim=768) vs MAE-style by hand",
                lambda: grid_sincos_2d(*grid_coords(64, 64), dim=768), mae_by_hand, args.repeats),
    ]
    passed = all(results)
    print("bench_absolute:", "PASS" if passed else "FAIL")
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
