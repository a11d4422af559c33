"""The conformance engine: run an adapter over the corpus and judge every (case, output).

Statuses
--------
``pass`` / ``pass_relaxed``
    Within tolerance (``pass_relaxed``: only under a ``relax`` expectation).
``fail``
    Outside tolerance, or an error case whose invalid input was accepted.
``error``
    The adapter raised on a valid case, timed out, returned None, a wrong shape, a wrong dtype
    kind or a non-finite value where a finite one is expected; on any case, it crashed (a dead
    child process, a protocol breach) or raised a ``BaseException`` that is not an
    ``Exception`` (``SystemExit``, ``KeyboardInterrupt``); or the case's corpus file is corrupt;
    or the runner itself failed on the case (reported at once as an internal error).
``wrong_error``
    An error case rejected with a different (or unmapped) error category.
``not_applicable``
    The adapter does not support the op or the case's convention values.
``xfail`` / ``xpass``
    A failure declared in the expectations file / a declared failure that passed (fails the run).
``skip``
    Skipped by the expectations file.

A run fails (exit code 1) on any fail, error, wrong_error or xpass, on any expectations-file
error, and when no case was executed (everything not applicable or skipped).

Entry points: :func:`run_conformance` (a whole run, as the CLI does it), :func:`run_cases` (a
list of manifest entries under the one timeout, :func:`run_batch`) and :func:`run_case` (one
case on the calling thread: its pieces are ``_judge_error_case`` and ``_judge_outputs``).
"""

from __future__ import annotations

import datetime
import platform
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from posenc_ref import __version__, corpus
from posenc_ref.runner._engine_batch import GRACE as GRACE
from posenc_ref.runner._engine_batch import AdapterTimeout as AdapterTimeout
from posenc_ref.runner._engine_batch import Judge as Judge
from posenc_ref.runner._engine_batch import describe_exception as describe_exception
from posenc_ref.runner._engine_batch import exception_info as exception_info
from posenc_ref.runner._engine_batch import reconcile_timeout as reconcile_timeout
from posenc_ref.runner._engine_batch import run_batch as run_batch
from posenc_ref.runner._engine_case import _relaxed as _relaxed
from posenc_ref.runner._engine_case import case_error as case_error
from posenc_ref.runner._engine_case import run_case as run_case
from posenc_ref.runner._engine_case import safe_name as safe_name
from posenc_ref.runner._engine_results import ERROR_OUTPUT as ERROR_OUTPUT
from posenc_ref.runner._engine_results import EXECUTED as EXECUTED
from posenc_ref.runner._engine_results import FAILING as FAILING
from posenc_ref.runner._engine_results import STATUSES as STATUSES
from posenc_ref.runner._engine_results import Result as Result
from posenc_ref.runner._engine_results import Run as Run
from posenc_ref.runner.expectations import Expectation


def open_corpus(corpus_dir: Path | None, allow_modified: bool) -> tuple[Path, corpus.Corpus]:
    """The corpus read and verified once; :class:`~posenc_ref.corpus.CorpusError` when it fails
    verification and ``allow_modified`` is false, or has no readable manifest."""
    directory = Path(corpus_dir) if corpus_dir else corpus.default_corpus_dir()
    loaded = corpus.Corpus(directory)
    if loaded.problems and (not allow_modified or not loaded.manifest):
        note = "(pass --allow-modified to run anyway; it is stamped into the report)"
        raise corpus.CorpusError(loaded.problems + [note])
    return directory, loaded


def unmatched_expectations(expectations: list[Expectation], manifest: Mapping[str, Any]) -> list[str]:
    """One message per expectation entry that matches no (case, output) of the corpus."""
    all_ids = [(c["id"], tuple(c["outputs"]) or (ERROR_OUTPUT,)) for c in manifest["cases"]]
    return [
        f"{e.source}: expectation {e.id!r}{f' (output {e.output!r})' if e.output else ''} matches no case"
        for e in expectations
        if not any(e.matches(cid, None) and (e.output is None or e.output in outs) for cid, outs in all_ids)
    ]


