"""Speed and memory of the attention pass, side by side (one run; prints PASS/FAIL per bar).

Bars (issue: the NumPy attention pass):

* direct path at B=1, H=8, T=2048, D=64, float64: within 1.5x of a minimal NumPy
  einsum-softmax expression, and within 2x of torch ``scaled_dot_product_attention`` on CPU in
  float64 when torch is importable;
* causal attention on the same shape within 1.5x of torch SDPA with ``is_causal=True``, measured
  in the same run (the fully masked key blocks are skipped, see ``_attention_blockwise``);
* blockwise path at H=1, T=32768, D=64: peak traced memory under 1 GB (the weights alone
  would take 8 GiB), printed with its time.

Run: ``PYTHONPATH=. python benchmarks/bench_attention.py`` from the repository root (``--quick`` shrinks
the blockwise case to T=8192 for a smoke run).
"""

from __future__ import annotations

import os
import sys
import time
import tracemalloc
from collections.abc import Callable
from typing import Any

import numpy as np

from posenc_ref._attention_tiles import workers
from posenc_ref.attention import attention


def best_of(*fns: Callable[[], Any], repeat: int = 7) -> list[float]:
    """Best time of each function, the runs interleaved so that a change of machine load hits all of them."""
    times: list[list[float]] = [[] for _ in fns]
    for _ in range(repeat):
        for fn, record in zip(fns, times):
            start = time.perf_counter()
            fn()
            record.append(time.perf_counter() - start)
    return [min(record) for record in times]


def minimal(q: np.ndarray, k: np.ndarray, v: np.ndarray) -> np.ndarray:
    s = np.einsum("bhqd,bhkd->bhqk", q, k) / np.sqrt(q.shape[-1])
    s = np.exp(s - s.max(axis=-1, keepdims=True))
    s /= s.sum(axis=-1, keepdims=True)
    return np.einsum("bhqk,bhkd->bhqd", s, v)


def verdict(ok: bool) -> str:
    return "PASS" if ok else "FAIL"


def main(argv: list[str]) -> int:
    rng = np.random.default_rng(0)
    failures = 0
    # the machine's load changes every figure below: print it with them
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs, NumPy {np.__version__}, "
          f"posenc-ref tiles on {workers()} thread(s)")
    b, h, t, d = 1, 8, 2048, 64
    q, k, v = (rng.normal(size=(b, h, t, d)) for _ in range(3))
    ours, base = best_of(lambda: attention(q, k, v), lambda: minimal(q, k, v))
    assert np.allclose(attention(q, k, v), minimal(q, k, v), rtol=1e-10, atol=1e-12)
    ok = ours <= 1.5 * base
    failures += not ok
    print(f"direct  B={b} H={h} T={t} D={d} float64: posenc-ref {ours * 1e3:.1f} ms, "
          f"einsum-softmax {base * 1e3:.1f} ms, ratio {ours / base:.2f} (bar 1.5x) {verdict(ok)}")
    try:
        import torch
    except ImportError:
        print("torch SDPA CPU float64: torch not importable, bar not measured")
    else:
        tq, tk, tv = (torch.from_numpy(a) for a in (q, k, v))
        ours, sdpa = best_of(lambda: attention(q, k, v),
                             lambda: torch.nn.functional.scaled_dot_product_attention(tq, tk, tv))
        ok = ours <= 2.0 * sdpa
        failures += not ok
        print(f"torch {torch.__version__} SDPA CPU float64 ({torch.get_num_threads()} threads) {sdpa * 1e3:.1f} ms, "
              f"posenc-ref {ours * 1e3:.1f} ms, ratio {ours / sdpa:.2f} (bar 2x) "
              f"{verdict(ok)}")
        # causal: the fully masked key blocks are skipped (bar 1.5x of SDPA's causal kernel)
        ours, sdpa = best_of(lambda: attention(q, k, v, causal=True),
                             lambda: torch.nn.functional.scaled_dot_product_attention(tq, tk, tv, is_causal=True))
        close = np.allclose(attention(q, k, v, causal=True), torch.nn.functional.scaled_dot_product_attention(
            tq, tk, tv, is_causal=True).numpy(), rtol=1e-10, atol=1e-12)
        ok = ours <= 1.5 * sdpa and close
        failures += not ok
        print(f"torch {torch.__version__} SDPA causal CPU float64 ({torch.get_num_threads()} threads) "
              f"{sdpa * 1e3:.1f} ms, posenc-ref causal {ours * 1e3:.1f} ms, ratio {ours / sdpa:.2f} (bar 1.5x) "
              f"{verdict(ok)}")

    t_long = 8192 if "--quick" in argv else 32768
    q, k, v = (rng.normal(size=(1, 1, t_long, d)) for _ in range(3))
    tracemalloc.start()
    start = time.perf_counter()
    out = attention(q, k, v)
    seconds = time.perf_counter() - start
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    ok = peak < 2**30 and bool(np.isfinite(out).all())
    failures += not ok
    weights_bytes = t_long * t_long * 8
    print(f"blockwise H=1 T={t_long} D={d} float64: {seconds:.1f} s, peak traced memory {peak / 2**20:.0f} MiB "
          f"(the weights alone: {weights_bytes / 2**30:.1f} GiB; bar 1 GiB) {verdict(ok)}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
