"""One project x target cell: unpack the sdist, run crosswheel, read what happened."""

import dataclasses
import json
import os
import re
import shutil
import signal
import subprocess
import tarfile
import time
from dataclasses import dataclass
from pathlib import Path

import classify
import index


@dataclass
class Result:
    project: str
    version: str
    target: str
    built: bool = False
    green: bool = False
    status: str = ""  # green | tests failed | build failed | timeout | ...
    wheel: str = ""
    tag: str = ""
    size: int = 0
    reference: tuple = None  # (file name, size) of the index's wheel, or None
    passed: int = None
    total: int = None
    test_cell: str = ""  # crosswheel's own test column
    seconds: float = 0.0
    first_error: str = ""
    cause: str = ""
    fault: str = ""
    note: str = ""
    log: str = ""
    # crosswheel's own stage times (its summary row), when it printed one: the cell's
    # `seconds` also holds the sdist's unpacking and the test environment.
    stage_seconds: tuple = None  # (build, repair, test)


def save_results(path, results):
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps([dataclasses.asdict(r) for r in results], indent=1))
    os.replace(tmp, path)


def load_results(path):
    """Cells of an earlier run by (project, version, target)."""
    try:
        rows = json.loads(path.read_text())
    except (OSError, ValueError) as err:
        raise SystemExit(f"compat: error: cannot read the results of an earlier run {path}: {err}")
    results = [Result(**{**row, "reference": tuple(row["reference"]) if row["reference"] else None,
                          "stage_seconds": tuple(row["stage_seconds"]) if row.get("stage_seconds") else None}) for row in rows]
    for result in results:
        _reclassify(result)
    return {(r.project, r.version, r.target): r for r in results}


def _reclassify(result):
    """Explains a reused cell again from its log, so that classification rules added
    since that run apply to it (a timeout and a recipe's skip keep their reasons)."""
    if result.green or result.status in ("timeout", "tests skipped"):
        return
    try:
        text = Path(result.log).read_text(errors="replace")
    except OSError:
        return
    counts = test_counts(text)
    if result.status == "no test count" and counts:
        # A count format read since (pytest -q's bare summary line).
        result.passed, result.total = counts
        if counts[0] == counts[1] > 0:
            result.status, result.green = "green", True
            result.first_error = result.cause = result.fault = ""
            return
    full = text + _build_log(text)
    if not re.search(r"^\s+first error: ", text, re.MULTILINE):
        result.first_error = _first_error(text, result.built)
    result.cause, result.fault = classify.classify(full)


def one_line(r):
    tests = f" {r.passed}/{r.total}" if r.total is not None else ""
    why = f" [{r.fault}] {r.first_error or r.cause}" if not r.green else ""
    return f"compat: {r.project} {r.target} {r.status}{tests} {r.seconds:.0f}s {r.tag}{why}"


def _option_variable(name):
    return "CROSSWHEEL_" + name.upper().replace("-", "_")


