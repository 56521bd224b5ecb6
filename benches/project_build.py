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
