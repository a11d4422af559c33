"""How long ``posenc-ref model show`` takes for each catalogued model.

For every entry of the model catalogue, ``posenc-ref model show NAME`` is run in this process
(``posenc_ref.cli.main``, output discarded) ``--repeats`` times; the median wall time
(``time.perf_counter``) is printed per model. Bar: every model shows in under 1 s (the
resolution of a config and its per-layer table, nothing heavier). Exit status 1 when it fails.

    python benchmarks/bench_models.py [--repeats N]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import statistics
import sys
import time

from posenc_ref.cli import main as cli_main
from posenc_ref.models.catalogue import CATALOGUE

BAR_S = 1.0


def _show_seconds(name: str) -> float:
    start = time.perf_counter()
    with contextlib.redirect_stdout(io.StringIO()):
        status = cli_main(["model", "show", name])
    seconds = time.perf_counter() - start
    if status != 0:
        raise SystemExit(f"posenc-ref model show {name} exited with status {status}")
    return seconds


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5, help="runs per model (default 5)")
    args = parser.parse_args(argv)
    medians = {name: statistics.median(_show_seconds(name) for _ in range(args.repeats)) for name in CATALOGUE}
    for name, seconds in medians.items():
        print(f"{name:40s} {1000 * seconds:8.1f} ms")
    slowest = max(medians, key=medians.__getitem__)
    ok = medians[slowest] < BAR_S
    print(f"slowest: {slowest} {medians[slowest]:.3f} s (bar < {BAR_S:g} s): {'PASS' if ok else 'FAIL'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
