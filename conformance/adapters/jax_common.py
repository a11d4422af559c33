"""What the JAX adapter's modules share: the JAX import, its dtypes, and whether x64 is on.

Needs ``pip install 'posenc-ref[jax]'``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

if str(Path(__file__).resolve().parent) not in sys.path:  # the shared helpers live next to this file
    sys.path.insert(0, str(Path(__file__).resolve().parent))
from posenc_adapter_shared import (  # noqa: E402
    require,
)

jax = require("jax", "jax")
jnp = jax.numpy
Pair = tuple[np.ndarray, np.ndarray]  # (output, weights) of the attention ops
DTYPES = {"float64": jnp.float64, "float32": jnp.float32, "float16": jnp.float16, "bfloat16": jnp.bfloat16}


def x64_enabled() -> bool:
    return bool(jax.config.jax_enable_x64)
