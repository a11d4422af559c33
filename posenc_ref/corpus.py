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
reported by name and never used. So is a manifest path that could leave the corpus (absolute,
not normalised, outside ``cases/``), a symbolic link, FIFO or device, a ``.npy`` header
declaring more than the manifest or :data:`MAX_ARRAY_BYTES` (parsed before any data is read),
and a tolerance class or ``expected_error`` the registry does not give the case. The manifest's
own sha256 is compared with the one the package ships (``posenc_ref/_manifest_digest.py``,
written by ``golden generate``), so any edit, even a consistent rewrite, makes the corpus
*modified*. ``docs/corpus-format.md`` describes the format for readers in other languages.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import posixpath
import shutil
import stat
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
CORPUS_VERSION: Final = "1.1.0"

FLAGS: Final[dict[str, dict[str, str]]] = {
    "KnownAnswer": {
        "meaning": "an expected value quoted by the paper, a library's documentation or the reference notes "
                   "(checkable by hand), not only computed by the oracle",
        "targets": "a formula misread the same way by the reference and the oracle (a shared wrong reading)",
    },
    "LongPosition": {
        "meaning": "positions or distances far beyond the training range (up to 10^6): large phases or magnitudes",
        "targets": "phases computed in low precision (p * w in float32/bfloat16, positions cast before the product), "
                   "truncated position types, saturation that short positions never reach",
    },
    "OddWidth": {
        "meaning": "an odd encoding width, decided by the op's odd-width policy",
        "targets": "dropped, duplicated or shifted last columns when d/2 is not an integer",
    },
    "CrossAttention": {
        "meaning": "query length differs from key length (Tq != Tk) or queries sit at offset positions",
        "targets": "alignment bugs: distances measured from the wrong corner, query and key positions swapped, "
                   "square-only masks",
    },
    "Decoding": {
        "meaning": "one decoding step with a cache: a single query at position Tk - 1 (or an explicit offset)",
        "targets": "the query placed at position 0 instead of after the cache, off-by-one cache offsets",
    },
    "Boundary": {
        "meaning": "every integer point where a bucket or clamp changes value, on both sides",
        "targets": "floor/ceil/round confusion and log computed in float32, which move an input across a bucket "
                   "edge",
    },
    "Model": {
        "meaning": "a model case: the op's parameters are a real model's config.json as given (model.* ops), read "
                   "per layer by the config's rules (docs/models.md)",
        "targets": "an engine's own config parsing: keys ignored or misread (an attention_factor dropped, sliding "
                   "layers scaled, rope_parameters read as rope_scaling), per-layer rules applied to the wrong layers",
    },
    "NonFinite": {
        "meaning": "an output defined as NaN or infinity by the op's documented edge-case policy",
        "targets": "NaN propagation policies applied silently (zeros or uniform weights where NaN is specified), "
                   "and comparisons that treat NaN as a failure",
    },
}
"""Every case flag: what it means and which class of bug it targets (``flags`` in the manifest)."""

INFORMATION_ONLY: Final = ("generator", "versions")
"""The manifest key path that regeneration comparisons ignore: the versions of the generating software."""
CHECK_ULPS: Final = 2
"""``golden check``: a recomputed oracle float may differ from the stored one by this many ulps."""

SCALE_RTOL: Final = 1e-9
"""``golden check``: a recomputed phase or input scale may differ from the stored one by this (relative)."""

MAX_ARRAY_BYTES: Final = 64 << 20
"""The most data bytes one corpus array may hold; a header declaring more is refused unread."""

MAX_MANIFEST_BYTES: Final = 64 << 20
"""The largest ``manifest.json`` read."""

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


def generator_versions() -> dict[str, str]:
    """The versions of posenc-ref, NumPy and mpmath generating a corpus (information only)."""
    import mpmath

    return {"posenc-ref": __version__, "numpy": np.__version__, "mpmath": mpmath.__version__}


