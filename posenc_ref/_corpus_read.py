"""A corpus read once and its cases (:class:`Corpus`, :func:`verify`, :func:`load_case`).

Part of :mod:`posenc_ref.corpus`, which re-exports everything public here.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from posenc_ref import __version__
from posenc_ref._corpus_files import CorpusError, _array_entries, _load, read_manifest
from posenc_ref.registry import OPS
from posenc_ref.tolerance import POLICIES


def shipped_digest() -> str:
    """The sha256 of the manifest this package ships (``posenc_ref/_manifest_digest.py``)."""
    from posenc_ref._manifest_digest import MANIFEST_SHA256

    return MANIFEST_SHA256


class Corpus:
    """A corpus read once: its manifest, every listed array verified and kept, every problem found.

    ``problems`` lists integrity problems by file (schema, hashes, missing and unlisted files);
    :meth:`case` serves a case from the verified arrays and refuses a case with a bad file.
    """

    def __init__(self, directory: Path) -> None:
        self.directory = Path(directory)
        self.problems: list[str] = []
        self.manifest: dict[str, Any] = {}
        self.manifest_sha256 = ""
        self.digest_problem: str | None = None
        """The problem that the manifest is not the one this package ships (``None`` when it is)."""
        self._arrays: dict[str, NDArray[Any]] = {}
        self._bad: dict[str, str] = {}
        try:
            self.manifest = read_manifest(self.directory)
            self.manifest_sha256 = hashlib.sha256((self.directory / "manifest.json").read_bytes()).hexdigest()
        except CorpusError as exc:
            self.problems = exc.problems
            return
        for case in self.manifest["cases"]:
            for _, item in _array_entries(case):
                try:
                    self._arrays[item["file"]] = _load(self.directory, item)
                except CorpusError as exc:
                    self._bad[item["file"]] = "; ".join(exc.problems)
                    self.problems.extend(exc.problems)
        for folder, folders, files in sorted(os.walk(self.directory / "cases")):
            prefix = Path(folder).relative_to(self.directory).as_posix()
            for file in sorted(files) + sorted(f for f in folders if os.path.islink(os.path.join(folder, f))):
                relative = f"{prefix}/{file}"
                if relative not in self._arrays and relative not in self._bad:
                    self.problems.append(f"{relative}: present on disk but not listed in the manifest")
        self.problems += registry_disagreements(self.manifest)
        shipped = shipped_digest()
        if self.manifest_sha256 != shipped:
            self.digest_problem = (f"manifest.json: sha256 {self.manifest_sha256[:16]}... is not that of the manifest "
                                   f"this posenc-ref {__version__} ships ({shipped[:16]}...): the corpus was edited, "
                                   "even if consistently, or is another version")
            self.problems.append(self.digest_problem)

    @property
    def cases(self) -> list[dict[str, Any]]:
        return list(self.manifest.get("cases", []))

    @property
    def modified(self) -> bool:
        """Whether the corpus failed verification (any problem, the shipped manifest hash included)."""
        return bool(self.problems)

    def _array(self, item: Mapping[str, Any]) -> NDArray[Any]:
        if item["file"] in self._bad:
            raise CorpusError([self._bad[item["file"]]])
        return self._arrays[item["file"]]

    def case(self, entry: Mapping[str, Any]) -> GoldenCase:
        """One case from the verified arrays (:class:`CorpusError` if any of its files is bad)."""
        inputs = {name: self._array(item) for name, item in entry["inputs"].items()}
        outputs = {
            name: GoldenOutput(self._array(item), item["tolerance"],
                               self._array(item["phase"]) if "phase" in item else None,
                               self._array(item["input_scale"]) if "input_scale" in item else None)
            for name, item in entry["outputs"].items()
        }
        return GoldenCase(entry, inputs, outputs)


def registry_disagreements(manifest: Mapping[str, Any]) -> list[str]:
    """What a manifest says about its cases that the registry does not: an unknown tolerance
    class anywhere; for a registered case id, another op, other outputs, another tolerance
    class or another ``expected_error``."""
    classes = {cls for cls, _ in POLICIES}
    registered = {case.id: (op, case) for op in OPS for case in op.cases}
    problems = []
    for entry in manifest.get("cases", []):
        cid = entry["id"]
        for name, item in entry["outputs"].items():
            if item.get("tolerance") not in classes:
                problems.append(f"{cid}/{name}: unknown tolerance class {item.get('tolerance')!r} "
                                f"(known: {', '.join(sorted(classes))})")
        if cid not in registered:
            continue
        op, case = registered[cid]
        if entry["op"] != op.name:
            problems.append(f"{cid}: op {entry['op']!r} in the manifest, {op.name!r} in the registry")
            continue
        if entry.get("expected_error") != case.error:
            problems.append(f"{cid}: expected_error {entry.get('expected_error')!r} in the manifest, "
                            f"{case.error!r} in the registry")
        want = {} if case.error else {out.name: out.tolerance for out in op.outputs}
        have = {name: item.get("tolerance") for name, item in entry["outputs"].items()}
        if set(have) != set(want):
            problems.append(f"{cid}: outputs {sorted(have)} in the manifest, {sorted(want)} in the registry")
        for name in set(have) & set(want):
            if have[name] != want[name]:
                problems.append(f"{cid}/{name}: tolerance class {have[name]!r} in the manifest, "
                                f"{want[name]!r} in the registry")
    return problems


def verify(directory: Path) -> list[str]:
    """Every integrity problem of the corpus: manifest schema, hashes, missing and unlisted files."""
    return Corpus(directory).problems


@dataclass(frozen=True)
class GoldenOutput:
    expected: NDArray[Any]
    tolerance: str
    phase: NDArray[np.float64] | None
    input_scale: NDArray[np.float64] | None = None
    """Per-element input scale ``s`` of the input-rounding term (absent from corpora before it)."""


@dataclass(frozen=True)
class GoldenCase:
    """One case as stored: its manifest entry and its verified arrays."""

    entry: Mapping[str, Any]
    inputs: Mapping[str, NDArray[Any]]
    outputs: Mapping[str, GoldenOutput]

    @property
    def id(self) -> str:
        return str(self.entry["id"])

    @property
    def op(self) -> str:
        return str(self.entry["op"])

    @property
    def params(self) -> dict[str, Any]:
        return dict(self.entry["params"])

    @property
    def expected_error(self) -> str | None:
        return self.entry.get("expected_error")


def load_case(directory: Path, entry: Mapping[str, Any]) -> GoldenCase:
    """Load one case's verified arrays (:class:`CorpusError` if any is corrupt)."""
    inputs = {name: _load(directory, item) for name, item in entry["inputs"].items()}
    outputs = {
        name: GoldenOutput(_load(directory, item), item["tolerance"],
                           _load(directory, item["phase"]) if "phase" in item else None,
                           _load(directory, item["input_scale"]) if "input_scale" in item else None)
        for name, item in entry["outputs"].items()
    }
    return GoldenCase(entry, inputs, outputs)
