"""Build benchmarks: crosswheel's cross build of examples/blasdot against the two ways a
user gets an aarch64 wheel without it (building under emulation in an arm64 root, and —
for scale — a native x86_64 build), the whole pipeline cold and warm, and the test stage.

Entry points (registered in benches/run): `build_comparisons` and `test_stage_timings`.
Prerequisites and the exact commands: benches/README.md."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import Result, compare, run_once, table  # noqa: E402
from inputs import ROOT  # noqa: E402

BENCHES = Path(__file__).resolve().parent
BLASDOT = ROOT / "examples/blasdot"
BENCH_CACHE = Path(os.environ.get("CROSSWHEEL_BENCH_CACHE", Path.home() / ".cache/crosswheel-bench"))
# Debian's own interpreter, the same CPython the arm64 root runs (pyenv shims may differ).
HOST_PYTHON = "/usr/bin/python3"
# The build requirements of blasdot, preinstalled for the pip baselines (not timed).
BUILD_REQUIREMENTS = ("setuptools", "scipy-openblas32")
# Versions copied from the native venv into the arm64 root's venv.
PINNED = ("pip", *BUILD_REQUIREMENTS)
# Inside the emulated root.
ROOT_VENV = "/opt/blasdot-bench-venv"
ROOT_SOURCE = "/opt/blasdot-src"
ROOT_OUT = "/mnt/out"
# Variables that would make a "cold" run find something already installed.
WARMING_VARIABLES = ("CROSSWHEEL_CACHE", "CROSSWHEEL_ZIG", "ZIG_GLOBAL_CACHE_DIR")
MACOS_BUILD_ONLY = ("CROSSWHEEL_REPAIR_WHEEL_COMMAND_MACOS=", "CROSSWHEEL_TEST_COMMAND_MACOS=")
TEST_COMMAND = "python -m pytest -q {project}/tests"
IMPORT_ONLY = 'python -c "import blasdot"'


def crosswheel_binary() -> str:
    """The release binary, wherever CARGO_TARGET_DIR puts it."""
    subprocess.run(["cargo", "build", "--release", "--quiet"], cwd=ROOT, check=True)
    metadata = subprocess.run(["cargo", "metadata", "--format-version", "1", "--no-deps"], cwd=ROOT,
                              check=True, capture_output=True, text=True)
    return str(Path(json.loads(metadata.stdout)["target_directory"]) / "release/crosswheel")


def clean_env(**overrides: str) -> dict[str, str]:
    """The caller's environment without any CROSSWHEEL_* option, plus `overrides`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CROSSWHEEL_") or k in WARMING_VARIABLES}
    env.update(overrides)
    return env


def on_cache(cache: Path, argv: list[str], *assignments: str) -> list[str]:
    """`argv` on crosswheel cache `cache` and nothing else that is already installed."""
    unset = [arg for name in WARMING_VARIABLES if name != "CROSSWHEEL_CACHE" for arg in ("-u", name)]
    return ["env", *unset, f"CROSSWHEEL_CACHE={cache}", *assignments, *argv]


def ratio_header(markdown: str, header: str) -> str:
    """harness.table's ratio column, renamed where "speed-up of crosswheel" would mislead."""
    return markdown.replace("| speed-up of crosswheel |", f"| {header} |", 1)


def run(argv: list[str], what: str, **kwargs) -> subprocess.CompletedProcess:
    proc = subprocess.run(argv, capture_output=True, text=True, **kwargs)
    if proc.returncode != 0:
        sys.exit(f"{what} failed ({proc.returncode}): {shlex.join(argv)}\n{(proc.stdout + proc.stderr)[-3000:]}")
    return proc


def pristine_copy(dest: Path) -> Path:
    """blasdot without anything an earlier build left in it."""
    shutil.rmtree(dest, ignore_errors=True)
    shutil.copytree(BLASDOT, dest, ignore=shutil.ignore_patterns("build", "dist", "*.egg-info", "__pycache__"))
    return dest


def q(path: Path | str) -> str:
    return shlex.quote(str(path))


def sh(script: str) -> list[str]:
    return ["sh", "-c", script]


