"""The import direction of ARCHITECTURE.md, read off the source of the whole package.

Every ``.py`` file under ``posenc_ref/`` is parsed (``ast``), so new files are covered. An
import counts wherever it is written (module level or inside a function). ``from posenc_ref
import name`` counts as an import of the submodule ``posenc_ref.name`` when there is one, else of
the package face ``posenc_ref`` (which imports the scheme modules).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent / "posenc_ref"
SUBPACKAGES = ("records", "oracle", "corpus", "runner", "registry", "cli", "derivations", "models", "scales",
               "corpus_audit", "_manifest_digest", "_corpus_files", "_corpus_read", "_corpus_check")
"""Everything above the spec floor (``corpus``, its private parts ``_corpus_*``, ``corpus_audit``, ``registry`` and
``cli`` are modules)."""


def module_name(path: Path) -> str:
    parts = ("posenc_ref", *path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(path): path for path in sorted(ROOT.rglob("*.py"))}


def _is_module(name: str) -> bool:
    return name in MODULES


def imports(name: str) -> set[str]:
    """The posenc_ref modules ``name``'s source imports."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(MODULES[name].read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: resolve against the importing package
                package = name if MODULES[name].name == "__init__.py" else name.rpartition(".")[0]
                base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1])
                module = f"{base}.{node.module}" if node.module else base
            else:
                module = node.module or ""
            for alias in node.names:
                found.add(f"{module}.{alias.name}" if _is_module(f"{module}.{alias.name}") else module)
    return {m for m in found if m == "posenc_ref" or m.startswith("posenc_ref.")}


def floor(name: str) -> str:
    """``spec`` for the scheme modules and their helpers, else the top-level package or module name."""
    parts = name.split(".")
    if len(parts) > 1 and parts[1] in SUBPACKAGES:
        return parts[1]
    return "spec"


def transitive(name: str, stop: tuple[str, ...] = ()) -> set[str]:
    """Every posenc_ref module ``name`` reaches; the imports of modules under a ``stop`` prefix are not followed."""
    seen: set[str] = set()
    todo = [name]
    while todo:
        current = todo.pop()
        if current != name and current.startswith(stop):
            continue
        for dep in imports(current):
            if dep not in seen and dep in MODULES:
                seen.add(dep)
                todo.append(dep)
    return seen


BY_FLOOR: dict[str, list[str]] = {}
for _name in MODULES:
    BY_FLOOR.setdefault(floor(_name), []).append(_name)


def test_the_parse_sees_the_package():
    assert {"posenc_ref.rope", "posenc_ref.attention", "posenc_ref.runner.engine", "posenc_ref.oracle"} <= set(MODULES)
    assert "posenc_ref.rope_variants" in imports("posenc_ref._rope_rotation")  # a function-level import counts
    assert "posenc_ref.records.attention" in imports("posenc_ref.runner.emulation.attention")


@pytest.mark.parametrize("name", sorted(BY_FLOOR["spec"]))
def test_spec_modules_import_nothing_above_the_spec(name):
    above = sorted(dep for dep in imports(name) if floor(dep) != "spec")
    assert not above, f"{name} imports {above}: the spec never imports records, oracle, corpus, runner or above"


@pytest.mark.parametrize("name", sorted(BY_FLOOR.get("oracle", [])))
def test_the_oracle_never_reaches_the_spec(name):
    """Not even through another module: the oracle is the independent truth.

    The one way up it may take is the config reader, ``posenc_ref.models.resolve``: the model
    oracle learns a layer's parameters from it (what the config means) and computes every value
    itself; what the reader imports is not followed.
    """
    reached = sorted(dep for dep in transitive(name, stop=("posenc_ref.models",))
                     if floor(dep) == "spec" and dep != "posenc_ref.errors")
    assert not reached, f"{name} reaches {reached}"


@pytest.mark.parametrize("name", sorted(BY_FLOOR.get("runner", [])))
def test_the_runner_never_imports_the_oracle(name):
    direct = sorted(dep for dep in imports(name) if floor(dep) == "oracle")
    assert not direct, f"{name} imports {direct}: the runner reads the corpus, never the oracle"


@pytest.mark.parametrize("name", sorted(BY_FLOOR.get("models", []) + BY_FLOOR.get("scales", [])))
def test_models_and_scales_sit_below_the_records(name):
    above = sorted(dep for dep in imports(name) if floor(dep) in ("records", "registry", "corpus", "runner", "cli"))
    assert not above, f"{name} imports {above}"
