"""Speed of the conformance runner and of ``golden check`` on the bundled corpus.

Measured in one run:

* ``posenc-ref conformance numpy`` end to end (a fresh interpreter, as a user runs it): the
  whole corpus through the float64 reference. Bar: < 10 s. Also the time per case of the
  in-process run.
* Runner overhead: :func:`posenc_ref.runner.engine.run_conformance` with the ``numpy`` adapter
  against a minimal hand-written loop doing the essential work (read the manifest;
  per case :func:`posenc_ref.corpus.load_case`, ``get_op(op).call``, ``np.allclose``, or for an
  error case check that it raises). Median of ``--repeats``. Bar: ratio <= 1.5.
* :func:`posenc_ref.corpus.check` (oracle and reference recomputed from the stored inputs).
  Bar: < 10 s.

When the overhead bar fails (or with ``--profile``) it prints where the runner's time goes,
from ``cProfile``. Exit status 1 when a bar fails.

    python benchmarks/bench_runner.py [--repeats N] [--profile]
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from posenc_ref import corpus
from posenc_ref.errors import SpecError
from posenc_ref.registry import get_op
from posenc_ref.runner.adapters import load_adapter
from posenc_ref.runner.engine import run_conformance

WALL_BAR = 10.0
OVERHEAD_BAR = 1.5
CHECK_BAR = 10.0


def minimal_loop() -> int:
    """The essential work of a conformance run, nothing else; returns the number of cases that agree."""
    directory = corpus.default_corpus_dir()
    agree = 0
    for entry in corpus.read_manifest(directory)["cases"]:
        case = corpus.load_case(directory, entry)
        try:
            outputs = get_op(case.op).call(case.params, case.inputs)
        except SpecError:
            agree += case.expected_error is not None
            continue
        agree += all(np.allclose(outputs[name], out.expected) for name, out in case.outputs.items())
    return agree


def runner() -> Any:
    return run_conformance(load_adapter("numpy"), spec="numpy")


def median_seconds(fn: Callable[[], Any], repeats: int) -> float:
    fn()  # warm-up: imports, file cache
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def verdict(ok: bool) -> str:
    return "PASS" if ok else "FAIL"


# Direct callees of run_conformance / run_batch / run_case that account for its time.
_PARTS = (
    ("_corpus_read.py", "__init__", "corpus.Corpus: reads, hashes and keeps every file once"),
    ("_engine_batch.py", "run_batch", "run_batch: every case on the watched helper thread (adapter calls, judging)"),
)
def profile_runner(repeats: int, cases: int) -> None:
    """Where run_conformance spends its time (cProfile of the main thread, ``repeats`` runs)."""
    runner()
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(repeats):
        runner()
    profiler.disable()
    stats = pstats.Stats(profiler).stats  # type: ignore[attr-defined]
    engine = {key for key in stats if key[0].endswith("engine.py") and key[2] == "run_conformance"}
    total = sum(stats[key][3] for key in engine)
    print(f"  where run_conformance's time goes (cProfile, main thread, {repeats} runs, "
          f"{total / repeats * 1e3:.1f} ms/run under the profiler; the helper thread is not profiled):")
    accounted = 0.0
    for file_suffix, function, label in _PARTS:
        seconds = sum(ct for key, (_, _, _, _, callers) in stats.items()
                      if key[0].endswith(file_suffix) and key[2] == function
                      for caller, (_, _, _, ct) in callers.items() if caller in engine)
        accounted += seconds
        print(f"    {seconds / total:6.1%}  {label}")
    print(f"    {1 - accounted / total:6.1%}  the rest of run_conformance (expectations, report metadata)")

    directory = corpus.default_corpus_dir()
    loaded = [corpus.load_case(directory, e) for e in corpus.read_manifest(directory)["cases"]]

    def adapter_calls() -> None:
        for case in loaded:
            try:
                get_op(case.op).call(case.params, case.inputs)
            except SpecError:
                pass

    verify = median_seconds(lambda: corpus.Corpus(directory), repeats)
    print(f"  unprofiled: reading and verifying the corpus {verify * 1e3:.1f} ms/run; the adapter's own calls "
          f"{median_seconds(adapter_calls, repeats) * 1e3:.1f} ms/run")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=9, help="timed repeats of each measurement (default 9)")
    parser.add_argument("--profile", action="store_true", help="always print the cProfile breakdown")
    args = parser.parse_args(argv)
    ok = True

    cli = [sys.executable, "-m", "posenc_ref.cli", "conformance", "numpy"]
    walls = []
    for _ in range(3):
        start = time.perf_counter()
        done = subprocess.run(cli, capture_output=True, text=True)
        walls.append(time.perf_counter() - start)
    wall = statistics.median(walls)
    run = runner()
    cases = run.corpus["cases_selected"]
    t_runner = median_seconds(runner, args.repeats)
    wall_ok = wall < WALL_BAR and done.returncode == 0
    ok &= wall_ok
    print(f"posenc-ref conformance numpy: {cases} cases, exit {done.returncode}")
    print(f"  wall time      {verdict(wall_ok)}  {wall:.2f} s end to end, median of 3 (bar < {WALL_BAR:g} s)")
    print(f"  per case       {t_runner / cases * 1e3:.2f} ms in process ({t_runner * 1e3:.1f} ms for the corpus)")

    t_minimal = median_seconds(minimal_loop, args.repeats)
    if minimal_loop() != cases:
        print("  the minimal loop disagrees with the reference on some case")
        ok = False
    ratio = t_runner / t_minimal
    overhead_ok = ratio <= OVERHEAD_BAR
    ok &= overhead_ok
    print(f"  overhead       {verdict(overhead_ok)}  run_conformance {t_runner * 1e3:.1f} ms / minimal loop "
          f"{t_minimal * 1e3:.1f} ms = {ratio:.2f}x, median of {args.repeats} (bar <= {OVERHEAD_BAR:g}x)")
    if args.profile or not overhead_ok:
        profile_runner(args.repeats, cases)

    start = time.perf_counter()
    problems = corpus.check(corpus.default_corpus_dir())
    t_check = time.perf_counter() - start
    check_ok = t_check < CHECK_BAR and not problems
    ok &= check_ok
    print(f"golden check: {len(problems)} problem(s)")
    print(f"  wall time      {verdict(check_ok)}  {t_check:.2f} s (bar < {CHECK_BAR:g} s)")
    print("bench_runner:", verdict(ok))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