def with_env(env: dict[str, str], argv: list[str]) -> list[str]:
    """`env NAME=VALUE ... argv`, so the printed command reproduces the run."""
    return ["env", *(f"{k}={v}" for k, v in env.items()), *argv]


# -- the two pip baselines ---------------------------------------------------------------

def native_venv() -> tuple[Path, dict[str, str]]:
    """A host venv with blasdot's build requirements; returns it and their versions."""
    venv = BENCH_CACHE / "native-venv"
    python = venv / "bin/python"
    if not python.exists():
        run([HOST_PYTHON, "-m", "venv", str(venv)], "creating the native venv")
        run([str(python), "-m", "pip", "install", "--quiet", "--upgrade", *BUILD_REQUIREMENTS], "installing build requirements natively")
    return venv, installed_versions([str(python)])


def installed_versions(python: list[str]) -> dict[str, str]:
    script = ("import importlib.metadata as m, json; "
              f"print(json.dumps({{n: m.version(n) for n in {list(PINNED)!r}}}))")
    return json.loads(run([*python, "-c", script], "reading installed versions").stdout)


def emulated_root() -> Path:
    proc = subprocess.run([str(BENCHES / "emulated-root")], stdout=subprocess.PIPE, text=True)
    if proc.returncode != 0:
        sys.exit("benches/emulated-root failed (see above): the emulated baseline needs a Debian arm64 root")
    return Path(proc.stdout.strip().splitlines()[-1])


def in_root(root: Path, script: str, out: str | None = None) -> list[str]:
    """Runs `script` in the arm64 root, with /proc, /dev and optionally `out` mounted,
    in a private mount namespace so that nothing stays mounted afterwards."""
    mounts = [f"mount -t proc proc {q(f'{root}/proc')}", f"mount --rbind /dev {q(f'{root}/dev')}"]
    if out is not None:
        mounts.append(f"mkdir -p {q(f'{root}{ROOT_OUT}')} && mount --bind {q(out)} {q(f'{root}{ROOT_OUT}')}")
    inner = " && ".join([*mounts, f"exec chroot {q(str(root))} /bin/sh -c {q(script)}"])
    return ["unshare", "--mount", "--propagation", "private", "sh", "-c", inner]


def prepare_emulated_root(versions: dict[str, str]) -> Path:
    """The arm64 root with the same pip and build requirements as the native venv, and a
    fresh copy of blasdot. The host pip installs them into the root's venv (`--platform`):
    pip under qemu is ~10x slower, and the root has no network set-up of its own."""
    root = emulated_root()
    if shutil.which("unshare") is None or os.geteuid() != 0:
        sys.exit("the emulated baseline needs root and unshare (util-linux) to chroot into the arm64 root")
    venv = root / ROOT_VENV.lstrip("/")
    site = venv / "lib/python3.11/site-packages"
    wanted = [site / f"{name.replace('-', '_')}-{version}.dist-info" for name, version in versions.items()]
    if not all(path.is_dir() for path in wanted):
        # pip does not widen manylinux tags: name every glibc up to the root's (2.36).
        platforms = [arg for minor in range(17, 37) for arg in ("--platform", f"manylinux_2_{minor}_aarch64")]
        shutil.rmtree(venv, ignore_errors=True)
        run(in_root(root, f"python3 -m venv --without-pip {ROOT_VENV}"), "creating the venv in the arm64 root")
        run([HOST_PYTHON, "-m", "pip", "install", "--quiet", "--no-deps", "--only-binary=:all:",
             *platforms, "--python-version", "3.11", "--implementation", "cp",
             "--abi", "cp311", "--abi", "none", "--target", str(site),
             *(f"{name}=={version}" for name, version in versions.items())],
            "installing build requirements into the arm64 root's venv")
    pristine_copy(root / ROOT_SOURCE.lstrip("/"))
    return root


# -- build comparisons ---------------------------------------------------------------------

