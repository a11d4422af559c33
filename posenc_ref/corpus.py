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
declaring more than the manifest or ``MAX_ARRAY_BYTES`` (parsed before any data is read),
and a tolerance class or ``expected_error`` the registry does not give the case. The manifest's
own sha256 is compared with the one the package ships (``posenc_ref/_manifest_digest.py``,
written by ``golden generate``), so any edit, even a consistent rewrite, makes the corpus
*modified*. ``docs/corpus-format.md`` describes the format for readers in other languages.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path
from typing import Any, Final

import numpy as np
from numpy.typing import NDArray

from posenc_ref import __version__
from posenc_ref._corpus_check import CHECK_ULPS as CHECK_ULPS
from posenc_ref._corpus_check import SCALE_RTOL as SCALE_RTOL
from posenc_ref._corpus_check import Progress as Progress
from posenc_ref._corpus_check import _expected_error, _jsonable, _reference_disagreements
from posenc_ref._corpus_check import check as check
from posenc_ref._corpus_files import FORMAT_VERSION as FORMAT_VERSION
from posenc_ref._corpus_files import MAX_ARRAY_BYTES as MAX_ARRAY_BYTES
from posenc_ref._corpus_files import MAX_MANIFEST_BYTES as MAX_MANIFEST_BYTES
from posenc_ref._corpus_files import CorpusError as CorpusError
from posenc_ref._corpus_files import _load
from posenc_ref._corpus_files import array_sha256 as array_sha256
from posenc_ref._corpus_files import corpus_path as corpus_path
from posenc_ref._corpus_files import manifest_problems as manifest_problems
from posenc_ref._corpus_files import read_manifest as read_manifest
from posenc_ref._corpus_files import verify_files as verify_files
from posenc_ref._corpus_read import Corpus as Corpus
from posenc_ref._corpus_read import GoldenCase as GoldenCase
from posenc_ref._corpus_read import GoldenOutput as GoldenOutput
from posenc_ref._corpus_read import load_case as load_case
from posenc_ref._corpus_read import registry_disagreements as registry_disagreements
from posenc_ref._corpus_read import shipped_digest as shipped_digest
from posenc_ref._corpus_read import verify as verify
from posenc_ref.registry import OPS, RETIRED
from posenc_ref.tolerance import POLICIES

CORPUS_VERSION: Final = "1.10.0"

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


def default_corpus_dir() -> Path:
    """``$POSENC_REF_CORPUS``, else the corpus installed with the package, else the checkout's."""
    env = os.environ.get("POSENC_REF_CORPUS")
    if env:
        return Path(env)
    installed = Path(__file__).resolve().parent / "golden_data"
    if (installed / "manifest.json").is_file():
        return installed
    return Path(__file__).resolve().parent.parent / "golden"


def _entry(directory: Path, relative: str, array: NDArray[Any]) -> dict[str, Any]:
    path = directory / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    stored = np.ascontiguousarray(array).astype(array.dtype.newbyteorder("<"))
    np.save(path, stored, allow_pickle=False)
    return {"file": relative, "dtype": stored.dtype.name, "shape": list(stored.shape), "sha256": array_sha256(stored)}


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
