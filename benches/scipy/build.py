#!/usr/bin/env python3
"""scipy 1.18.1 cp313 from its sdist with its own configuration (its before-build installs
scipy-openblas32; its meson build compiles C, C++, Cython and Fortran): crosswheel's cross
build per target with a cold and then a warm cache, beside what a user would otherwise run
on this machine: scipy built natively for x86_64 (its before-build, then `pip wheel`, as its
cibuildwheel configuration does in a container, with the machine's gfortran) and, for
aarch64, built under emulation in a Debian forky arm64 root with gfortran
(benches/emulated-root --suite forky --with-fortran), stopped at a time cap when it has not
finished.

    benches/scipy/build.py [--targets linux-aarch64,linux-ppc64le,linux-s390x,macos-arm64]
                           [--emulated-cap SECONDS] [--skip-emulated] [--work DIR]
                           [--crosswheel PATH] [--resume]

crosswheel runs the whole pipeline (build, repair, test) with a short test command (LAPACK
through scipy.linalg, QUADPACK, special functions and ODRPACK's Fortran, instead of the
corpus's pytest subset), and its summary row gives the build stage alone. "Cold" is a fresh
crosswheel cache (zig and its compile cache, Debian's gfortran and the Fortran runtime, the
target's Debian tree, build requirements, test interpreter: everything a first run
downloads or builds); "warm" repeats the run on that cache. The first Fortran fetch is what
crosswheel's log line `fetched Debian's gfortran for TARGET in S s` (`flang` for macOS)
says, inside the cold run, and the size of what it unpacked. A macOS wheel gets the static
check instead of the short test. The native and emulated builds get a fresh pip cache.

Needs: gfortran and pkg-config on the build machine for the native build (`apt-get install
gfortran pkg-config`), a CPython 3.13 (`--native-python`, default: the first python3.13 on
PATH), and for the emulated build what benches/emulated-root needs. Prints a markdown
section for BENCHMARKS.md and writes the raw numbers beside it as JSON."""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(ROOT / "scripts/compat_lib"))
import cells  # noqa: E402

sys.path.insert(0, str(HERE.parent))
from project_build import corpus_sdist, in_root, native_pip_wheel, timed, unpack  # noqa: E402

PLATFORM = {"linux-aarch64": "manylinux_aarch64", "linux-ppc64le": "manylinux_ppc64le", "linux-s390x": "manylinux_s390x",
            "macos-arm64": "macosx_arm64"}
SHORT_TEST = (
    "python -c \"import numpy as np; from scipy import linalg, integrate, special, odr; "
    "a = np.random.default_rng(0).random((200, 200)); assert np.allclose(linalg.solve(a, a), np.eye(200)); "
    "assert np.isclose(linalg.eigvals(a).sum(), np.trace(a)); "
    "assert abs(integrate.quad(np.exp, 0, 1)[0] - (np.e - 1)) < 1e-12; "
    "assert np.isclose(special.gamma(5.0), 24.0); "
    "x = np.arange(10.0); fit = odr.ODR(odr.Data(x, 2 * x + 1), odr.unilinear).run(); "
    "assert np.allclose(fit.beta, [2, 1])\""
)
# scipy's build requirements (pyproject.toml) and what its before-build installs, for the
# emulated root, where the host's pip installs them (`--platform`): pip under qemu is ~10x
# slower, and the root has no network set-up.
EMULATED_REQUIREMENTS = [
    "meson-python>=0.15.0,<0.22.0", "Cython>=3.2.0,<3.3.0", "pybind11>=2.13.2,<3.1.0",
    "pythran>=0.18.0,<0.19.0", "numpy>=2.0.0", "ninja", "scipy-openblas32", "packaging",
    "pyproject-metadata",
]
FORTRAN_FETCHED = re.compile(r"fetched Debian's (?:gfortran|flang) for \S+ in (?P<seconds>[\d.]+) s")
NINJA_STEP = re.compile(r"^\s*\[(\d+)/(\d+)\]", re.MULTILINE)


def folder_megabytes(paths: list[Path]) -> float:
    size = 0
    for path in paths:
        for folder, _, names in os.walk(path):
            size += sum(os.lstat(os.path.join(folder, name)).st_size for name in names)
    return round(size / 1e6, 1)


