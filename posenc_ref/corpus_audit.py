"""Two generation-side checks of a corpus: byte comparison of two corpora, and the rounding audit.

* :func:`compare` compares two corpus directories file by file, bytes of everything (every
  array and the manifest), and names each differing file with the number of differing elements
  and the largest ulp distance. The manifest's ``generator.versions`` (the versions of the
  generating software) is information only and is left out of the comparison.
* :func:`audit` recomputes every float output of a corpus with the oracle at twice its digits
  and counts, per op, the stored values that are not the correctly rounded value of the
  op's formula (more than half an ulp from the exact value).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from posenc_ref import corpus

Progress = Callable[[int, int, str], None]


def _files(directory: Path) -> set[str]:
    return {p.relative_to(directory).as_posix() for p in directory.rglob("*") if p.is_file()}


def _comparable_manifest(path: Path) -> Any:
    manifest = json.loads(path.read_text())
    node = manifest
    for key in corpus.INFORMATION_ONLY[:-1]:
        node = node.get(key, {}) if isinstance(node, dict) else {}
    if isinstance(node, dict):
        node.pop(corpus.INFORMATION_ONLY[-1], None)
    return manifest


def _manifest_difference(expected: Path, actual: Path) -> list[str]:
    a, b = _comparable_manifest(expected), _comparable_manifest(actual)
    if json.dumps(a, indent=1) == json.dumps(b, indent=1):
        return []
    keys = sorted(k for k in set(a) | set(b) if k != "cases" and a.get(k) != b.get(k))
    cases_a = {c.get("id"): c for c in a.get("cases", [])}
    cases_b = {c.get("id"): c for c in b.get("cases", [])}
    cases = sorted(str(cid) for cid in set(cases_a) | set(cases_b) if cases_a.get(cid) != cases_b.get(cid))
    order = [] if cases or keys else ["the case order"]
    shown = ", ".join(keys + [f"case {c}" for c in cases[:10]] + order)
    more = f" and {len(cases) - 10} more cases" if len(cases) > 10 else ""
    return [f"manifest.json: differs in {shown}{more}"]


def ulp_distances(a: NDArray[Any], b: NDArray[Any]) -> NDArray[np.float64]:
    """Per element, the distance in float64 ulps between ``a`` and ``b`` (0 where both are NaN)."""
    def key(x: NDArray[Any]) -> NDArray[np.uint64]:
        bits = np.ascontiguousarray(x, dtype=np.float64).view(np.uint64)
        sign = np.uint64(1 << 63)
        return np.where(bits & sign, ~bits, bits | sign)  # unsigned keys in the order of the floats

    ka, kb = key(a), key(b)
    distance = np.where(ka > kb, ka - kb, kb - ka).astype(np.float64)
    both_nan = np.isnan(np.asarray(a, dtype=np.float64)) & np.isnan(np.asarray(b, dtype=np.float64))
    return np.asarray(np.where(both_nan, 0.0, distance), dtype=np.float64)


def _array_difference(relative: str, expected: Path, actual: Path) -> str:
    a = np.load(expected, allow_pickle=False)
    b = np.load(actual, allow_pickle=False)
    if a.dtype != b.dtype or a.shape != b.shape:
        return f"{relative}: {b.dtype.name}{list(b.shape)} where {a.dtype.name}{list(a.shape)} is expected"
    count = 0
    if a.size:
        bytes_a = np.ascontiguousarray(a).view(np.uint8).reshape(a.size, -1)
        bytes_b = np.ascontiguousarray(b).view(np.uint8).reshape(b.size, -1)
        count = int((bytes_a != bytes_b).any(axis=-1).sum())
    detail = f"{count} of {a.size} elements differ"
    if a.dtype == np.float64 and count:
        detail += f", largest distance {ulp_distances(a, b).max():.0f} ulp"
    elif count == 0:
        detail = "same values, different file bytes (header)"
    return f"{relative}: {detail}"


def compare(expected: Path, actual: Path) -> list[str]:
    """Every difference between the corpus in ``expected`` and the one in ``actual`` (empty: identical).

    Each ``.npy`` file is compared byte for byte; a differing one is named with the number of
    differing elements and the largest ulp distance. The manifest is compared byte for byte
    as JSON after leaving out ``generator.versions``. Files present on one side only are named.
    """
    expected, actual = Path(expected), Path(actual)
    files_a, files_b = _files(expected), _files(actual)
    problems = [f"{f}: missing from {actual}" for f in sorted(files_a - files_b)]
    problems += [f"{f}: not in {expected}" for f in sorted(files_b - files_a)]
    for relative in sorted(files_a & files_b):
        a, b = expected / relative, actual / relative
        if relative == "manifest.json":
            problems += _manifest_difference(a, b)
        elif a.read_bytes() != b.read_bytes():
            problems.append(_array_difference(relative, a, b) if relative.endswith(".npy") else
                            f"{relative}: the bytes differ")
    return problems


@dataclass
class AuditRow:
    """One op's audit: float values checked, the largest distance and the count above half an ulp."""

    op: str
    values: int = 0
    max_ulp: float = 0.0
    above_half_ulp: int = 0


