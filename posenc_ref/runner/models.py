"""The model-level adapter protocol: model cases handed to an engine as the model's own config.

A *model case* is a corpus case of an op named ``model.<scheme>`` (``model.rope``,
``model.alibi``, ...). Its params carry ``{"model": NAME, "config": {...}, "layer": i, ...}``:
the config exactly as the model's ``config.json`` holds it, the layer index, and engine options
such as ``context_length`` (the only ones, besides those three, that a case may carry).

An adapter takes part at the model level by implementing

``run_model(config, layer, inputs, *, op, context_length) -> outputs``
    ``config`` is a fresh copy of the config dict, ``layer`` the layer index, ``inputs`` the
    case's arrays (as for ``run``), ``op`` the case's op (``"model.rope"``), and the case's
    engine options as keywords: ``context_length`` (the length the engine sees,
    ``max(positions) + 1``, or None) and any other param a case carries besides ``model``,
    ``config`` and ``layer``. Returns the outputs as ``run`` does (a mapping by output name).
    The engine parses the config itself: that parsing is what the case checks.
``supports_model(config, *, op) -> bool | str``
    Optional: ``True`` to run, anything else makes the case ``not_applicable`` (a string is the
    reason). ``op`` is passed when the method accepts it (``supports_model(config)`` alone
    decides per model).

An adapter with ``run_model`` and no ``run`` is a model-level adapter only: its op-level cases
are ``not_applicable``.

An adapter without ``run_model`` gets model cases through its ordinary ``run(op, params,
inputs)``, where the built-in ``numpy`` adapter computes them with the registry's reference
functions (the resolver plus the scheme functions).

When a model case fails, :func:`diagnose_model` re-resolves the config under each *reading* an
engine is known to get wrong (a key ignored, the sliding layers given the full layers' rope
parameters, another named interpretation, positions off by one) and names every reading whose
reference output matches what the adapter returned: "layer 5 (full_attention): matches the
reference with `attention_factor` ignored".
"""

from __future__ import annotations

import copy
import importlib
import inspect
import itertools
from collections.abc import Iterator, Mapping
from typing import Any, Final

import numpy as np
from numpy.typing import NDArray

from posenc_ref.errors import SpecError
from posenc_ref.opspec import OpRecord
from posenc_ref.runner import emulation
from posenc_ref.tolerance import Dtype, compare, policy

MODEL_OP_PREFIX: Final = "model."
CASE_KEYS: Final = ("model", "config", "layer")
"""Params of a model case that are not engine options."""
ROPE_BLOCKS: Final = ("rope_parameters", "rope_scaling")
"""Config keys that hold a rope parameter dict (flat, or nested by layer type)."""
_SIBLINGS: Final = (("rope_local_base_freq", "rope_theta"), ("rope_theta", "rope_local_base_freq"),
                    ("original_max_position_embeddings", "max_position_embeddings"))
"""(key, other key): an engine that reads the other key's value where this one is meant."""
_PAIR_LIMIT: Final = 12
"""Pairs of ignored keys are tried only inside rope dicts of at most this many keys."""


def is_model_op(op: str) -> bool:
    """Whether ``op`` is a model-level op (``model.<scheme>``)."""
    return op.startswith(MODEL_OP_PREFIX)


def engine_options(params: Mapping[str, Any]) -> dict[str, Any]:
    """The engine options of a model case: its params other than model, config and layer."""
    return {k: v for k, v in params.items() if k not in CASE_KEYS}


def _accepts(function: Any, names: list[str]) -> list[str]:
    """The names among ``names`` that ``function`` does not accept as keywords."""
    try:
        signature = inspect.signature(function)
    except (TypeError, ValueError):
        return []
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in signature.parameters.values()):
        return []
    return [n for n in names if n not in signature.parameters]


def model_supports(adapter: Any, op: str, params: Mapping[str, Any]) -> str | None:
    """``None`` when the model-level adapter runs this case, else the not_applicable reason."""
    if not isinstance(params.get("config"), Mapping) or not isinstance(params.get("layer"), int):
        return "not a model case: params lack a config dict and an integer layer"
    missing = _accepts(adapter.run_model, ["op", *engine_options(params)])
    if missing:
        return f"run_model takes no keyword {', '.join(missing)} (the case passes it)"
    custom = getattr(adapter, "supports_model", None)
    if not callable(custom):
        return None
    config = copy.deepcopy(dict(params["config"]))
    verdict = custom(config) if _accepts(custom, ["op"]) else custom(config, op=op)
    if verdict is True:
        return None
    return verdict if isinstance(verdict, str) and verdict else f"model {params.get('model')!r} not supported"


def call_model(adapter: Any, op: str, params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]]) -> Any:
    """``adapter.run_model`` on a model case: a fresh copy of the config, the layer, the inputs,
    the op and the case's engine options."""
    return adapter.run_model(copy.deepcopy(dict(params["config"])), int(params["layer"]), dict(inputs), op=op,
                             **engine_options(params))


