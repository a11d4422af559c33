"""The catalogued models whose model type can have sliding-window layers (the engines' window tests).

The test files import it by its bare name: pytest puts ``tests/`` on ``sys.path`` for the modules in it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from posenc_ref.models._layer_rules import _WINDOWED
from posenc_ref.models.catalogue import CATALOGUE


def windowed(config: Mapping[str, Any]) -> bool:
    """Whether the config's (text) model type is one whose layers the resolver may give a window."""
    text = config.get("text_config") if isinstance(config.get("text_config"), dict) else config
    return text.get("model_type") in _WINDOWED


def windowed_names() -> list[str]:
    """The catalogue names whose config passes ``windowed``, in catalogue order."""
    return [name for name, entry in CATALOGUE.items() if windowed(entry.config)]
