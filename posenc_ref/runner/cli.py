"""The ``posenc-ref conformance`` subcommand."""

from __future__ import annotations

import argparse
import fnmatch
import shlex
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from posenc_ref import corpus
from posenc_ref.runner.adapters import BUILTIN, AdapterLoadError, check_adapter, load_adapter
from posenc_ref.runner.engine import Run, run_conformance
from posenc_ref.runner.expectations import ExpectationsError, load_expectations
from posenc_ref.runner.offline import OfflineError, verify_results
from posenc_ref.runner.report import check_report_paths, markdown_report, safe_text, terminal, to_junit, write_json
from posenc_ref.tolerance import DTYPES

EPILOG = """\
ADAPTER is a built-in name (see --list-adapters), mutant:NAME, module:object or
path/to/file.py[:object] or subprocess:COMMAND. Several adapters give a side-by-side matrix.
`posenc-ref conformance verify RESULTS_DIR...` judges folders of results written offline
(layout in conformance/README.md).
--isolate runs each in-process adapter in a child process (one per adapter, restarted after a
crash): a segfault or os._exit there is an error for its case and the run goes on.
Exit status: 0 all passed, 1 a failure (or nothing executed), 2 a usage, adapter or corpus problem.
"""


def seconds(text: str) -> float:
    """An argparse type: a finite number of seconds above 0."""
    from posenc_ref.runner.subprocess_adapter import check_timeout

    try:
        return check_timeout(text, "--timeout")
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def add_conformance_parser(sub: Any) -> None:
    p = sub.add_parser("conformance", help="check an implementation against the golden corpus",
                       description="Run ADAPTER(s) over the golden corpus and judge every (case, output).",
                       epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("adapters", nargs="*", metavar="ADAPTER", help="the implementation(s) to check")
    p.add_argument("--list-adapters", action="store_true", help="list built-in adapters and mutants, then exit")
    p.add_argument("-k", dest="patterns", action="append", default=[], metavar="PATTERN",
                   help="only case ids containing PATTERN (a glob when it has * ? [); repeatable")
    p.add_argument("--case", dest="case_ids", action="append", default=[], metavar="ID", help="only this exact case id")
    p.add_argument("--op", dest="ops", action="append", default=[], metavar="PATTERN",
                   help="only ops matching this glob (e.g. 'sinusoidal.*'); repeatable")
    p.add_argument("--level", choices=("must", "should"), help="only cases of this level")
    p.add_argument("--dtype", choices=DTYPES, help="run the adapter at this dtype (adapters with at_dtype)")
    p.add_argument("--expectations", metavar="FILE", help="the implementation's expectations file (TOML or JSON)")
    p.add_argument("--report-json", metavar="FILE", help="write the JSON report here (compact: passing results brief)")
    p.add_argument("--report-full", action="store_true", help="write every result of the JSON report in full")
    p.add_argument("--junit", metavar="FILE", help="write JUnit XML here")
    p.add_argument("--markdown", metavar="FILE",
                   help="write a Markdown report here: the family x dtype matrix, each adapter's verdict and its "
                        "failures grouped by explanation")
    p.add_argument("--corpus", metavar="PATH", help="corpus directory (default: the bundled corpus)")
    p.add_argument("--allow-modified", action="store_true",
                   help="run even if the corpus fails verification (stamped into the report)")
    p.add_argument("--timeout", type=seconds, default=60.0, metavar="S",
                   help="per-case timeout in seconds, finite and above 0 (default 60); a subprocess adapter's own "
                        "limit (POSENC_SUBPROCESS_TIMEOUT) is lowered to it")
    p.add_argument("--isolate", action="store_true",
                   help="run each in-process adapter in a child process, so a native crash is an error for its case")
    p.add_argument("-v", "--verbose", action="store_true", help="also print not-applicable, skipped and xfail details")
    p.set_defaults(func=main)


def make_selector(patterns: list[str], case_ids: list[str], ops: list[str], level: str | None) -> Any:
    def select(entry: Mapping[str, Any]) -> bool:
        cid = entry["id"]
        if case_ids and cid not in case_ids:
            return False
        if patterns and not any(fnmatch.fnmatchcase(cid, p) if any(ch in p for ch in "*?[") else p in cid
                                for p in patterns):
            return False
        if ops and not any(fnmatch.fnmatchcase(entry["op"], p) for p in ops):
            return False
        return level is None or entry["level"] == level
    return select


def _list_adapters() -> int:
    from posenc_ref.runner.mutants import MUTANTS

    print("built-in adapters:")
    for name, (doc, _) in BUILTIN.items():
        print(f"  {name:<28} {doc}")
    print("mutants (known-bad implementations; each must fail):")
    for name, mutant in MUTANTS.items():
        print(f"  mutant:{name:<21} {mutant.mistake}")
    return 0


def _progress(label: str) -> Any:
    if not sys.stderr.isatty():
        return None

    def show(done: int, total: int, item: str) -> None:
        sys.stderr.write(f"\r{label} [{done}/{total}] {item[:60]:<60}")
        if done == total:
            sys.stderr.write("\r" + " " * (len(label) + 75) + "\r")
        sys.stderr.flush()
    return show


def _load(spec: str, dtype: str | None, isolate: bool) -> Any:
    """The adapter ``spec`` (in a child process under ``--isolate``), at ``dtype`` when given."""
    if isolate and spec not in BUILTIN and not spec.startswith(("subprocess:", "mutant:")):
        from posenc_ref.runner.isolate import IsolatedAdapter

        return check_adapter(IsolatedAdapter(spec, dtype=dtype), spec)
    adapter = load_adapter(spec)
    if dtype and adapter.dtype != dtype:
        if not hasattr(adapter, "at_dtype"):
            raise AdapterLoadError(f"adapter {spec!r} computes in {adapter.dtype} and has no at_dtype()")
        try:
            adapter = check_adapter(adapter.at_dtype(dtype), f"{spec} at {dtype}")
        except AdapterLoadError:
            raise
        except BaseException as exc:  # adapter code, even sys.exit() there
            raise AdapterLoadError(f"adapter {spec!r}: at_dtype({dtype!r}) raised "
                                   f"{type(exc).__name__}: {exc}") from exc
    return adapter


def _usage(message: str) -> int:
    print(safe_text(f"posenc-ref conformance: {message}"), file=sys.stderr)
    return 2


def main(args: argparse.Namespace) -> int:
    if args.list_adapters:
        return _list_adapters()
    if not args.adapters:
        return _usage("give at least one ADAPTER (see --list-adapters)")
    bad_paths = check_report_paths([args.report_json, args.junit, args.markdown])
    if bad_paths:
        return _usage("; ".join(bad_paths))
    try:
        expectations = load_expectations(args.expectations) if args.expectations else []
    except ExpectationsError as exc:
        return _usage(str(exc))
    extra = "".join(f" {flag} {shlex.quote(str(value))}" for flag, value in
                    (("--corpus", args.corpus), ("--expectations", args.expectations), ("--dtype", args.dtype),
                     ("--timeout", args.timeout if args.timeout != 60.0 else None)) if value)
    extra += " --allow-modified" if args.allow_modified else ""
    extra += " --isolate" if args.isolate else ""
    select = make_selector(args.patterns, args.case_ids, args.ops, args.level)
    runs: list[Run] = []
    verify = args.adapters[0] == "verify"
    if verify and len(args.adapters) == 1:
        print("posenc-ref conformance verify: give at least one RESULTS_DIR", file=sys.stderr)
        return 2
    for spec in args.adapters[1:] if verify else args.adapters:
        try:
            if verify:
                runs.append(verify_results(Path(spec), corpus_dir=Path(args.corpus) if args.corpus else None,
                                           select=select, expectations=expectations,
                                           allow_modified=args.allow_modified, rerun_extra=extra))
                continue
            adapter = _load(spec, args.dtype, args.isolate)
            try:
                runs.append(run_conformance(
                    adapter, spec=spec, corpus_dir=Path(args.corpus) if args.corpus else None, select=select,
                    expectations=expectations, allow_modified=args.allow_modified, timeout=args.timeout,
                    progress=_progress(f"conformance {spec}"), rerun_extra=extra))
            finally:
                close = getattr(adapter, "close", None)
                if args.isolate and callable(close):
                    close()
        except AdapterLoadError as exc:
            return _usage(str(exc))
        except OfflineError as exc:
            print(safe_text(f"posenc-ref conformance verify: {exc}"), file=sys.stderr)
            return 2
        except corpus.CorpusError as exc:
            return _usage(f"refusing to run: {exc}")
    print(terminal(runs, verbose=args.verbose))
    if args.report_json:
        write_json(runs, args.report_json, full=args.report_full)
    if args.junit:
        Path(args.junit).write_text(to_junit(runs), encoding="utf-8")
    if args.markdown:
        Path(args.markdown).write_text(safe_text(markdown_report(runs)) + "\n", encoding="utf-8")
    return max(run.exit_code for run in runs)
