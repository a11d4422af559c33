"""Offline conformance: judge a folder of results written by an implementation elsewhere.

For implementations that cannot host a Python object or a child process (a remote GPU, a
device, a build farm): run the corpus cases there, copy the results back, and judge them with
``posenc-ref conformance verify RESULTS_DIR``. The judging is the runner's own
(:func:`posenc_ref.runner.engine.run_case`): same tolerances, statuses, diagnosis, expectations
and reports.

Layout of ``RESULTS_DIR``::

    implementation.json        {"name": "...", "dtype": "float32", "version": "..."}  (version optional)
    <case id>/<output>.npy     one file per output of a valid case (names as in the manifest)
    <case id>/error.txt        for a rejected input: the error category on the first line
                               (invalid_argument | out_of_range | invalid_shape), then any message

A case without a folder is ``not_applicable``; a folder with neither the outputs nor
``error.txt`` gives ``error`` (``returned None``) for each missing output.
"""

from __future__ import annotations

import datetime
import json
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Final

import numpy as np
from numpy.typing import NDArray

from posenc_ref import corpus
from posenc_ref.errors import ERROR_CATEGORIES
from posenc_ref.runner.engine import (
    Result,
    Run,
    corpus_info,
    environment,
    open_corpus,
    run_case,
    unmatched_expectations,
)
from posenc_ref.runner.expectations import Expectation
from posenc_ref.tolerance import DTYPES

IMPLEMENTATION_FILE: Final = "implementation.json"
ERROR_FILE: Final = "error.txt"


class OfflineError(Exception):
    """The results folder cannot be judged (missing or malformed ``implementation.json``)."""


class Rejected(Exception):
    """A case's ``error.txt``: the implementation rejected the input with ``category``."""

    def __init__(self, category: str, message: str) -> None:
        super().__init__(f"{category}: {message}" if message else category)
        self.category = category


class _CaseResults:
    """The adapter protocol over one case's folder of results."""

    def __init__(self, folder: Path, name: str, dtype: str, version: str, outputs: tuple[str, ...]) -> None:
        self.folder, self.name, self.dtype, self.version, self.outputs = folder, name, dtype, version, outputs

    def supports(self, op: str, params: Mapping[str, Any]) -> bool | str:
        return True if self.folder.is_dir() else f"no results for this case ({self.folder.name}/ is absent)"

    def run(self, op: str, params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]]) -> dict[str, Any]:
        error = self.folder / ERROR_FILE
        if error.is_file():
            category, _, message = error.read_text(encoding="utf-8").partition("\n")
            raise Rejected(category.strip(), message.strip())
        found: dict[str, Any] = {}
        for name in self.outputs:
            file = self.folder / f"{name}.npy"
            found[name] = np.load(file, allow_pickle=False) if file.is_file() else None
        return found

    def error_category(self, exc: BaseException) -> str | None:
        return exc.category if isinstance(exc, Rejected) and exc.category in ERROR_CATEGORIES else None


def read_implementation(results_dir: Path) -> dict[str, str]:
    """``implementation.json`` of a results folder, checked."""
    path = results_dir / IMPLEMENTATION_FILE
    if not results_dir.is_dir():
        raise OfflineError(f"results folder {str(results_dir)!r} does not exist")
    try:
        info = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise OfflineError(f"{path} is missing: it names the implementation and its dtype, "
                           'e.g. {"name": "my-impl", "dtype": "float32"}') from None
    except json.JSONDecodeError as exc:
        raise OfflineError(f"{path} is not valid JSON: {exc}") from exc
    except UnicodeDecodeError as exc:
        raise OfflineError(f"{path} is not UTF-8 text ({exc})") from None
    except OSError as exc:
        raise OfflineError(f"{path} cannot be read ({exc})") from None
    if not isinstance(info, dict) or not isinstance(info.get("name"), str) or info.get("dtype") not in DTYPES:
        raise OfflineError(f"{path} must be an object with a string 'name' and a 'dtype' in {', '.join(DTYPES)}")
    return {"name": info["name"], "dtype": info["dtype"], "version": str(info.get("version", ""))}