def cross(crosswheel: str, scipy, sdist: Path, target: str, cache: Path, work: Path, label: str) -> dict:
    """One crosswheel run for `target` on `cache`: its wall time and summary row."""
    source = unpack(sdist, work / f"src-{target}")
    wheelhouse = work / f"wheelhouse-{target}-{label}"
    shutil.rmtree(wheelhouse, ignore_errors=True)
    recipe = dict(scipy.options_for(target))
    recipe.pop("test-requires", None)
    recipe["test-command"] = SHORT_TEST
    env = dict(cells.cell_environment(recipe), CROSSWHEEL_CACHE=str(cache))
    env.pop("ZIG_GLOBAL_CACHE_DIR", None)
    identifier = f"cp{scipy.python.replace('.', '')}-{PLATFORM[target]}"
    log = work / f"crosswheel-{target}-{label}.log"
    wall, _, status = timed([crosswheel, "build", str(source), "--only", identifier,
                             "--output-dir", str(wheelhouse), "--jobs", "2"], log, env)
    output = log.read_text(errors="replace")
    summary = cells.SUMMARY_ROW.search(output)
    if status != 0 or summary is None or summary.group("result") != "ok":
        sys.exit(f"scipy bench: crosswheel {label} for {target} failed (exit {status}); its log: {log}")
    shutil.rmtree(source, ignore_errors=True)
    row = {"target": target, "label": label, "wall": wall, "log": str(log)}
    row.update({stage: float(summary.group(group)) for stage, group in
                (("build", "build"), ("repair", "repair"), ("test", "test_s"))})
    fetched = FORTRAN_FETCHED.search(output)
    if fetched:
        row["fortran_fetch"] = {"seconds": float(fetched.group("seconds")), "unpacked_mb": folder_megabytes(
            sorted((cache / "tools").glob("fortran-*")) + sorted((cache / "tools").glob("flang-*"))
            + [cache / "toolchains/fortran"])}
    return row


def native(sdist: Path, work: Path, python: str) -> dict:
    """scipy's own steps natively (see `native_pip_wheel`), with the machine's gfortran."""
    for tool in ("gfortran", "pkg-config"):
        if shutil.which(tool) is None:
            sys.exit(f"scipy bench: the native build needs {tool}: apt-get install {tool}")
    return native_pip_wheel("scipy", sdist, work, python, [])


def emulated(sdist: Path, work: Path, cap: float) -> dict:
    """The same steps under qemu-aarch64 in a Debian forky arm64 root with gfortran, its
    requirements installed beforehand by the host's pip; stopped at `cap` seconds."""
    root = Path(subprocess.run([str(ROOT / "benches/emulated-root"), "--suite", "forky", "--with-fortran"],
                               check=True, stdout=subprocess.PIPE, text=True).stdout.strip().splitlines()[-1])
    version = subprocess.run(["chroot", str(root), "python3", "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                             check=True, stdout=subprocess.PIPE, text=True).stdout.strip()
    venv = "/opt/scipy-bench-venv"
    site = root / venv.lstrip("/") / f"lib/python{version}/site-packages"
    shutil.rmtree(root / venv.lstrip("/"), ignore_errors=True)
    inside = root / "opt/scipy-bench-src"
    shutil.rmtree(inside, ignore_errors=True)
    shutil.copytree(unpack(sdist, work / "src-emulated"), inside)
    subprocess.run(in_root(root, f"python3 -m venv --without-pip {venv}"), check=True)
    tags = [arg for minor in range(17, 42) for arg in ("--platform", f"manylinux_2_{minor}_aarch64")]
    abi = f"cp{version.replace('.', '')}"
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--only-binary=:all:", *tags,
                    "--python-version", version, "--implementation", "cp", "--abi", abi, "--abi", "abi3", "--abi", "none",
                    "--target", str(site), "pip", *EMULATED_REQUIREMENTS], check=True)
    for script in (site / "bin").iterdir():
        text = script.read_text(errors="replace")
        if text.startswith("#!"):
            script.write_text(f"#!{venv}/bin/python\n" + text.split("\n", 1)[1])
    # `pip install --target` puts console scripts (ninja, cython, meson) in the target's bin/.
    steps = (f"cd /opt/scipy-bench-src && export PATH={venv}/bin:/{site.relative_to(root).as_posix()}/bin:$PATH "
             "PKG_CONFIG_PATH=/opt/scipy-bench-src/.openblas && mkdir -p .openblas && "
             "python -c 'import scipy_openblas32; print(scipy_openblas32.get_pkg_config())' > .openblas/scipy-openblas.pc && "
             "python -m pip wheel -v --no-build-isolation --no-deps -w /opt/scipy-bench-out .")
    log = work / "emulated.log"
    wall, finished, status = timed(in_root(root, steps), log, cap=cap)
    progress = NINJA_STEP.findall(log.read_text(errors="replace"))
    if finished and status != 0:
        sys.exit(f"scipy bench: the emulated build failed (exit {status}); its log: {log}")
    done, total = map(int, progress[-1]) if progress else (0, 0)
    return {"label": f"emulated aarch64 (pip wheel under qemu, CPython {version})", "wall": wall,
            "finished": finished, "ninja_done": done, "ninja_total": total, "log": str(log)}


