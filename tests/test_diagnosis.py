"""The diagnosis as a search: named hypotheses, fitted values, shifts below 0, integer offsets, the catalogue."""

import numpy as np
import pytest

from posenc_ref import rope, rope_scaling
from posenc_ref.registry import get_op
from posenc_ref.runner import diagnosis
from posenc_ref.runner.diagnosis_measure import nameable, score, score_all, summary
from posenc_ref.runner.emulation import rope as emu

# the mutants recreating the failures issue 18 lists under "Done when"
DONE_WHEN = ("rope-dynamic-as-linear-rescale", "rope-longrope-always-long", "rope-yarn-beta-zero-literal",
             "rope-float32-rounded-angles-claimed-float64", "rope-yarn-truncate-ignored",
             "rope-yarn-attention-factor-ignored", "attention-fully-masked-nan", "rope-positions-minus-one",
             "attention-positional-alignment-swapped", "t5-bucket-rounded-log")


def test_the_catalogue_is_named_at_90_percent():
    """The share bars; the time bar (no case 1 s or more) is benchmarks/bench_diagnosis.py's."""
    scores = score_all()
    outputs, mutants, slowest = summary(scores)
    assert len(scores) == len(nameable()) and set(DONE_WHEN) <= set(nameable())
    assert mutants >= 0.9, [(s.name, s.named, s.failing) for s in scores if s.share < 0.9]
    assert outputs >= 0.9 and slowest > 0
    assert all(len(s.seconds) > 0 for s in scores if s.failing)  # each failing case's diagnosis was timed


# attention fits (issue 18 item 1): scale, window edge, GQA head mapping
ATTENTION_FITS = ("missing-inverse-sqrt-d", "gqa-modulo", "window-edge-off-by-one")
# rotation fits: the base read back from rope.apply's rotated vectors
ROTATION_FITS = ("rope-theta-ignored",)


@pytest.mark.parametrize("name", DONE_WHEN + ATTENTION_FITS + ROTATION_FITS)
def test_each_done_when_failure_is_named(name):
    s = score(name)
    assert s.failing and s.named == s.failing, s.missed


def test_a_uniform_rescale_is_reported_with_its_fitted_factor():
    op = get_op("rope.inv_freq")
    params = {"dim": 128, "base": 10000.0}
    actual = rope_scaling.rope_inv_freq(dim=128)[0] / 2.6
    found = diagnosis.diagnose(op, params, {}, {"inv_freq": actual}, "float64")
    assert "matches rope_type='linear' with factor 2.6 (fitted)" in found


def test_a_base_is_fitted():
    op = get_op("rope.inv_freq")
    actual = rope_scaling.rope_inv_freq(dim=64, base=31234.5)[0]
    found = diagnosis.diagnose(op, {"dim": 64, "base": 10000.0}, {}, {"inv_freq": actual}, "float64")
    assert "matches rope_type='default' with base 31234.5 (fitted)" in found


def test_a_hypothesis_must_keep_the_outputs_that_passed():
    """A YaRN attention factor of 1 is not 'rope_type=default': that would move the frequencies too."""
    op = get_op("rope.inv_freq")
    params = {"rope_type": "yarn", "dim": 128, "factor": 16.0, "original_max_position": 4096}
    found = diagnosis.diagnose(op, params, {}, {"attention_factor": np.ones(1)}, "float64")
    assert found == ["matches the reference with attention_factor 1 (fitted)"]


def _shift_formula(op_name, params, inputs):
    op = get_op(op_name)
    label, compute = next((label, compute) for label, compute, *_ in diagnosis.hypotheses(op, params, inputs, {},
                                                                                            "float64")
                          if "positions - 1" in label)
    assert "evaluated as -1 by the formula" in label
    return compute()


