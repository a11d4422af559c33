"""The registry contract: every op once, every case well formed, every error case raising as declared."""

import json
from collections import Counter

import numpy as np
import pytest

from posenc_ref import corpus
from posenc_ref.errors import ERROR_CATEGORIES, SpecError
from posenc_ref.opspec import CASE_KINDS, REQUIRED
from posenc_ref.registry import OPS, all_cases, get_case, get_op
from posenc_ref.tolerance import compare, policy

CASES = all_cases()


def test_every_op_registered_once():
    names = Counter(op.name for op in OPS)
    assert [n for n, k in names.items() if k > 1] == []
    assert {op.function for op in OPS}.__len__() == len(OPS)


def test_case_ids_unique_and_prefixed_by_their_op():
    ids = Counter(case.id for _, case in CASES)
    assert [i for i, k in ids.items() if k > 1] == []
    for op, case in CASES:
        assert case.id.startswith(op.name.split(".")[0] + "."), case.id


@pytest.mark.parametrize("op", OPS, ids=lambda op: op.name)
def test_op_has_normal_and_error_cases_in_the_corpus(op, corpus_dir):
    kinds = {case.kind for case in op.cases}
    assert "normal" in kinds and "error" in kinds
    stored = {c["id"] for c in corpus.read_manifest(corpus_dir)["cases"] if c["op"] == op.name}
    assert {case.id for case in op.cases} <= stored


@pytest.mark.parametrize("op", OPS, ids=lambda op: op.name)
def test_record_is_complete(op):
    assert op.summary and op.citation and op.outputs
    for param in op.params:
        if param.choices:
            assert param.default is REQUIRED or param.default in param.choices
        if param.is_convention:
            assert set(param.users) == set(param.choices), f"{op.name}.{param.name}: every value needs its users"
    for out in op.outputs:
        if out.tolerance in ("phase", "reduction"):
            assert out.phase is not None
        else:  # a normwise output may carry a phase scale only where its op has position inputs (RoPE)
            assert out.phase is None or (out.tolerance == "normwise" and op.position_inputs)
        assert (out.tolerance == "exact") == (out.dtype == "int64")
        # an output computed from value inputs (not a copy, not normwise) carries an input scale
        computed = bool(op.value_inputs) and out.tolerance in ("phase", "reduction", "power")
        assert computed == (out.input_scale is not None), f"{op.name}.{out.name}: input scale"
    assert set(op.value_inputs) <= set(op.inputs) and not set(op.value_inputs) & set(op.position_inputs)


@pytest.mark.parametrize("op,case", CASES, ids=[c.id for _, c in CASES])
def test_case_is_well_formed(op, case):
    assert case.kind in CASE_KINDS and case.comment
    params = op.full_params(case.params)
    json.dumps(params)  # parameters are plain JSON
    inputs = case.make_inputs()
    assert set(inputs) == set(op.inputs)
    if case.kind == "error":
        assert case.error in ERROR_CATEGORIES
        with pytest.raises(SpecError) as info:
            op.call(params, inputs)
        assert info.value.category == case.error
    else:
        assert case.error is None
        outputs = op.call(params, inputs).values()
        # only a case flagged NonFinite (a documented nan policy) may produce non-finite values
        assert "NonFinite" in case.flags or all(np.all(np.isfinite(v)) for v in outputs)


def test_seeded_inputs_are_stable_and_independent():
    op, case = get_case("sinusoidal.table.base500000.scale0.5")
    first = case.make_inputs()["positions"]
    np.testing.assert_array_equal(first, case.make_inputs()["positions"])
    assert first.shape == (2, 3)


@pytest.mark.parametrize(
    "op,param,wrong",
    [(op, p, v) for op in OPS for p in op.conventions for v in p.choices],
    ids=lambda x: getattr(x, "name", str(x)),
)
def test_every_wrong_convention_choice_fails_a_case(op, param, wrong):
    """For each convention value, some case that uses another value changes beyond tolerance."""
    caught = []
    for case in op.cases:
        params = op.full_params(case.params)
        if params.get(param.name) == wrong or params.get(param.name) not in param.choices:
            continue
        inputs = case.make_inputs()
        if case.error:
            try:
                op.call({**params, param.name: wrong}, inputs)
                caught.append(case.id)  # the wrong choice accepts what the case must reject
            except SpecError as exc:
                if exc.category != case.error:
                    caught.append(case.id)
            continue
        expected = op.call(params, inputs)
        try:
            mutated = op.call({**params, param.name: wrong}, inputs)
        except SpecError:
            caught.append(case.id)  # the wrong choice cannot even run this case
            continue
        for out in op.outputs:
            if mutated[out.name].shape != expected[out.name].shape:
                caught.append(case.id)  # the wrong choice changes the output size (size vs scale factor)
                continue
            phase = out.phase(params, inputs) if out.phase else None
            if not compare(mutated[out.name], expected[out.name], policy(out.tolerance, "float64"), phase).passed:
                caught.append(case.id)
    assert caught, f"no case of {op.name} fails when {param.name}={wrong!r} replaces the right value"


def test_lookup_errors_name_known_ops_and_cases():
    with pytest.raises(KeyError, match="known ops"):
        get_op("nope")
    with pytest.raises(KeyError):
        get_case("nope")
