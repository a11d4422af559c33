"""Speed of the ALiBi and T5 bias references against the minimal NumPy expression (and torch CPU).

Bar: at H=32, T=4096 (a (32, 4096, 4096) float64 bias, 4.3 GB), each reference op takes at
most 1.5x the time of the shortest NumPy expression that computes the same numbers; when torch
is importable, torch CPU (float64, same expression) is timed and printed too. Prints one PASS or
FAIL line per op and exits 1 on any FAIL.

Run from the repository root: ``python benchmarks/bench_bias.py [--heads 32] [--length 4096]``.
The minimal expressions are written here, independently of the reference, and checked equal
(on a 512-position block, so that two full outputs never have to fit in memory at once).
"""

from __future__ import annotations

import argparse
import gc
import math
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from posenc_ref.alibi import alibi_bias, alibi_slopes  # noqa: E402
from posenc_ref.t5 import t5_bias  # noqa: E402

BAR = 1.5


def best_of(fn: Callable[[], Any], repeat: int) -> tuple[float, None]:
    """Smallest wall time over ``repeat`` runs (each result dropped before the next run)."""
    best = math.inf
    for _ in range(repeat):
        gc.collect()
        start = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - start)
        del result
    return best, None


def alibi_minimal(slopes: np.ndarray, positions: np.ndarray) -> np.ndarray:
    return slopes[:, None, None] * (positions[None, :] - positions[:, None]).astype(np.float64)


def t5_minimal(table: np.ndarray, positions: np.ndarray) -> np.ndarray:
    """transformers' bucket formula (float64, bidirectional 32/128) and a gather per head."""
    rel = positions[None, :] - positions[:, None]
    side, exact = 16, 8
    n = np.abs(rel)
    large = exact + (np.log(np.maximum(n, 1) / exact) / math.log(128 / exact) * (side - exact)).astype(np.int64)
    buckets = np.where(rel > 0, side, 0) + np.where(n < exact, n, np.minimum(large, side - 1))
    return table.T[:, buckets]


def small_outputs(name: str, positions: np.ndarray, heads: int, table: np.ndarray) -> tuple[Any, Any]:
    if name == "alibi":
        return (alibi_bias(positions, positions, num_heads=heads),
                alibi_minimal(alibi_slopes(num_heads=heads), positions))
    return t5_bias(positions, positions, table), t5_minimal(table, positions)


def torch_versions(slopes: np.ndarray, table: np.ndarray, positions: np.ndarray) -> dict[str, Callable[[], Any]]:
    try:
        import torch
    except ImportError:
        return {}
    s, tab, p = torch.from_numpy(slopes), torch.from_numpy(table), torch.from_numpy(positions)

    def alibi() -> Any:
        return s[:, None, None] * (p[None, :] - p[:, None]).to(torch.float64)

    def t5() -> Any:
        rel = p[None, :] - p[:, None]
        n = rel.abs()
        large = 8 + (torch.log(n.clamp(min=1).to(torch.float64) / 8) / math.log(16) * 8).to(torch.int64)
        buckets = (rel > 0).to(torch.int64) * 16 + torch.where(n < 8, n, large.clamp(max=15))
        return tab.T[:, buckets]

    return {"alibi": alibi, "t5": t5}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--heads", type=int, default=32)
    parser.add_argument("--length", type=int, default=4096)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)
    heads, length = args.heads, args.length
    positions = np.arange(length, dtype=np.int64)
    slopes = alibi_slopes(num_heads=heads)
    table = np.random.default_rng(0).normal(size=(32, heads))
    size_gb = heads * length * length * 8 / 1e9
    print(f"H={heads} T={length}: each bias is ({heads}, {length}, {length}) float64, {size_gb:.1f} GB")
    ops = {
        "alibi": (lambda: alibi_bias(positions, positions, num_heads=heads), lambda: alibi_minimal(slopes, positions)),
        "t5": (lambda: t5_bias(positions, positions, table), lambda: t5_minimal(table, positions)),
    }
    extra = torch_versions(slopes, table, positions)
    failed = False
    for name, (reference, minimal) in ops.items():
        small = np.arange(min(length, 512))  # equality on a smaller block, so two outputs never coexist at full size
        same = bool(np.array_equal(*small_outputs(name, small, heads, table)))
        t_ref = t_min = math.inf
        for _ in range(args.repeat):  # alternate the two so that drift in the machine hits both alike
            t_ref = min(t_ref, best_of(reference, 1)[0])
            t_min = min(t_min, best_of(minimal, 1)[0])
        ratio = t_ref / t_min
        line = f"{name}: reference {t_ref:.3f} s, minimal NumPy {t_min:.3f} s, ratio {ratio:.2f} (bar {BAR})"
        if name in extra:
            t_torch, _ = best_of(extra[name], args.repeat)
            line += f", torch CPU {t_torch:.3f} s"
        ok = same and ratio <= BAR
        failed |= not ok
        print(("PASS " if ok else "FAIL ") + line + ("" if same else " [outputs differ]"))
    if not extra:
        print("torch not importable: torch CPU not timed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