def uses_run_model(adapter: Any, op: str) -> bool:
    """Whether the runner hands this case to ``adapter.run_model``."""
    return is_model_op(op) and callable(getattr(adapter, "run_model", None))


# --- readings: the config as an engine may have misread it -------------------------------------

def _without(config: Mapping[str, Any], path: tuple[str, ...], keys: tuple[str, ...]) -> dict[str, Any]:
    """A deep copy of ``config`` with ``keys`` removed from the dict at ``path``."""
    out = copy.deepcopy(dict(config))
    node: Any = out
    for step in path:
        node = node[step]
    for key in keys:
        node.pop(key, None)
    return out


def _rope_dicts(config: Mapping[str, Any]) -> Iterator[tuple[tuple[str, ...], Mapping[str, Any]]]:
    """``(path, dict)`` for every rope parameter dict: ``rope_parameters`` / ``rope_scaling`` and
    each per-layer-type entry nested in them."""
    for block in ROPE_BLOCKS:
        value = config.get(block)
        if not isinstance(value, Mapping):
            continue
        nested = [k for k, v in value.items() if isinstance(v, Mapping)]
        if nested:
            for kind in nested:
                yield (block, kind), value[kind]
        else:
            yield (block,), value


def _label(path: tuple[str, ...], keys: tuple[str, ...]) -> str:
    where = f" (in {'.'.join(path)})" if path else ""
    return " and ".join(f"`{k}`" for k in keys) + f" ignored{where}"


def _defaults(config: Mapping[str, Any]) -> dict[str, Any]:
    """The keys the resolver takes from the config class because the config leaves them out, with
    their values (``text_config.``-prefixed where nested); empty when the resolver cannot read it."""
    try:
        models = importlib.import_module("posenc_ref.models")
        return dict(models.resolve(dict(config)).provenance.defaulted)
    except Exception:  # a misreading is tried on any config a case carries, readable or not
        return {}


def readings(config: Mapping[str, Any], defaults: Mapping[str, Any] | None = None
             ) -> Iterator[tuple[str, dict[str, Any], frozenset[str]]]:
    """``(label, config, keys)`` for each known misreading of ``config``; ``keys`` names the
    ignored keys (``path.key``) so that a pair is not reported beside a single key that already
    explains the failure.

    * a multimodal config's ``text_config`` read the same way (labels say ``in text_config``);
    * every top-level key ignored, one at a time (``rope_local_base_freq``, ``head_dim``,
      ``partial_rotary_factor``, ``layer_types``, ``query_pre_attn_scalar``, ...);
    * every key of every rope dict ignored, one at a time and in pairs (``attention_factor``;
      ``mscale`` and ``mscale_all_dim``; ``truncate``; ...), and the whole dict ignored;
    * a key read as its sibling (``rope_local_base_freq`` as ``rope_theta``: sliding layers
      with the global base), either key given or left to the config class's default
      (``defaults``: the resolver's defaulted keys, found from ``config`` when None; a Gemma 3
      file may name neither base);
    * a nested per-layer-type rope dict read as one: every layer type given the entry of
      another (Gemma 3's sliding layers scaled like its full layers);
    * both ``rope_parameters`` and ``rope_scaling`` present: each read alone.
    """
    defaults = _defaults(config) if defaults is None else defaults
    text = config.get("text_config")
    if isinstance(text, Mapping):
        inner_defaults = {k[len("text_config."):]: v for k, v in defaults.items() if k.startswith("text_config.")}
        for label, changed, inner in readings(text, inner_defaults):
            where = label.replace(" (in ", " (in text_config.") if " (in " in label else label + " (in text_config)"
            yield (where, {**copy.deepcopy(dict(config)), "text_config": changed},
                   frozenset(f"text_config.{k}" for k in inner))
    for key in config:
        if key == "text_config" and isinstance(text, Mapping):
            continue
        yield _label((), (key,)), _without(config, (), (key,)), frozenset({key})
    effective = {**defaults, **config}
    for target, source in _SIBLINGS:
        if target in effective and source in effective and effective[target] != effective[source]:
            yield (f"`{target}` read as `{source}` ({effective[source]!r})", {**copy.deepcopy(dict(config)),
                   target: copy.deepcopy(effective[source])}, frozenset({f"{target}<-{source}"}))
    for path, block in _rope_dicts(config):
        keys = [k for k in block if k not in ("rope_type", "type")]
        for key in keys:
            yield _label(path, (key,)), _without(config, path, (key,)), _keys(path, (key,))
        if len(keys) <= _PAIR_LIMIT:
            for pair in itertools.combinations(keys, 2):
                yield _label(path, pair), _without(config, path, pair), _keys(path, pair)
        if len(path) == 2:
            yield (f"`{path[0]}.{path[1]}` ignored", _without(config, (path[0],), (path[1],)),
                   frozenset({".".join(path)}))
    for name in ROPE_BLOCKS:
        value = config.get(name)
        if isinstance(value, Mapping):
            nested = {k: v for k, v in value.items() if isinstance(v, Mapping)}
            for source, target in itertools.permutations(nested, 2):
                changed = copy.deepcopy(dict(config))
                changed[name][target] = copy.deepcopy(dict(nested[source]))
                yield (f"{target} layers given the {source} rope parameters (`{name}.{source}`)", changed,
                       frozenset({f"{name}.{target}"}))
    if all(isinstance(config.get(b), Mapping) for b in ROPE_BLOCKS):
        for kept, dropped in itertools.permutations(ROPE_BLOCKS, 2):
            yield f"`{kept}` read and `{dropped}` ignored", _without(config, (), (dropped,)), frozenset({dropped})


