#!/usr/bin/env python3
"""Every catalogue library (config/target-libraries.toml) built for each target: the cold
build (from Debian's orig tarball to the cached prefix) and the warm cost (the next run
taking it from the cache), as crosswheel's own log lines report them.

    benches/target_libraries.py [--targets linux-aarch64,linux-ppc64le,macos-arm64]
                                [--libraries libpng,zlib,...] [--cache DIR] [--keep-cache]

Each library is asked for alone (`CROSSWHEEL_TARGET_LIBRARIES=<name>`) by a build of a
minimal C extension, once cold and once warm, on a crosswheel cache of its own (by default
~/.cache/crosswheel-bench/target-libraries, emptied first), so a library's time is its own
build, and a dependency (zlib for libpng) is built, and timed, on its own row first. The
cache's zig, Debian trees and sources are fetched by the first build of each target, which
is not a library's time. Prints a markdown table; a library that fails names its log."""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PLATFORMS = {"linux-aarch64": "manylinux_aarch64", "linux-ppc64le": "manylinux_ppc64le", "macos-arm64": "macosx_arm64",
             "linux-s390x": "manylinux_s390x", "linux-armv7l": "manylinux_armv7l", "linux-riscv64": "manylinux_riscv64",
             "linux-i686": "manylinux_i686", "linux-x86_64": "manylinux_x86_64"}
PROJECT = {
    "pyproject.toml": '[build-system]\nrequires = ["setuptools>=68"]\nbuild-backend = "setuptools.build_meta"\n\n'
                      '[project]\nname = "libbench"\nversion = "0.1.0"\n',
    "setup.py": 'from setuptools import setup, Extension\nsetup(ext_modules=[Extension("libbench", ["libbench.c"])])\n',
    "libbench.c": '#include <Python.h>\nstatic struct PyModuleDef m = {PyModuleDef_HEAD_INIT, "libbench", NULL, -1, NULL};\n'
                  'PyMODINIT_FUNC PyInit_libbench(void) { return PyModule_Create(&m); }\n',
}
BUILT = re.compile(r"(?P<target>\S+): (?P<name>\S+) (?P<version>\S+) built in (?P<seconds>[\d.]+) s")
CACHED = re.compile(r"(?P<target>\S+): (?P<name>\S+) (?P<version>\S+) from the cache in (?P<ms>[\d.]+) ms")


def catalogue_names() -> list[str]:
    with open(ROOT / "config/target-libraries.toml", "rb") as file:
        return [entry["name"] for entry in tomllib.load(file)["library"]]


def run(crosswheel: str, project: Path, target: str, library: str, cache: Path, log: Path) -> tuple[int, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CROSSWHEEL_", "CIBW_"))}
    env.update(CROSSWHEEL_CACHE=str(cache), CROSSWHEEL_TARGET_LIBRARIES=library, CROSSWHEEL_TEST_COMMAND="")
    out = project.parent / "out"
    shutil.rmtree(out, ignore_errors=True)
    argv = [crosswheel, "build", str(project), "--only", f"cp311-{PLATFORMS[target]}", "-w", str(out), "-j", "2"]
    proc = subprocess.run(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    log.write_text(proc.stdout)
    return proc.returncode, proc.stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--targets", default="linux-aarch64,linux-ppc64le,macos-arm64")
    parser.add_argument("--libraries", default=",".join(catalogue_names()))
    parser.add_argument("--cache", type=Path, default=Path.home() / ".cache/crosswheel-bench/target-libraries")
    parser.add_argument("--crosswheel", default=str(ROOT / "target/release/crosswheel"))
    parser.add_argument("--keep-cache", action="store_true",
                        help="keep what the cache holds (zig, Debian trees, libraries built before): "
                             "only libraries it lacks are built cold")
    args = parser.parse_args()
    if not args.keep_cache:
        shutil.rmtree(args.cache, ignore_errors=True)
    work = args.cache / "work"
    project = work / "libbench"
    project.mkdir(parents=True, exist_ok=True)
    for name, text in PROJECT.items():
        (project / name).write_text(text)
    targets = args.targets.split(",")
    libraries = args.libraries.split(",")
    cold: dict[tuple[str, str], str] = {}
    warm: dict[tuple[str, str], str] = {}
    for target in targets:
        for library in libraries:
            for label, into in (("cold", cold), ("warm", warm)):
                log = work / f"{library}-{target}-{label}.log"
                print(f"target-libraries bench: {library} for {target}, {label}", file=sys.stderr, flush=True)
                code, text = run(args.crosswheel, project, target, library, args.cache, log)
                if code != 0:
                    error = next((line for line in text.splitlines() if line.startswith("error:")), f"exit {code}")
                    into[(target, library)] = f"failed: {error} ({log})"
                    break
                for match in BUILT.finditer(text):
                    cold.setdefault((match["target"], match["name"]), f"{float(match['seconds']):.0f} s")
                for match in CACHED.finditer(text):
                    if match["name"] == library and label == "warm":
                        warm[(target, library)] = f"{float(match['ms']):.1f} ms"
    print("| library | " + " | ".join(f"{t} cold" for t in targets) + " | warm (largest of the targets) |")
    print("|---|" + "---:|" * (len(targets) + 1))
    for library in libraries:
        cells = [cold.get((t, library), "—") for t in targets]
        warm_ms = [float(warm[(t, library)].split()[0]) for t in targets if warm.get((t, library), "").endswith(" ms")]
        print(f"| {library} | " + " | ".join(cells) + f" | {max(warm_ms):.1f} ms |" if warm_ms else
              f"| {library} | " + " | ".join(cells) + " | — |")
    failures = {k: v for k, v in {**cold, **warm}.items() if v.startswith("failed")}
    for (target, library), text in sorted(failures.items()):
        print(f"\n- {library} for {target}: {text}")


if __name__ == "__main__":
    main()
