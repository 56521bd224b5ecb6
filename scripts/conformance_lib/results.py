"""scripts/conformance's results: pytest's JUnit XML read, kept per test, written as CONFORMANCE.md."""

import json
import os
import re
import tempfile
import time
import xml.etree.ElementTree as ET
from pathlib import Path

PLATFORMS = {"linux": "Linux (aarch64, ppc64le: manylinux and musllinux; tests under qemu)", "macos": "macOS arm64 (static check)"}
OUTCOMES = ("passed", "failed", "not applicable", "not run")
# Lines of crosswheel's output that say why a build stopped, best first.
CAUSES = [re.compile(p) for p in (r"^error: .+", r"^\S+ +failed .+", r"^E +\w*(Error|Exception)\b.+", r"\w+Error: .+")]


def _node_id(case):
    classname, name = case.get("classname", ""), case.get("name", "")
    if not classname:  # a module skipped as a whole: its name is the dotted module
        return name.replace(".", "/") + ".py"
    return f"{classname.replace('.', '/')}.py::{name}"


def _first_cause(case, element):
    text = "\n".join(filter(None, [case.findtext("system-out"), case.findtext("system-err")]))
    for pattern in CAUSES:
        for line in text.splitlines():
            if pattern.search(line.strip()):
                return line.strip()[:300]
    message = (element.get("message") or element.text or "").strip().splitlines()
    return (message[0] if message else "no message")[:300]


def read_junit(path):
    """{node id: {outcome, seconds, detail}} of one pytest run."""
    found = {}
    for case in ET.parse(path).getroot().iter("testcase"):
        seconds = round(float(case.get("time", "0")), 1)
        skipped, failure = case.find("skipped"), case.find("failure")
        if failure is None:
            failure = case.find("error")
        # A test the plugin ran differently from cibuildwheel's CI (test_ssl offline) says how.
        note = next((p.get("value", "") for p in case.iter("property") if p.get("name") == "crosswheel_note"), "")
        if failure is not None:
            outcome, detail = "failed", _first_cause(case, failure) + (f" ({note})" if note else "")
        elif skipped is not None:
            reason = skipped.get("message", "").removeprefix("not applicable: ")
            outcome, detail = "not applicable", reason
        else:
            outcome, detail = "passed", note
        found[_node_id(case)] = {"outcome": outcome, "seconds": seconds, "detail": detail}
    return found


def results_store(cache, sdist, platform):
    """One store per cibuildwheel release: a run of another release's suite never mixes in."""
    return cache / f"results-{sdist.version}-{platform}.json"


def merge(path, ran, command):
    """Keeps every test's latest result; writes the file atomically."""
    kept = json.loads(path.read_text()) if path.exists() else {"tests": {}}
    when = time.strftime("%Y-%m-%d", time.gmtime())
    for node, result in ran.items():
        kept["tests"][node] = {**result, "command": command, "date": when}
    _write_atomically(path, json.dumps(kept, indent=1, sort_keys=True))


def _write_atomically(path, text):
    with tempfile.NamedTemporaryFile("w", dir=path.parent, delete=False, prefix=f".{path.name}.") as out:
        out.write(text)
    os.replace(out.name, path)


def _cell(text):
    return text.replace("|", "\\|").replace("\n", " ")


def _section(platform, tests):
    counts = {o: sum(1 for t in tests.values() if t["outcome"] == o) for o in OUTCOMES}
    lines = [f"## {PLATFORMS[platform]}", ""]
    lines.append(", ".join(f"{counts[o]} {o}" for o in OUTCOMES if counts[o] or o != "not run") + ".")
    commands = sorted({t["command"] for t in tests.values()})
    lines += ["", "| test | result | seconds | run | reason or first error |", "|---|---|---|---|---|"]
    for node in sorted(tests):
        t = tests[node]
        run = commands.index(t["command"]) + 1
        lines.append(f"| `{_cell(node)}` | {t['outcome']} | {t['seconds']} | {run} | {_cell(t['detail'])} |")
    lines += ["", "Runs (each test's latest result is shown):", ""]
    for n, command in enumerate(commands, 1):
        # `... # note` in a stored command: which crosswheel ran, said beside the command.
        command, _, note = command.partition(" # ")
        lines.append(f"{n}. `{command}`" + (f" ({note})" if note else ""))
    lines.append("")
    return lines, counts


def write_report(path, cache, sdist):
    lines = [
        "# Conformance with cibuildwheel's integration tests",
        "",
        f"cibuildwheel {sdist.version}'s own integration suite (`test/` of its sdist, sha256",
        f"`{sdist.sha256}`), run by `scripts/conformance` with crosswheel standing in for",
        "cibuildwheel: `python -m cibuildwheel ...` runs `crosswheel build ...`, and",
        "`utils.expected_wheels` names crosswheel's wheels (cp311; Linux aarch64 and ppc64le,",
        "each `manylinux_2_17_<arch>.manylinux2014_<arch>` and `musllinux_1_2_<arch>`, as",
        "cibuildwheel's default `archs` builds both; macOS arm64). What each",
        "shim changes: `scripts/conformance_lib/shim/`. Why a test is not applicable:",
        "`tests/conformance/not-applicable.toml`, or cibuildwheel's own skip reason.",
        "The tests run in a CI runner's environment: uv in their venv (so the `build[uv]` and",
        "`uv` frontend variants run, and cibuildwheel skips plain `build` where uv is present),",
        "and no PIP_CERT.",
        "",
        "A run with `--local-https-for-ssl-test` (on a machine without internet) answers",
        "test_ssl's `https://google.com/generate_204` from a local HTTPS server with a throwaway",
        "CA, given to the build as SSL_CERT_FILE, and an /etc/hosts entry, for that test only",
        "(`scripts/conformance --help`); its row says so and how many requests it answered.",
        "",
    ]
    for platform in PLATFORMS:
        store = results_store(cache, sdist, platform)
        if store.exists():
            section, _ = _section(platform, json.loads(store.read_text())["tests"])
            lines += section
    _write_atomically(Path(path), "\n".join(lines))