def build_comparisons(reps: int, work: Path) -> list[str]:
    crosswheel = crosswheel_binary()
    venv, versions = native_venv()
    root = prepare_emulated_root(versions)
    source = pristine_copy(work / "blasdot-src")
    scratch = work / "blasdot-build"
    identifier = "cp311-manylinux_aarch64"

    build_only = {"CROSSWHEEL_TEST_COMMAND": "", "CROSSWHEEL_REPAIR_WHEEL_COMMAND": ""}
    pip_wheel = "python -m pip wheel --quiet --no-deps --no-build-isolation -w"
    rows = [
        ("crosswheel cross build (zig), build stage only",
         with_env(build_only, [crosswheel, "build", str(BLASDOT), "--only", identifier, "-w", "{out}"])),
        ("pip wheel under emulation (arm64 root, gcc + python3 under qemu-aarch64)",
         in_root(root, f"rm -rf /tmp/blasdot && cp -r {ROOT_SOURCE} /tmp/blasdot && cd /tmp/blasdot && "
                       f"{ROOT_VENV}/bin/{pip_wheel} {ROOT_OUT} .", out="{out}")),
        ("pip wheel natively (x86_64 host gcc, for scale)",
         sh(f"rm -rf {q(scratch)} && cp -r {q(source)} {q(scratch)} && cd {q(scratch)} && "
            f"{q(venv / 'bin')}/{pip_wheel} {{out}} .")),
    ]
    # One untimed run each: page cache, pyc files, zig's per-target libc stubs.
    warm_up = work / "warm-up"
    for _, argv in rows:
        shutil.rmtree(warm_up, ignore_errors=True)
        warm_up.mkdir(parents=True)
        run_once([a.replace("{out}", str(warm_up)) for a in argv], env=clean_env())
    results = compare(rows, reps, work, env=clean_env())
    for result, (_, argv) in zip(results, rows):
        result.command = shlex.join(argv)  # copy-pasteable, unlike a plain join
    cross, emulated, native = (r.median for r in results)
    notes = [
        f"Build requirements preinstalled for the pip rows (not timed): "
        f"{', '.join(f'{k} {v}' for k, v in versions.items())}; the arm64 root is Debian 12 "
        f"(`benches/emulated-root`). Every run builds a fresh copy of examples/blasdot.",
        "",
        f"- emulated / cross: **{emulated / cross:.1f}×** (aim ≥ 8×: {'met' if emulated / cross >= 8 else 'missed'})",
        f"- cross / native: **{cross / native:.2f}×** (aim ≤ 1.5×: {'met' if cross / native <= 1.5 else 'missed'})",
        "",
    ]
    notes.append(load_note())
    sections = [table(f"Build: examples/blasdot {identifier}, warm caches", results) + "\n" + "\n".join(notes)]
    sections.append(full_pipeline(crosswheel, reps, work))
    return sections


def load_note() -> str:
    """The machine may be shared: say how busy it was when the section finished."""
    one, five, fifteen = os.getloadavg()
    return f"Load average at the end of this section: {one:.1f} / {five:.1f} / {fifteen:.1f} on {os.cpu_count()} cores.\n"


# -- cold and warm -----------------------------------------------------------------------------

@dataclass
class Case:
    label: str
    argv: list[str]
    # Runs before each timed run, untimed (e.g. emptying a cache).
    prepare: Callable[[], None] | None = None


def measure(cases: list[Case], reps: int, work: Path) -> list[Result]:
    """Like harness.compare, for cases with an untimed preparation step; `{out}` is an
    empty folder per run, also the working directory (`crosswheel test` logs there)."""
    results = [Result(case.label, shlex.join(case.argv)) for case in cases]
    for _ in range(reps):
        for result, case in zip(results, cases):
            out = work / "out"
            shutil.rmtree(out, ignore_errors=True)
            out.mkdir(parents=True)
            if case.prepare is not None:
                case.prepare()
            argv = [a.replace("{out}", str(out)) for a in case.argv]
            result.samples.append(run_once(sh(f"cd {shlex.quote(str(out))} && exec {shlex.join(argv)}"), env=clean_env()))
    return results


def emptied(path: Path) -> Callable[[], None]:
    def empty() -> None:
        shutil.rmtree(path, ignore_errors=True)
    return empty


