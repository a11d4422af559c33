"""posenc-ref: the reference specification of transformer positional encodings.

Pure NumPy, float64. Each scheme family is one module whose docstring is its spec page, and its
public functions are also importable from the package itself:

* :mod:`posenc_ref.sinusoidal`: 1-D sinusoidal tables (Vaswani et al.) and fairseq's padding-aware positions
* :mod:`posenc_ref.grid2d`: 2-D sin-cos grids
* :mod:`posenc_ref.learned`: learned absolute position tables
* :mod:`posenc_ref.rope`: rotary embeddings: cos/sin tables, the rotation, RoPE scores
* :mod:`posenc_ref.rope_scaling`: RoPE inverse frequencies of every scaling variant (linear, NTK-aware,
  dynamic NTK, YaRN, Llama 3, LongRoPE, proportional)
* :mod:`posenc_ref.rope_variants`: xPos and multimodal RoPE (MRoPE)
* :mod:`posenc_ref.alibi`: ALiBi slopes and biases
* :mod:`posenc_ref.t5`: T5 relative-position buckets and bias
* :mod:`posenc_ref.deberta`: DeBERTa log buckets, relative indices and disentangled scores
* :mod:`posenc_ref.shaw`: Shaw et al. relative keys and values
* :mod:`posenc_ref.transformer_xl`: Transformer-XL / XLNet relative scores and shifts
* :mod:`posenc_ref.resample`: resampling of learned position tables to a new length or grid
* :mod:`posenc_ref.attention`: the float64 attention pass every scheme plugs into
* :mod:`posenc_ref.attention_positional`: plug-ins that put RoPE, Shaw and Transformer-XL into attention
* :mod:`posenc_ref.attention_pipeline`: a whole attention layer with an absolute encoding at its input

``posenc_ref.attention.attention`` keeps its module path only: the package attribute
``posenc_ref.attention`` is the module.

:mod:`posenc_ref.registry` lists every checkable op; :mod:`posenc_ref.corpus` reads and writes the
golden corpus; :mod:`posenc_ref.runner` checks other implementations against it;
:mod:`posenc_ref.checks` holds debugging checks for a model's position handling.
"""

from posenc_ref.alibi import alibi_bias, alibi_mask_positions, alibi_slope_ladder, alibi_slopes
from posenc_ref.attention import prepare_pass
from posenc_ref.attention_pipeline import attention_layer
from posenc_ref.attention_positional import rope_qk, shaw_terms, xl_terms
from posenc_ref.deberta import deberta_bucket, deberta_index, deberta_scores
from posenc_ref.errors import SpecError
from posenc_ref.grid2d import grid_coords, grid_sincos_2d, grid_sincos_2d_angles
from posenc_ref.learned import learned_init, learned_lookup
from posenc_ref.resample import (
    cubic_kernel,
    output_size_and_scale,
    resample_grid_2d,
    resample_table_1d,
    resample_weights,
    tap_counts,
)
from posenc_ref.rope import (
    rope_apply,
    rope_cos_sin,
    rope_layout_permutation,
    rope_rotate,
    rope_rotate_cached,
    rope_rotate_freq,
    rope_scores,
    rotary_frequencies,
    scaled_frequencies,
)
from posenc_ref.rope_scaling import longrope_inv_freq, rope_inv_freq, yarn_correction_range, yarn_mscale, yarn_ramp
from posenc_ref.rope_variants import mrope_cos_sin, mrope_stream, rope_xpos, xpos_centre, xpos_zeta
from posenc_ref.shaw import check_self_attention_positions, shaw_logits, shaw_output, shaw_relative_index
from posenc_ref.sinusoidal import (
    fairseq_positions,
    fairseq_sinusoidal,
    sinusoidal_angles,
    sinusoidal_frequencies,
    sinusoidal_table,
)
from posenc_ref.t5 import log_ladder, t5_bias, t5_bucket
from posenc_ref.transformer_xl import (
    direct_index,
    rel_shift,
    rel_shift_transformer_xl,
    rel_shift_xlnet,
    shift_row_distances,
    xl_relative_embedding,
    xl_score,
)

__version__ = "0.1.0"

__all__ = [
    "SpecError",
    "alibi_bias",
    "alibi_mask_positions",
    "alibi_slope_ladder",
    "alibi_slopes",
    "attention_layer",
    "check_self_attention_positions",
    "cubic_kernel",
    "deberta_bucket",
    "deberta_index",
    "deberta_scores",
    "direct_index",
    "fairseq_positions",
    "fairseq_sinusoidal",
    "grid_coords",
    "grid_sincos_2d",
    "grid_sincos_2d_angles",
    "learned_init",
    "learned_lookup",
    "log_ladder",
    "longrope_inv_freq",
    "mrope_cos_sin",
    "mrope_stream",
    "output_size_and_scale",
    "prepare_pass",
    "rel_shift",
    "rel_shift_transformer_xl",
    "rel_shift_xlnet",
    "resample_grid_2d",
    "resample_table_1d",
    "resample_weights",
    "rope_apply",
    "rope_cos_sin",
    "rope_inv_freq",
    "rope_layout_permutation",
    "rope_qk",
    "rope_rotate",
    "rope_rotate_cached",
    "rope_rotate_freq",
    "rope_scores",
    "rope_xpos",
    "rotary_frequencies",
    "scaled_frequencies",
    "shaw_logits",
    "shaw_output",
    "shaw_relative_index",
    "shaw_terms",
    "shift_row_distances",
    "sinusoidal_angles",
    "sinusoidal_frequencies",
    "sinusoidal_table",
    "t5_bias",
    "t5_bucket",
    "tap_counts",
    "xl_relative_embedding",
    "xl_score",
    "xl_terms",
    "xpos_centre",
    "xpos_zeta",
    "yarn_correction_range",
    "yarn_mscale",
    "yarn_ramp",
    "__version__",
]