def markdown(results: dict) -> str:
    base = results["native"]["wall"] if results["native"] else None
    ratio = (lambda seconds: f"{seconds / base:.2f}×") if base else (lambda seconds: "—")
    lines = ["| target | cache | build stage (s) | repair (s) | test stage (s) | whole pipeline (s) | whole / native build |",
             "|---|---|---:|---:|---:|---:|---:|"]
    lines += [f"| {r['target']} | {r['label']} | {r['build']:.0f} | {r['repair']:.1f} | {r['test']:.0f} | {r['wall']:.0f} | "
              f"{ratio(r['wall'])} |" for r in results["cross"]]
    if base:
        lines.append(f"| native x86_64, `pip wheel` | fresh pip cache | — | — | — | {base:.0f} | 1.00× |")
    run = results["emulated"]
    if run:
        bound = "" if run["finished"] else "> "
        cell = f"{bound}{run['wall']:.0f}" + ("" if run["finished"] else
                                              f" (stopped at the cap after {run['ninja_done']} of {run['ninja_total']} ninja steps)")
        lines.append(f"| {run['label']} | fresh pip cache | — | — | — | {cell} | {'≥ ' if bound else ''}{ratio(run['wall'])} |")
    for r in results["cross"]:
        if "fortran_fetch" in r:
            fetch = r["fortran_fetch"]
            lines.append(f"\nFirst Fortran fetch ({r['target']}, inside the cold run): {fetch['seconds']:.1f} s, "
                         f"{fetch['unpacked_mb']} MB unpacked")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--targets", default="linux-aarch64,linux-ppc64le,linux-s390x")
    parser.add_argument("--emulated-cap", type=float, default=3600.0)
    parser.add_argument("--skip-emulated", action="store_true")
    parser.add_argument("--skip-native", action="store_true")
    parser.add_argument("--native-python", default=shutil.which("python3.13") or "python3.13")
    parser.add_argument("--work", type=Path, default=Path.home() / ".cache/crosswheel-bench/scipy")
    parser.add_argument("--crosswheel", default=str(ROOT / "target/release/crosswheel"))
    parser.add_argument("--resume", action="store_true",
                        help="keep what the last run's results.json measured and measure only what it lacks "
                             "(a target's warm run alone where its cold run and cache are kept)")
    args = parser.parse_args()
    scipy, sdist = corpus_sdist("scipy")
    args.work.mkdir(parents=True, exist_ok=True)
    saved = args.work / "results.json"
    results = json.loads(saved.read_text()) if args.resume and saved.is_file() else {"cross": [], "native": None, "emulated": None}

    def keep() -> None:
        # After every step: a stopped run keeps what it measured.
        saved.write_text(json.dumps(results, indent=2))

    # The first target, then the baselines, then the other targets: the ratios come first.
    for position, target in enumerate(args.targets.split(",")):
        measured = {r["label"] for r in results["cross"] if r["target"] == target}
        cache = args.work / f"cache-{target}"
        # A run stopped after the cold one kept its cache: the warm run can still use it.
        if measured == {"cold"} and cache.is_dir():
            labels = ["warm"]
        elif measured != {"cold", "warm"}:
            results["cross"] = [r for r in results["cross"] if r["target"] != target]
            shutil.rmtree(cache, ignore_errors=True)
            labels = ["cold", "warm"]
        else:
            labels = []
        for label in labels:
            print(f"scipy bench: crosswheel {target} {label}", file=sys.stderr, flush=True)
            results["cross"].append(cross(args.crosswheel, scipy, sdist, target, cache, args.work, label))
            keep()
        shutil.rmtree(cache, ignore_errors=True)
        if position == 0 and not args.skip_native and results["native"] is None:
            print("scipy bench: native", file=sys.stderr, flush=True)
            results["native"] = native(sdist, args.work, args.native_python)
            keep()
        if position == 0 and not args.skip_emulated and results["emulated"] is None:
            print(f"scipy bench: emulated (cap {args.emulated_cap:.0f} s)", file=sys.stderr, flush=True)
            results["emulated"] = emulated(sdist, args.work, args.emulated_cap)
            keep()
    print(markdown(results))


if __name__ == "__main__":
    main()
