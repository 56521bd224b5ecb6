#!/usr/bin/env python3
"""orjson 3.13.0 cp311-manylinux_aarch64 from its sdist: crosswheel's cross build with a cold
and then a warm cache, beside the same sdist built under emulation in a Debian forky arm64
root (benches/emulated-root --suite forky --with-rust), stopped at a time cap when it has
not finished; and the cost of crosswheel's first fetch of Debian's Rust.

    benches/rust/build.py [--emulated-cap SECONDS] [--skip-emulated] [--work DIR]
                          [--crosswheel PATH] [--resume]

crosswheel runs the whole pipeline (build, repair, test) with a short test command (an
orjson round trip under qemu, instead of the corpus's pytest suite), and its summary row gives
the build stage alone. It runs with a PATH that has no rustc, cargo or rustup, so it takes
Debian's Rust (docs/rust.md) as on a machine without a Rust toolchain. "Cold" is a fresh
crosswheel cache (zig, the target's Debian tree, Debian's rustc and cargo and the target's
libstd-rust-dev, maturin, the test interpreter: everything a first run downloads or builds)
and a fresh CARGO_HOME; "warm" repeats the run on both. The first fetch of Debian's Rust is
what crosswheel's own log line `fetched Debian's Rust VERSION for linux-aarch64 in S s`
says, inside the cold run; its size is the unpacked trees it left in the cache.

orjson's sdist vendors every crate it needs (include/cargo, with .cargo/config.toml
pointing cargo there), so no build downloads crates: the emulated build runs with
CARGO_NET_OFFLINE=true. Its maturin is installed into a venv in the root beforehand by the
host's pip (`--platform`), not timed; the timed part is `python -m pip wheel --no-deps
--no-build-isolation` of a fresh copy of the unpacked sdist (a fresh target folder) with the
root's own rustc and cargo, under qemu-aarch64. The root's CPython is Debian forky's, not
3.11: the extension is the same Rust compiled for another Python ABI.

Prints a markdown section for BENCHMARKS.md and writes the raw numbers beside it as JSON."""

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
from project_build import corpus_sdist, in_root, timed, unpack  # noqa: E402

HOST_PYTHON = "/usr/bin/python3"
TARGET = "linux-aarch64"
IDENTIFIER = "cp311-manylinux_aarch64"
# orjson's build requirement (pyproject.toml: maturin>=1,<2), for the emulated root, where it
# is installed with pip by the host's pip (`--platform`): pip under qemu is ~10x slower.
EMULATED_REQUIREMENTS = ["maturin>=1,<2"]
SHORT_TEST = (
    "python -c \"import orjson, datetime; "
    "value = {'a': [1, 2.5, None, True, 'é'], 'b': {'c': 'd'}}; "
    "assert orjson.loads(orjson.dumps(value)) == value; "
    "assert orjson.dumps(datetime.date(2026, 12, 6)) == b'\\\"2026-12-06\\\"'\""
)
RUST_FETCHED = re.compile(r"fetched Debian's Rust (?P<version>\S+) for \S+ in (?P<seconds>[\d.]+) s")
RUST_ORIGIN = re.compile(r"Rust for \S+: (?P<origin>.+)$", re.MULTILINE)
CARGO_COMPILING = re.compile(r"^\s*Compiling (\S+) v", re.MULTILINE)


def without_rust(path: str) -> str:
    """PATH less every folder holding rustc, cargo or rustup: crosswheel then takes Debian's."""
    kept = [d for d in path.split(os.pathsep)
            if d and not any(os.path.exists(os.path.join(d, name)) for name in ("rustc", "cargo", "rustup"))]
    return os.pathsep.join(kept)


def megabytes(path: Path) -> float:
    total = 0
    for folder, _, files in os.walk(path):
        for name in files:
            try:
                total += os.lstat(os.path.join(folder, name)).st_size
            except OSError:
                pass
    return total / 1e6


