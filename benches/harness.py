"""Timing harness for crosswheel's benchmarks: runs each command of a
comparison several times in the same process run, alternating tools so that
machine noise hits both alike, and reports median, spread and peak memory."""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class Sample:
    seconds: float
    peak_kib: int
    cpu_seconds: float


@dataclass
class Result:
    label: str
    command: str
    samples: list[Sample] = field(default_factory=list)

    @property
    def median(self) -> float:
        return statistics.median(s.seconds for s in self.samples)

    @property
    def spread(self) -> tuple[float, float]:
        seconds = [s.seconds for s in self.samples]
        return min(seconds), max(seconds)

    @property
    def cpu_median(self) -> float:
        return statistics.median(s.cpu_seconds for s in self.samples)

    @property
    def peak_mib(self) -> float:
        return max(s.peak_kib for s in self.samples) / 1024


def run_once(argv: list[str], env: dict[str, str] | None = None, cwd: Path | None = None) -> Sample:
    """Wall time and peak resident memory of one run (GNU time's %M)."""
    time_bin = shutil.which("time", path="/usr/bin:/bin")
    if time_bin is None:
        sys.exit("benchmark needs GNU time (apt-get install time)")
    with tempfile.NamedTemporaryFile("r") as report:
        start = time.perf_counter()
        proc = subprocess.run([time_bin, "-f", "%M %U %S", "-o", report.name, *argv], env=env, cwd=cwd,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        elapsed = time.perf_counter() - start
        if proc.returncode != 0:
            sys.exit(f"benchmark command failed ({proc.returncode}): {' '.join(argv)}\n{proc.stderr[-2000:]}")
        peak, user, system = report.read().strip().splitlines()[-1].split()
    return Sample(elapsed, int(peak), float(user) + float(system))


def compare(rows: list[tuple[str, list[str]]], repetitions: int, fresh_dir: Path,
            env: dict[str, str] | None = None) -> list[Result]:
    """Runs every command `repetitions` times, interleaved; `{out}` in a
    command is replaced by an empty output folder for each run."""
    results = [Result(label, " ".join(argv)) for label, argv in rows]
    for _ in range(repetitions):
        for result, (_, argv) in zip(results, rows):
            out = fresh_dir / "out"
            shutil.rmtree(out, ignore_errors=True)
            out.mkdir(parents=True)
            result.samples.append(run_once([a.replace("{out}", str(out)) for a in argv], env=env))
    return results


def table(title: str, results: list[Result], baseline: int = 0) -> str:
    """A Markdown table; the ratio column is the baseline's median over each row's."""
    ours = results[baseline]
    lines = [f"### {title}", "",
             "| tool | wall median (s) | wall min–max (s) | CPU median (s) | peak RSS (MiB) | wall ratio | CPU ratio |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    for result in results:
        low, high = result.spread
        wall = "—" if result is ours else f"{result.median / ours.median:.1f}×"
        cpu = "—" if result is ours else f"{result.cpu_median / max(ours.cpu_median, 1e-3):.1f}×"
        lines.append(f"| {result.label} | {result.median:.3f} | {low:.3f}–{high:.3f} | {result.cpu_median:.2f} | "
                     f"{result.peak_mib:.0f} | {wall} | {cpu} |")
    lines.append("")
    lines.append("Commands:")
    lines.append("")
    for result in results:
        lines.append(f"- `{shorten(result.command)}`")
    lines.append("")
    return "\n".join(lines)


def environment_line() -> str:
    cpu = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{os.cpu_count()} cores, {cpu}, {time.strftime('%Y-%m-%d')}"


def shorten(command: str) -> str:
    """Commands as a reader reruns them: no host-specific prefixes."""
    root = str(Path(__file__).resolve().parent.parent)
    fixtures = os.environ.get("CROSSWHEEL_FIXTURES", str(Path.home() / ".cache/crosswheel-fixtures"))
    command = command.replace(root + "/", "").replace(fixtures, "$CROSSWHEEL_FIXTURES")
    command = command.replace(tempfile.gettempdir() + "/", "$WORK/")
    for tool in ("auditwheel", "repairwheel", "python3"):
        found = shutil.which(tool)
        if found:
            command = command.replace(found, tool)
    return command