def full_pipeline(crosswheel: str, reps: int, work: Path) -> str:
    """Build + repair + test for the three targets of blasdot's pyproject, as configured
    there: on a fresh cache (zig install, sysroots, target wheels all fetched) and on the
    cache that cold run left behind."""
    cache = work / "cache-pipeline"
    # main has neither macOS repair nor the static macOS check yet (each fails the build):
    # macOS wheels are only built until they land; then drop MACOS_BUILD_ONLY.
    command = [crosswheel, "build", str(BLASDOT), "-w", "{out}"]
    # Cold first: the warm run of each round reuses the cache the cold run just filled.
    results = measure([
        Case("full pipeline, cold cache (emptied before each run)", on_cache(cache, command, *MACOS_BUILD_ONLY),
             prepare=emptied(cache)),
        Case("full pipeline, warm cache", on_cache(cache, command, *MACOS_BUILD_ONLY)),
    ], reps, work)
    title = "Full pipeline (build + repair + test): aarch64 + ppc64le, plus the macOS arm64 build, cp311"
    return ratio_header(table(title, results, baseline=1), "× warm") + "\n" + (
        "Cold includes installing ziglang into the cache, zig's libc stubs, the target sysroots "
        "(Debian packages) and the target wheels; pip's own download cache is left as it is.\n\n" + load_note())


# -- test stage --------------------------------------------------------------------------------

def repaired_wheel(crosswheel: str, arch: str, work: Path) -> Path:
    out = work / f"repaired-{arch}"
    shutil.rmtree(out, ignore_errors=True)
    run([crosswheel, "build", str(BLASDOT), "--only", f"cp311-manylinux_{arch}", "-w", str(out)],
        f"building the repaired {arch} wheel", env=clean_env(CROSSWHEEL_TEST_COMMAND=""))
    wheels = sorted(out.glob("*.whl"))
    if len(wheels) != 1:
        sys.exit(f"expected one repaired {arch} wheel in {out}, found {[w.name for w in wheels]}")
    return wheels[0]


def test_stage_timings(reps: int, work: Path) -> list[str]:
    crosswheel = crosswheel_binary()
    wheels = {arch: repaired_wheel(crosswheel, arch, work) for arch in ("aarch64", "ppc64le")}
    def test(wheel: Path, command: str, requires: list[str]) -> list[str]:
        argv = [crosswheel, "test", str(wheel), "--project", str(BLASDOT), "--test-command", command]
        for requirement in requires:
            argv += ["--test-requires", requirement]
        return argv

    # Warm the default cache once (sysroots, test venvs), untimed.
    for wheel in wheels.values():
        run(sh(f"cd {shlex.quote(str(work))} && exec {shlex.join(test(wheel, TEST_COMMAND, ['pytest']))}"),
            f"warming the test stage for {wheel.name}", env=clean_env())

    cases = []
    for arch, wheel in wheels.items():
        cache = work / f"cache-test-{arch}"
        argv = test(wheel, IMPORT_ONLY, [])
        cases += [Case(f"{arch}, warm cache", argv),
                  Case(f"{arch}, cold cache (emptied before each run)", on_cache(cache, argv), prepare=emptied(cache))]
    provisioning = measure(cases, reps, work)
    sections = []
    for arch, pair in zip(wheels, (provisioning[i:i + 2] for i in range(0, len(provisioning), 2))):
        warm_run, cold_run = pair
        title = f"Test stage, {arch}: sysroot provisioning (`crosswheel test`, `import blasdot`), warm vs cold"
        sections.append(
            ratio_header(table(title, pair), "× warm")
            + f"\nProvisioning on a fresh cache adds {cold_run.median - warm_run.median:.1f} s "
              f"(Debian packages for the target CPython, fetched and unpacked).\n")

    per_target = measure([Case(f"{arch}: pytest under qemu (7 tests)", test(wheel, TEST_COMMAND, ["pytest"]))
                          for arch, wheel in wheels.items()], reps, work)
    title = "Test stage per target: repaired blasdot wheel, pytest, warm cache"
    sections.append(ratio_header(table(title, per_target), "× aarch64") + "\n" + load_note())
    return sections