def crosswheel_run(crosswheel: str, orjson, sdist: Path, cache: Path, cargo_home: Path, work: Path, label: str) -> dict:
    project = unpack(sdist, work / "src-cross")
    out = work / f"out-{label}"
    shutil.rmtree(out, ignore_errors=True)
    options = dict(orjson.options_for(TARGET))
    options["test-command"] = SHORT_TEST
    options.pop("test-requires", None)
    env = cells.cell_environment(options)
    env["CROSSWHEEL_CACHE"] = str(cache)
    env["CARGO_HOME"] = str(cargo_home)
    env["PATH"] = without_rust(env["PATH"])
    for name in ("ZIG_GLOBAL_CACHE_DIR", "RUSTUP_HOME", "RUSTUP_TOOLCHAIN", "RUSTC", "CARGO"):
        env.pop(name, None)
    argv = [crosswheel, "build", str(project), "--only", IDENTIFIER, "--output-dir", str(out)]
    log = work / f"crosswheel-{label}.log"
    seconds, _, code = timed(argv, log, env)
    text = log.read_text(errors="replace")
    row = cells.SUMMARY_ROW.search(text)
    if code != 0 or row is None or row.group("result") != "ok":
        sys.exit(f"orjson bench: crosswheel {label} failed (exit {code}); its log: {log}")
    origin = RUST_ORIGIN.search(text)
    fetched = RUST_FETCHED.search(text)
    result = {"label": label, "wall": seconds, "build": float(row.group("build")),
              "repair": float(row.group("repair")), "test": float(row.group("test_s")),
              "wheel": row.group("wheel"), "rust": origin.group("origin").split(" (")[0].strip() if origin else None,
              "log": str(log)}
    if fetched:
        trees = sorted((cache / "tools").glob("rust-*")) + [cache / "toolchains/rust"]
        result["rust_fetch"] = {"version": fetched.group("version"), "seconds": float(fetched.group("seconds")),
                                "unpacked_mb": {p.name: round(megabytes(p), 1) for p in trees if p.exists()}}
    shutil.rmtree(project, ignore_errors=True)
    return result


def emulated_run(sdist: Path, work: Path, cap: float) -> dict:
    """orjson's `pip wheel` under qemu-aarch64 in the Debian forky arm64 root, with its rustc."""
    root = Path(subprocess.run([str(ROOT / "benches/emulated-root"), "--suite", "forky", "--with-rust"], check=True,
                               stdout=subprocess.PIPE, text=True).stdout.strip().splitlines()[-1])
    def chroot_output(command: str) -> str:
        return subprocess.run(in_root(root, command), check=True, stdout=subprocess.PIPE, text=True).stdout.strip()

    python = chroot_output("python3 -c 'import sys; print(\"%d.%d\" % sys.version_info[:2])'")
    versions = chroot_output("python3 --version; rustc --version; cargo --version").splitlines()
    tag = python.replace(".", "")
    venv = "/opt/orjson-bench-venv"
    site = root / venv.lstrip("/") / f"lib/python{python}/site-packages"
    shutil.rmtree(root / venv.lstrip("/"), ignore_errors=True)
    source = root / "opt/orjson-bench-src"
    shutil.rmtree(source, ignore_errors=True)
    shutil.rmtree(root / "opt/orjson-bench-out", ignore_errors=True)
    shutil.copytree(unpack(sdist, work / "src-emulated"), source)
    platforms = [arg for minor in range(17, 43) for arg in ("--platform", f"manylinux_2_{minor}_aarch64")]
    chroot_output(f"python3 -m venv --without-pip {venv}")
    subprocess.run([HOST_PYTHON, "-m", "pip", "install", "--quiet", "--only-binary=:all:", *platforms,
                    "--python-version", python, "--implementation", "cp", "--abi", f"cp{tag}", "--abi", "abi3",
                    "--abi", "none", "--target", str(site), "pip", *EMULATED_REQUIREMENTS], check=True)
    maturin = chroot_output(f"PATH={venv}/bin:{venv}/lib/python{python}/site-packages/bin:$PATH maturin --version")
    inner = (f"cd /opt/orjson-bench-src && export PATH={venv}/bin:{venv}/lib/python{python}/site-packages/bin:$PATH "
             "CARGO_NET_OFFLINE=true CARGO_HOME=/opt/orjson-bench-cargo-home && "
             "rm -rf /opt/orjson-bench-cargo-home target && "
             "python -m pip wheel -v --no-build-isolation --no-deps -w /opt/orjson-bench-out .")
    log = work / "emulated.log"
    seconds, finished, code = timed(in_root(root, inner), log, cap=cap)
    text = log.read_text(errors="replace")
    crates = CARGO_COMPILING.findall(text)
    lock = (source / "Cargo.lock").read_text()
    total = len(re.findall(r"^\[\[package\]\]", lock, re.MULTILINE))
    wheels = sorted(p.name for p in (root / "opt/orjson-bench-out").glob("orjson-*.whl"))
    if finished and (code != 0 or not wheels):
        sys.exit(f"orjson bench: the emulated build failed (exit {code}); its log: {log}")
    return {"label": "emulated aarch64 (pip wheel under qemu)", "wall": seconds, "finished": finished,
            "crates_compiled": len(crates), "last_crate": crates[-1] if crates else None,
            "lock_packages": total, "wheels": wheels, "versions": versions + [maturin], "log": str(log)}


