"""Peak extra memory of Shaw relative attention against the naive (T, T, D) gather.

Run: ``python benchmarks/bench_relative.py [--length 2048] [--dim 64] [--max-relative 16]``.

``posenc_ref.shaw`` works with the ``2K + 1`` distinct clipped distances: the key term is a
``(T, 2K+1)`` product gathered by row index and the value term sums the weights per distance
before one ``(T, 2K+1) @ (2K+1, D)`` product. Its peak extra memory must therefore be
``O(T^2 + T*K*D)``: a handful of ``(T, T)`` arrays (index, logits, flat row ids) plus
``(T, 2K+1)`` and ``(T, D)`` ones. The naive form gathers ``A[r]`` into a ``(T, T, D)`` tensor
(tensor2tensor ``_relative_attention_inner``), ``8 T^2 D`` bytes in float64; it is reported by
size, not allocated. Peaks are measured with ``tracemalloc`` (NumPy reports its buffers to it)
above the inputs already allocated. The run prints PASS when each op's peak stays within
``4 * (8 T^2) + 4 * (8 T (2K+1) D)`` bytes (four (T, T) float64 arrays and four (T, 2K+1, D)
worth of small ones), i.e. O(T^2 + T*K*D) with the constants stated, and below 1/8 of the naive
gather; otherwise FAIL (exit status 1).
"""

from __future__ import annotations

import argparse
import sys
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout, as the docs say

from posenc_ref.shaw import shaw_logits, shaw_output  # noqa: E402

MIB = 2.0**20


def peak_bytes(fn: Callable[[], Any]) -> tuple[int, float]:
    tracemalloc.start()
    tracemalloc.reset_peak()
    base, _ = tracemalloc.get_traced_memory()
    start = time.perf_counter()
    result = fn()
    seconds = time.perf_counter() - start
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    del result
    return peak - base, seconds


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--length", type=int, default=2048)
    parser.add_argument("--dim", type=int, default=64)
    parser.add_argument("--max-relative", type=int, default=16)
    args = parser.parse_args(argv)
    t, d, k = args.length, args.dim, args.max_relative
    rng = np.random.default_rng(0)
    q, keys, values = (rng.normal(size=(t, d)) for _ in range(3))
    table_k, table_v = rng.normal(size=(2 * k + 1, d)), rng.normal(size=(2 * k + 1, d))
    weights = rng.dirichlet(np.ones(t), size=t)
    positions = np.arange(t)
    naive = 8 * t * t * d
    budget = 4 * (8 * t * t) + 4 * (8 * t * (2 * k + 1) * d)
    print(f"Shaw relative attention, T={t}, D={d}, K={k} (float64)")
    print(f"  naive (T, T, D) gather      {naive / MIB:10.1f} MiB (not allocated)")
    print(f"  budget O(T^2 + T*K*D)       {budget / MIB:10.1f} MiB = 4 * 8T^2 + 4 * 8T(2K+1)D")
    ok = True
    runs = {
        "shaw_logits": lambda: shaw_logits(q, keys, table_k, positions, positions, max_relative_position=k),
        "shaw_output": lambda: shaw_output(weights, values, table_v, positions, positions, max_relative_position=k),
    }
    for name, fn in runs.items():
        peak, seconds = peak_bytes(fn)
        passed = peak <= budget and peak * 8 <= naive
        ok &= passed
        print(f"  {name:<27} {peak / MIB:10.1f} MiB peak extra = {peak / (8 * t * t):.2f} x 8T^2, "
              f"{naive / peak:6.1f}x below naive, {seconds:.2f} s  {'PASS' if passed else 'FAIL'}")
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
