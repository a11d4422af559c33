"""The shipped corpus is intact and current; damage of every kind is reported by file name."""

import json
import re

import numpy as np
import pytest

from posenc_ref import corpus
from posenc_ref.registry import OPS, RETIRED, all_cases


def test_shipped_corpus_verifies_and_checks(corpus_dir):
    assert corpus.verify(corpus_dir) == []
    assert corpus.check(corpus_dir) == []


def test_corpus_stays_small(corpus_dir):
    size = sum(p.stat().st_size for p in corpus_dir.rglob("*") if p.is_file())
    assert size < 10 * 2**20


def test_regenerating_keeps_stored_inputs(corpus_copy):
    """Inputs are stored, not seeds: regeneration reuses what is on disk."""
    entry = _entry(corpus_copy, "sinusoidal.table.base500000.scale0.5")
    path = corpus_copy / entry["inputs"]["positions"]["file"]
    np.save(path, np.array([[1, 2, 3], [4, 5, 6]]), allow_pickle=False)  # and the manifest now disagrees
    corpus.generate(corpus_copy)  # a damaged input is not reused: it is regenerated from the case seed
    assert corpus.verify(corpus_copy) == []


def test_manifest_lists_every_case_with_full_entries(corpus_dir):
    manifest = corpus.read_manifest(corpus_dir)
    assert manifest["format_version"] == corpus.FORMAT_VERSION
    ids = [c["id"] for c in manifest["cases"]]
    assert ids == [case.id for _, case in all_cases()]
    assert not set(ids) & {rid for rid, _ in RETIRED}
    for case in manifest["cases"]:
        assert case["comment"] and case["level"] in ("must", "should")
        if case["kind"] == "error":
            assert case["expected_error"] and not case["outputs"]
        else:
            for out in case["outputs"].values():
                assert out["tolerance"] in ("exact", "ulp", "phase", "normwise", "reduction", "power")
                if out["tolerance"] in ("phase", "reduction"):
                    assert "phase" in out
                elif "phase" in out:  # a carried phase scale (attention with RoPE)
                    assert out["tolerance"] == "normwise" and case["op"] == "attention.rope"
    with_scale = {(c["op"], name) for c in manifest["cases"] for name, out in c["outputs"].items()
                  if "input_scale" in out}
    registered = {(op.name, out.name) for op in OPS for out in op.outputs if out.input_scale}
    assert with_scale == registered and len(registered) >= 10
    for case in manifest["cases"]:
        for name, out in case["outputs"].items():
            if "input_scale" in out:
                item = out["input_scale"]
                assert item["file"] == f"cases/{case['id']}/input_scale.{name}.npy"
                assert item["dtype"] == "float64" and item["shape"] == out["shape"]


def test_required_coverage(corpus_dir):
    manifest = corpus.read_manifest(corpus_dir)
    positions = set()
    for case in manifest["cases"]:
        if case["op"] == "sinusoidal.table" and case["kind"] != "error":
            positions |= set(np.load(corpus_dir / case["inputs"]["positions"]["file"]).reshape(-1).tolist())
    assert {0, 10**4, 10**5, 10**6} <= positions
    by_op = {}
    for case in manifest["cases"]:
        by_op.setdefault(case["op"], []).append(case)
    pairs = {(c["params"]["ladder"], c["params"]["layout"]) for c in by_op["sinusoidal.table"] if c["kind"] != "error"}
    assert len(pairs) == 6
    policies = {c["params"]["odd_width"] for c in by_op["sinusoidal.table"] if c["params"]["dim"] % 2}
    assert {"error", "zero_pad_last", "sin_gets_extra"} <= policies
    shapes = [(len(set(np.load(corpus_dir / c["inputs"]["ys"]["file"]).tolist())),
               len(set(np.load(corpus_dir / c["inputs"]["xs"]["file"]).tolist())))
              for c in by_op["grid2d.sincos"] if c["kind"] != "error"]
    assert any(h > 1 and w > 1 and h != w for h, w in shapes)  # a non-square grid
    tokens = [np.load(corpus_dir / c["inputs"]["tokens"]["file"])
              for c in by_op["sinusoidal.fairseq"] if c["kind"] != "error"]
    assert any((t[:, 0] == 1).any() and (t[:, -1] != 1).all() for t in tokens)  # a left-padded batch


