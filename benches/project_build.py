"""What the per-project build benchmarks (benches/numpy/build.py, benches/rust/build.py)
share: a corpus project's verified sdist, a fresh unpacked copy of it, and a timed command
whose output goes to a log, stopped at a cap."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import tarfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts/compat_lib"))
import corpus  # noqa: E402


def corpus_sdist(name: str) -> tuple[corpus.Project, Path]:
    """The corpus's project `name` (tests/compat/projects.toml) and its sdist, fetched and
    verified into the compat cache."""
    projects = corpus.load(ROOT / "tests/compat/projects.toml")
    (project,) = [p for p in projects if p.name == name]
    cache = Path(os.environ.get("CROSSWHEEL_COMPAT_CACHE", Path.home() / ".cache/crosswheel/compat"))
    return project, corpus.fetch_sdist(project, cache)


def unpack(sdist: Path, into: Path) -> Path:
    shutil.rmtree(into, ignore_errors=True)
    into.mkdir(parents=True)
    with tarfile.open(sdist) as archive:
        archive.extractall(into)
    (root,) = [p for p in into.iterdir() if p.is_dir()]
    return root


def timed(argv: list[str], log: Path, env: dict[str, str] | None = None, cap: float | None = None) -> tuple[float, bool, int]:
    """Runs `argv` with its output in `log`: (seconds, finished before the cap, exit code)."""
    with open(log, "w") as out:
        out.write("$ " + shlex.join(argv) + "\n")
        out.flush()
        started = time.monotonic()
        process = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True)
        try:
            code = process.wait(timeout=cap)
            return time.monotonic() - started, True, code
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, 9)
            process.wait()
            return time.monotonic() - started, False, -9


def in_root(root: Path, command: str) -> list[str]:
    """The argv that runs the shell `command` chrooted in `root` (an emulated root, whose
    programs the kernel hands to qemu-user), in a private mount namespace with /proc and
    /dev mounted: the mounts go with the namespace."""
    mounts = f"mount -t proc proc {shlex.quote(str(root / 'proc'))} && mount --rbind /dev {shlex.quote(str(root / 'dev'))} && "
    return ["unshare", "--mount", "--propagation", "private", "sh", "-c",
            mounts + f"exec chroot {shlex.quote(str(root))} /bin/sh -c {shlex.quote(command)}"]


def native_pip_wheel(bench: str, sdist: Path, work: Path, python: str, wheel_args: list[str]) -> dict:
    """A numpy-family project's own steps on the build machine, in a fresh venv of `python`
    and a fresh pip cache: its before-build (`tools/wheels/cibw_before_build.sh`, which
    writes `.openblas`), then `pip wheel` with PKG_CONFIG_PATH naming that folder, as its
    cibuildwheel configuration runs them in a container."""
    project = unpack(sdist, work / "src-native")
    venv = work / "native-venv"
    shutil.rmtree(venv, ignore_errors=True)
    subprocess.run([python, "-m", "venv", str(venv)], check=True)
    out = work / "out-native"
    shutil.rmtree(out, ignore_errors=True)
    env = dict(os.environ, PATH=f"{venv}/bin:{os.environ['PATH']}", PIP_CACHE_DIR=str(work / "native-pip-cache"),
               PKG_CONFIG_PATH=str(project / ".openblas"), RUNNER_OS="Linux")
    # Debian 12's pip (23.0) predates `-C`; cibuildwheel's containers have a current pip.
    script = (f"cd {shlex.quote(str(project))} && python -m pip install --quiet --upgrade pip && "
              "bash tools/wheels/cibw_before_build.sh . && "
              f"python -m pip wheel --no-deps -w {shlex.quote(str(out))} {' '.join(wheel_args)} .")
    log = work / "native.log"
    seconds, _, code = timed(["sh", "-c", script], log, env)
    if code != 0 or not list(out.glob("*.whl")):
        sys.exit(f"{bench} bench: the native build failed (exit {code}); its log: {log}")
    return {"label": "native x86_64 (pip wheel)", "wall": seconds, "log": str(log)}
