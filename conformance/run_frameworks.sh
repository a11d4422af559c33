#!/usr/bin/env bash
# Run every framework adapter through the conformance runner with its expectations file, run the
# adapter tests, and render the conformance matrix from the JSON reports.
#
#   bash conformance/run_frameworks.sh REPORTS_DIR            # reports + REPORTS_DIR/conformance-matrix.md
#   bash conformance/run_frameworks.sh REPORTS_DIR --write    # also rewrite docs/conformance-matrix.md
#
# Needs an environment with the frameworks:
#   pip install -c conformance/frameworks-constraints.txt '.[test,frameworks]'
# Exits non-zero when any adapter run or adapter test fails.
set -euo pipefail
cd "$(dirname "$0")/.."
reports=${1:?usage: conformance/run_frameworks.sh REPORTS_DIR [--write]}
mkdir -p "$reports"
status=0
A=conformance/adapters

check() {  # check REPORT_NAME [env VAR=value ...] -- conformance arguments...
  local name=$1; shift
  local envs=()
  while [ "$1" != "--" ]; do envs+=("$1"); shift; done
  shift
  echo "== $name"
  if ! env "${envs[@]}" python -m posenc_ref.cli conformance "$@" --report-json "$reports/$name.json" | tail -n 1; then
    echo "FAILED: $name"
    status=1
  fi
}

lib="--expectations $A/torch_library.toml"
check ref-numpy -- numpy
check js-float64 -- "subprocess:node conformance/examples/js/posenc.js"
check js-float32 -- "subprocess:node conformance/examples/js/posenc.js" --dtype float32
check torch-distilbert-float32 -- $A/transformers_absolute.py:DISTILBERT --expectations $A/distilbert.toml
# MarianSinusoidalPositionalEmbedding builds its whole table (10^6 rows for the long-position case), about
# 60-90 s on a loaded 2-core machine: a longer per-case timeout than the runner's 60 s default
check torch-marian-float32 -- $A/transformers_absolute.py:MARIAN $lib --timeout 300
check torch-m2m100-float32 -- $A/transformers_absolute.py:M2M100 $lib
for d in float64 float32; do
  check torch-whisper-$d -- $A/transformers_absolute.py:WHISPER --dtype $d $lib
  check torch-vitmae2d-$d -- $A/transformers_absolute.py:VITMAE_2D --dtype $d $lib
done
for a in transformers_rope:ROPE_INIT:rope-init transformers_rope:LONGROPE:longrope \
         transformers_rope:LLAMA_ROPE:llama-rope transformers_rope:GPTJ_ROPE:gptj-rope \
         transformers_rope:QWEN2VL_MROPE:qwen2vl-mrope transformers_relative:T5_BUCKET:t5-bucket \
         transformers_relative:DEBERTA_BUCKET:deberta-bucket transformers_relative:BLOOM_ALIBI:bloom-alibi \
         transformers_relative:MPT_ALIBI:mpt-alibi transformers_relative:DEBERTA_SCORES:deberta-scores \
         transformers_relative:XLNET:xlnet transformers_attention:EAGER_ATTENTION:eager-attention; do
  module=${a%%:*} rest=${a#*:}
  check "torch-${rest#*:}-float32" -- "$A/$module.py:${rest%%:*}" $lib
done
for d in float64 float32; do
  check torch-t5-bias-$d -- $A/transformers_relative.py:T5_BIAS --dtype $d $lib
  check torch-interpolate-$d -- $A/torch_functions.py:INTERPOLATE --dtype $d $lib
  check torch-vit-interpolate-$d -- $A/transformers_absolute.py:VIT_INTERPOLATE --dtype $d $lib
  check torch-shaw-w2v-bert-$d -- $A/transformers_relative.py:SHAW_W2V_BERT --dtype $d $lib
done
for d in float64 float32 float16 bfloat16; do
  check torch-sdpa-$d -- $A/torch_functions.py:SDPA --dtype $d $lib
  check torch-embedding-$d -- $A/transformers_absolute.py:EMBEDDING --dtype $d $lib
  check torch-rel-shift-$d -- $A/transformers_relative.py:REL_SHIFT --dtype $d $lib
  check torch-layer-$d -- $A/torch_functions.py:TORCH_LAYER --dtype $d $lib
  check torch-port-$d -- $A/torch_port.py:TORCH --dtype $d
done
check jax-float64 JAX_ENABLE_X64=1 -- $A/jax_port.py:ADAPTER --expectations $A/jax_float64.toml
check jax-float32 JAX_ENABLE_X64=0 -- $A/jax_port.py:ADAPTER --dtype float32
for d in float16 bfloat16; do
  check jax-$d JAX_ENABLE_X64=0 -- $A/jax_port.py:ADAPTER --dtype $d
done
for d in float64 float32; do
  check onnxruntime-$d -- $A/onnxruntime_graphs.py:ADAPTER --dtype $d
done
check onnxruntime-float16 -- $A/onnxruntime_graphs.py:ADAPTER --dtype float16

echo "== adapter tests"
python -m pytest -q -p no:cacheprovider tests/test_adapters_torch.py tests/test_adapters_jax.py \
  tests/test_adapters_onnxruntime.py tests/test_adapters_missing.py || status=1

python -m posenc_ref.runner.matrix $(ls "$reports"/*.json | sort) -o "$reports/conformance-matrix.md"
if [ "${2:-}" = "--write" ]; then
  sed "s|$reports/||g" "$reports/conformance-matrix.md" > docs/conformance-matrix.md
  echo "wrote docs/conformance-matrix.md"
elif ! diff -q <(sed "s|$reports/||g" "$reports/conformance-matrix.md") docs/conformance-matrix.md > /dev/null; then
  echo "note: docs/conformance-matrix.md differs from this run (other versions or CPU kernels); see $reports/conformance-matrix.md"
fi
exit $status