def render(cross: list[dict], emulated: dict | None) -> str:
    lines = ["| row | Rust | build stage (s) | repair (s) | test stage (s) | whole run (s) |",
             "|---|---|---:|---:|---:|---:|"]
    for r in cross:
        lines.append(f"| crosswheel, {r['label']} cache | {r['rust']} | {r['build']:.1f} | {r['repair']:.1f} | "
                     f"{r['test']:.1f} | {r['wall']:.1f} |")
    if emulated:
        if emulated["finished"]:
            cell = f"{emulated['wall']:.0f}"
        else:
            cell = (f"> {emulated['wall']:.0f} (stopped at the cap after {emulated['crates_compiled']} crates "
                    f"began compiling, the last {emulated['last_crate']})")
        lines.append(f"| emulated aarch64, `pip wheel` under qemu | {', '.join(emulated['versions'][1:2])} | — | — | — | {cell} |")
        bound = "≥ " if not emulated["finished"] else ""
        for r in cross:
            lines.append(f"\nemulated / crosswheel {r['label']}: whole run {bound}**{emulated['wall'] / r['wall']:.1f}×**, "
                         f"build stage alone {bound}**{emulated['wall'] / r['build']:.1f}×**")
    fetch = [r["rust_fetch"] for r in cross if r.get("rust_fetch")]
    for f in fetch:
        sizes = ", ".join(f"`tools/{name}` {mb:.0f} MB" for name, mb in f["unpacked_mb"].items() if mb >= 0.5)
        lines.append(f"\nfirst fetch of Debian's Rust {f['version']} (inside the cold run): **{f['seconds']:.1f} s**; "
                     f"unpacked in the cache: {sizes} (total {sum(f['unpacked_mb'].values()):.0f} MB)")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--emulated-cap", type=float, default=2400.0)
    parser.add_argument("--skip-emulated", action="store_true")
    parser.add_argument("--work", type=Path, default=Path.home() / ".cache/crosswheel-bench/orjson")
    parser.add_argument("--crosswheel", default=str(ROOT / "target/release/crosswheel"))
    parser.add_argument("--resume", action="store_true",
                        help="keep the crosswheel rows of the last run's results.json and measure only what it lacks")
    args = parser.parse_args()
    orjson, sdist = corpus_sdist("orjson")
    args.work.mkdir(parents=True, exist_ok=True)
    results = {"cross": [], "emulated": None}
    if args.resume and (args.work / "results.json").is_file():
        results = json.loads((args.work / "results.json").read_text())

    def save() -> None:
        # After every step, so that a stopped run keeps what it measured.
        (args.work / "results.json").write_text(json.dumps(results, indent=2))

    cache, cargo_home = args.work / "cache", args.work / "cargo-home"
    if {r["label"] for r in results["cross"]} != {"cold", "warm"}:
        results["cross"] = []
        for label in ("cold", "warm"):
            if label == "cold":
                shutil.rmtree(cache, ignore_errors=True)
                shutil.rmtree(cargo_home, ignore_errors=True)
            print(f"orjson bench: crosswheel {label}", file=sys.stderr, flush=True)
            results["cross"].append(crosswheel_run(args.crosswheel, orjson, sdist, cache, cargo_home, args.work, label))
            save()
    if not args.skip_emulated and results["emulated"] is None:
        print(f"orjson bench: emulated (cap {args.emulated_cap:.0f} s)", file=sys.stderr, flush=True)
        results["emulated"] = emulated_run(sdist, args.work, args.emulated_cap)
        save()
    print(render(results["cross"], results["emulated"]))


if __name__ == "__main__":
    main()
