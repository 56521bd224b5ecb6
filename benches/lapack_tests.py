#!/usr/bin/env python3
"""LAPACK's own test programs against the catalogue's OpenBLAS, under qemu-user: the
library crosswheel builds for a target (LAPACK compiled from its Fortran where the target
has gfortran), tested by the suite that ships with LAPACK.

    benches/lapack_tests.py [--targets linux-aarch64,linux-ppc64le,linux-s390x]
                            [--precisions sd] [--families lin,eig] [--coretype CORE]
                            [--crosswheel PATH]

For each target: a minimal project asks crosswheel for the catalogue's `openblas`
(`CROSSWHEEL_TARGET_LIBRARIES=openblas`) as a build in the manylinux_2_28 image would
(`--image`), which builds it into crosswheel's cache once (or takes it from there). LAPACK's TESTING folder, from the same lapack-netlib the library was
built from (the cmeel-openblas sdist in crosswheel's cache), is compiled with crosswheel's
gfortran for the target and linked against that installed libopenblas.so: the library a
wheel vendors, not a build tree's archive. The test programs then run under the cache's
qemu-user with a Debian root of the target, through LAPACK's own `lapack_testing.py`, whose
summary (tests run, passed, failed for numerical reasons, failed on an illegal error exit)
is printed as a markdown table, a row per precision, with the kernels the library chose
(OpenBLAS's `Core:` line): the machine's `OPENBLAS_CORETYPE` is not passed on, since it
names the build machine's CPU, unless `--coretype` forces a core. Nothing here is downloaded: run a crosswheel build of the
target with the library first, which fetches everything. Takes minutes per target and
precision family under qemu.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tarfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CACHE = Path(os.environ.get("CROSSWHEEL_CACHE", Path.home() / ".cache/crosswheel"))
IDENTIFIERS = {"linux-aarch64": "cp311-manylinux_aarch64", "linux-ppc64le": "cp311-manylinux_ppc64le",
               "linux-s390x": "cp311-manylinux_s390x", "linux-x86_64": "cp311-manylinux_x86_64"}
# (Debian's architecture, qemu's name, the Debian root crosswheel's tests run in)
MACHINES = {"linux-aarch64": ("arm64", "aarch64", "aarch64"), "linux-ppc64le": ("ppc64el", "ppc64le", "ppc64le"),
            "linux-s390x": ("s390x", "s390x", "s390x")}
PROJECT = {
    "pyproject.toml": '[build-system]\nrequires = ["setuptools>=68"]\nbuild-backend = "setuptools.build_meta"\n\n'
                      '[project]\nname = "lapackbench"\nversion = "0.1.0"\n',
    "setup.py": 'from setuptools import setup, Extension\nsetup(ext_modules=[Extension("lapackbench", ["lapackbench.c"])])\n',
    "lapackbench.c": '#include <Python.h>\nstatic struct PyModuleDef m = {PyModuleDef_HEAD_INIT, "lapackbench", NULL, -1, NULL};\n'
                     'PyMODINIT_FUNC PyInit_lapackbench(void) { return PyModule_Create(&m); }\n',
}
CACHED = re.compile(r"(?P<target>\S+): openblas (?P<version>\S+) from the cache in [\d.]+ ms \((?P<prefix>[^)]+)\)")
SDIST = "cmeel_openblas-0.3.29.tar.gz"
NETLIB = "cmeel_openblas-0.3.29/OpenBLAS/lapack-netlib"
# lapack_testing.py's summary lines: "REAL  	1327023		0	(0.000%)	0	(0.000%)"
SUMMARY = re.compile(r"^(?P<precision>REAL|DOUBLE PRECISION|COMPLEX|COMPLEX16)\s+(?P<run>\d+)\s+(?P<numerical>\d+)\s+"
                     r"\([\d.]+%\)\s+(?P<other>\d+)", re.MULTILINE)
LIN_PROGRAMS = {"s": ["xlintsts", "xlintstrfs"], "d": ["xlintstd", "xlintstds", "xlintstrfd"],
                "c": ["xlintstc", "xlintstrfc"], "z": ["xlintstz", "xlintstzc", "xlintstrfz"]}


def openblas_prefix(crosswheel: str, target: str, image: str, work: Path) -> Path:
    """The prefix of the catalogue's openblas for `target` as a build in the manylinux
    `image` gets it, built now if the cache lacks it."""
    project = work / "lapackbench"
    project.mkdir(parents=True, exist_ok=True)
    for name, text in PROJECT.items():
        (project / name).write_text(text)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CROSSWHEEL_", "CIBW_"))}
    env.update(CROSSWHEEL_TARGET_LIBRARIES="openblas", CROSSWHEEL_TEST_COMMAND="")
    env[f"CROSSWHEEL_MANYLINUX_{target.split('-')[1].upper()}_IMAGE"] = image
    for _ in range(2):  # the second run finds it in the cache and names the prefix
        out = work / "wheelhouse"
        shutil.rmtree(out, ignore_errors=True)
        proc = subprocess.run([crosswheel, "build", str(project), "--only", IDENTIFIERS[target], "-w", str(out)],
                              env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if proc.returncode != 0:
            sys.exit(f"{target}: crosswheel could not build openblas:\n{proc.stdout[-3000:]}")
        found = CACHED.search(proc.stdout)
        if found:
            return Path(found["prefix"])
    sys.exit(f"{target}: crosswheel's output names no openblas prefix")


def one(pattern: str, what: str) -> Path:
    found = sorted(CACHE.glob(pattern), key=lambda path: path.stat().st_mtime)
    if not found:
        sys.exit(f"no {what} in {CACHE} ({pattern}): run a crosswheel build for the target first")
    return found[-1]


def build_tests(target: str, prefix: Path, work: Path, precisions: str, families: list[str]) -> Path:
    """LAPACK's TESTING programs for `target`, linked against `prefix`'s libopenblas.so."""
    debian_arch, _, _ = MACHINES[target]
    gfortran = one(f"toolchains/fortran/fortran-{debian_arch}-*/bin/gfortran", f"gfortran for {target}")
    netlib = work / "lapack-netlib"
    if not netlib.is_dir():
        with tarfile.open(one(f"index-sources/{SDIST}", "cmeel-openblas sdist")) as sdist:
            members = [m for m in sdist.getmembers() if m.name.startswith(NETLIB + "/")]
            sdist.extractall(work / "sdist", members=members, filter="data")
        shutil.move(work / "sdist" / NETLIB, netlib)
    library = prefix / "lib" / "libopenblas.so"
    flags = "-O2 -frecursive -fPIC"
    (netlib / "make.inc").write_text(
        f"FC = {gfortran}\nFFLAGS = {flags}\nFFLAGS_DRV = {flags}\nFFLAGS_NOOPT = -O0 -frecursive -fPIC\n"
        f"LDFLAGS =\nAR = ar\nARFLAGS = cr\nRANLIB = ranlib\nTIMER = INT_ETIME\n"
        f"LOADER = {gfortran}\nLAPACKLIB = {library}\nTMGLIB = {netlib}/libtmglib.a\nBLASLIB =\n"
        f"BUILD_DEPRECATED = Yes\n")
    # OpenBLAS's copies of the Makefiles name the library `../$(LAPACKLIB)` (its build tree's
    # archive); here it is an absolute path, so that prefix goes.
    make = ["make", "-j", str(os.cpu_count() or 2)]
    steps = [(netlib / "TESTING/MATGEN", [])]
    if "lin" in families:
        steps.append((netlib / "TESTING/LIN", [p for letter in precisions for p in LIN_PROGRAMS[letter]]))
    if "eig" in families:
        steps.append((netlib / "TESTING/EIG", [f"xeigtst{letter}" for letter in precisions]))
    for folder, goals in steps:
        text = (folder / "Makefile").read_text()
        text = text.replace("../../$(TMGLIB)", "$(TMGLIB)").replace("../$(LAPACKLIB)", "$(LAPACKLIB)")
        (folder / "Makefile").write_text(text)
        proc = subprocess.run(make + goals, cwd=folder, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if proc.returncode != 0:
            sys.exit(f"{target}: building {folder.name} failed:\n{proc.stdout[-4000:]}")
    return netlib


def run_tests(target: str, netlib: Path, prefix: Path, precisions: str,
              families: list[str]) -> tuple[str, float, str]:
    """Runs lapack_testing.py with every test program under qemu; returns its output."""
    _, qemu_arch, root = MACHINES[target]
    qemu = one(f"tools/qemu-user-static-amd64-*/usr/bin/qemu-{qemu_arch}-static", f"qemu-{qemu_arch}")
    sysroot = CACHE / "sysroots" / root
    if not (sysroot / "lib").is_dir():
        sys.exit(f"no Debian root for {target} in {sysroot}: run crosswheel's tests for the target first")
    testing = netlib / "TESTING"
    for program in list(testing.glob("LIN/xlintst*")) + list(testing.glob("EIG/xeigtst*")):
        if program.suffix == ".bin" or program.with_suffix(".bin").exists():
            continue
        binary = program.with_name(program.name + ".bin")
        program.rename(binary)
        program.write_text(f"#!/bin/sh\nLD_LIBRARY_PATH={prefix}/lib exec {qemu} -L {sysroot} {binary} \"$@\"\n")
        program.chmod(0o755)
    # The kernels OpenBLAS chose for the emulated CPU, as its loader reports them.
    programs = sorted(path for path in testing.glob("*/x*tst*") if path.with_name(path.name + ".bin").exists())
    probe = subprocess.run([programs[0]],
                           stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           text=True, env={**os.environ, "OPENBLAS_VERBOSE": "2"})
    core = re.search(r"^Core: (\S+)", probe.stdout, re.MULTILINE)
    started = time.monotonic()
    outputs = []
    for family in families:
        proc = subprocess.run([sys.executable, "lapack_testing.py", "-r", "-s", "-p", precisions, "-t", family,
                               "-b", "TESTING"], cwd=netlib, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              text=True)
        outputs.append(proc.stdout)
    return "\n".join(outputs), time.monotonic() - started, core[1] if core else "?"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--targets", default="linux-aarch64,linux-ppc64le,linux-s390x")
    parser.add_argument("--precisions", default="d", help="of s, d, c, z (LAPACK's letters)")
    parser.add_argument("--families", default="lin,eig", help="lin, eig (lapack_testing.py's test families)")
    parser.add_argument("--crosswheel", default=str(ROOT / "target/release/crosswheel"))
    parser.add_argument("--image", default="manylinux_2_28",
                        help="the manylinux image (policy) the library is built for, as "
                             "`manylinux-<arch>-image` says it: below glibc 2.27 its LAPACK is the C translation")
    parser.add_argument("--work", type=Path, default=CACHE.parent / "crosswheel-bench/lapack-tests")
    parser.add_argument("--coretype", help="OpenBLAS's kernels to force (OPENBLAS_CORETYPE, e.g. ZARCH_GENERIC); "
                                           "by default the library picks them for the emulated CPU, as on a "
                                           "user's machine")
    args = parser.parse_args()
    # A build machine may name its own CPU here (OPENBLAS_CORETYPE=Haswell): the target's
    # library knows no such core and falls back to its generic C kernels, which is not what
    # a user's machine runs.
    os.environ.pop("OPENBLAS_CORETYPE", None)
    if args.coretype:
        os.environ["OPENBLAS_CORETYPE"] = args.coretype
    families = args.families.split(",")
    rows = []
    for target in args.targets.split(","):
        work = args.work / target
        shutil.rmtree(work, ignore_errors=True)
        work.mkdir(parents=True)
        prefix = openblas_prefix(args.crosswheel, target, args.image, work)
        record = prefix / ".crosswheel-library.json"
        notes = re.search(r'"notes":\s*"([^"]*)"', record.read_text()) if record.exists() else None
        netlib = build_tests(target, prefix, work, args.precisions, families)
        output, seconds, core = run_tests(target, netlib, prefix, args.precisions, families)
        (work / "lapack_testing.out").write_text(output)
        print(output, file=sys.stderr)
        per_precision: dict[str, list[int]] = {}
        for found in SUMMARY.finditer(output):
            totals = per_precision.setdefault(found["precision"], [0, 0, 0])
            totals[0] += int(found["run"])
            totals[1] += int(found["numerical"])
            totals[2] += int(found["other"])
        for precision, (run, numerical, other) in per_precision.items():
            rows.append(f"| {target} | {core} | {precision} | {', '.join(families)} | {run} | "
                        f"{run - numerical - other} | {numerical} | {other} | {seconds:.0f} s | "
                        f"{notes[1] if notes else '?'} |")
    print("| target | OpenBLAS kernels | precision | families | tests run | passed | numerical failures "
          "| other failures | time under qemu (all precisions) | LAPACK |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    print("\n".join(rows))


if __name__ == "__main__":
    main()
