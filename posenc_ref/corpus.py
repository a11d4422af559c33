"""The golden corpus on disk: generate it, verify its integrity, check it against the oracle.

Layout of a corpus directory (``golden/`` in the repository, ``posenc_ref/golden_data`` when
installed)::

    manifest.json                      format_version, version, generator, policies, cases, retired
    cases/<case id>/input.<name>.npy   stored inputs (never regenerated from a seed)
    cases/<case id>/expected.<name>.npy  oracle outputs (float64, or int64 for exact outputs)
    cases/<case id>/phase.<name>.npy   the phase (or error scale) of every element, where the class has one
    cases/<case id>/input_scale.<name>.npy  the input scale of every element, for outputs that have one

Every array entry in the manifest carries ``file``, ``dtype``, ``shape`` and ``sha256`` (of the
raw little-endian C-order bytes). A file whose hash, header, dtype or shape disagrees with the
manifest, a truncated or pickled file, a file not listed, or a listed file that is missing is
reported by name and never used. ``docs/corpus-format.md`` describes the format for readers in
other languages.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import numpy as np
from numpy.typing import NDArray

from posenc_ref import __version__
from posenc_ref.errors import SpecError
from posenc_ref.opspec import Case, OpRecord
from posenc_ref.registry import OPS, RETIRED, get_op
from posenc_ref.tolerance import POLICIES, compare, policy

FORMAT_VERSION: Final = "1.0"
CORPUS_VERSION: Final = "1.0.0"
CHECK_ULPS: Final = 2
"""``golden check``: a recomputed oracle float may differ from the stored one by this many ulps."""

SCALE_RTOL: Final = 1e-9
"""``golden check``: a recomputed phase or input scale may differ from the stored one by this (relative)."""

Progress = Callable[[int, int, str], None]


class CorpusError(Exception):
    """The corpus is corrupt or inconsistent; ``problems`` lists every finding by file or case."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("corrupt corpus:\n  " + "\n  ".join(problems))
        self.problems = problems


def default_corpus_dir() -> Path:
    """``$POSENC_REF_CORPUS``, else the corpus installed with the package, else the checkout's."""
    env = os.environ.get("POSENC_REF_CORPUS")
    if env:
        return Path(env)
    installed = Path(__file__).resolve().parent / "golden_data"
    if (installed / "manifest.json").is_file():
        return installed
    return Path(__file__).resolve().parent.parent / "golden"


def array_sha256(array: NDArray[Any]) -> str:
    """sha256 of the raw little-endian, C-order bytes of ``array``."""
    data = np.ascontiguousarray(array)
    if data.dtype.byteorder == ">" or (data.dtype.byteorder == "=" and np.little_endian is False):
        data = data.astype(data.dtype.newbyteorder("<"))
    return hashlib.sha256(data.tobytes()).hexdigest()


def _entry(directory: Path, relative: str, array: NDArray[Any]) -> dict[str, Any]:
    path = directory / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    stored = np.ascontiguousarray(array).astype(array.dtype.newbyteorder("<"))
    np.save(path, stored, allow_pickle=False)
    return {"file": relative, "dtype": stored.dtype.name, "shape": list(stored.shape), "sha256": array_sha256(stored)}