@pytest.mark.parametrize("width", ["full", "half", "full_interleaved"])
def test_cos_sin_below_zero_by_the_angle_addition_formula(width):
    w = rope_scaling.rope_inv_freq(dim=16, base=500.0)[0]
    pos = np.array([0, 1, 7, 300])
    got = _shift_formula("rope.cos_sin", {"width": width, "attention_factor": 1.5}, {"positions": pos, "inv_freq": w})
    angle = (pos - 1.0)[:, None] * w  # directly, at -1, 0, 6, 299
    cos, sin = 1.5 * np.cos(angle), 1.5 * np.sin(angle)
    if width == "full":
        cos, sin = np.concatenate([cos, cos], -1), np.concatenate([sin, sin], -1)
    elif width == "full_interleaved":
        cos, sin = np.repeat(cos, 2, -1), np.repeat(sin, 2, -1)
    np.testing.assert_allclose(got["cos"], cos, atol=1e-12)
    np.testing.assert_allclose(got["sin"], sin, atol=1e-12)


@pytest.mark.parametrize("layout", sorted(rope.LAYOUTS))
@pytest.mark.parametrize(("rotary_dim", "partial", "x_layout"), [(None, "prefix", "BHTD"), (8, "prefix", "BTHD"),
                                                                  (8, "proportional", "BHTD")])
def test_apply_below_zero_through_the_inverse_rotation(layout, rotary_dim, partial, x_layout):
    rng = np.random.default_rng(5)
    x = rng.normal(size=(2, 3, 4, 12)) if x_layout == "BHTD" else rng.normal(size=(2, 4, 3, 12))
    pos = np.array([0, 2, 5, 40])
    params = {"base": 100.0, "rotary_dim": rotary_dim, "partial": partial, "layout": layout, "x_layout": x_layout,
              "attention_factor": 0.8}
    got = _shift_formula("rope.apply", params, {"x": x, "positions": pos})["y"]
    # the emulation's rotation computes the formula with no position check: in float64 at -1, 1, 4, 39
    want = emu.rotate_lowp(x, pos - 1, params, np.float64, np.float64)[0]
    np.testing.assert_allclose(got, want, atol=1e-12)


def test_integer_outputs_get_count_offset_and_where():
    op = get_op("t5.bucket")
    rel = np.arange(-40, 41)
    expected = op.call({}, {"relative_positions": rel})["buckets"]
    actual = expected.copy()
    actual[[3, 70]] += 1
    found = diagnosis.diagnose(op, {}, {"relative_positions": rel}, {"buckets": actual}, "float64")
    assert f"buckets off by +1 at 2 of {rel.size} elements (at (3,), (70,))" in found
    assert not any("inf" in line for line in found)


def test_nothing_explains_noise_and_the_closest_candidate_is_named():
    op = get_op("rope.cos_sin")
    w = rope_scaling.rope_inv_freq(dim=8)[0]
    inputs = {"positions": np.arange(6), "inv_freq": w}
    good = op.call({}, inputs)
    noisy = {"cos": good["cos"] + 0.01 * np.random.default_rng(1).normal(size=good["cos"].shape)}
    found = diagnosis.diagnose(op, {}, inputs, noisy, "float64")
    assert len(found) == 1 and found[0].startswith("unexplained: no known mistake explains it; closest candidate: ")
    assert "(residual " in found[0]
    assert diagnosis.diagnose(op, {}, inputs, noisy, "float64") == found  # deterministic


def test_float32_is_judged_at_float32_tolerance_only_when_float64_is_claimed():
    op = get_op("rope.cos_sin")
    w = rope_scaling.rope_inv_freq(dim=64)[0]
    inputs = {"positions": np.arange(0, 4096, 37), "inv_freq": w}
    exact = op.call({}, inputs)
    actual = {"sin": np.sin(inputs["positions"][:, None].astype(np.float32) * w.astype(np.float32))}
    actual["sin"] = np.concatenate([actual["sin"], actual["sin"]], -1).astype(np.float64)
    assert not np.allclose(actual["sin"], exact["sin"], atol=1e-9, rtol=0)
    at64 = diagnosis.diagnose(op, {}, inputs, actual, "float64")
    assert any(line.startswith("consistent with float32 angles") for line in at64)
    assert not any(line.startswith("consistent with float32") for line in diagnosis.diagnose(op, {}, inputs, actual,
                                                                                             "float32"))


def test_the_search_is_bounded():
    for name in ("rope.inv_freq", "attention.rope", "rope.apply", "t5.bias"):
        op = get_op(name)
        case = next(c for c in op.cases if c.kind != "error")
        found = diagnosis.hypotheses(op, op.full_params(case.params), case.make_inputs(), {}, "float64")
        assert 0 < len(found) <= diagnosis.MAX_HYPOTHESES