def _entry(directory, case_id):
    return next(c for c in corpus.read_manifest(directory)["cases"] if c["id"] == case_id)


CASE = "sinusoidal.table.d6.position1.known_answer"


def test_modified_array_is_a_hash_mismatch(corpus_copy):
    path = corpus_copy / _entry(corpus_copy, CASE)["outputs"]["table"]["file"]
    data = np.load(path)
    data[0, 0] += 1e-16
    np.save(path, data, allow_pickle=False)
    problems = corpus.verify(corpus_copy)
    assert problems == [f"cases/{CASE}/expected.table.npy: sha256 mismatch (modified or corrupt)"]
    assert corpus.check(corpus_copy) == problems
    with pytest.raises(corpus.CorpusError, match="sha256 mismatch"):
        corpus.load_case(corpus_copy, _entry(corpus_copy, CASE))


def test_truncated_file(corpus_copy):
    path = corpus_copy / _entry(corpus_copy, CASE)["inputs"]["positions"]["file"]
    path.write_bytes(path.read_bytes()[:-4])
    (problem,) = corpus.verify(corpus_copy)
    assert problem.startswith(f"cases/{CASE}/input.positions.npy: unreadable")


def test_pickled_object_array(corpus_copy):
    path = corpus_copy / _entry(corpus_copy, CASE)["inputs"]["positions"]["file"]
    np.save(path, np.array([1, "x"], dtype=object), allow_pickle=True)
    assert corpus.verify(corpus_copy) == [f"cases/{CASE}/input.positions.npy: holds pickled objects"]


def test_wrong_shape_or_dtype(corpus_copy):
    path = corpus_copy / _entry(corpus_copy, CASE)["inputs"]["positions"]["file"]
    np.save(path, np.array([1.0]), allow_pickle=False)
    (problem,) = corpus.verify(corpus_copy)
    assert "holds float64[1], the manifest says int64[1]" in problem


def test_unlisted_and_missing_files(corpus_copy):
    (corpus_copy / "cases" / CASE / "extra.npy").write_bytes(b"")
    path = corpus_copy / _entry(corpus_copy, CASE)["outputs"]["table"]["file"]
    path.unlink()
    assert sorted(corpus.verify(corpus_copy)) == sorted([
        f"cases/{CASE}/expected.table.npy: listed in the manifest but missing",
        f"cases/{CASE}/extra.npy: present on disk but not listed in the manifest",
    ])


def test_broken_manifest(corpus_copy):
    path = corpus_copy / "manifest.json"
    manifest = json.loads(path.read_text())
    del manifest["cases"][0]["comment"]
    manifest["cases"][1]["id"] = manifest["cases"][2]["id"]
    path.write_text(json.dumps(manifest))
    problems = corpus.verify(corpus_copy)
    assert any("'comment' missing" in p for p in problems)
    assert any("duplicate id" in p for p in problems)
    path.write_text("{not json")
    assert corpus.verify(corpus_copy)[0].startswith("manifest.json: not valid JSON")
    path.unlink()
    assert "no manifest.json" in corpus.verify(corpus_copy)[0]


def _rewritten(directory):
    """The one problem of a consistently rewritten corpus: its manifest is not the shipped one."""
    problem = corpus.Corpus(directory).digest_problem
    assert problem is not None and problem.startswith("manifest.json: sha256 ")
    return problem


def test_check_detects_a_stale_expected_value(corpus_copy):
    """A self-consistent but wrong corpus (hash updated) is caught by recomputation."""
    path = corpus_copy / "manifest.json"
    manifest = json.loads(path.read_text())
    entry = next(c for c in manifest["cases"] if c["id"] == CASE)
    item = entry["outputs"]["table"]
    data = np.load(corpus_copy / item["file"])
    data[0, 1] = np.nextafter(np.nextafter(np.nextafter(data[0, 1], 2), 2), 2)
    np.save(corpus_copy / item["file"], data, allow_pickle=False)
    item["sha256"] = corpus.array_sha256(data)
    path.write_text(json.dumps(manifest))
    assert corpus.verify(corpus_copy) == [_rewritten(corpus_copy)]
    assert corpus.check(corpus_copy) == [_rewritten(corpus_copy),
                                         f"{CASE}/table: recomputed oracle is 3 ulp from the stored value"]