def audit(directory: Path, *, dps: int | None = None, ops: set[str] | None = None,
          progress: Progress | None = None) -> list[AuditRow]:
    """Recompute every float output of the corpus in ``directory`` at ``dps`` digits (default twice the oracle's).

    ``ops`` limits the audit to those ops (default: every op).

    A stored value is correctly rounded (within half an ulp of the exact value of the formula)
    exactly when it equals the value the oracle rounds from the higher precision, so a nonzero
    distance counts as above half an ulp. Any intact corpus is audited, not only the shipped one. Raises
    :class:`posenc_ref.corpus.CorpusError` for a corrupt corpus.
    """
    from posenc_ref import oracle

    digits = 2 * oracle.DPS if dps is None else dps
    loaded = corpus.Corpus(Path(directory))
    problems = [p for p in loaded.problems if p != loaded.digest_problem]  # Note: any intact corpus can be audited
    if problems:
        raise corpus.CorpusError(problems)
    rows: dict[str, AuditRow] = {}
    entries = [e for e in loaded.cases if not e.get("expected_error") and (ops is None or e["op"] in ops)]
    for n, entry in enumerate(entries, 1):
        if progress:
            progress(n, len(entries), entry["id"])
        golden = loaded.case(entry)
        floats = {name: out for name, out in golden.outputs.items() if out.expected.dtype == np.float64}
        row = rows.setdefault(entry["op"], AuditRow(entry["op"]))
        if not floats:
            continue
        fresh = oracle.expected(entry["op"], entry["params"], golden.inputs, dps=digits)
        for name, out in floats.items():
            recomputed = np.asarray(fresh[name], dtype=np.float64).reshape(out.expected.shape)
            distance = ulp_distances(out.expected, recomputed)
            row.values += distance.size
            row.max_ulp = max(row.max_ulp, float(distance.max(initial=0.0)))
            row.above_half_ulp += int((distance > 0).sum())
    return [row for row in rows.values() if row.values]


def audit_table(rows: list[AuditRow]) -> str:
    """The audit as a Markdown table, with a total row."""
    lines = ["| op | float values checked | max ulp | values above 0.5 ulp |", "|---|---:|---:|---:|"]
    lines += [f"| `{r.op}` | {r.values} | {r.max_ulp:.0f} | {r.above_half_ulp} |" for r in rows]
    total = AuditRow("total", sum(r.values for r in rows), max((r.max_ulp for r in rows), default=0.0),
                     sum(r.above_half_ulp for r in rows))
    lines.append(f"| **{total.op}** | {total.values} | {total.max_ulp:.0f} | {total.above_half_ulp} |")
    return "\n".join(lines)


# --- the measured errors of the float64 reference (docs/tolerance.md) ----------------------

TABLE_BEGIN = ("<!-- reference-errors: begin (generated by python -m posenc_ref.corpus_audit --write "
               "docs/tolerance.md) -->")
TABLE_END = "<!-- reference-errors: end -->"


@dataclass
class ReferenceRow:
    """The float64 reference against the stored oracle values, over one output of one op."""

    op: str
    output: str
    tolerance: str
    elements: int = 0
    max_ulp: float = 0.0
    max_ulp_small_phase: float | None = None
    headroom: float = math.inf
    where: str = ""


def blas_core() -> str:
    """The kernel (core name) and thread count of the OpenBLAS bundled with NumPy, or ``"unknown"``."""
    import ctypes
    import glob
    import os

    for path in glob.glob(os.path.join(os.path.dirname(np.__file__), "..", "numpy.libs", "*openblas*")):
        lib = ctypes.CDLL(path)
        for suffix in ("64_", ""):
            for prefix in ("scipy_openblas", "openblas"):
                core = getattr(lib, f"{prefix}_get_corename{suffix}", None)
                threads = getattr(lib, f"{prefix}_get_num_threads{suffix}", None)
                if core is not None and threads is not None:
                    core.restype = ctypes.c_char_p
                    return f"{core().decode()}, threads={threads()}"
    return "unknown"