def test_failures_are_grouped_by_explanation():
    from posenc_ref.runner.adapters import load_adapter
    from posenc_ref.runner.engine import run_conformance
    from posenc_ref.runner.report import terminal

    run = run_conformance(load_adapter("mutant:rope-yarn-without-attention-factor"), spec="mutant",
                          select=lambda e: e["op"] == "rope.inv_freq")
    failing = [r for r in run.results if r.status == "fail"]
    lines = diagnosis.group_failures(run.results)
    counts = [int(line.split(" of ")[0]) for line in lines]
    assert sum(counts) == len(failing) and counts == sorted(counts, reverse=True)
    assert lines[0] == (f"{counts[0]} of {len(failing)} failing outputs: "
                        "matches the reference with attention_factor 1 (fitted)")
    assert all(line.endswith(")") and "largest residual" in line for line in lines if "unexplained" in line)
    assert f"  {lines[0]}" in terminal([run]).splitlines()


def test_two_convention_slips_at_once_are_named_as_a_pair():
    op = get_op("sinusoidal.table")
    inputs = next(c for c in op.cases if c.kind == "normal").make_inputs()
    params = op.full_params({**next(c for c in op.cases if c.kind == "normal").params, "ladder": "paper",
                             "layout": "interleaved"})
    both = op.call({**params, "ladder": "t2t", "layout": "concat_sin_cos"}, inputs)
    name = op.outputs[0].name
    found = diagnosis.diagnose(op, params, inputs, {name: both[name]}, "float64")
    assert "matches the reference under ladder='t2t' and layout='concat_sin_cos'" in found
    # a single slip is reported alone: pairs are tried only when no single one explains it
    one = op.call({**params, "layout": "concat_sin_cos"}, inputs)
    assert not any(" and " in line for line in diagnosis.diagnose(op, params, inputs, {name: one[name]}, "float64"))


def test_a_position_offset_is_found_by_the_search():
    """Every position shifted by 5 (a cache length counted twice, say) is named with its offset."""
    op = get_op("rope.cos_sin")
    case = next(c for c in op.cases if c.kind == "normal" and "positions" in c.make_inputs())
    params, inputs = op.full_params(case.params), case.make_inputs()
    actual = op.call(params, {**inputs, "positions": np.asarray(inputs["positions"]) + 5})
    found = diagnosis.diagnose(op, params, inputs, actual, "float64")
    assert any(line.startswith("matches the reference with positions + 5 (a position offset") for line in found)
    assert not any("positions - " in line for line in found)


def test_an_offset_below_zero_is_not_tried():
    op = get_op("rope.cos_sin")
    case = next(c for c in op.cases if c.kind == "normal" and np.min(c.make_inputs()["positions"]) == 0)
    labels = [h[0] for h in diagnosis.hypotheses(op, op.full_params(case.params), case.make_inputs(), {}, "float64")]
    assert any("positions + 8" in label for label in labels)
    assert not any("positions - 2" in label or "positions - 8" in label for label in labels)


# fitted parameters of the rotations (issue 18 item 1): the failing outputs are the reference at changed params
def _apply_case(case_id):
    op = get_op("rope.apply")
    case = next(c for c in op.cases if c.id == case_id)
    return op, op.full_params(case.params), case.make_inputs()


def _plain(params):
    """The case's rotation (layouts, rotary part, the op's attention factor) with no scaling."""
    return {**params, **rope.SCALING}


@pytest.mark.parametrize("case_id", ["rope.apply.half.long.d64", "rope.apply.proportional.d96.rotary24",
                                     "rope.apply.interleaved_to_half.rotary32.d64", "rope.apply.bthd.batch_positions",
                                     "rope.apply.dynamic.d128.L8192.long", "rope.apply.yarn.d128.s16.long"])
def test_apply_linear_factor_is_fitted(case_id):
    """Linear 2.6 where the case says default, dynamic or YaRN: a uniform rescale of the plain frequencies."""
    op, params, inputs = _apply_case(case_id)
    actual = op.call({**_plain(params), "rope_type": "linear", "factor": 2.6}, inputs)
    found = diagnosis.diagnose(op, params, inputs, actual, "float64")
    assert "matches rope_type='linear' with factor 2.6 (fitted)" in found