def test_check_detects_registry_drift(corpus_copy):
    path = corpus_copy / "manifest.json"
    manifest = json.loads(path.read_text())
    manifest["cases"][0]["params"]["base"] = 20000.0
    path.write_text(json.dumps(manifest))
    rewritten, problem = corpus.check(corpus_copy)
    assert rewritten == _rewritten(corpus_copy) and "params differ" in problem


SCALED = "rope.apply.half.long.d64"


def test_input_scale_is_written_hashed_and_loaded(corpus_dir):
    entry = _entry(corpus_dir, SCALED)
    item = entry["outputs"]["y"]["input_scale"]
    array = np.load(corpus_dir / item["file"])
    assert corpus.array_sha256(array) == item["sha256"] and (array >= 0).all() and array.max() > 0
    golden = corpus.load_case(corpus_dir, entry)
    assert np.array_equal(golden.outputs["y"].input_scale, array)
    assert np.array_equal(corpus.Corpus(corpus_dir).case(entry).outputs["y"].input_scale, array)


def test_corrupt_input_scale_is_reported_and_refused(corpus_copy):
    from posenc_ref.runner.adapters import load_adapter
    from posenc_ref.runner.engine import run_conformance

    relative = _entry(corpus_copy, SCALED)["outputs"]["y"]["input_scale"]["file"]
    data = np.load(corpus_copy / relative)
    data[0, 0, 0, 0] *= 2.0
    np.save(corpus_copy / relative, data, allow_pickle=False)
    problem = f"{relative}: sha256 mismatch (modified or corrupt)"
    assert corpus.verify(corpus_copy) == [problem]
    assert corpus.check(corpus_copy) == [problem]
    with pytest.raises(corpus.CorpusError, match="sha256 mismatch"):
        corpus.load_case(corpus_copy, _entry(corpus_copy, SCALED))
    with pytest.raises(corpus.CorpusError, match="input_scale.y.npy: sha256 mismatch"):
        run_conformance(load_adapter("numpy-float16-inputs"), spec="numpy-float16-inputs", corpus_dir=corpus_copy)


def test_check_detects_a_stale_input_scale(corpus_copy):
    """A self-consistent but wrong input scale (hash updated) is caught by recomputation."""
    path = corpus_copy / "manifest.json"
    manifest = json.loads(path.read_text())
    item = next(c for c in manifest["cases"] if c["id"] == SCALED)["outputs"]["y"]["input_scale"]
    data = np.load(corpus_copy / item["file"]) * 0.5
    np.save(corpus_copy / item["file"], data, allow_pickle=False)
    item["sha256"] = corpus.array_sha256(data)
    path.write_text(json.dumps(manifest))
    assert corpus.verify(corpus_copy) == [_rewritten(corpus_copy)]
    assert corpus.check(corpus_copy) == [_rewritten(corpus_copy),
                                         f"{SCALED}/y: the stored input scale differs from the recomputed one"]


def test_a_corpus_without_input_scales_still_reads(corpus_copy):
    """The input scales are an addition to format 1.0: a corpus (or reader) without them works."""
    from posenc_ref.runner.adapters import load_adapter
    from posenc_ref.runner.engine import run_conformance

    path = corpus_copy / "manifest.json"
    manifest = json.loads(path.read_text())
    for case in manifest["cases"]:
        for out in case["outputs"].values():
            if "input_scale" in out:
                (corpus_copy / out.pop("input_scale")["file"]).unlink()
    path.write_text(json.dumps(manifest))
    assert corpus.verify(corpus_copy) == [_rewritten(corpus_copy)]  # consistent, but not the shipped manifest
    golden = corpus.load_case(corpus_copy, _entry(corpus_copy, SCALED))
    assert golden.outputs["y"].input_scale is None
    assert run_conformance(load_adapter("numpy-float16"), spec="numpy-float16", corpus_dir=corpus_copy,
                           allow_modified=True).passed
    assert "input scale is missing" in corpus.check(corpus_copy)[1]  # but it is stale against the registry


