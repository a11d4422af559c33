"""Speed and memory of ``rope_apply`` against a minimal hand-written NumPy rotate-half (and torch).

``rope_apply(x, positions)`` with ``x`` of shape (B, H, T, D) = (1, 32, 4096, 128) in float64,
``positions = arange(T)``, default layout (half), base 1e4, measured side by side with:

* the minimal NumPy expression of transformers' ``rotate_half`` formulation,
  ``x * cos + cat(-x2, x1) * sin`` with full-width ``cos``/``sin`` of shape (T, D);
* the same expression in torch on the CPU in float64, when torch is importable (else skipped).

For each: the median wall time over ``--repeats`` calls (``time.perf_counter``, alternating,
after one warm-up call each) and the ratio to ``rope_apply``; for the NumPy pair, the peak
memory ``tracemalloc`` sees during one call, as a multiple of the size of ``x`` (the output
counts, so 1.0x is the floor). The pairs are first checked to compute the same values.

Bars: ``rope_apply`` within 1.5x of each baseline's time; its peak memory <= 2x the size of x
(no d x d rotation matrices, no per-position matrices). Exit status 1 when a bar fails.

    python benchmarks/bench_rope.py [--repeats N]
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

from posenc_ref.rope import rope_apply

TIME_RATIO_BAR = 1.5
MEMORY_BAR = 2.0
SHAPE = (1, 32, 4096, 128)


def rotate_half_by_hand(x: np.ndarray, positions: np.ndarray, base: float = 10000.0) -> np.ndarray:
    """transformers' formulation written out: ``x * cos + rotate_half(x) * sin``."""
    d = x.shape[-1]
    w = base ** (-(2.0 * np.arange(d // 2)) / d)
    angle = positions.astype(np.float64)[:, None] * w
    emb = np.concatenate([angle, angle], axis=-1)
    cos, sin = np.cos(emb), np.sin(emb)
    x1, x2 = x[..., : d // 2], x[..., d // 2:]
    return x * cos + np.concatenate([-x2, x1], axis=-1) * sin


def torch_baseline() -> Callable[[np.ndarray, np.ndarray], Any] | None:
    try:
        import torch
    except ImportError:
        return None

    def rotate_half_torch(x: Any, positions: Any, base: float = 10000.0) -> Any:
        d = x.shape[-1]
        w = 1.0 / base ** (torch.arange(0, d, 2, dtype=torch.float64) / d)
        angle = positions.to(torch.float64)[:, None] * w
        emb = torch.cat([angle, angle], dim=-1)
        x1, x2 = x[..., : d // 2], x[..., d // 2:]
        return x * emb.cos() + torch.cat([-x2, x1], dim=-1) * emb.sin()

    return rotate_half_torch


def median_times(functions: dict[str, Callable[[], Any]], repeats: int) -> dict[str, float]:
    for run in functions.values():
        run()
    samples: dict[str, list[float]] = {name: [] for name in functions}
    for _ in range(repeats):
        for name, run in functions.items():
            start = time.perf_counter()
            run()
            samples[name].append(time.perf_counter() - start)
    return {name: statistics.median(values) for name, values in samples.items()}


def peak_memory(run: Callable[[], Any]) -> int:
    tracemalloc.start()
    tracemalloc.reset_peak()
    result = run()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    del result
    return peak


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args(argv)
    x = np.random.default_rng(0).normal(size=SHAPE)
    positions = np.arange(SHAPE[2])
    reference = rope_apply(x, positions)
    by_hand = rotate_half_by_hand(x, positions)
    print(f"x: {SHAPE} float64, {x.nbytes / 2**20:.0f} MiB; max |reference - hand-written| = "
          f"{float(np.abs(reference - by_hand).max()):.2e}")
    if not np.allclose(reference, by_hand, atol=1e-12):
        print("FAIL the hand-written rotate-half does not compute the same values")
        return 1
    del reference, by_hand
    functions: dict[str, Callable[[], Any]] = {
        "rope_apply": lambda: rope_apply(x, positions),
        "numpy rotate_half": lambda: rotate_half_by_hand(x, positions),
    }
    rotate_torch = torch_baseline()
    if rotate_torch is not None:
        import torch

        xt, pt = torch.from_numpy(x), torch.from_numpy(positions)
        functions["torch cpu float64"] = lambda: rotate_torch(xt, pt)
        if not np.allclose(rotate_torch(xt, pt).numpy(), rope_apply(x, positions), atol=1e-12):
            print("FAIL the torch baseline does not compute the same values")
            return 1
    times = median_times(functions, args.repeats)
    ok = True
    ours = times["rope_apply"]
    print(f"rope_apply: {ours * 1e3:.1f} ms (median of {args.repeats})")
    for name in ("numpy rotate_half", "torch cpu float64"):
        if name not in times:
            print(f"SKIP {name}: torch is not installed")
            continue
        ratio = ours / times[name]
        verdict = "PASS" if ratio <= TIME_RATIO_BAR else "FAIL"
        ok &= verdict == "PASS"
        print(f"{verdict} time vs {name}: {times[name] * 1e3:.1f} ms, ratio {ratio:.2f} (bar <= {TIME_RATIO_BAR})")
    ours_peak = peak_memory(lambda: rope_apply(x, positions)) / x.nbytes
    hand_peak = peak_memory(lambda: rotate_half_by_hand(x, positions)) / x.nbytes
    verdict = "PASS" if ours_peak <= MEMORY_BAR else "FAIL"
    ok &= verdict == "PASS"
    print(f"{verdict} peak memory: rope_apply {ours_peak:.2f}x x, hand-written {hand_peak:.2f}x x "
          f"(bar <= {MEMORY_BAR}x)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