def measured_on() -> str:
    """NumPy's version and SIMD targets and OpenBLAS's kernel: the reference's last bits depend on them."""
    from numpy._core import _multiarray_umath as umath  # type: ignore[attr-defined]

    found = [k for k, v in umath.__cpu_features__.items() if v]
    dispatch = sorted(set(getattr(umath, "__cpu_dispatch__", found)) & set(found))
    return f"NumPy {np.__version__}, SIMD targets {' '.join(dispatch) or 'baseline only'}, OpenBLAS {blas_core()}"


def reference_errors(directory: Path) -> list[ReferenceRow]:
    """Per op output: the float64 reference's largest ulp distance and smallest headroom against the corpus."""
    from posenc_ref.registry import get_op
    from posenc_ref.tolerance import compare as judge
    from posenc_ref.tolerance import policy

    loaded = corpus.Corpus(Path(directory))
    if loaded.problems:
        raise corpus.CorpusError(loaded.problems)
    rows: dict[tuple[str, str], ReferenceRow] = {}
    for entry in loaded.cases:
        if entry.get("expected_error"):
            continue
        op, golden = get_op(entry["op"]), loaded.case(entry)
        actual = op.call(entry["params"], golden.inputs)
        for name, out in golden.outputs.items():
            row = rows.setdefault((op.name, name), ReferenceRow(op.name, name, out.tolerance))
            expected = out.expected
            got = np.asarray(actual[name]).astype(expected.dtype).reshape(expected.shape)
            row.elements += expected.size
            if expected.dtype != np.float64:
                row.headroom = min(row.headroom, math.inf if np.array_equal(got, expected) else 0.0)
                continue
            distance = ulp_distances(got, expected)
            row.max_ulp = max(row.max_ulp, float(distance.max(initial=0.0)))
            if out.tolerance == "phase" and out.phase is not None:
                small = np.broadcast_to(np.abs(out.phase) < 1, expected.shape)  # a phase may broadcast
                row.max_ulp_small_phase = max(row.max_ulp_small_phase or 0.0,
                                              float(distance[small].max(initial=0.0)))
            verdict = judge(got, expected, policy(out.tolerance, "float64"), out.phase, out.input_scale)
            if verdict.headroom < row.headroom:
                row.headroom, row.where = verdict.headroom, entry["id"]
    return list(rows.values())


def reference_errors_table(rows: list[ReferenceRow]) -> str:
    """The measured-errors table of docs/tolerance.md, with the environment it was measured in."""
    def number(x: float | None) -> str:
        return "" if x is None else f"{x:.0f}"

    lines = [f"Measured with {measured_on()}.", "",
             "| op (output) | class | elements | max ulp | max ulp where $\\lvert\\theta\\rvert < 1$ | "
             "headroom (allowed / error) | at |",
             "|---|---|---:|---:|---:|---:|---|"]
    for r in rows:
        headroom = "exact" if math.isinf(r.headroom) else f"{r.headroom:.3g}"
        lines.append(f"| `{r.op}` (`{r.output}`) | `{r.tolerance}` | {r.elements} | {number(r.max_ulp)} | "
                     f"{number(r.max_ulp_small_phase)} | {headroom} | {f'`{r.where}`' if r.where else ''} |")
    return "\n".join(lines)


def page_table(page: str) -> str:
    """The generated block of ``page`` (between ``TABLE_BEGIN`` and ``TABLE_END``)."""
    start, end = page.index(TABLE_BEGIN) + len(TABLE_BEGIN), page.index(TABLE_END)
    return page[start:end].strip("\n")


def main(argv: list[str] | None = None) -> int:
    """``python -m posenc_ref.corpus_audit [--write PAGE]``: print (or write into PAGE) the measured-errors table."""
    import argparse

    parser = argparse.ArgumentParser(prog="python -m posenc_ref.corpus_audit", description=main.__doc__)
    parser.add_argument("--write", metavar="PAGE", help="replace the generated block of PAGE (docs/tolerance.md)")
    parser.add_argument("--corpus", metavar="PATH", help="corpus directory (default: the bundled corpus)")
    args = parser.parse_args(argv)
    table = reference_errors_table(reference_errors(Path(args.corpus) if args.corpus else corpus.default_corpus_dir()))
    if not args.write:
        print(table)
        return 0
    page = Path(args.write).read_text(encoding="utf-8")
    start, end = page.index(TABLE_BEGIN) + len(TABLE_BEGIN), page.index(TABLE_END)
    Path(args.write).write_text(f"{page[:start]}\n{table}\n{page[end:]}", encoding="utf-8")
    return 0


__all__ = ["AuditRow", "ReferenceRow", "audit", "audit_table", "compare", "reference_errors", "reference_errors_table",
           "ulp_distances"]

if __name__ == "__main__":
    raise SystemExit(main())
