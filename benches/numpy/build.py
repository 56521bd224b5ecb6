#!/usr/bin/env python3
"""numpy 2.4.6 cp311 from its sdist with its own configuration: crosswheel's cross build per
target with a cold and then a warm cache, beside what a user would otherwise run on this
machine: numpy built natively (numpy's before-build, then `pip wheel`, as its cibuildwheel
configuration does in a container) and, for aarch64, built under emulation in a Debian arm64
root (benches/emulated-root), stopped at a time cap when it has not finished.

    benches/numpy/build.py [--targets linux-aarch64,linux-ppc64le,macos-arm64]
                           [--emulated-cap SECONDS] [--skip-emulated] [--work DIR]

crosswheel runs the whole pipeline (build, repair, test) with a short test command (the
import, OpenBLAS and linear-algebra check of tests/compat/projects.toml without numpy's
pytest part), and its summary row gives the build stage alone. "Cold" is a fresh crosswheel
cache (zig and its compile cache, the target's Debian tree, build requirements, test
interpreters: everything a first run on a new machine downloads or builds); "warm" repeats
the run on that cache. The native and emulated builds get a fresh pip cache. Prints a
markdown section for BENCHMARKS.md and writes the raw numbers beside it as JSON."""

from __future__ import annotations

import argparse
import json
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

HOST_PYTHON = "/usr/bin/python3"
SETUP_ARGS = ["-Csetup-args=-Duse-ilp64=true", "-Csetup-args=-Dallow-noblas=false", "-Cbuild-dir=build"]
# numpy's build requirements (pyproject.toml) and what its before-build pip-installs, for
# the emulated root, where they are installed by the host's pip (`--platform`).
EMULATED_REQUIREMENTS = ["meson-python>=0.18", "Cython>=3.0.6", "ninja", "scipy-openblas64", "packaging", "pyproject-metadata"]
SHORT_TEST = (
    "python -c \"import numpy as np, numpy.fft, numpy.linalg, numpy.random; "
    "deps = np.show_config(mode='dicts')['Build Dependencies']; assert 'scipy-openblas' in str(deps['blas']), deps; "
    "a = np.random.default_rng(0).random((300, 300)); assert np.allclose(a @ np.linalg.inv(a), np.eye(300), atol=1e-8)\""
)
NINJA_PROGRESS = re.compile(r"^\s*\[(\d+)/(\d+)\]", re.MULTILINE)


def crosswheel_run(crosswheel: str, numpy, sdist: Path, target: str, cache: Path, work: Path, label: str) -> dict:
    project = unpack(sdist, work / f"src-{target}")
    out = work / f"out-{target}-{label}"
    shutil.rmtree(out, ignore_errors=True)
    options = dict(numpy.options_for(target))
    options["test-command"] = SHORT_TEST
    options.pop("test-requires", None)
    env = cells.cell_environment(options)
    env["CROSSWHEEL_CACHE"] = str(cache)
    env.pop("ZIG_GLOBAL_CACHE_DIR", None)
    platform = {"linux-aarch64": "manylinux_aarch64", "linux-ppc64le": "manylinux_ppc64le", "macos-arm64": "macosx_arm64"}[target]
    argv = [crosswheel, "build", str(project), "--only", f"cp311-{platform}", "--output-dir", str(out), "--jobs", "2"]
    log = work / f"crosswheel-{target}-{label}.log"
    seconds, _, code = timed(argv, log, env)
    text = log.read_text(errors="replace")
    row = cells.SUMMARY_ROW.search(text)
    if code != 0 or row is None or row.group("result") != "ok":
        sys.exit(f"numpy bench: crosswheel {label} for {target} failed (exit {code}); its log: {log}")
    shutil.rmtree(project, ignore_errors=True)
    return {"target": target, "label": label, "wall": seconds, "build": float(row.group("build")),
            "repair": float(row.group("repair")), "test": float(row.group("test_s")), "log": str(log)}


def native_run(sdist: Path, work: Path) -> dict:
    """numpy's own steps natively, with its config-settings (see `native_pip_wheel`)."""
    return native_pip_wheel("numpy", sdist, work, HOST_PYTHON, SETUP_ARGS)