@pytest.mark.parametrize("case_id", ["rope.apply.half.long.d64", "rope.apply.prefix.interleaved.d96.rotary48",
                                     "rope.apply.bthd.long.d32"])
def test_apply_base_is_fitted(case_id):
    op, params, inputs = _apply_case(case_id)
    actual = op.call({**params, "base": 5e5}, inputs)
    found = diagnosis.diagnose(op, params, inputs, actual, "float64")
    assert "matches rope_type='default' with base 500000 (fitted)" in found


def test_apply_base_of_a_scaled_case_is_fitted():
    """rope_theta ignored under Llama 3 scaling: the same scaling at the fitted base."""
    op, params, inputs = _apply_case("rope.apply.llama3.d128.base500000.long")
    actual = op.call({**params, "base": 10000.0}, inputs)
    assert "matches the reference with base 10000 (fitted)" in diagnosis.diagnose(op, params, inputs, actual,
                                                                                   "float64")


@pytest.mark.parametrize("case_id", ["rope.apply.half.long.d64", "rope.apply.prefix.half.d96.rotary24.attention_factor",
                                     "rope.apply.yarn.d128.s16.long"])
def test_apply_attention_factor_is_fitted(case_id):
    op, params, inputs = _apply_case(case_id)
    actual = op.call({**params, "attention_factor": 1.2}, inputs)
    found = diagnosis.diagnose(op, params, inputs, actual, "float64")
    assert "matches the reference with attention_factor 1.2 (fitted)" in found


def test_a_missing_yarn_factor_in_the_rotation_is_fitted():
    op, params, inputs = _apply_case("rope.apply.yarn.d128.s16.long")
    actual = op.call({**params, "scaling_attention_factor": 1.0}, inputs)
    found = diagnosis.diagnose(op, params, inputs, actual, "float64")
    assert "matches the reference with scaling_attention_factor 1 (fitted)" in found


def _cos_sin_case(case_id):
    op = get_op("rope.cos_sin")
    case = next(c for c in op.cases if c.id == case_id)
    return op, op.full_params(case.params), case.make_inputs()


@pytest.mark.parametrize("case_id", ["rope.cos_sin.d64.base10000.long", "rope.cos_sin.full_interleaved.d32.long",
                                     "rope.cos_sin.positions_2d_repeated", "rope.cos_sin.yarn_attention_factor_folded"])
def test_cos_sin_fits(case_id):
    """Position interpolation by 2.6 (also on YaRN frequencies), a wrong base, a wrong factor."""
    op, params, inputs = _cos_sin_case(case_id)
    w = np.asarray(inputs["inv_freq"])
    linear = op.call(params, {**inputs, "inv_freq": w / 2.6})  # every angle p w / 2.6
    assert "matches rope_type='linear' with factor 2.6 (fitted)" in diagnosis.diagnose(op, params, inputs, linear,
                                                                                        "float64")
    based = op.call(params, {**inputs, "inv_freq": rope_scaling.rope_inv_freq(dim=2 * w.size, base=31234.5)[0]})
    assert "matches rope_type='default' with base 31234.5 (fitted)" in diagnosis.diagnose(op, params, inputs, based,
                                                                                           "float64")
    scaled = op.call({**params, "attention_factor": 1.2}, inputs)
    assert "matches the reference with attention_factor 1.2 (fitted)" in diagnosis.diagnose(op, params, inputs, scaled,
                                                                                             "float64")


def test_the_shortest_matching_rounding_is_reported_once():
    op, params, inputs = _apply_case("rope.apply.half.d64.base10000")
    actual = op.call({**params, "attention_factor": 1.25}, inputs)
    found = [line for line in diagnosis.diagnose(op, params, inputs, actual, "float64") if "(fitted)" in line]
    assert found == ["matches the reference with attention_factor 1.25 (fitted)"]


@pytest.mark.parametrize(("op_name", "case_id"), [("rope.apply", "rope.apply.half.long.d64"),
                                                  ("rope.apply", "rope.apply.yarn.d128.s16.long"),
                                                  ("rope.cos_sin", "rope.cos_sin.d64.base10000.long")])
