"""The tamper catalogue: every tampered corpus is refused, by name, by every command that reads it.

Each entry damages a private copy of the shipped corpus in one way an attacker (or an accident)
could. `golden verify`, `golden check` and the runner must each report the damage naming the
file or case and the words given, and the runner must refuse to run without --allow-modified.
"""

import json
import os
import shutil
import stat

import numpy as np
import pytest

from posenc_ref import corpus
from posenc_ref.cli import main
from posenc_ref.runner.adapters import load_adapter
from posenc_ref.runner.engine import run_conformance

CASE = "sinusoidal.table.d6.position1.known_answer"
ERROR_CASE = "sinusoidal.table.error.odd_dim_error_policy"


def _manifest(root):
    return json.loads((root / "manifest.json").read_text())


def _save(root, manifest):
    (root / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")


def _case(manifest, cid=CASE):
    return next(c for c in manifest["cases"] if c["id"] == cid)


def _rewrite(root, change):
    manifest = _manifest(root)
    change(manifest)
    _save(root, manifest)


def parent_path(root):
    """A manifest `file` that climbs out of the corpus (to a copy of the real array outside it)."""
    entry = _case(_manifest(root))["inputs"]["positions"]
    outside = root.parent / "outside.npy"
    shutil.copy(root / entry["file"], outside)
    _rewrite(root, lambda m: _case(m)["inputs"]["positions"].update(file=f"cases/{CASE}/../../../outside.npy"))
    return "not a normalised relative path"


def absolute_path(root):
    entry = _case(_manifest(root))["inputs"]["positions"]
    outside = root.parent / "outside.npy"
    shutil.copy(root / entry["file"], outside)
    _rewrite(root, lambda m: _case(m)["inputs"]["positions"].update(file=str(outside)))
    return "an absolute path"


def backslash_path(root):
    _rewrite(root, lambda m: _case(m)["inputs"]["positions"].update(
        file=_case(m)["inputs"]["positions"]["file"].replace("/", "\\")))
    return "an absolute path"


def outside_cases(root):
    _rewrite(root, lambda m: _case(m)["inputs"]["positions"].update(file="manifest.json"))
    return "outside the corpus's cases/ folder"


def symlinked_file(root):
    path = root / _case(_manifest(root))["inputs"]["positions"]["file"]
    outside = root.parent / "outside.npy"
    shutil.move(path, outside)
    os.symlink(outside, path)
    return "is a symbolic link"


def symlinked_case_folder(root):
    folder = root / "cases" / CASE
    outside = root.parent / "elsewhere"
    shutil.move(folder, outside)
    os.symlink(outside, folder)
    return "is a symbolic link"


def fifo(root):
    path = root / _case(_manifest(root))["inputs"]["positions"]["file"]
    path.unlink()
    os.mkfifo(path)
    return "a FIFO, not a regular file"


def device(root):
    path = root / _case(_manifest(root))["inputs"]["positions"]["file"]
    path.unlink()
    try:
        os.mknod(path, stat.S_IFCHR | 0o600, os.makedev(1, 3))
    except (PermissionError, OSError):
        pytest.skip("creating a device node needs privileges this machine does not give")
    return "a device, not a regular file"


def huge_header(root):
    """A consistent manifest and a header declaring 10**12 elements: refused before any read."""
    entry = _case(_manifest(root))["inputs"]["positions"]
    with open(root / entry["file"], "wb") as handle:
        np.lib.format.write_array_header_1_0(handle, {"descr": "<i8", "fortran_order": False, "shape": (10 ** 12,)})
    _rewrite(root, lambda m: _case(m)["inputs"]["positions"].update(shape=[10 ** 12]))
    return "above the limit"


def header_disagrees(root):
    entry = _case(_manifest(root))["inputs"]["positions"]
    np.save(root / entry["file"], np.zeros((3,), dtype=np.int64), allow_pickle=False)
    return "the manifest says int64[1]"


def pickled(root):
    entry = _case(_manifest(root))["inputs"]["positions"]
    np.save(root / entry["file"], np.array([{"x": 1}], dtype=object), allow_pickle=True)
    return "holds pickled objects"


def truncated(root):
    path = root / _case(_manifest(root))["outputs"]["table"]["file"]
    path.write_bytes(path.read_bytes()[:-8])
    return "truncated"


def trailing_bytes(root):
    path = root / _case(_manifest(root))["outputs"]["table"]["file"]
    path.write_bytes(path.read_bytes() + b"\0" * 8)
    return "trailing bytes"


def consistent_rewrite(root):
    """New values with matching hashes everywhere: only the shipped manifest hash tells."""
    manifest = _manifest(root)
    item = _case(manifest)["outputs"]["table"]
    data = np.load(root / item["file"]) * 2
    np.save(root / item["file"], data, allow_pickle=False)
    item["sha256"] = corpus.array_sha256(data)
    _save(root, manifest)
    return "is not that of the manifest this posenc-ref"


def every_phase_normwise(root):
    def change(manifest):
        for case in manifest["cases"]:
            for out in case["outputs"].values():
                if out["tolerance"] == "phase":
                    out["tolerance"] = "normwise"
    _rewrite(root, change)
    return "tolerance class 'normwise' in the manifest, 'phase' in the registry"


def unknown_tolerance(root):
    _rewrite(root, lambda m: _case(m)["outputs"]["table"].update(tolerance="lenient"))
    return "unknown tolerance class 'lenient'"


def expected_error_changed(root):
    _rewrite(root, lambda m: _case(m, ERROR_CASE).update(expected_error="out_of_range"))
    return "expected_error 'out_of_range' in the manifest, 'invalid_argument' in the registry"


def op_changed(root):
    _rewrite(root, lambda m: _case(m).update(op="sinusoidal.fairseq"))
    return "op 'sinusoidal.fairseq' in the manifest, 'sinusoidal.table' in the registry"


def output_dropped(root):
    _rewrite(root, lambda m: _case(m).update(outputs={}))
    return "outputs [] in the manifest, ['table'] in the registry"


def manifest_symlink(root):
    outside = root.parent / "manifest-elsewhere.json"
    shutil.move(root / "manifest.json", outside)
    os.symlink(outside, root / "manifest.json")
    return "manifest.json: a symbolic link"


def stray_symlinked_folder(root):
    os.symlink(root.parent, root / "cases" / "zz.extra")
    return "cases/zz.extra: present on disk but not listed"


CATALOGUE = [parent_path, absolute_path, backslash_path, outside_cases, symlinked_file, symlinked_case_folder,
             fifo, device, huge_header, header_disagrees, pickled, truncated, trailing_bytes, consistent_rewrite,
             every_phase_normwise, unknown_tolerance, expected_error_changed, op_changed, output_dropped,
             manifest_symlink, stray_symlinked_folder]


@pytest.mark.parametrize("tamper", CATALOGUE, ids=[t.__name__ for t in CATALOGUE])
def test_every_tampered_corpus_is_refused_by_name(corpus_copy, capsys, tamper):
    words = tamper(corpus_copy)
    problems = corpus.verify(corpus_copy)
    assert any(words in p for p in problems), problems
    assert problems == corpus.check(corpus_copy)[:len(problems)]
    with pytest.raises(corpus.CorpusError) as refused:
        run_conformance(load_adapter("numpy"), spec="numpy", corpus_dir=corpus_copy)
    assert any(words in p for p in refused.value.problems)
    capsys.readouterr()
    assert main(["golden", "verify", "--corpus", str(corpus_copy)]) == 1
    assert words in capsys.readouterr().out
    assert main(["conformance", "numpy", "--corpus", str(corpus_copy), "--case", CASE]) == 2
    assert words in capsys.readouterr().err


@pytest.mark.parametrize("tamper", [consistent_rewrite, every_phase_normwise],
                         ids=["consistent_rewrite", "every_phase_normwise"])
def test_allow_modified_runs_and_stamps_the_report(corpus_copy, tamper):
    tamper(corpus_copy)
    run = run_conformance(load_adapter("numpy"), spec="numpy", corpus_dir=corpus_copy, allow_modified=True,
                          select=lambda e: e["id"] == CASE)
    assert run.corpus["modified"] and run.corpus["problems"]


def test_the_shipped_manifest_hash_is_the_shipped_manifests(corpus_dir):
    loaded = corpus.Corpus(corpus_dir)
    assert loaded.digest_problem is None and loaded.manifest_sha256 == corpus.shipped_digest()


def test_a_regenerated_corpus_elsewhere_leaves_the_shipped_hash_alone(tmp_path, monkeypatch):
    assert not corpus.record_shipped_digest(tmp_path)
