"""np.dot (500x500 float64) and np.sort (1e6 float64) of the numpy this interpreter imports:
the best of 5 runs each, as wall time and as CPU time (time.process_time, which other load
on the machine inflates less). Run under qemu by `crosswheel test` (BENCHMARKS.md, numpy):

    crosswheel test --project benches/numpy --test-command "python {project}/speed.py LABEL" WHEEL

One OpenBLAS thread, so that the comparison is of the code rather than of the threads."""

import os
import sys

os.environ["OPENBLAS_NUM_THREADS"] = "1"

import time  # noqa: E402

import numpy as np  # noqa: E402


def best(fn, runs=5):
    walls, cpus = [], []
    for _ in range(runs):
        wall, cpu = time.perf_counter(), time.process_time()
        fn()
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
    return min(walls) * 1000, min(cpus) * 1000


rng = np.random.default_rng(0)
a, b = rng.random((500, 500)), rng.random((500, 500))
x = rng.random(1_000_000)
dot_wall, dot_cpu = best(lambda: np.dot(a, b))
sort_wall, sort_cpu = best(lambda: np.sort(x))
label = sys.argv[1] if len(sys.argv) > 1 else "numpy"
print(
    f"BENCH {label} dot500 wall={dot_wall:.0f}ms cpu={dot_cpu:.0f}ms "
    f"sort1e6 wall={sort_wall:.0f}ms cpu={sort_cpu:.0f}ms"
)
