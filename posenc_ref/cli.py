"""``posenc-ref``: list ops and cases, show a case, generate/check/verify the corpus, run conformance."""

from __future__ import annotations

import argparse
import fnmatch
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from posenc_ref import __version__


class _Progress:
    """A one-line progress indicator on stderr, shown once work has taken over a second."""

    def __init__(self, label: str) -> None:
        self.label = label
        self.start = time.monotonic()
        self.shown = False

    def __call__(self, done: int, total: int, item: str) -> None:
        if time.monotonic() - self.start < 1.0:
            return
        self.shown = True
        end = "\n" if not sys.stderr.isatty() else ""
        if sys.stderr.isatty() or done == total or done % max(total // 10, 1) == 0:
            sys.stderr.write(f"\r{self.label} [{done}/{total}] {item[:60]:<60}{end}")
            sys.stderr.flush()

    def close(self) -> None:
        if self.shown and sys.stderr.isatty():
            sys.stderr.write("\n")


def _corpus_dir(args: argparse.Namespace) -> Path:
    from posenc_ref import corpus

    return Path(args.corpus) if args.corpus else corpus.default_corpus_dir()


def _cmd_list(args: argparse.Namespace) -> int:
    from posenc_ref.registry import OPS

    for op in OPS:
        if args.op and not fnmatch.fnmatch(op.name, args.op):
            continue
        kinds = {k: sum(c.kind == k for c in op.cases) for k in ("normal", "edge", "long_position", "error")}
        counts = ", ".join(f"{n} {k}" for k, n in kinds.items() if n)
        print(f"{op.name:<22} {op.summary}  [{counts}]")
        if args.cases:
            for case in op.cases:
                tag = f"error:{case.error}" if case.error else case.kind
                print(f"    {case.id:<58} {tag:<24} {case.comment}")
    return 0


def _format_array(array: np.ndarray[Any, Any], limit: int = 8) -> str:
    flat = array.reshape(-1)
    shown = ", ".join(repr(v) for v in flat[:limit].tolist())
    return f"[{shown}{', ...' if flat.size > limit else ''}]"


def _cmd_show(args: argparse.Namespace) -> int:
    from posenc_ref import corpus

    directory = _corpus_dir(args)
    manifest = corpus.read_manifest(directory)
    matches = [c for c in manifest["cases"] if c["id"] == args.case]
    if not matches:
        print(f"posenc-ref show: no case {args.case!r} in {directory} (see `posenc-ref list --cases`)", file=sys.stderr)
        return 2
    golden = corpus.load_case(directory, matches[0])
    entry = golden.entry
    print(f"case     {golden.id}\nop       {golden.op}\nkind     {entry['kind']} ({entry['level']})")
    print(f"comment  {entry['comment']}")
    if entry["flags"]:
        print(f"flags    {', '.join(entry['flags'])}")
    print("params   " + ", ".join(f"{k}={v!r}" for k, v in golden.params.items()))
    for name, array in golden.inputs.items():
        print(f"input    {name}: {array.dtype}{list(array.shape)} {_format_array(array)}")
    if golden.expected_error:
        print(f"expects  error of category {golden.expected_error}")
    for name, out in golden.outputs.items():
        print(f"output   {name}: {out.expected.dtype}{list(out.expected.shape)} tolerance={out.tolerance} "
              f"{_format_array(out.expected)}")
    return 0


def _cmd_golden(args: argparse.Namespace) -> int:
    from posenc_ref import corpus

    if args.action == "generate":
        return _golden_generate(args)
    directory = _corpus_dir(args)
    progress = _Progress(f"golden {args.action}")
    start = time.monotonic()
    if args.action == "audit":
        return _golden_audit(directory, progress, start)
    try:
        problems = corpus.verify(directory) if args.action == "verify" else corpus.check(directory, progress=progress)
    finally:
        progress.close()
    for problem in problems:
        print(f"FAIL {problem}")
    n_cases = len(corpus.read_manifest(directory)["cases"]) if not problems else 0
    if problems:
        print(f"golden {args.action}: {len(problems)} problem(s) in {directory}")
        return 1
    print(f"golden {args.action}: {n_cases} cases OK in {directory} ({time.monotonic() - start:.1f} s)")
    return 0


def _golden_generate(args: argparse.Namespace) -> int:
    from posenc_ref import corpus

    progress = _Progress("golden generate")
    try:
        directory = corpus.generation_target(args.corpus)
        manifest = corpus.generate(directory, progress=progress, force=args.force)
    except corpus.GenerateRefused as exc:
        progress.close()
        print(f"posenc-ref {exc}", file=sys.stderr)
        return 2
    progress.close()
    print(f"wrote {len(manifest['cases'])} cases (corpus version {manifest['version']}) to {directory}")
    return 0


def _golden_audit(directory: Path, progress: _Progress, start: float) -> int:
    from posenc_ref import corpus, corpus_audit

    try:
        rows = corpus_audit.audit(directory, progress=progress)
    except corpus.CorpusError as exc:
        progress.close()
        for problem in exc.problems:
            print(f"FAIL {problem}")
        return 1
    progress.close()
    print(corpus_audit.audit_table(rows))
    above = sum(r.above_half_ulp for r in rows)
    values = sum(r.values for r in rows)
    print(f"golden audit: {values} float values in {directory}, {above} above 0.5 ulp of the exact value "
          f"({time.monotonic() - start:.1f} s)")
    return 1 if above else 0


def _cmd_derive(args: argparse.Namespace) -> int:
    from posenc_ref import derivations
    from posenc_ref.derivations import render

    names = [args.claim] if args.claim else list(derivations.REQUIRED)
    if args.claim and args.claim not in derivations.REQUIRED:
        print(f"posenc-ref derive: unknown claim {args.claim!r} (see `posenc-ref derive`)", file=sys.stderr)
        return 2
    failed = 0
    for name in names:
        result = derivations.verdict(name, numeric=args.check)
        failed += result.status == "failed"
        print(f"{result.status:<8} {name:<40} {result.detail}")
        if args.claim and name in {c.name for c in derivations.CLAIMS}:
            claim = derivations.get_claim(name)
            print(f"\n  {claim.title}\n  {claim.statement}\n  source: {claim.source}")
    if args.write:
        written = render.write(Path(args.write))
        print(f"wrote {len(written)} pages to {args.write}")
    return 1 if failed else 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="posenc-ref",
        description="Reference specification of transformer positional encodings: ops, golden corpus, conformance.",
    )
    parser.add_argument("--version", action="version", version=f"posenc-ref {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p_list = sub.add_parser("list", help="list the registered ops (and their cases)")
    p_list.add_argument("--cases", action="store_true", help="also list every case with its kind and comment")
    p_list.add_argument("--op", metavar="PATTERN", help="only ops matching this glob, e.g. 'sinusoidal.*'")
    p_list.set_defaults(func=_cmd_list)

    p_show = sub.add_parser("show", help="show one golden case: params, shapes, comment, a few values")
    p_show.add_argument("case", metavar="CASE", help="case id (see `posenc-ref list --cases`)")
    p_show.add_argument("--corpus", metavar="PATH", help="corpus directory (default: the bundled corpus)")
    p_show.set_defaults(func=_cmd_show)

    p_golden = sub.add_parser("golden", help="generate, check or verify the golden corpus")
    p_golden.add_argument(
        "action", choices=("generate", "check", "verify", "audit"),
        help="generate: rewrite the corpus from the registry and the mpmath oracle (into the checkout's "
             "golden/, or --corpus DIR; never into an installed package); "
             "check: recompute every case from its stored inputs and compare; "
             "verify: check the manifest schema and every file's sha256; "
             "audit: recompute every float output at twice the oracle's digits and count the values "
             "more than half an ulp from the exact value (must be 0)",
    )
    p_golden.add_argument("--corpus", metavar="PATH",
                          help="corpus directory (default: the bundled corpus; for generate: the checkout's golden/)")
    p_golden.add_argument("--force", action="store_true",
                          help="generate: replace a corpus of another version")
    p_golden.set_defaults(func=_cmd_golden)

    p_derive = sub.add_parser("derive", help="check the sympy derivations and render them as docs")
    p_derive.add_argument("claim", nargs="?", metavar="CLAIM", help="one claim (default: every required claim)")
    p_derive.add_argument("--check", action="store_true",
                          help="also run the numeric tie-back against the reference and the fixed values")
    p_derive.add_argument("--write", metavar="DIR", nargs="?", const="docs/derivations",
                          help="write the Markdown pages (default DIR: docs/derivations)")
    p_derive.set_defaults(func=_cmd_derive)

    from posenc_ref.models.cli import add_model_parser
    from posenc_ref.runner.cli import add_conformance_parser

    add_conformance_parser(sub)
    add_model_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    given = list(sys.argv[1:] if argv is None else argv)
    if given[:1] == ["model"]:  # Note: the model commands start without loading the registry
        from posenc_ref.models.cli import main as model_main

        return model_main(given[1:])
    from posenc_ref import corpus

    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args))
    except corpus.CorpusError as exc:
        print(f"posenc-ref: {exc}", file=sys.stderr)
        return 1
    except BrokenPipeError:  # output piped into head, less, ...: stop quietly
        sys.stderr.close()
        return 0


if __name__ == "__main__":
    sys.exit(main())