class GenerateRefused(RuntimeError):
    """``golden generate`` will not write there (an installed package's data, another corpus version)."""


def generation_target(requested: Path | str | None) -> Path:
    """Where ``golden generate`` writes: ``requested``, else the checkout's ``golden/``.

    Run from an installed package (no checkout around it) without ``requested``, it refuses:
    the corpus installed with a package is never rewritten in place.
    """
    installed = Path(__file__).resolve().parent / "golden_data"
    if requested is None:
        root = Path(__file__).resolve().parent.parent
        if not (root / "pyproject.toml").is_file():
            raise GenerateRefused("golden generate: not run from a checkout (the package is installed at "
                                  f"{root / 'posenc_ref'}); pass --corpus DIR to say where to write the corpus")
        return root / "golden"
    target = Path(requested)
    if target.resolve() == installed or installed in target.resolve().parents:
        raise GenerateRefused(f"golden generate: {target} is the installed package's corpus ({installed}); "
                              "pass --corpus DIR outside the installed package")
    return target


def generate(directory: Path, *, progress: Progress | None = None, force: bool = False) -> dict[str, Any]:
    """Write the corpus for every registered case into ``directory``; returns the manifest.

    Inputs of a case already in ``directory`` with the same parameters are kept as stored, so
    regenerating never shifts existing inputs. Fails (``RuntimeError``) when the reference
    disagrees with the oracle or an error case does not raise its declared category, and
    (:class:`GenerateRefused`) when ``directory`` holds a corpus of another version, unless
    ``force``.
    """
    from posenc_ref import oracle

    directory = Path(directory)
    old: dict[str, dict[str, Any]] = {}
    if (directory / "manifest.json").is_file():
        previous_manifest = json.loads((directory / "manifest.json").read_text())
        version = previous_manifest.get("version") if isinstance(previous_manifest, dict) else None
        if version != CORPUS_VERSION and not force:
            raise GenerateRefused(f"golden generate: {directory} holds corpus version {version}, this generator "
                                  f"writes version {CORPUS_VERSION}; pass --force to replace it")
        old = {c["id"]: c for c in previous_manifest["cases"]}
    staging = directory / ".staging"
    shutil.rmtree(staging, ignore_errors=True)
    cases_out = []
    todo = [(op, case) for op in OPS for case in op.cases]
    for n, (op, case) in enumerate(todo, 1):
        if progress:
            progress(n, len(todo), case.id)
        params = _jsonable(op.full_params(case.params))
        undefined = sorted(set(case.flags) - set(FLAGS))
        if undefined:
            raise RuntimeError(f"{case.id}: flags {undefined} are not defined in posenc_ref.corpus.FLAGS")
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
        "generator": {"name": "posenc-ref", "oracle": "mpmath", "oracle_digits": oracle.DPS,
                      "versions": generator_versions()},
        "flags": FLAGS,
        "tolerance_policies": {f"{cls}/{dt}": p.describe() for (cls, dt), p in POLICIES.items()},
        "retired": [{"id": rid, "reason": why} for rid, why in RETIRED],
        "cases": cases_out,
    }
    shutil.rmtree(directory / "cases", ignore_errors=True)
    directory.mkdir(parents=True, exist_ok=True)
    (staging / "cases").rename(directory / "cases")
    shutil.rmtree(staging, ignore_errors=True)
    (directory / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
    record_shipped_digest(directory)
    return manifest


# --- the shipped manifest's hash ----------------------------------------------------------

_DIGEST_MODULE: Final = Path(__file__).resolve().parent / "_manifest_digest.py"


def _checkout_corpus_dir() -> Path:
    return Path(__file__).resolve().parent.parent / "golden"


def record_shipped_digest(directory: Path) -> bool:
    """After generating the corpus this package ships (the checkout's ``golden/``), write its
    manifest's sha256 into ``posenc_ref/_manifest_digest.py``; returns whether it did.

    Reading compares every corpus's manifest with that hash (:class:`Corpus`), so any edit of
    the corpus, even a consistent rewrite of manifest and files, is reported as modified.
    """
    if Path(directory).resolve() != _checkout_corpus_dir().resolve():
        return False
    digest = hashlib.sha256((Path(directory) / "manifest.json").read_bytes()).hexdigest()
    _DIGEST_MODULE.write_text(
        '"""The sha256 of the golden manifest this version of posenc-ref ships.\n\n'
        'Written by ``posenc-ref golden generate`` (:func:`posenc_ref.corpus.record_shipped_digest`); '
        'never edit by hand.\n"""\n\n'
        f'MANIFEST_SHA256 = "{digest}"\n', encoding="utf-8")
    return True


def shipped_digest() -> str:
    """The sha256 of the manifest this package ships (``posenc_ref/_manifest_digest.py``)."""
    from posenc_ref._manifest_digest import MANIFEST_SHA256

    return MANIFEST_SHA256


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


def corpus_path(directory: Path, relative: Any) -> Path:
    """``directory / relative`` for a manifest path that cannot leave the corpus, else :class:`CorpusError`.

    The path must be a relative, normalised POSIX path (no ``..``, ``.``, empty parts, backslashes
    or drive letters) under ``cases/``; no part of it may be a symbolic link, and the file must be
    a regular file (no FIFO, device or folder). Each is refused by name.
    """
    name = str(relative)
    if not isinstance(relative, str) or not relative:
        raise CorpusError([f"{name!r}: a manifest path must be a non-empty string"])
    if relative.startswith("/") or "\\" in relative or ":" in relative.split("/")[0]:
        raise CorpusError([f"{name}: an absolute path in the manifest, refused (paths are relative to the corpus)"])
    parts = relative.split("/")
    if posixpath.normpath(relative) != relative or any(p in ("", ".", "..") for p in parts):
        raise CorpusError([f"{name}: not a normalised relative path (no '..', '.' or empty parts), refused"])
    if parts[0] != "cases" or len(parts) < 3:
        raise CorpusError([f"{name}: outside the corpus's cases/ folder, refused"])
    path = Path(directory)
    for i, part in enumerate(parts):
        path = path / part
        try:
            mode = os.lstat(path).st_mode
        except FileNotFoundError:
            raise CorpusError([f"{name}: listed in the manifest but missing"]) from None
        except OSError as exc:
            raise CorpusError([f"{name}: cannot be examined ({exc})"]) from None
        if stat.S_ISLNK(mode):
            raise CorpusError([f"{name}: {'/'.join(parts[:i + 1])} is a symbolic link, refused"])
        last = i == len(parts) - 1
        if not last and not stat.S_ISDIR(mode):
            raise CorpusError([f"{name}: {'/'.join(parts[:i + 1])} is not a folder"])
        if last and not stat.S_ISREG(mode):
            kind = ("a FIFO" if stat.S_ISFIFO(mode) else "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode)
                    else "a folder" if stat.S_ISDIR(mode) else "a socket" if stat.S_ISSOCK(mode) else "not a file")
            raise CorpusError([f"{name}: {kind}, not a regular file, refused"])
    return path


def _header(handle: Any, name: str) -> tuple[tuple[int, ...], bool, np.dtype[Any]]:
    try:
        version = np.lib.format.read_magic(handle)
        if version == (1, 0):
            shape, fortran, dtype = np.lib.format.read_array_header_1_0(handle)
        elif version == (2, 0):
            shape, fortran, dtype = np.lib.format.read_array_header_2_0(handle)
        else:
            raise CorpusError([f"{name}: .npy format version {version} is not supported"])
    except CorpusError:
        raise
    except (ValueError, OSError, EOFError, SyntaxError) as exc:
        reason = "holds pickled objects" if "pickle" in str(exc).lower() or "object" in str(exc).lower() else (
            f"not a readable .npy header ({exc})")
        raise CorpusError([f"{name}: {reason}"]) from None
    return tuple(shape), bool(fortran), dtype


def _load(directory: Path, item: Mapping[str, Any]) -> NDArray[Any]:
    """Load one listed array, refusing anything that does not match its manifest entry.

    The path is checked first (:func:`corpus_path`); then the ``.npy`` header is parsed and its
    dtype and shape compared with the manifest, and its size with the file's and with
    :data:`MAX_ARRAY_BYTES`, before any data is read.
    """
    name = str(item["file"])
    path = corpus_path(directory, item["file"])
    try:
        with open(path, "rb") as handle:
            shape, _, dtype = _header(handle, name)
            if dtype.hasobject:
                raise CorpusError([f"{name}: holds pickled objects"])
            if dtype.name != item["dtype"] or list(shape) != list(item["shape"]):
                raise CorpusError([f"{name}: holds {dtype.name}{list(shape)}, the manifest says "
                                   f"{item['dtype']}{list(item['shape'])}"])
            size = math.prod(shape) * dtype.itemsize
            if size > MAX_ARRAY_BYTES:
                raise CorpusError([f"{name}: its header declares {size} bytes, above the limit of "
                                   f"{MAX_ARRAY_BYTES} (MAX_ARRAY_BYTES); not read"])
            have = os.fstat(handle.fileno()).st_size - handle.tell()
            if have != size:
                raise CorpusError([f"{name}: unreadable, {'truncated' if have < size else 'trailing bytes'}: "
                                   f"{have} data bytes for a header declaring {size}"])
            handle.seek(0)
            array = np.lib.format.read_array(handle, allow_pickle=False)
    except CorpusError:
        raise
    except ValueError as exc:
        reason = "holds pickled objects" if "pickle" in str(exc).lower() else f"unreadable ({exc})"
        raise CorpusError([f"{name}: {reason}"]) from None
    except (OSError, EOFError) as exc:
        raise CorpusError([f"{name}: unreadable or truncated ({exc})"]) from None
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
    try:
        info = os.lstat(path)
    except OSError:
        raise CorpusError([f"{path}: no manifest.json in the corpus directory"]) from None
    if stat.S_ISLNK(info.st_mode) or not stat.S_ISREG(info.st_mode):
        raise CorpusError(["manifest.json: a symbolic link or not a regular file, refused"])
    if info.st_size > MAX_MANIFEST_BYTES:
        raise CorpusError([f"manifest.json: {info.st_size} bytes, above the limit of {MAX_MANIFEST_BYTES}"])
    try:
        manifest = json.loads(path.read_bytes().decode("utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError, RecursionError) as exc:
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

    Integrity first (:func:`verify`; a manifest that is intact but not the one this package
    ships is reported and still recomputed, to show what differs); then the case ids and parameters against the registry;
    then, per case: the oracle recomputed from the stored inputs (integers exact, floats within
    :data:`CHECK_ULPS` float64 ulps), the float64 reference within its float64 tolerance, the
    stored phases and input scales against the records (within :data:`SCALE_RTOL`), and
    error cases raising their declared category. Returns readable problems (empty when clean).
    """
    from posenc_ref import oracle

    loaded = Corpus(directory)
    problems = list(loaded.problems)
    if [p for p in problems if p != loaded.digest_problem]:
        return problems  # a manifest that is not the shipped one but is intact is still recomputed
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
            fresh = np.asarray(function(params, golden.inputs), dtype=np.float64)
            try:
                fresh = np.broadcast_to(fresh, array.shape)
            except ValueError:
                problems.append(f"{case_id}/{out.name}: the stored {label} has shape {list(array.shape)}, the "
                                f"recomputed one {list(fresh.shape)}")
                continue
            if not np.allclose(fresh, array, rtol=SCALE_RTOL, atol=0.0):
                problems.append(f"{case_id}/{out.name}: the stored {label} differs from the recomputed one")
    return problems
