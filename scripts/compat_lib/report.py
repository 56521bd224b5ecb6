"""COMPATIBILITY.md: the project x target table and a note for every cell that is not green."""

import os
import platform
import shlex
import subprocess
import time
from dataclasses import dataclass


@dataclass
class Header:
    command: str
    commit: str
    version: str
    date: str
    host: str
    log_dir: str
    elapsed: float = 0.0
    reused_from: str = ""
    provenance: str = ""

    @staticmethod
    def now(repo, crosswheel, argv, log_dir):
        def out(*command):
            done = subprocess.run(command, capture_output=True, text=True, cwd=repo)
            return done.stdout.strip() if done.returncode == 0 else "unknown"

        dirty = out("git", "status", "--porcelain", "--untracked-files=no")
        commit = out("git", "rev-parse", "--short=12", "HEAD") + (" (with local changes)" if dirty else "")
        # The binary's own sources may be older than HEAD (the corpus changes more often).
        source = out("git", "log", "-1", "--format=%h %cs", "--", "src", "Cargo.toml", "Cargo.lock", "config")
        commit += f"; crosswheel's sources (src/, config/) last changed in {source}"
        return Header(
            command=shlex.join(argv),
            commit=commit,
            version=out(str(crosswheel), "--version"),
            date=time.strftime("%Y-%m-%d %H:%M %Z"),
            host=f"{platform.system()} {platform.machine()}, {os.cpu_count()} cores, cells run under nice -n 19",
            log_dir=str(log_dir),
        )


def _mb(size):
    return f"{size / 1e6:.2f} MB" if size >= 100_000 else f"{size / 1e3:.0f} kB"


def _tests(r):
    if r.total is not None:
        return f"{r.passed}/{r.total}"
    return r.test_cell or "-"


def _size(r):
    if not r.built:
        return "-"
    if not r.reference:
        return f"{_mb(r.size)} (index: none)"
    name, size = r.reference
    return f"{_mb(r.size)} (index {_mb(size)}, {r.size / size:.1f}x)"


def _short(r):
    """The main table's cell: status, then tests."""
    mark = {"green": "green", "timeout": "TIMEOUT"}.get(r.status, r.status.upper())
    tests = f" {_tests(r)}" if r.total is not None else ""
    return f"{mark}{tests} ({r.seconds:.0f} s)"


def _main_table(projects, targets, results):
    by_cell = {(r.project, r.target): r for r in results}
    lines = ["| project | covers | " + " | ".join(targets) + " |", "|---|---|" + "---|" * len(targets)]
    for p in projects:
        cells = [_short(by_cell[(p.name, t)]) if (p.name, t) in by_cell else "not run" for t in targets]
        lines.append(f"| {p.name} {p.version} | {', '.join(p.covers)} | " + " | ".join(cells) + " |")
    return lines


def _detail_table(results):
    lines = [
        "| project | target | built | wheel tag | tests passed/total | time (crosswheel's stages) | wheel size (index wheel) | crosswheel's test column |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        lines.append(
            f"| {r.project} | {r.target} | {'yes' if r.built else 'no'} | {r.tag or '-'} | {_tests(r)} "
            f"| {_time(r)} | {_size(r)} | {r.test_cell or '-'} |"
        )
    return lines


def _time(r):
    """The cell's time, with crosswheel's build, repair and test stages when it printed them."""
    if not r.stage_seconds:
        return f"{r.seconds:.0f} s"
    build, repair, test = r.stage_seconds
    return f"{r.seconds:.0f} s (build {build:.0f} s, repair {repair:.0f} s, test {test:.0f} s)"


def _size_outliers(results):
    big = [
        f"{r.project} on {r.target} {r.size / r.reference[1]:.1f}x"
        for r in results
        if r.built and r.reference and r.size > 2 * r.reference[1]
    ]
    return ", ".join(big) or "none"


