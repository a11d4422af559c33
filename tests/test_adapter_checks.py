"""The shared adapter validators (conformance/adapters/posenc_adapter_checks.py) against the corpus.

NumPy only, so this runs without any framework: for every op the adapters port next, each
error case of the bundled corpus is rejected with exactly its category and every other case
is accepted, with the arrays the ports read in the shapes the docstrings promise.
"""

import sys
from pathlib import Path

import numpy as np
import pytest

from posenc_ref.corpus import Corpus, default_corpus_dir

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "conformance" / "adapters"))
import posenc_adapter_attention_checks as attention_checks  # noqa: E402
import posenc_adapter_checks as checks  # noqa: E402
from posenc_adapter_shared import Rejected  # noqa: E402

VALIDATORS = {
    "rope.longrope_inv_freq": checks.longrope,
    "transformer_xl.score": checks.xl_score,
    "transformer_xl.rel_shift": checks.rel_shift,
    "resample.weights": checks.resample_weights,
    "resample.table_1d": checks.resample_table_1d,
    "resample.grid_2d": checks.resample_grid_2d,
    "attention.terms": attention_checks.attention_terms,
    "attention.pipeline": attention_checks.attention_pipeline,
    "attention.rope": attention_checks.attention_rope,
    "attention.alibi": attention_checks.attention_alibi,
    "attention.t5": attention_checks.attention_t5,
    "attention.shaw": attention_checks.attention_shaw,
    "attention.xl": attention_checks.attention_xl,
}
CORPUS = Corpus(default_corpus_dir())
ENTRIES = [e for e in CORPUS.cases if e["op"] in VALIDATORS]


def _case(entry):
    return CORPUS.case(entry)


def test_corpus_covers_every_op_with_errors_and_normal_cases():
    assert CORPUS.problems == []
    for op in VALIDATORS:
        kinds = {e["expected_error"] is None for e in ENTRIES if e["op"] == op}
        assert kinds == {True, False}, op


@pytest.mark.parametrize("entry", [e for e in ENTRIES if e["expected_error"]], ids=lambda e: e["id"])
def test_error_case_rejected_with_its_category(entry):
    case = _case(entry)
    with pytest.raises(Rejected) as info:
        VALIDATORS[case.op](case.params, case.inputs)
    assert info.value.category == case.expected_error, str(info.value)


@pytest.mark.parametrize("entry", [e for e in ENTRIES if not e["expected_error"]], ids=lambda e: e["id"])
def test_normal_case_accepted(entry):
    case = _case(entry)
    result = VALIDATORS[case.op](case.params, case.inputs)
    first = next(iter(case.outputs.values())).expected
    if case.op.startswith("attention.") and case.op != "attention.pipeline":
        assert result["q"].shape == first.shape and result["keep"].ndim == 4
    elif case.op == "attention.pipeline":
        assert first.shape == result["tokens"].shape + (result["embedding"].shape[1],)
    elif case.op == "resample.weights":
        assert first.shape == (result["m"], result["n"])
    elif case.op == "resample.table_1d":
        assert first.shape[0] == result["prefix"].shape[0] + result["axis"]["m"]
    elif case.op == "resample.grid_2d":
        assert first.shape[0] == result["prefix"].shape[0] + result["height"]["m"] * result["width"]["m"]
    elif case.op == "transformer_xl.score":
        assert first.shape == result["distance"].shape
    elif case.op == "transformer_xl.rel_shift":
        assert first.shape == (result["tq"], result["k_len"])
    else:
        assert first.shape == result["factors"].shape
        np.testing.assert_allclose(result["a"], case.outputs["attention_factor"].expected[0], rtol=1e-15)


def _entry(case_id):
    return next(e for e in ENTRIES if e["id"] == case_id)


def test_longrope_picks_the_list_by_context_length():
    for length, long in ((4095, False), (4096, False), (4097, True)):
        case = _case(_entry(f"rope.longrope_inv_freq.phi3.L{length}"))
        result = checks.longrope(case.params, case.inputs)
        name = "long_factor" if long else "short_factor"
        assert result["long"] is long and np.array_equal(result["factors"], case.inputs[name])


def test_resample_sizes_follow_the_scale_factor_floor():
    params = {"kernel": "bicubic", "cubic_a": -0.75, "antialias": "off", "coordinates": "half_pixel",
              "size_from": "scale_factor", "scale_offset": 0.0}
    assert checks.resample_axis(params, 13, 15)["m"] == 14  # float64 floor of 13 * (15/13)
    assert checks.resample_axis({**params, "size_from": "size"}, 13, 15)["m"] == 15
    aligned = checks.resample_axis({**params, "size_from": "size", "coordinates": "align_corners"}, 5, 9)
    assert aligned["scale"] == 0.5 and aligned["align_corners"]


def test_attention_plug_ins_resolve_their_positions():
    rope = _case(_entry("attention.rope.own_positions.tq3tk5"))
    result = attention_checks.attention_rope(rope.params, rope.inputs)
    assert result["q_positions"].tolist() == [[7, 9, 20]] and result["layout"] == "half" and result["base"] == 100.0
    xl = _case(_entry("attention.xl.memory.tq4tk8"))
    result = attention_checks.attention_xl(xl.params, xl.inputs)
    assert result["distance"][0].tolist() == [4, 3, 2, 1, 0, -1, -2, -3]
    shaw = _case(_entry("attention.shaw.k2.t6.d8"))
    assert attention_checks.attention_shaw(shaw.params, shaw.inputs)["index"][0].tolist() == [2, 3, 4, 4, 4, 4]


@pytest.mark.parametrize(("op", "case_id", "change", "category"), [
    ("attention.alibi", "attention.alibi.causal.h4.t8", {"q_positions": np.arange(5)}, "invalid_shape"),
    ("attention.t5", "attention.t5.encoder.t8", {"table": np.zeros((8, 1))}, None),
    ("attention.shaw", "attention.shaw.k2.t6.d8", {"q_positions": np.arange(6) + 1}, "invalid_argument"),
    ("attention.xl", "attention.xl.memory.tq4tk8", {"w_r": np.zeros((2, 5, 4))}, "invalid_argument"),
    ("attention.terms", "attention.terms.shaw_form.t6.d8", {"value_term": np.zeros((1, 1, 6, 6, 3))},
     "invalid_shape"),
    ("attention.pipeline", "attention.pipeline.sinusoidal.gqa.t8.d16", {"pe": np.zeros((7, 16))}, "invalid_shape"),
    ("transformer_xl.score", "transformer_xl.score.mem3.tq4.tk7", {"q_positions": np.array([3, 4, 5, 6.5])},
     "invalid_argument"),
])
def test_more_bad_inputs(op, case_id, change, category):
    case = _case(_entry(case_id))
    inputs = {**case.inputs, **change}
    if category is None:  # a one-head table broadcasts over the heads, as in the reference
        VALIDATORS[op](case.params, inputs)
        return
    with pytest.raises(Rejected) as info:
        VALIDATORS[op](case.params, inputs)
    assert info.value.category == category


@pytest.mark.parametrize("entry", [e for e in ENTRIES if e["op"] == "resample.weights" and not e["expected_error"]],
                         ids=lambda e: e["id"])
def test_resample_axis_matches_the_reference_size_and_scale(entry):
    from posenc_ref.resample import output_size_and_scale

    params = dict(entry["params"])
    axis = checks.resample_weights(params, {})
    assert (axis["m"], axis["scale"]) == output_size_and_scale(**params)
