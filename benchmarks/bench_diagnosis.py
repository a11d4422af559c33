"""How often the runner's diagnosis names the planted bug of the mutant catalogue, and how fast.

For every mutant with a nameable bug (``Mutant.diagnosis``), the share of its failing outputs
whose diagnosis names it (:mod:`posenc_ref.runner.diagnosis_measure`). Bars: >= 90% of those
mutants have >= 90% of their failing outputs named; no failing case takes 1 s or more to
diagnose (the search is bounded by ``diagnosis.MAX_HYPOTHESES``). Exit status 1 when a bar fails.

    python benchmarks/bench_diagnosis.py [--verbose] [MUTANT ...]
"""

from __future__ import annotations

import argparse
import statistics
import sys

from posenc_ref.runner.diagnosis_measure import score_all, summary


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("mutants", nargs="*", help="mutant names (default: every nameable one)")
    parser.add_argument("--verbose", action="store_true", help="print the diagnosis of each output not named")
    args = parser.parse_args(argv)
    scores = score_all(args.mutants or None)
    for s in scores:
        median = statistics.median(s.seconds) if s.seconds else 0.0
        print(f"{s.name:48s} {s.named:4d}/{s.failing:<4d} named ({100 * s.share:5.1f}%)  "
              f"diagnosis median {1000 * median:6.1f} ms, max {1000 * max(s.seconds, default=0.0):6.1f} ms")
        if args.verbose:
            for line in s.missed:
                print(f"    not named: {line}")
    outputs, mutants, slowest = summary(scores)
    ok_share, ok_time = mutants >= 0.9, slowest < 1.0
    print(f"failing outputs named: {100 * outputs:.1f}%; mutants with >= 90% named: {100 * mutants:.1f}% "
          f"(bar 90%): {'PASS' if ok_share else 'FAIL'}")
    print(f"slowest diagnosis of one failing case: {slowest:.3f} s (bar < 1 s): {'PASS' if ok_time else 'FAIL'}")
    return 0 if ok_share and ok_time else 1


if __name__ == "__main__":
    sys.exit(main())