def run_conformance(
    adapter: Any,
    *,
    spec: str,
    corpus_dir: Path | None = None,
    select: Callable[[Mapping[str, Any]], bool] | None = None,
    expectations: list[Expectation] | None = None,
    allow_modified: bool = False,
    timeout: float | None = 60.0,
    progress: Callable[[int, int, str], None] | None = None,
    rerun_extra: str = "",
) -> Run:
    """Run ``adapter`` over the corpus and return a :class:`Run`.

    The corpus is read and verified once. Raises :class:`~posenc_ref.corpus.CorpusError` when
    it fails verification and ``allow_modified`` is false, or when it has no readable manifest.
    """
    directory, loaded = open_corpus(corpus_dir, allow_modified)
    manifest = loaded.manifest
    expectations = expectations or []
    entries = [c for c in manifest["cases"] if select is None or select(c)]
    start = time.monotonic()
    started = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")

    def rerun(entry: Mapping[str, Any]) -> str:
        return f"posenc-ref conformance {spec} --case {entry['id']}{rerun_extra}"

    results = run_cases(adapter, loaded, entries, expectations, rerun, timeout=timeout, progress=progress)
    return Run(
        adapter=adapter_info(adapter, spec),
        corpus=corpus_info(directory, loaded, len(entries), corpus_dir is None),
        results=results,
        expectation_errors=unmatched_expectations(expectations, manifest),
        started=started,
        seconds=time.monotonic() - start,
        command=f"posenc-ref conformance {spec}{rerun_extra}",
        environment=environment(),
    )


def run_cases(adapter: Any, loaded: corpus.Corpus, entries: list[Mapping[str, Any]],
              expectations: list[Expectation], rerun: Callable[[Mapping[str, Any]], str], *,
              timeout: float | None = 60.0, progress: Callable[[int, int, str], None] | None = None) -> list[Result]:
    """Every entry run through ``adapter`` (:func:`run_case`) under the runner's one timeout
    (:func:`run_batch`, reconciled with the adapter's own by :func:`reconcile_timeout`)."""
    watch = reconcile_timeout(adapter, timeout)
    name = safe_name(adapter)

    def judge(entry: Mapping[str, Any]) -> list[Result]:
        return run_case(adapter, loaded, entry, expectations, rerun(entry))

    def failed(entry: Mapping[str, Any], message: str) -> list[Result]:
        return case_error(entry, expectations, message, rerun(entry), adapter=name)

    interrupt = getattr(adapter, "interrupt", None)
    return run_batch(judge, entries, watch, failed, progress, interrupt if callable(interrupt) else None)


def adapter_info(adapter: Any, spec: str) -> dict[str, Any]:
    """The report's ``adapter`` block; a per-op dtype mapping is listed under ``dtypes``."""
    info: dict[str, Any] = {"spec": spec, "name": safe_name(adapter),
                            "version": str(getattr(adapter, "version", "")), "dtype": dtype_label(adapter.dtype)}
    if isinstance(adapter.dtype, Mapping):
        info["dtypes"] = {str(k): str(v) for k, v in adapter.dtype.items()}
    return info


def dtype_label(dtype: Any) -> str:
    """A dtype for headings: the dtype itself, or for a per-op mapping its ``default`` (else ``mixed``)."""
    if isinstance(dtype, Mapping):
        return str(dtype.get("default", "mixed"))
    return str(dtype)


def corpus_info(directory: Path, loaded: corpus.Corpus, selected: int, bundled: bool) -> dict[str, Any]:
    """The report's ``corpus`` block; the path is never an absolute machine path."""
    manifest = loaded.manifest
    return {"path": "bundled" if bundled else report_path(directory), "version": manifest["version"],
            "format_version": manifest["format_version"], "manifest_sha256": loaded.manifest_sha256,
            "modified": bool(loaded.problems), "problems": loaded.problems, "cases_selected": selected,
            "cases_total": len(manifest["cases"])}


def report_path(path: Path) -> str:
    """``path`` relative to the working directory when under it, else its last two parts."""
    try:
        return Path(path).resolve().relative_to(Path.cwd().resolve()).as_posix() or "."
    except (ValueError, OSError):
        parts = Path(path).parts
        return "/".join(parts[-2:]) if len(parts) > 1 else str(path)


def environment() -> dict[str, str]:
    return {"posenc_ref": __version__, "numpy": np.__version__, "python": platform.python_version(),
            "platform": platform.platform()}


