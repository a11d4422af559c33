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
check torch-distilbert-float32 -- $A/torch_adapter.py:DISTILBERT --expectations $A/distilbert.toml
check torch-marian-float32 -- $A/torch_adapter.py:MARIAN $lib
check torch-m2m100-float32 -- $A/torch_adapter.py:M2M100 $lib
for d in float64 float32; do
  check torch-whisper-$d -- $A/torch_adapter.py:WHISPER --dtype $d $lib
  check torch-vitmae2d-$d -- $A/torch_adapter.py:VITMAE_2D --dtype $d $lib
done
for a in ROPE_INIT:rope-init LONGROPE:longrope LLAMA_ROPE:llama-rope GPTJ_ROPE:gptj-rope QWEN2VL_MROPE:qwen2vl-mrope \
         T5_BUCKET:t5-bucket \
         DEBERTA_BUCKET:deberta-bucket BLOOM_ALIBI:bloom-alibi MPT_ALIBI:mpt-alibi \
         DEBERTA_SCORES:deberta-scores XLNET:xlnet EAGER_ATTENTION:eager-attention; do
  check "torch-${a#*:}-float32" -- "$A/torch_adapter.py:${a%%:*}" $lib
done
for d in float64 float32; do
  check torch-t5-bias-$d -- $A/torch_adapter.py:T5_BIAS --dtype $d $lib
  check torch-interpolate-$d -- $A/torch_adapter.py:INTERPOLATE --dtype $d $lib
  check torch-vit-interpolate-$d -- $A/torch_adapter.py:VIT_INTERPOLATE --dtype $d $lib
  check torch-shaw-w2v-bert-$d -- $A/torch_adapter.py:SHAW_W2V_BERT --dtype $d $lib
done
for d in float64 float32 float16 bfloat16; do
  check torch-sdpa-$d -- $A/torch_adapter.py:SDPA --dtype $d $lib
  check torch-embedding-$d -- $A/torch_adapter.py:EMBEDDING --dtype $d $lib
  check torch-rel-shift-$d -- $A/torch_adapter.py:REL_SHIFT --dtype $d $lib
  check torch-layer-$d -- $A/torch_adapter.py:TORCH_LAYER --dtype $d $lib
  check torch-port-$d -- $A/torch_adapter.py:TORCH --dtype $d
done
check jax-float64 JAX_ENABLE_X64=1 -- $A/jax_adapter.py:ADAPTER --expectations $A/jax_float64.toml
check jax-float32 JAX_ENABLE_X64=0 -- $A/jax_adapter.py:ADAPTER --dtype float32
for d in float16 bfloat16; do
  check jax-$d JAX_ENABLE_X64=0 -- $A/jax_adapter.py:ADAPTER --dtype $d
done
for d in float64 float32; do
  check onnxruntime-$d -- $A/onnxruntime_adapter.py:ADAPTER --dtype $d
done
check onnxruntime-float16 -- $A/onnxruntime_adapter.py:ADAPTER --dtype float16

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