def _option_value(value):
    """An option as its variable's text: lists space-separated, tables as assignments."""
    if isinstance(value, list):
        return " ".join(str(v) for v in value)
    if isinstance(value, dict):
        return " ".join(f'{k}="{v}"' for k, v in value.items())
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def cell_environment(options):
    """The process environment: the caller's, without its crosswheel or cibuildwheel
    settings (they would leak into every cell), plus the recipe as variables."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CROSSWHEEL_", "CIBW_"))}
    for name, value in options.items():
        env[_option_variable(name)] = _option_value(value)
    return env


KEPT_FAILED = re.compile(r"the wheel, its logs and the reason are kept in (\S+)")
SUMMARY_ROW = re.compile(
    r"^(?P<id>cp\S+)\s+(?P<result>ok|FAILED)\s+(?P<build>[\d.]+)s\s+(?P<repair>[\d.]+)s\s+(?P<test_s>[\d.]+)s\s+"
    r"(?P<test>.+?)\s+(?P<size>[\d.]+ MB|-)\s+(?P<wheel>\S+)$",
    re.MULTILINE,
)
# pytest's last line; `-q` prints it without the rules of `=` around it.
PYTEST_SUMMARY = re.compile(
    r"^(?:=+ )?(?P<counts>\d+ \w+(?:, \d+ \w+)*|no tests ran) in [\d.]+s(?: \([^)]*\))?(?: =+)?$",
    re.MULTILINE,
)
UNITTEST_RAN = re.compile(r"^Ran (\d+) tests? in ", re.MULTILINE)
UNITTEST_END = re.compile(r"^(OK|FAILED \((?P<counts>[^)]*)\))", re.MULTILINE)


ANSI_ESCAPE = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def test_counts(text):
    """(passed, total) from the last pytest or unittest summary in the output, or None.
    Projects that force colours (PY_COLORS, FORCE_COLOR) wrap the summary in escapes."""
    text = ANSI_ESCAPE.sub("", text)
    summaries = list(PYTEST_SUMMARY.finditer(text))
    if summaries:
        counts = dict.fromkeys(("passed", "failed", "errors", "error"), 0)
        for number, word in re.findall(r"(\d+) (\w+)", summaries[-1].group("counts")):
            if word in counts:
                counts[word] += int(number)
        failed = counts["failed"] + counts["errors"] + counts["error"]
        return counts["passed"], counts["passed"] + failed
    ran = list(UNITTEST_RAN.finditer(text))
    ends = list(UNITTEST_END.finditer(text))
    if ran and ends:
        total = int(ran[-1].group(1))
        bad = sum(int(n) for n in re.findall(r"(?:failures|errors)=(\d+)", ends[-1].group("counts") or ""))
        return total - bad, total
    return None


class Run:
    def __init__(self, crosswheel, cache, python, timeout, reference, target_python=None):
        self.crosswheel = crosswheel
        self.cache = cache
        self.python = python
        self.target_python = target_python
        self.timeout = timeout
        self.reference = reference
        stamp = time.strftime("%Y%m%d-%H%M%S")
        self.log_dir = cache / "logs" / stamp
        self.log_dir.mkdir(parents=True, exist_ok=True)
        # Per run, so two runs at once never share a tree.
        self.work_dir = cache / "work" / stamp

    def _unpack(self, sdist, name, target):
        work = self.work_dir / f"{name}-{target}"
        shutil.rmtree(work, ignore_errors=True)
        work.mkdir(parents=True)
        with tarfile.open(sdist) as archive:
            # The sdists are pinned by sha256; the "data" filter is also asked for where
            # this Python has it (Debian 12's 3.11.2 predates it).
            if hasattr(tarfile, "data_filter"):
                archive.extractall(work, filter="data")
            else:
                archive.extractall(work)
        (root,) = [p for p in work.iterdir() if p.is_dir()]
        return root

    def _execute(self, command, env, log_path):
        """Runs crosswheel in its own process group, stopping the whole group at the limit."""
        with open(log_path, "w") as log:
            log.write("$ " + " ".join(command) + "\n")
            log.flush()
            process = subprocess.Popen(
                command, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True
            )
            try:
                process.wait(timeout=self.timeout)
                return False
            except subprocess.TimeoutExpired:
                _stop(process)
                return True
            except BaseException:
                # Interrupted (Ctrl-C, or SIGTERM turned into SystemExit by the script):
                # the build runs in its own session, so it must be stopped explicitly.
                _stop(process)
                raise

    def cell(self, project, sdist, target, platform):
        result = Result(project.name, project.version, target, note=project.note_for(target))
        root = self._unpack(sdist, project.name, target)
        out_dir = root.parent / "wheelhouse"
        python = project.python or self.python
        identifier = f"cp{python.replace('.', '')}-{platform}"
        command = [
            "nice", "-n", "19", str(self.crosswheel), "build", str(root),
            "--only", identifier, "--output-dir", str(out_dir), "--jobs", "1",
        ]
        log_path = self.log_dir / f"{project.name}-{target}.log"
        result.log = str(log_path)
        started = time.monotonic()
        options = dict(project.options_for(target))
        if self.target_python and target.startswith("linux-"):
            options["target-python"] = str(self.target_python)
        timed_out = self._execute(command, cell_environment(options), log_path)
        result.seconds = time.monotonic() - started
        text = log_path.read_text(errors="replace")
        self._read_outcome(result, text, out_dir, timed_out, project.checks)
        # The unpacked sources and build trees go; the wheels stay next to the log's name.
        shutil.rmtree(root, ignore_errors=True)
        if self.reference:
            result.reference = _reference(project, target, python)
        return result

    def _read_outcome(self, result, text, out_dir, timed_out, checks=None):
        wheels = sorted(out_dir.glob("*.whl")) if out_dir.is_dir() else []
        # A wheel whose tests failed is kept in the run's log folder, named on crosswheel's
        # error line.
        kept = KEPT_FAILED.search(text)
        failed_wheels = sorted(Path(kept.group(1)).glob("*.whl")) if kept else []
        row = SUMMARY_ROW.search(text)
        built_wheel = (wheels or failed_wheels or [None])[0]
        result.built = built_wheel is not None
        if built_wheel:
            result.wheel = built_wheel.name
            result.tag = "-".join(built_wheel.name[:-4].split("-")[-3:])
            result.size = built_wheel.stat().st_size
        result.test_cell = row.group("test").strip() if row else ""
        if row:
            result.stage_seconds = tuple(float(row.group(g)) for g in ("build", "repair", "test_s"))
        counts = test_counts(text)
        if counts is None and checks and row and row.group("result") == "ok" and result.test_cell.startswith("passed"):
            # A test command of plain checks prints no count: its success is all of them.
            counts = (checks, checks)
        if counts:
            result.passed, result.total = counts
        static = "static check" in result.test_cell
        tests_ok = static or (counts is not None and counts[0] == counts[1] and counts[1] > 0)
        if timed_out:
            result.status = "timeout"
        elif row and row.group("result") == "ok" and wheels and tests_ok:
            result.status, result.green = "green", True
        elif row and row.group("result") == "ok" and wheels and result.test_cell == "not run":
            result.status = "tests skipped"
        elif row and row.group("result") == "ok" and wheels:
            result.status = "not tested" if "NOT TESTED" in result.test_cell else "no test count"
        elif result.built:
            result.status = "tests failed"
        else:
            result.status = "build failed"
        if not result.green:
            self._explain(result, text, timed_out)

    def _explain(self, result, text, timed_out):
        full = text + _build_log(text)
        summary_error = re.search(r"^\s+first error: (.*)$", text, re.MULTILINE)
        result.first_error = (
            summary_error.group(1).strip() if summary_error else _first_error(text, result.built)
        )
        if result.status == "tests skipped":
            result.cause, result.fault = "the recipe skips the tests", "recipe"
            return
        if timed_out:
            result.cause = f"stopped at the per-cell limit of {self.timeout}s"
            result.fault = "unclassified"
            return
        result.cause, result.fault = classify.classify(full)


def _first_error(text, built):
    """The backend's own first error line when its log says one, else crosswheel's."""
    return classify.first_error_line(_build_log(text), built) or classify.first_error_line(text, built)


def _build_log(text):
    """The backend's log crosswheel names on its `full log:` line, when it still exists."""
    match = re.search(r"full log: (\S+)", text)
    if not match:
        return ""
    try:
        return "\n" + Path(match.group(1)).read_text(errors="replace")
    except OSError:
        return ""


def _reference(project, target, python):
    try:
        return index.reference_wheel(project.name, project.version, target, python)
    except OSError:
        return None


def _stop(process):
    os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