def test_random_output_gets_no_fitted_label(op_name, case_id):
    op = get_op(op_name)
    case = next(c for c in op.cases if c.id == case_id)
    params, inputs = op.full_params(case.params), case.make_inputs()
    rng = np.random.default_rng(3)
    actual = {name: rng.normal(size=np.shape(value)) for name, value in op.call(params, inputs).items()}
    found = diagnosis.diagnose(op, params, inputs, actual, "float64")
    assert len(found) == 1 and found[0].startswith(diagnosis.UNEXPLAINED)
    labels = [h[0] for h in diagnosis.hypotheses(op, params, inputs, actual, "float64")]
    assert len(labels) <= diagnosis.MAX_HYPOTHESES


def test_fits_never_raise():
    """Wrong shapes, NaN and zeros are skipped (no fitted hypothesis), never raised."""
    op, params, inputs = _apply_case("rope.apply.half.long.d64")
    for bad in (np.zeros((1, 2)), np.full(np.shape(inputs["x"]), np.nan), np.zeros(np.shape(inputs["x"]))):
        labels = [h[0] for h in diagnosis.hypotheses(op, params, inputs, {"y": bad}, "float64")]
        assert not any("(fitted)" in label for label in labels)


def _scores_case(case_id):
    op = get_op("rope.scores")
    case = next(c for c in op.cases if c.id == case_id)
    return op, op.full_params(case.params), case.make_inputs()


@pytest.mark.parametrize("case_id", ["rope.scores.half.d64", "rope.scores.long.offsets_near_1e6",
                                     "rope.scores.prefix.d96.rotary24", "rope.scores.llama3.d128.long"])
def test_scores_fits(case_id):
    """Linear 2.6, a wrong base, a wrong attention factor: the scores at changed params, searched."""
    op, params, inputs = _scores_case(case_id)
    named = params["rope_type"] != "default"
    linear = op.call({**_plain(params), "rope_type": "linear", "factor": 2.6}, inputs)
    assert "matches rope_type='linear' with factor 2.6 (fitted)" in diagnosis.diagnose(op, params, inputs, linear,
                                                                                        "float64")
    base = 31234.5 if params["base"] == 5e5 else 5e5
    based = op.call({**params, "base": base}, inputs)
    reading = "the reference" if named else "rope_type='default'"
    label = f"matches {reading} with base {base:.6g} (fitted)"
    assert label in diagnosis.diagnose(op, params, inputs, based, "float64")
    scaled = op.call({**params, "attention_factor": 1.2}, inputs)
    assert "matches the reference with attention_factor 1.2 (fitted)" in diagnosis.diagnose(op, params, inputs, scaled,
                                                                                             "float64")


def test_scores_yarn_factor_is_fitted():
    op, params, inputs = _scores_case("rope.scores.yarn.gpt_oss.truncate_false.d64.long")
    actual = op.call({**params, "scaling_attention_factor": 1.0}, inputs)
    found = diagnosis.diagnose(op, params, inputs, actual, "float64")
    assert "matches the reference with scaling_attention_factor 1 (fitted)" in found


@pytest.mark.parametrize("case_id", ["rope.scores.half.d64", "rope.scores.llama3.d128.long",
                                     "rope.scores.prefix.d96.rotary24"])
def test_random_scores_get_no_fitted_hypothesis(case_id):
    op, params, inputs = _scores_case(case_id)
    rng = np.random.default_rng(3)
    actual = {"scores": rng.normal(size=np.shape(op.call(params, inputs)["scores"]))}
    labels = [h[0] for h in diagnosis.hypotheses(op, params, inputs, actual, "float64")]
    assert not any("(fitted)" in label for label in labels)
    found = diagnosis.diagnose(op, params, inputs, actual, "float64")
    assert len(found) == 1 and found[0].startswith(diagnosis.UNEXPLAINED)


def test_scores_fits_never_raise():
    op, params, inputs = _scores_case("rope.scores.half.d64")
    shape = np.shape(op.call(params, inputs)["scores"])
    for bad in (np.zeros((1, 2)), np.full(shape, np.nan), np.zeros(shape), np.full(shape, 1e300)):
        labels = [h[0] for h in diagnosis.hypotheses(op, params, inputs, {"scores": bad}, "float64")]
        assert not any("(fitted)" in label for label in labels)
