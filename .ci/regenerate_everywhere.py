"""Regenerate the corpus under several CPU settings and require each to match golden/ byte for byte.

Each run is a fresh ``posenc-ref golden --corpus TMP generate`` in a child process whose
environment limits NumPy's SIMD dispatch (``NPY_DISABLE_CPU_FEATURES``), picks an OpenBLAS
kernel (``OPENBLAS_CORETYPE``) and sets the thread counts (``OMP_NUM_THREADS``,
``OPENBLAS_NUM_THREADS``). The child reports which settings took effect (NumPy's enabled
features, OpenBLAS's core name), so the log says which ones this NumPy build honours.

usage: python .ci/regenerate_everywhere.py [GOLDEN_DIR]     (exit status 1 on any difference)
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from posenc_ref import corpus_audit

# NumPy 2.4+ groups the x86 targets (X86_V3 = AVX2/FMA3, X86_V4 = the AVX-512 family); older
# builds name the features one by one. Only names this build knows are passed (an unknown name
# in NPY_DISABLE_CPU_FEATURES is an import error).
AVX512 = ("AVX512_SPR", "AVX512_ICL", "AVX512_CNL", "AVX512_CLX", "AVX512_KNM", "AVX512_KNL", "AVX512_SKX",
          "X86_V4", "AVX512CD", "AVX512F")
AVX2_FMA3 = ("X86_V3", "AVX2", "FMA3")

PROBE = r"""
import ctypes, glob, json, os
import numpy
from numpy._core import _multiarray_umath as umath
found = [k for k, v in umath.__cpu_features__.items() if v]
dispatch = sorted(set(umath.__cpu_dispatch__) & set(found)) if hasattr(umath, "__cpu_dispatch__") else found
core = None
for path in glob.glob(os.path.join(os.path.dirname(numpy.__file__), "..", "numpy.libs", "*openblas*")):
    lib = ctypes.CDLL(path)
    for name in ("scipy_openblas_get_corename64_", "scipy_openblas_get_corename", "openblas_get_corename64_",
                 "openblas_get_corename"):
        if hasattr(lib, name):
            getattr(lib, name).restype = ctypes.c_char_p
            core = getattr(lib, name)().decode()
            break
print(json.dumps({"dispatch": dispatch, "openblas_core": core}))
"""


def _known_features() -> set[str]:
    from numpy._core import _multiarray_umath as umath

    dispatch = getattr(umath, "__cpu_dispatch__", list(umath.__cpu_features__))
    return {k for k, v in umath.__cpu_features__.items() if v} & set(dispatch)


def settings() -> list[tuple[str, dict[str, str]]]:
    known = _known_features()
    no_avx512 = " ".join(f for f in AVX512 if f in known)
    no_avx2 = " ".join(f for f in AVX512 + AVX2_FMA3 if f in known)
    runs: list[tuple[str, dict[str, str]]] = [
        ("defaults, 1 thread", {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}),
        ("no AVX-512, 2 threads", {"NPY_DISABLE_CPU_FEATURES": no_avx512, "OMP_NUM_THREADS": "2",
                                   "OPENBLAS_NUM_THREADS": "2"}),
        ("no AVX-512/AVX2/FMA3, OpenBLAS Sandybridge, 1 thread",
         {"NPY_DISABLE_CPU_FEATURES": no_avx2, "OPENBLAS_CORETYPE": "Sandybridge", "OMP_NUM_THREADS": "1",
          "OPENBLAS_NUM_THREADS": "1"}),
        ("OpenBLAS Sandybridge, 2 threads", {"OPENBLAS_CORETYPE": "Sandybridge", "OMP_NUM_THREADS": "2",
                                             "OPENBLAS_NUM_THREADS": "2"}),
    ]
    return [(name, {k: v for k, v in env.items() if v}) for name, env in runs]


def _env(extra: dict[str, str]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("NPY_DISABLE_CPU_FEATURES", "OPENBLAS_CORETYPE", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS")}
    env.update(extra)
    return env


def main(argv: list[str]) -> int:
    golden = Path(argv[1]) if len(argv) > 1 else Path(__file__).resolve().parent.parent / "golden"
    failed = False
    for name, extra in settings():
        env = _env(extra)
        probe = json.loads(subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True,
                                          check=True).stdout)
        disabled = extra.get("NPY_DISABLE_CPU_FEATURES", "").split()
        honoured = [f"NumPy dispatch {'without ' + ', '.join(disabled) if disabled else 'unrestricted'}: "
                    f"{'honoured' if not set(disabled) & set(probe['dispatch']) else 'NOT honoured'}",
                    f"OpenBLAS core {probe['openblas_core']}"
                    + (f" ({'honoured' if probe['openblas_core'] == extra['OPENBLAS_CORETYPE'] else 'NOT honoured'})"
                       if "OPENBLAS_CORETYPE" in extra else " (auto)")]
        start = time.monotonic()
        with tempfile.TemporaryDirectory() as tmp:
            target = Path(tmp) / "corpus"
            cli = "import sys; from posenc_ref.cli import main; sys.exit(main(sys.argv[1:]))"
            run = subprocess.run([sys.executable, "-c", cli, "golden", "--corpus", str(target), "generate"],
                                 env=env, capture_output=True, text=True)
            if run.returncode:
                print(f"regenerate [{name}]: generation failed\n{run.stdout[-2000:]}{run.stderr[-2000:]}")
                failed = True
                continue
            differences = corpus_audit.compare(golden, target)
        verdict = "byte-identical to golden/" if not differences else f"{len(differences)} differences"
        print(f"regenerate [{name}] ({'; '.join(honoured)}): {verdict} ({time.monotonic() - start:.0f} s)")
        for difference in differences:
            print(f"  {difference}")
        failed = failed or bool(differences)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