def verify_results(
    results_dir: Path,
    *,
    corpus_dir: Path | None = None,
    select: Callable[[Mapping[str, Any]], bool] | None = None,
    expectations: list[Expectation] | None = None,
    allow_modified: bool = False,
    rerun_extra: str = "",
) -> Run:
    """Judge the results in ``results_dir`` against the corpus, as the live runner would.

    Returns a :class:`~posenc_ref.runner.engine.Run` like
    :func:`~posenc_ref.runner.engine.run_conformance`'s.

    Raises
    ------
    OfflineError
        ``implementation.json`` is missing or malformed.
    posenc_ref.corpus.CorpusError
        The corpus fails verification (and ``allow_modified`` is false).
    """
    results_dir = Path(results_dir)
    info = read_implementation(results_dir)
    directory, loaded = open_corpus(corpus_dir, allow_modified)
    manifest = loaded.manifest
    expectations = expectations or []
    expectation_errors = unmatched_expectations(expectations, manifest)
    spec = f"verify {results_dir}"
    start = time.monotonic()
    started = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    results: list[Result] = []
    for entry in manifest["cases"]:
        if select is not None and not select(entry):
            continue
        adapter = _CaseResults(results_dir / entry["id"], info["name"], info["dtype"], info["version"],
                               tuple(entry["outputs"]))
        rerun = f"posenc-ref conformance {spec} --case {entry['id']}{rerun_extra}"
        results.extend(run_case(adapter, loaded, entry, expectations, rerun))
    return Run(
        adapter={"spec": spec, **info},
        corpus=corpus_info(directory, loaded, len({r.case_id for r in results}), corpus_dir is None),
        results=results,
        expectation_errors=expectation_errors,
        started=started,
        seconds=time.monotonic() - start,
        command=f"posenc-ref conformance {spec}{rerun_extra}",
        environment=environment(),
    )


def write_results(results_dir: Path, adapter: Any, *, corpus_dir: Path | None = None) -> int:
    """Run ``adapter`` over every case it supports and write its results in the offline layout.

    A helper for implementers who can run Python next to their implementation but want to judge
    elsewhere, and for tests. Returns the number of case folders written.
    """
    from posenc_ref.runner.adapters import error_category, supports

    results_dir = Path(results_dir)
    results_dir.mkdir(parents=True, exist_ok=True)
    (results_dir / IMPLEMENTATION_FILE).write_text(json.dumps(
        {"name": str(adapter.name), "dtype": adapter.dtype, "version": str(getattr(adapter, "version", ""))}),
        encoding="utf-8")
    loaded = corpus.Corpus(Path(corpus_dir) if corpus_dir else corpus.default_corpus_dir())
    written = 0
    for entry in loaded.manifest["cases"]:
        if supports(adapter, entry["op"], entry["params"],
                    case_kind="error" if entry.get("expected_error") else "valid"):
            continue
        golden = loaded.case(entry)
        folder = results_dir / entry["id"]
        folder.mkdir(exist_ok=True)
        written += 1
        try:
            returned = adapter.run(entry["op"], dict(golden.params), {k: v.copy() for k, v in golden.inputs.items()})
        except Exception as exc:  # the implementation rejected the input
            (folder / ERROR_FILE).write_text(f"{error_category(adapter, exc)}\n{exc}\n", encoding="utf-8")
            continue
        names = tuple(entry["outputs"])
        values = returned if isinstance(returned, Mapping) else dict(
            zip(names, returned if isinstance(returned, (tuple, list)) and len(names) > 1 else (returned,)))
        for name, value in values.items():
            np.save(folder / f"{name}.npy", np.asarray(value), allow_pickle=False)
    return written