def _failures(results):
    bad = [r for r in results if not r.green]
    if not bad:
        return ["Every cell is green."]
    lines = []
    for r in bad:
        lines.append(f"### {r.project} on {r.target}: {r.status}")
        lines.append("")
        lines.append(f"- first error: `{(r.first_error or 'none printed').replace('`', chr(39))}`")
        lines.append(f"- cause: {r.cause}")
        lines.append(f"- fault: **{r.fault}**")
        if r.note:
            lines.append(f"- recipe note: {r.note}")
        lines.append(f"- log: `{r.log}`")
        lines.append("")
    return lines


def _fault_counts(results):
    counts = {}
    for r in results:
        if not r.green:
            counts[r.fault] = counts.get(r.fault, 0) + 1
    return ", ".join(f"{n} {fault}" for fault, n in sorted(counts.items())) or "none"


def _recipes(projects):
    lines = ["| project | why it is here | test-command | test-requires | extra configuration |", "|---|---|---|---|---|"]
    for p in projects:
        extra = "; ".join(f"`{k} = {v!r}`" for k, v in p.options.items())
        per_target = "; ".join(
            f"{t}: " + ", ".join(f"`{k} = {v!r}`" for k, v in x.get("options", {}).items())
            for t, x in p.per_target.items()
            if x.get("options")
        )
        extra = "; ".join(s for s in (extra, per_target) if s) or "-"
        lines.append(
            f"| {p.name} | {p.why} | `{p.test_command}` | {' '.join(p.test_requires) or '-'} | {extra} |"
        )
    return lines


def write(path, header, projects, targets, results):
    green = sum(r.green for r in results)
    built = sum(r.built for r in results)
    done = {r.project for r in results}
    text = [
        "# Compatibility corpus",
        "",
        "<!-- Generated by scripts/compat from tests/compat/projects.toml; do not edit by hand. -->",
        "",
        "Real projects' sdists (pinned by sha256 in `tests/compat/projects.toml`), built by",
        "crosswheel for each target with the project's own configuration (its",
        "`[tool.cibuildwheel]` table when it has one) plus the recipe below, and tested with the",
        "project's own suite under qemu-user (Linux) or checked statically (macOS). A cell is",
        "**green** when the wheel was built and repaired and every collected test passed (on",
        "macOS: the static load check passed).",
        "",
        f"- command: `{header.command}`",
        f"- crosswheel: {header.version}, commit {header.commit}",
        f"- date: {header.date}; host: {header.host}",
        f"- cells: {len(results)} run of {len(projects) * len(targets)} planned; {green} green, "
        f"{built} built; not green by fault: {_fault_counts(results)}",
        f"- time: {sum(r.seconds for r in results) / 60:.1f} min in the cells reported; "
        f"this invocation {header.elapsed / 60:.1f} min; logs: `{header.log_dir}`",
        *([f"- how the cells were measured: {header.provenance}"] if header.provenance else []),
        *([f"- cells already in `{header.reused_from}` were taken from that run (their logs are named there)"]
          if header.reused_from else []),
        "",
        "## Project x target",
        "",
        *_main_table(projects, targets, results),
        "",
        "## Every cell",
        "",
        "Sizes compare crosswheel's wheel with the package index's wheel of the same version for",
        "that platform (cp311, else abi3), where the index has one. More than twice the index's",
        f"size: {_size_outliers(results)}.",
        "",
        *_detail_table(results),
        "",
        "## Cells that are not green",
        "",
        "Faults: **crosswheel** (crosswheel's bug or a missing feature, issue named), **outside**",
        "(nothing crosswheel can do on this host), **recipe** (the corpus's recipe is wrong),",
        "**unclassified** (no rule in scripts/compat_lib/classify.py matched: read the log).",
        "",
        *_failures(results),
        "## Projects and recipes",
        "",
        "The recipe is given to crosswheel as `CROSSWHEEL_*` variables, as a cibuildwheel user's",
        "CI would set `CIBW_*` ones; they replace the project's own value of the same option.",
        "",
        *_recipes([p for p in projects if p.name in done] or projects),
        "",
    ]
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text("\n".join(text))
    os.replace(tmp, path)
