"""The pytest plugin: one test per (case, output) of the golden corpus, for your adapter.

Opt in with ``--posenc-adapter``::

    pytest --posenc-adapter=my_package.posenc:ADAPTER -k "rope and long"

Test ids are ``<case id>[<output>]``, so ``-k`` selects cases; a failing test prints the same
report as ``posenc-ref conformance``. Options: ``--posenc-corpus PATH``,
``--posenc-expectations FILE``, ``--posenc-timeout SECONDS``. Without ``--posenc-adapter`` the
plugin adds nothing.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("posenc-ref", "posenc-ref conformance")
    group.addoption("--posenc-adapter", metavar="ADAPTER",
                    help="run the posenc-ref golden corpus against ADAPTER (built-in name, module:object or file.py)")
    group.addoption("--posenc-corpus", metavar="PATH", help="corpus directory (default: the bundled corpus)")
    group.addoption("--posenc-expectations", metavar="FILE", help="the adapter's expectations file")
    group.addoption("--posenc-dtype", metavar="DTYPE", help="run the adapter at this dtype (adapters with at_dtype)")
    group.addoption("--posenc-timeout", type=float, default=60.0, metavar="S", help="per-case timeout (default 60)")


class _Session:
    """Loads the adapter, corpus and expectations once; runs each case once for all its outputs."""

    def __init__(self, config: pytest.Config) -> None:
        from posenc_ref import corpus
        from posenc_ref.runner.adapters import AdapterLoadError, load_adapter
        from posenc_ref.runner.expectations import ExpectationsError, load_expectations

        self.spec = config.getoption("posenc_adapter")
        corpus_opt = config.getoption("posenc_corpus")
        path = config.getoption("posenc_expectations")
        dtype = config.getoption("posenc_dtype")
        try:
            self.adapter = load_adapter(self.spec)
            if dtype and self.adapter.dtype != dtype:
                if not hasattr(self.adapter, "at_dtype"):
                    raise AdapterLoadError(f"adapter {self.spec!r} computes in {self.adapter.dtype} "
                                           "and has no at_dtype()")
                self.adapter = self.adapter.at_dtype(dtype)
            self.expectations = load_expectations(path) if path else []
        except (AdapterLoadError, ExpectationsError) as exc:
            raise pytest.UsageError(f"posenc-ref: {exc}") from None
        self.directory = Path(corpus_opt) if corpus_opt else corpus.default_corpus_dir()
        self.corpus = corpus.Corpus(self.directory)
        if self.corpus.problems:
            listing = "\n  ".join(self.corpus.problems)
            raise pytest.UsageError(f"posenc-ref: corrupt corpus, refusing to run:\n  {listing}")
        self.manifest = self.corpus.manifest
        from posenc_ref.runner.engine import unmatched_expectations

        unmatched = unmatched_expectations(self.expectations, self.manifest)
        if unmatched:  # the runner's strictness: an entry that matches nothing is an error
            raise pytest.UsageError("posenc-ref: " + "; ".join(unmatched))
        from posenc_ref.runner.subprocess_adapter import check_timeout

        try:
            self.timeout = check_timeout(config.getoption("posenc_timeout"), "--posenc-timeout")
        except ValueError as exc:
            raise pytest.UsageError(f"posenc-ref: {exc}") from None
        extra = "".join(f" {flag} {value}" for flag, value in (("--corpus", corpus_opt), ("--expectations", path),
                                                               ("--dtype", dtype)) if value)
        self.rerun = f"posenc-ref conformance {self.spec}{extra} --case"
        self.cache: dict[str, Any] = {}
        self.executed = 0

    def results(self, entry: dict[str, Any]) -> Any:
        from posenc_ref.runner.engine import EXECUTED, run_cases

        if entry["id"] not in self.cache:
            results = run_cases(self.adapter, self.corpus, [entry], self.expectations,
                                lambda e: f"{self.rerun} {e['id']}", timeout=self.timeout)
            self.executed += sum(r.status in EXECUTED for r in results)
            self.cache[entry["id"]] = {r.output: r for r in results}
        return self.cache[entry["id"]]


_STATE = pytest.StashKey[_Session]()


def pytest_configure(config: pytest.Config) -> None:
    if config.getoption("posenc_adapter", None):
        state = _Session(config)
        config.stash[_STATE] = state
        if config.args_source != pytest.Config.ArgsSource.ARGS:
            # Note: no paths given: the conformance cases only, not the project's own testpaths (from a
            # checkout, those would import a second copy of an installed package: "import file mismatch")
            config.args.clear()
        config.args.append(str(state.directory / "manifest.json"))  # collected by CorpusFile below


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    state = parent.config.stash.get(_STATE, None)
    if state is not None and file_path == state.directory / "manifest.json":
        return CorpusFile.from_parent(parent, path=file_path)
    return None


class CorpusFile(pytest.File):
    """The corpus manifest, collected as one test per (case, output)."""

    def collect(self) -> Any:
        state = self.config.stash[_STATE]
        for entry in state.manifest["cases"]:
            for output in tuple(entry["outputs"]) or ("error",):
                yield ConformanceItem.from_parent(self, name=f"{entry['id']}[{output}]", entry=entry,
                                                  output=output, state=state)


class ConformanceItem(pytest.Item):
    def __init__(self, *, entry: dict[str, Any], output: str, state: _Session, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.entry = entry
        self.output = output
        self.state = state

    def runtest(self) -> None:
        from posenc_ref.runner.engine import FAILING
        from posenc_ref.runner.report import describe_failure

        result = self.state.results(self.entry)[self.output]
        if result.status in FAILING:
            raise ConformanceFailure(describe_failure(result))
        if result.status in ("not_applicable", "skip"):
            pytest.skip(f"{result.status}: {result.message}")
        if result.status == "xfail":
            pytest.xfail(result.expectation.reason if result.expectation else result.message)

    def repr_failure(self, excinfo: Any, style: Any = None) -> str:
        if isinstance(excinfo.value, ConformanceFailure):
            return str(excinfo.value)
        return str(super().repr_failure(excinfo))

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return self.path, None, ""  # no "domain": pytest would rewrite the dots of case ids as "::"


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    state = session.config.stash.get(_STATE, None)
    if state is not None and state.cache and state.executed == 0 and exitstatus == 0:
        session.exitstatus = 1  # a conformance run that executed no case is not a pass
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            reporter.write_line("posenc-ref: no case was executed (all not applicable or skipped)", red=True)


class ConformanceFailure(Exception):
    """A (case, output) that did not conform; the message is the runner's failure report."""
