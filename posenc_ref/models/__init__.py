"""Model configs: from a ``config.json`` to the positional encoding of every layer.

:func:`resolve` reads a config as transformers writes it (4.x ``rope_scaling`` or 5.x
``rope_parameters``, per-layer-type nesting) and returns, per attention layer, the scheme and the
complete parameters of posenc-ref's existing ops, plus the provenance of every value.
:mod:`posenc_ref.models.catalogue` holds real public configs with their sources;
:mod:`posenc_ref.models.compute` applies one layer to explicit positions (the model ops of the
registry). docs/models.md pins the reading of every key.
"""

from __future__ import annotations

from posenc_ref.models.resolve import INTERPRETATIONS, LayerPositions, ModelPositions, Provenance, resolve

__all__ = ["INTERPRETATIONS", "LayerPositions", "ModelPositions", "Provenance", "resolve"]