def emulated_run(sdist: Path, work: Path, cap: float) -> dict:
    """The same steps under qemu-aarch64 in benches/emulated-root's Debian arm64 root."""
    root = Path(subprocess.run([str(ROOT / "benches/emulated-root")], check=True, stdout=subprocess.PIPE,
                               text=True).stdout.strip().splitlines()[-1])
    venv = "/opt/numpy-bench-venv"
    site = root / venv.lstrip("/") / "lib/python3.11/site-packages"
    shutil.rmtree(root / venv.lstrip("/"), ignore_errors=True)
    source = root / "opt/numpy-bench-src"
    shutil.rmtree(source, ignore_errors=True)
    shutil.copytree(unpack(sdist, work / "src-emulated"), source)
    platforms = [arg for minor in range(17, 37) for arg in ("--platform", f"manylinux_2_{minor}_aarch64")]
    subprocess.run(in_root(root, f"python3 -m venv --without-pip {venv}"), check=True)
    subprocess.run([HOST_PYTHON, "-m", "pip", "install", "--quiet", "--only-binary=:all:", *platforms,
                    "--python-version", "3.11", "--implementation", "cp", "--abi", "cp311", "--abi", "abi3", "--abi", "none",
                    "--target", str(site), "pip", *EMULATED_REQUIREMENTS], check=True)
    # The host's pip wrote its own interpreter into the scripts' first lines.
    for script in (site / "bin").iterdir():
        lines = script.read_text(errors="replace").splitlines(keepends=True)
        if lines and lines[0].startswith("#!"):
            script.write_text(f"#!{venv}/bin/python\n" + "".join(lines[1:]))
    # `pip install --target` puts console scripts (ninja, cython) in the target's bin/.
    inner = (f"cd /opt/numpy-bench-src && export PATH={venv}/bin:{venv}/lib/python3.11/site-packages/bin:$PATH "
             "PKG_CONFIG_PATH=/opt/numpy-bench-src/.openblas && "
             "mkdir -p .openblas && python -c 'import scipy_openblas64; print(scipy_openblas64.get_pkg_config())' > .openblas/scipy-openblas.pc && "
             f"python -m pip wheel -v --no-build-isolation --no-deps -w /opt/numpy-bench-out {' '.join(SETUP_ARGS)} .")
    log = work / "emulated.log"
    seconds, finished, code = timed(in_root(root, inner), log, cap=cap)
    steps = NINJA_PROGRESS.findall(log.read_text(errors="replace"))
    done, total = (int(steps[-1][0]), int(steps[-1][1])) if steps else (0, 0)
    if finished and code != 0:
        sys.exit(f"numpy bench: the emulated build failed (exit {code}); its log: {log}")
    return {"label": "emulated aarch64 (pip wheel under qemu)", "wall": seconds, "finished": finished,
            "ninja_done": done, "ninja_total": total, "log": str(log)}


def render(cross: list[dict], native: dict, emulated: dict | None) -> str:
    lines = ["| target | cache | build stage (s) | repair (s) | test stage (s) | whole pipeline (s) | whole / native build |",
             "|---|---|---:|---:|---:|---:|---:|"]
    for r in cross:
        lines.append(f"| {r['target']} | {r['label']} | {r['build']:.0f} | {r['repair']:.1f} | {r['test']:.0f} | "
                     f"{r['wall']:.0f} | {r['wall'] / native['wall']:.2f}× |")
    lines.append(f"| native x86_64, `pip wheel` | fresh pip cache | — | — | — | {native['wall']:.0f} | 1.00× |")
    if emulated:
        aarch64 = [r for r in cross if r["target"] == "linux-aarch64"]
        if emulated["finished"]:
            cell = f"{emulated['wall']:.0f}"
        else:
            cell = (f"> {emulated['wall']:.0f} (stopped at the cap after {emulated['ninja_done']} of "
                    f"{emulated['ninja_total']} ninja steps)")
        lines.append(f"| emulated aarch64, `pip wheel` under qemu | fresh pip cache | — | — | — | {cell} | "
                     f"{'≥ ' if not emulated['finished'] else ''}{emulated['wall'] / native['wall']:.1f}× |")
        for r in aarch64:
            lines.append(f"\nemulated / crosswheel aarch64 ({r['label']}, whole pipeline against the emulated build alone): "
                         f"**{'≥ ' if not emulated['finished'] else ''}{emulated['wall'] / r['wall']:.1f}×**")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--targets", default="linux-aarch64,linux-ppc64le,macos-arm64")
    parser.add_argument("--emulated-cap", type=float, default=3600.0)
    parser.add_argument("--skip-emulated", action="store_true")
    parser.add_argument("--work", type=Path, default=Path.home() / ".cache/crosswheel-bench/numpy")
    parser.add_argument("--crosswheel", default=str(ROOT / "target/release/crosswheel"))
    parser.add_argument("--resume", action="store_true",
                        help="keep the crosswheel rows of the last run's results.json and measure only what it lacks")
    args = parser.parse_args()
    numpy, sdist = corpus_sdist("numpy")
    args.work.mkdir(parents=True, exist_ok=True)
    results = {"cross": [], "native": None, "emulated": None}
    if args.resume and (args.work / "results.json").is_file():
        results = json.loads((args.work / "results.json").read_text())

    def save() -> None:
        # After every step, so that a stopped run keeps what it measured.
        (args.work / "results.json").write_text(json.dumps(results, indent=2))

    # The first target, then the two baselines, then the other targets: the ratios the
    # baselines give come first.
    targets = args.targets.split(",")
    for index, target in enumerate(targets):
        cache = args.work / f"cache-{target}"
        done = {r["label"] for r in results["cross"] if r["target"] == target}
        if done != {"cold", "warm"}:
            results["cross"] = [r for r in results["cross"] if r["target"] != target]
            shutil.rmtree(cache, ignore_errors=True)
        for label in ("cold", "warm") if done != {"cold", "warm"} else ():
            print(f"numpy bench: crosswheel {target} {label}", file=sys.stderr, flush=True)
            results["cross"].append(crosswheel_run(args.crosswheel, numpy, sdist, target, cache, args.work, label))
            save()
        shutil.rmtree(cache, ignore_errors=True)
        if index == 0:
            if results["native"] is None:
                print("numpy bench: native", file=sys.stderr, flush=True)
                results["native"] = native_run(sdist, args.work)
                save()
            if not args.skip_emulated and results["emulated"] is None:
                print(f"numpy bench: emulated (cap {args.emulated_cap:.0f} s)", file=sys.stderr, flush=True)
                results["emulated"] = emulated_run(sdist, args.work, args.emulated_cap)
                save()
    print(render(results["cross"], results["native"], results["emulated"]))

if __name__ == "__main__":
    main()
