"""Loading a project file that is not in the package (an adapter, a harness, a docs extension) as a module.

The test files import it by its bare name: pytest puts ``tests/`` on ``sys.path`` for the modules in it.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType


def load_file(path: Path | str, name: str) -> ModuleType:
    """The module in ``path``, executed under ``name`` and registered in ``sys.modules`` under it.

    Registering it lets the module's dataclasses and pickled values find their module; loading the same
    ``name`` again executes the file afresh and replaces the registered module.
    """
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"load_file: {path} is not a Python module file")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module
