"""The corpus data file (tests/compat/projects.toml) and the pinned sdists it names."""

import hashlib
import os
import sys
import tempfile
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

import index

PROJECT_KEYS = {
    "name", "version", "sha256", "covers", "why", "test-requires", "test-command",
    "options", "target", "python", "checks",
}
TARGET_KEYS = {"options", "note", "fault"}


class CorpusError(Exception):
    pass


@dataclass
class Project:
    name: str
    version: str
    sha256: str
    covers: list
    why: str
    test_requires: list
    test_command: str
    options: dict
    # target id -> {"options": {...}, "note": "..."}
    per_target: dict = field(default_factory=dict)
    # The CPython the project's cells build for when it needs another than the run's
    # (scipy 1.18 requires 3.12 or newer); None for the run's --python.
    python: str = None
    # How many checks a test command that is not a test runner makes (psycopg2's `python -c`
    # lines, which print no count): its success counts as that many passed.
    checks: int = None

    def options_for(self, target):
        """The recipe for one target: test settings, shared options, then the target's own."""
        options = {"test-requires": self.test_requires, "test-command": self.test_command}
        options.update(self.options)
        options.update(self.per_target.get(target, {}).get("options", {}))
        return options

    def note_for(self, target):
        return self.per_target.get(target, {}).get("note", "")

    def fault_for(self, target):
        """Whose fault the recipe's note says it is when it skips something on that target."""
        return self.per_target.get(target, {}).get("fault", "recipe")


def _project(path, index, table):
    where = f"{path}: project #{index + 1} ({table.get('name', 'no name')})"
    unknown = set(table) - PROJECT_KEYS
    if unknown:
        raise CorpusError(f"{where}: unknown keys {', '.join(sorted(unknown))}")
    for key in ("name", "version", "sha256", "why", "test-command"):
        if not isinstance(table.get(key), str) or not table[key]:
            raise CorpusError(f"{where}: `{key}` must be a non-empty string")
    sha = table["sha256"]
    if len(sha) != 64 or any(c not in "0123456789abcdef" for c in sha):
        raise CorpusError(f"{where}: `sha256` must be 64 lowercase hex digits")
    checks = table.get("checks")
    if checks is not None and (not isinstance(checks, int) or isinstance(checks, bool) or checks < 1):
        raise CorpusError(f"{where}: `checks` must be a positive integer")
    for target, extra in table.get("target", {}).items():
        if set(extra) - TARGET_KEYS:
            raise CorpusError(f"{where}: [target.{target}] may hold only {', '.join(sorted(TARGET_KEYS))}")
    return Project(
        name=table["name"],
        version=table["version"],
        sha256=sha,
        covers=list(table.get("covers", [])),
        why=table["why"],
        test_requires=list(table.get("test-requires", [])),
        test_command=table["test-command"],
        options=dict(table.get("options", {})),
        per_target=dict(table.get("target", {})),
        python=table.get("python"),
        checks=checks,
    )


def load(path):
    try:
        data = tomllib.loads(path.read_text())
    except (OSError, tomllib.TOMLDecodeError) as err:
        raise CorpusError(f"cannot read {path}: {err}") from err
    projects = [_project(path, i, t) for i, t in enumerate(data.get("project", []))]
    if not projects:
        raise CorpusError(f"{path} lists no [[project]]")
    names = [p.name for p in projects]
    duplicates = {n for n in names if names.count(n) > 1}
    if duplicates:
        raise CorpusError(f"{path}: {', '.join(sorted(duplicates))} listed twice")
    return projects


def sha256_of(path):
    digest = hashlib.sha256()
    with open(path, "rb") as file:
        for block in iter(lambda: file.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def fetch_sdist(project, cache):
    """The project's sdist from the cache, downloaded from the index first if it is not there.

    The file is the one whose sha256 is pinned; it is moved into the cache only after
    its bytes matched the pin, so the cache never holds a wrong file under that name."""
    sdists = cache / "sdists"
    sdists.mkdir(parents=True, exist_ok=True)
    for cached in sdists.glob(f"*-{project.version}.tar.gz"):
        if _same_project(cached.name, project) and sha256_of(cached) == project.sha256:
            return cached
    print(f"compat: downloading the {project.name} {project.version} sdist", file=sys.stderr)
    try:
        listed = [f for f in index.files(project.name) if f["hashes"].get("sha256") == project.sha256]
    except OSError as err:
        raise CorpusError(f"cannot list {project.name} on the package index: {err}") from err
    if not listed or not listed[0]["filename"].endswith(".tar.gz"):
        raise CorpusError(
            f"the package index has no {project.name} sdist with sha256 {project.sha256}: "
            "check tests/compat/projects.toml"
        )
    final = sdists / listed[0]["filename"]
    with tempfile.TemporaryDirectory(dir=sdists, prefix=".download-") as staging:
        partial = Path(staging) / listed[0]["filename"]
        try:
            index.download(listed[0]["url"], partial)
        except OSError as err:
            raise CorpusError(f"cannot download {final.name}: {err}") from err
        got = sha256_of(partial)
        if got != project.sha256:
            raise CorpusError(f"{final.name} downloaded with sha256 {got}, not the pinned {project.sha256}")
        os.replace(partial, final)
    return final


def _same_project(file_name, project):
    stem = file_name[: -len(f"-{project.version}.tar.gz")]
    return _normalise(stem) == _normalise(project.name)


def _normalise(name):
    return name.lower().replace("_", "-").replace(".", "-")