def _keys(path: tuple[str, ...], keys: tuple[str, ...]) -> frozenset[str]:
    return frozenset(".".join(path + (k,)) for k in keys)


def _interpretations() -> tuple[str, ...]:
    """The resolver's named interpretations, when it lists them."""
    try:
        models = importlib.import_module("posenc_ref.models")
    except ImportError:
        return ()
    names = getattr(models, "INTERPRETATIONS", ())
    return tuple(names) if not isinstance(names, str) else (names,)


def layer_description(config: Mapping[str, Any], layer: int, params: Mapping[str, Any] | None = None) -> str:
    """``layer 5 (full_attention)``: the layer index and the kind the resolver gives it."""
    try:
        models = importlib.import_module("posenc_ref.models")
        kwargs = {"context_length": params["context_length"]} if params and "context_length" in params else {}
        kind = models.resolve(dict(config), **kwargs).layers[layer].kind
        return f"layer {layer} ({kind})"
    except Exception:  # the resolver rejecting the config is reported by the case itself
        return f"layer {layer}"


def diagnose_model(op: OpRecord, params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]],
                   failing: Mapping[str, NDArray[Any]], dtype: Dtype) -> list[str]:
    """The config readings under which the reference reproduces every failing output.

    Each entry reads ``"layer i (kind): matches the reference with `key` ignored"`` (or another
    reading, see :func:`readings`); when none matches, one entry saying so, naming the layer,
    so a report never leaves the layer out.
    """
    config = params["config"]
    where = layer_description(config, int(params["layer"]), params)
    outputs = {out.name: out for out in op.outputs}
    candidates: list[tuple[str, dict[str, Any], Mapping[str, NDArray[Any]], frozenset[str]]] = [
        (f"matches the reference with {label}", {**params, "config": changed}, inputs, keys)
        for label, changed, keys in readings(config)]
    for name in _interpretations():
        if params.get("interpretation", None) != name:
            candidates.append((f"matches the reference under interpretation={name!r}",
                               {**params, "interpretation": name}, inputs, frozenset()))
    for group in [op.position_inputs] + [(n,) for n in op.position_inputs] * (len(op.position_inputs) > 1):
        for delta in (1, -1):
            shifted = {**inputs, **{n: np.asarray(inputs[n]) + delta for n in group}}
            label = "positions" if group == ("positions",) else " and ".join(group)
            candidates.append((f"matches the reference with {label} {'+' if delta > 0 else '-'} 1 (off by one)",
                               dict(params), shifted, frozenset()))
    found: list[str] = []
    what = op.low_precision_intermediates
    if what and op.name in emulation.EMULATIONS:  # the right reading, computed in low precision
        for angles in (("float32", "float16") if dtype == "float64" else ("float16",)):
            try:
                candidate = emulation.emulate(op.name, params, inputs, output_dtype="float32", angle_dtype=angles)
            except (SpecError, ValueError, TypeError, KeyError, IndexError, FloatingPointError):
                continue
            if all(_matches(outputs[name], params, inputs, np.asarray(candidate[name]), actual, dtype)
                   for name, actual in failing.items()):
                note = " (the adapter declares float64)" if angles == "float32" else ""
                found.append(f"{where}: matches the reference computed with {angles} {what}{note}")
    explained: list[frozenset[str]] = []
    for label, cparams, cinputs, keys in candidates:
        if keys and any(done <= keys for done in explained):
            continue
        try:
            candidate = op.call(cparams, cinputs)
        except (SpecError, ValueError, TypeError, KeyError, IndexError, FloatingPointError):
            continue
        if all(_matches(outputs[name], cparams, cinputs, np.asarray(candidate[name]), actual, dtype)
               for name, actual in failing.items()):
            found.append(f"{where}: {label}")
            if keys:
                explained.append(keys)
    return found or [f"{where}: no known misreading of the config matches"]


def _matches(out: Any, params: Mapping[str, Any], inputs: Mapping[str, Any], expected: NDArray[Any],
             actual: NDArray[Any], dtype: Dtype) -> bool:
    if expected.shape != actual.shape:
        return False
    phase = out.phase(params, inputs) if out.phase else None
    scale = out.input_scale(params, inputs) if out.input_scale else None
    with np.errstate(all="ignore"):
        return bool(compare(actual, expected, policy(out.tolerance, dtype), phase, scale).passed)
