"""The SIMD a numpy build compiled in, as JSON on one line: show_config()'s SIMD section,
the baseline and dispatch targets (`__cpu_baseline__`, `__cpu_dispatch__`), the features
the running CPU has, and, with a file argument, every dispatched function's targets
(numpy.lib.introspect.opt_func_info) written there, to compare two builds with `cmp`:

    crosswheel test --qemu-cpu max --project benches/numpy \
        --test-command "python {project}/simd.py {project}/simd-LABEL.json" WHEEL
"""

import json
import sys

import numpy as np
from numpy._core import _multiarray_umath as umath
from numpy.lib.introspect import opt_func_info

summary = {
    "simd": np.show_config(mode="dicts")["SIMD Extensions"],
    "blas": np.show_config(mode="dicts")["Build Dependencies"]["blas"].get("name"),
    "cpu_baseline": umath.__cpu_baseline__,
    "cpu_dispatch": umath.__cpu_dispatch__,
    "features_on": sorted(name for name, on in umath.__cpu_features__.items() if on),
}
print("SIMD", json.dumps(summary))
if len(sys.argv) > 1:
    with open(sys.argv[1], "w") as out:
        json.dump({"summary": summary, "opt_func_info": opt_func_info()}, out, indent=1, sort_keys=True)