# --- generation: machine independence, version, flags, audit ------------------------------

_GENERATE_AT_DPS = """
import sys
import mpmath
mpmath.mp.dps = int(sys.argv[1])  # before any posenc_ref module is imported
from pathlib import Path
from posenc_ref import corpus, corpus_audit
corpus.generate(Path(sys.argv[2]))
print("\\n".join(corpus_audit.compare(Path(sys.argv[3]), Path(sys.argv[2]))))
"""


@pytest.mark.parametrize("dps", [15, 50])
def test_regenerating_reproduces_the_shipped_corpus_exactly(tmp_path, corpus_dir, dps):
    """A fresh generation (oracle modules imported at mpmath dps 15 or 50) matches every byte of the corpus.

    Each difference names the file, the number of differing elements and the largest ulp distance.
    """
    import subprocess
    import sys

    run = subprocess.run([sys.executable, "-c", _GENERATE_AT_DPS, str(dps), str(tmp_path / "fresh"), str(corpus_dir)],
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    differences = run.stdout.strip()
    assert not differences, f"regenerated corpus differs:\n{differences}"


def test_compare_names_each_differing_file_with_elements_and_ulps(corpus_copy, corpus_dir):
    from posenc_ref import corpus_audit

    path = corpus_copy / "cases" / "rope.inv_freq.llama3.factor32" / "expected.inv_freq.npy"
    values = np.load(path)
    values[3] = np.nextafter(values[3], np.inf)
    values[7] = np.nextafter(np.nextafter(values[7], -np.inf), -np.inf)
    np.save(path, values, allow_pickle=False)
    problems = corpus_audit.compare(corpus_dir, corpus_copy)
    assert problems == [f"cases/rope.inv_freq.llama3.factor32/expected.inv_freq.npy: 2 of {values.size} elements "
                        "differ, largest distance 2 ulp"]
    path.unlink()
    assert corpus_audit.compare(corpus_dir, corpus_copy) == [
        f"cases/rope.inv_freq.llama3.factor32/expected.inv_freq.npy: missing from {corpus_copy}"]


def test_compare_ignores_only_the_generator_versions(corpus_copy, corpus_dir):
    from posenc_ref import corpus_audit

    manifest = json.loads((corpus_copy / "manifest.json").read_text())
    manifest["generator"]["versions"] = {"posenc-ref": "9.9", "numpy": "0.0", "mpmath": "0.0"}
    (corpus_copy / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
    assert corpus_audit.compare(corpus_dir, corpus_copy) == []
    manifest["generator"]["oracle_digits"] = 40
    (corpus_copy / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
    assert corpus_audit.compare(corpus_dir, corpus_copy) == ["manifest.json: differs in generator"]


def test_manifest_records_the_generator_versions_as_information(corpus_dir):
    import mpmath

    from posenc_ref import __version__

    manifest = corpus.read_manifest(corpus_dir)
    assert manifest["version"] == corpus.CORPUS_VERSION == "1.10.0"
    assert set(manifest["generator"]["versions"]) == {"posenc-ref", "numpy", "mpmath"}
    assert corpus.generator_versions() == {"posenc-ref": __version__, "numpy": np.__version__,
                                           "mpmath": mpmath.__version__}


def test_every_flag_used_is_defined_in_the_manifest(corpus_dir):
    manifest = corpus.read_manifest(corpus_dir)
    used = {flag for _, case in all_cases() for flag in case.flags}
    assert used <= set(manifest["flags"]) == set(corpus.FLAGS)
    assert set(corpus.FLAGS) <= used, "a defined flag no case carries"
    for flag, definition in manifest["flags"].items():
        assert set(definition) == {"meaning", "targets"} and all(len(v) > 20 for v in definition.values()), flag


def test_generate_refuses_another_corpus_version_without_force(corpus_copy):
    manifest = json.loads((corpus_copy / "manifest.json").read_text())
    manifest["version"] = "1.0.0"
    (corpus_copy / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
    refused = rf"holds corpus version 1\.0\.0.*writes version {re.escape(corpus.CORPUS_VERSION)}.*--force"
    with pytest.raises(corpus.GenerateRefused, match=refused):
        corpus.generate(corpus_copy)


def test_generate_targets_the_checkout_and_never_an_installed_package(tmp_path):
    from pathlib import Path

    package = Path(corpus.__file__).resolve().parent
    if (package.parent / "pyproject.toml").is_file():  # imported from a checkout
        assert corpus.generation_target(None) == package.parent / "golden"
    else:  # imported from an installed copy
        with pytest.raises(corpus.GenerateRefused, match="--corpus DIR"):
            corpus.generation_target(None)
    assert corpus.generation_target(tmp_path) == tmp_path
    with pytest.raises(corpus.GenerateRefused, match="installed package"):
        corpus.generation_target(package / "golden_data")
    with pytest.raises(corpus.GenerateRefused, match="installed package"):
        corpus.generation_target(package / "golden_data" / "cases")


def test_generate_cli_without_a_checkout_requires_a_corpus_dir(tmp_path):
    """Run from an installed copy of the package (no pyproject.toml above it), generate asks for --corpus."""
    import shutil
    import subprocess
    import sys
    from pathlib import Path

    site = tmp_path / "site"
    shutil.copytree(Path(corpus.__file__).resolve().parent, site / "posenc_ref",
                    ignore=shutil.ignore_patterns("__pycache__"))
    code = "import sys; from posenc_ref.cli import main; sys.exit(main(['golden', 'generate']))"
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path,
                         env={"PYTHONPATH": str(site), "PATH": "/usr/bin:/bin"}, timeout=120)
    assert run.returncode == 2
    assert "not run from a checkout" in run.stderr and "--corpus DIR" in run.stderr
    assert not (site / "posenc_ref" / "golden_data").exists()


def test_audit_finds_a_value_one_ulp_from_the_correctly_rounded_one(corpus_copy):
    from posenc_ref import corpus_audit

    ops = {"rope.inv_freq", "alibi.slopes"}
    rows = corpus_audit.audit(corpus_copy, ops=ops)
    assert {r.op for r in rows} == ops and all(r.values and r.above_half_ulp == 0 for r in rows)
    entry = next(c for c in json.loads((corpus_copy / "manifest.json").read_text())["cases"]
                 if c["id"] == "rope.inv_freq.llama3.factor32")
    item = entry["outputs"]["inv_freq"]
    values = np.load(corpus_copy / item["file"])
    values[34] = np.nextafter(values[34], np.inf)
    np.save(corpus_copy / item["file"], values, allow_pickle=False)
    manifest = json.loads((corpus_copy / "manifest.json").read_text())
    for case in manifest["cases"]:
        if case["id"] == entry["id"]:
            case["outputs"]["inv_freq"]["sha256"] = corpus.array_sha256(values)
    (corpus_copy / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
    row = next(r for r in corpus_audit.audit(corpus_copy, ops={"rope.inv_freq"}))
    assert (row.above_half_ulp, row.max_ulp) == (1, 1.0)


def test_tolerance_page_table_of_reference_errors_is_current(corpus_dir):
    """docs/tolerance.md's measured-errors table covers every op output and is the generator's.

    The reference's last bits depend on NumPy's SIMD path and OpenBLAS's kernel: where both (and
    the NumPy build) are those the page names, the table must match exactly; elsewhere its op and
    output rows must.
    """
    from pathlib import Path

    from posenc_ref import corpus_audit

    page = (Path(__file__).resolve().parent.parent / "docs" / "tolerance.md").read_text(encoding="utf-8")
    on_page = corpus_audit.page_table(page)
    rows = corpus_audit.reference_errors(corpus_dir)
    assert {(r.op, r.output) for r in rows} == {(op.name, out.name) for op in OPS for out in op.outputs}
    fresh = corpus_audit.reference_errors_table(rows)
    stale = "stale: run python -m posenc_ref.corpus_audit --write docs/tolerance.md"
    if on_page.splitlines()[0] == fresh.splitlines()[0]:
        assert on_page == fresh, stale
    else:
        def labels(table: str) -> list[str]:
            return [line.split(" | ")[0] for line in table.splitlines() if line.startswith("| `")]
        assert labels(on_page) == labels(fresh), stale