def _jsonable(params: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in params.items():
        if isinstance(value, (np.integer, np.floating)):
            value = value.item()
        if isinstance(value, (dict, list)):  # a model case's config: a JSON object, kept as it is
            value = json.loads(json.dumps(value))
        elif not isinstance(value, (int, float, str, bool, type(None))):
            raise TypeError(f"parameter {key}={value!r} is not JSON-serialisable")
        out[key] = value
    return out


def _expected_error(op: OpRecord, params: Mapping[str, Any], inputs: Mapping[str, Any], case: Case) -> None:
    try:
        op.call(params, inputs)
    except SpecError as exc:
        if exc.category != case.error:
            raise RuntimeError(f"{case.id}: the reference raised {exc.category}, "
                               f"the case declares {case.error}") from exc
        return
    raise RuntimeError(f"{case.id}: the reference raised nothing, the case declares {case.error}")


def _reference_disagreements(op: OpRecord, case_id: str, params: Mapping[str, Any],
                             inputs: Mapping[str, Any], expected: Mapping[str, NDArray[Any]]) -> list[str]:
    """Where the float64 reference misses the oracle values under the float64 policy."""
    actual = op.call(params, inputs)
    problems = []
    for out in op.outputs:
        phase = out.phase(params, inputs) if out.phase else None
        scale = out.input_scale(params, inputs) if out.input_scale else None
        verdict = compare(actual[out.name], expected[out.name], policy(out.tolerance, "float64"), phase, scale)
        if actual[out.name].shape != expected[out.name].shape or not verdict.passed:
            problems.append(f"{case_id}/{out.name}: reference differs from the oracle "
                            f"(worst {verdict.abs_error:.3g} at {verdict.worst_index}, allowed {verdict.allowed:.3g})")
    return problems


def generate(directory: Path, *, progress: Progress | None = None) -> dict[str, Any]:
    """Write the corpus for every registered case into ``directory``; returns the manifest.

    Inputs of a case already in ``directory`` with the same parameters are kept as stored, so
    regenerating never shifts existing inputs. Fails (``RuntimeError``) when the reference
    disagrees with the oracle or an error case does not raise its declared category.
    """
    from posenc_ref import oracle

    directory = Path(directory)
    old: dict[str, dict[str, Any]] = {}
    if (directory / "manifest.json").is_file():
        old = {c["id"]: c for c in json.loads((directory / "manifest.json").read_text())["cases"]}
    staging = directory / ".staging"
    shutil.rmtree(staging, ignore_errors=True)
    cases_out = []
    todo = [(op, case) for op in OPS for case in op.cases]
    for n, (op, case) in enumerate(todo, 1):
        if progress:
            progress(n, len(todo), case.id)
        params = _jsonable(op.full_params(case.params))
        previous = old.get(case.id)
        if previous and previous["params"] == params and not verify_files(directory, [previous]):
            inputs = {name: _load(directory, e) for name, e in previous["inputs"].items()}
        else:
            inputs = case.make_inputs()
        folder = f"cases/{case.id}"
        entry: dict[str, Any] = {
            "id": case.id, "op": op.name, "kind": case.kind, "level": case.level, "flags": list(case.flags),
            "comment": case.comment, "params": params,
            "inputs": {name: _entry(staging, f"{folder}/input.{name}.npy", a) for name, a in inputs.items()},
            "outputs": {}, "expected_error": case.error,
        }
        if case.error:
            _expected_error(op, params, inputs, case)
        else:
            expected = oracle.expected(op.name, params, inputs)
            problems = _reference_disagreements(op, case.id, params, inputs, expected)
            if problems:
                raise RuntimeError("\n".join(problems))
            for out in op.outputs:
                item = _entry(staging, f"{folder}/expected.{out.name}.npy", expected[out.name].astype(out.dtype))
                item["tolerance"] = out.tolerance
                if out.phase:
                    item["phase"] = _entry(staging, f"{folder}/phase.{out.name}.npy", out.phase(params, inputs))
                if out.input_scale:
                    item["input_scale"] = _entry(staging, f"{folder}/input_scale.{out.name}.npy",
                                                 np.asarray(out.input_scale(params, inputs), dtype=np.float64))
                entry["outputs"][out.name] = item
        cases_out.append(entry)
    manifest = {
        "format_version": FORMAT_VERSION,
        "version": CORPUS_VERSION,
        "generator": {"name": "posenc-ref", "version": __version__, "oracle": "mpmath", "oracle_digits": oracle.DPS},
        "tolerance_policies": {f"{cls}/{dt}": p.describe() for (cls, dt), p in POLICIES.items()},
        "retired": [{"id": rid, "reason": why} for rid, why in RETIRED],
        "cases": cases_out,
    }
    shutil.rmtree(directory / "cases", ignore_errors=True)
    directory.mkdir(parents=True, exist_ok=True)
    (staging / "cases").rename(directory / "cases")
    shutil.rmtree(staging, ignore_errors=True)
    (directory / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
    return manifest


# --- reading ------------------------------------------------------------------------------

_CASE_KEYS: Final = {"id": str, "op": str, "kind": str, "level": str, "flags": list, "comment": str,
                     "params": dict, "inputs": dict, "outputs": dict}
_ARRAY_KEYS: Final = {"file": str, "dtype": str, "shape": list, "sha256": str}


def _array_entries(case: Mapping[str, Any]) -> Iterator[tuple[str, Mapping[str, Any]]]:
    for name, item in case.get("inputs", {}).items():
        yield f"input {name}", item
    for name, item in case.get("outputs", {}).items():
        yield f"output {name}", item
        if isinstance(item, dict) and "phase" in item:
            yield f"phase of {name}", item["phase"]
        if isinstance(item, dict) and "input_scale" in item:
            yield f"input scale of {name}", item["input_scale"]


def manifest_problems(manifest: Any) -> list[str]:
    """Schema problems of a parsed manifest (empty when it is well formed)."""
    if not isinstance(manifest, dict):
        return ["manifest.json: the top level must be an object"]
    problems = []
    for key, kind in {"format_version": str, "version": str, "generator": dict, "cases": list, "retired": list}.items():
        if not isinstance(manifest.get(key), kind):
            problems.append(f"manifest.json: {key!r} missing or not a {kind.__name__}")
    if manifest.get("format_version") not in (None, FORMAT_VERSION) and isinstance(manifest.get("format_version"), str):
        problems.append(f"manifest.json: format_version {manifest['format_version']!r}, "
                        f"this reader knows {FORMAT_VERSION!r}")
    seen: set[str] = set()
    retired = {r.get("id") for r in manifest.get("retired", []) if isinstance(r, dict)}
    for i, case in enumerate(manifest.get("cases", []) if isinstance(manifest.get("cases"), list) else []):
        where = f"manifest.json: case #{i}"
        if not isinstance(case, dict):
            problems.append(f"{where}: not an object")
            continue
        for key, kind in _CASE_KEYS.items():
            if not isinstance(case.get(key), kind):
                problems.append(f"{where} ({case.get('id')}): {key!r} missing or not a {kind.__name__}")
        cid = str(case.get("id"))
        if cid in seen:
            problems.append(f"{where}: duplicate id {cid!r}")
        if cid in retired:
            problems.append(f"{where}: id {cid!r} is retired and may not be reused")
        seen.add(cid)
        for label, item in _array_entries(case):
            if not isinstance(item, dict) or any(not isinstance(item.get(k), t) for k, t in _ARRAY_KEYS.items()):
                problems.append(f"{where} ({cid}): {label} lacks file/dtype/shape/sha256")
        if case.get("kind") == "error" and not case.get("expected_error"):
            problems.append(f"{where} ({cid}): error case without expected_error")
    return problems


def _load(directory: Path, item: Mapping[str, Any]) -> NDArray[Any]:
    """Load one listed array, refusing anything that does not match its manifest entry."""
    path = directory / item["file"]
    name = item["file"]
    try:
        array = np.load(path, allow_pickle=False)
    except (FileNotFoundError, IsADirectoryError):
        raise CorpusError([f"{name}: listed in the manifest but missing"]) from None
    except ValueError as exc:
        reason = "holds pickled objects" if "pickle" in str(exc).lower() else f"unreadable ({exc})"
        raise CorpusError([f"{name}: {reason}"]) from None
    except (OSError, EOFError) as exc:
        raise CorpusError([f"{name}: unreadable or truncated ({exc})"]) from None
    if not isinstance(array, np.ndarray):
        raise CorpusError([f"{name}: not a single .npy array"])
    if array.dtype.name != item["dtype"] or list(array.shape) != list(item["shape"]):
        raise CorpusError([f"{name}: holds {array.dtype.name}{list(array.shape)}, the manifest says "
                           f"{item['dtype']}{list(item['shape'])}"])
    if array_sha256(array) != item["sha256"]:
        raise CorpusError([f"{name}: sha256 mismatch (modified or corrupt)"])
    return array


def verify_files(directory: Path, cases: list[Mapping[str, Any]]) -> list[str]:
    """Integrity problems of the arrays that ``cases`` list (empty when all are intact)."""
    problems = []
    for case in cases:
        for _, item in _array_entries(case):
            try:
                _load(directory, item)
            except CorpusError as exc:
                problems.extend(exc.problems)
    return problems


def read_manifest(directory: Path) -> dict[str, Any]:
    """Parse and schema-check ``manifest.json``; :class:`CorpusError` on any problem."""
    path = Path(directory) / "manifest.json"
    if not path.is_file():
        raise CorpusError([f"{path}: no manifest.json in the corpus directory"])
    try:
        manifest = json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise CorpusError([f"manifest.json: not valid JSON ({exc})"]) from None
    problems = manifest_problems(manifest)
    if problems:
        raise CorpusError(problems)
    return dict(manifest)


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
        for folder, _, files in sorted(os.walk(self.directory / "cases")):
            prefix = Path(folder).relative_to(self.directory).as_posix()
            for file in sorted(files):
                relative = f"{prefix}/{file}"
                if relative not in self._arrays and relative not in self._bad:
                    self.problems.append(f"{relative}: present on disk but not listed in the manifest")

    @property
    def cases(self) -> list[dict[str, Any]]:
        return list(self.manifest.get("cases", []))

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


def _ulp_distance(a: NDArray[np.float64], b: NDArray[np.float64]) -> float:
    """Largest distance in float64 ulps between two float64 arrays of the same shape."""
    def key(x: NDArray[Any]) -> NDArray[np.uint64]:
        bits = np.ascontiguousarray(x, dtype=np.float64).view(np.uint64)
        sign = np.uint64(1 << 63)
        return np.where(bits & sign, ~bits, bits | sign)  # unsigned keys in the order of the floats

    ka, kb = key(a), key(b)
    return float(np.where(ka > kb, ka - kb, kb - ka).max(initial=0))


def check(directory: Path, *, progress: Progress | None = None) -> list[str]:
    """Recompute every case from its stored inputs and compare with the corpus.

    Integrity first (:func:`verify`); then the case ids and parameters against the registry;
    then, per case: the oracle recomputed from the stored inputs (integers exact, floats within
    :data:`CHECK_ULPS` float64 ulps), the float64 reference within its float64 tolerance, the
    stored phases and input scales against the records (within :data:`SCALE_RTOL`), and
    error cases raising their declared category. Returns readable problems (empty when clean).
    """
    from posenc_ref import oracle

    loaded = Corpus(directory)
    problems = list(loaded.problems)
    if problems:
        return problems
    stored = {c["id"]: c for c in loaded.cases}
    registered = {case.id: (op, case) for op in OPS for case in op.cases}
    problems += [f"{cid}: registered but not in the corpus (run `posenc-ref golden generate`)"
                 for cid in registered if cid not in stored]
    problems += [f"{cid}: in the corpus but not registered" for cid in stored if cid not in registered]
    for n, (cid, entry) in enumerate(stored.items(), 1):
        if progress:
            progress(n, len(stored), cid)
        if cid not in registered:
            continue
        op, case = registered[cid]
        params = _jsonable(op.full_params(case.params))
        if entry["params"] != params:
            problems.append(f"{cid}: params differ: corpus {entry['params']} vs registry {params}")
            continue
        golden = loaded.case(entry)
        if case.error:
            try:
                _expected_error(op, params, golden.inputs, case)
            except RuntimeError as exc:
                problems.append(str(exc))
            continue
        fresh = oracle.expected(op.name, params, golden.inputs)
        for name, out in golden.outputs.items():
            if fresh[name].shape != out.expected.shape:
                problems.append(f"{cid}/{name}: oracle shape {fresh[name].shape} vs stored {out.expected.shape}")
            elif out.tolerance == "exact":
                if not np.array_equal(fresh[name], out.expected):
                    problems.append(f"{cid}/{name}: recomputed integers differ from the stored ones")
            elif (distance := _ulp_distance(fresh[name], out.expected)) > CHECK_ULPS:
                problems.append(f"{cid}/{name}: recomputed oracle is {distance:g} ulp from the stored value")
        problems += _reference_disagreements(get_op(entry["op"]), cid, params, golden.inputs,
                                             {k: v.expected for k, v in golden.outputs.items()})
        problems += _scale_disagreements(op, cid, params, golden)
    return problems


def _scale_disagreements(op: OpRecord, case_id: str, params: Mapping[str, Any], golden: GoldenCase) -> list[str]:
    """Stored phases and input scales that the op's record no longer computes (or no longer has)."""
    problems = []
    for out in op.outputs:
        stored = golden.outputs.get(out.name)
        if stored is None:
            continue
        for label, function, array in (("phase", out.phase, stored.phase),
                                       ("input scale", out.input_scale, stored.input_scale)):
            if function is None or array is None:
                if (function is None) != (array is None):
                    problems.append(f"{case_id}/{out.name}: the {label} is "
                                    f"{'stored but not in the registry' if function is None else 'missing'}")
                continue
            fresh = np.broadcast_to(np.asarray(function(params, golden.inputs), dtype=np.float64), array.shape)
            if not np.allclose(fresh, array, rtol=SCALE_RTOL, atol=0.0):
                problems.append(f"{case_id}/{out.name}: the stored {label} differs from the recomputed one")
    return problems
