"""Write the `crosswheel` wheel: a native executable plus a tiny launcher package.

The layout is the one ruff and uv publish: pip installs
`<name>-<version>.data/scripts/<name>` into the environment's scripts folder with its
executable bit, and `<name>/__main__.py` finds it there for `python -m <name>`.

Standard library only, so a fresh checkout needs nothing but Python to package a build.
Python rather than a Rust example using `crosswheel::wheel::write_wheel`: the layout needs
no wheel logic beyond a zip and a RECORD, a Rust example would be one more compiled target
in the crate, and the final bytes come from crosswheel's writer anyway (below).
The output is deterministic: sorted entries, dist-info last, RECORD last, one timestamp,
fixed permissions. `scripts/release-wheels` then hands this wheel to `crosswheel repair`,
which computes the real platform tag and rewrites it with crosswheel's own writer.
"""

from __future__ import annotations

import base64
import csv
import hashlib
import io
import os
import re
import time
import tomllib
import zipfile
from dataclasses import dataclass
from pathlib import Path

PACKAGING_DIR = Path(__file__).resolve().parent
LAUNCHER_DIR = PACKAGING_DIR / "python"
METADATA_FILE = PACKAGING_DIR / "wheel.toml"

# zip cannot store dates before 1980.
ZIP_EPOCH = 315532800
# A single python tag and no ABI: the launcher is plain Python 3 and the executable does
# not load into the interpreter.
PYTHON_TAG = "py3"
ABI_TAG = "none"
GENERATOR = "crosswheel scripts/release-wheels"


class PackagingError(Exception):
    """A packaging input is missing or invalid; the message says which and how to fix it."""


@dataclass(frozen=True)
class ProjectMetadata:
    name: str
    version: str
    summary: str
    requires_python: str
    license_expression: str | None
    keywords: tuple[str, ...]
    classifiers: tuple[str, ...]
    readme: str

    def core_metadata(self) -> str:
        """METADATA (core metadata 2.4 when a license expression is set, else 2.1)."""
        version = "2.4" if self.license_expression else "2.1"
        lines = [
            f"Metadata-Version: {version}",
            f"Name: {self.name}",
            f"Version: {self.version}",
            f"Summary: {self.summary}",
        ]
        if self.keywords:
            lines.append(f"Keywords: {','.join(self.keywords)}")
        if self.license_expression:
            lines.append(f"License-Expression: {self.license_expression}")
        lines += [f"Classifier: {classifier}" for classifier in self.classifiers]
        lines += [
            f"Requires-Python: {self.requires_python}",
            "Description-Content-Type: text/markdown; charset=UTF-8",
        ]
        return "\n".join(lines) + "\n\n" + self.readme


def read_project_metadata(repo_root: Path) -> ProjectMetadata:
    """Version and license from Cargo.toml, everything else from packaging/wheel.toml."""
    cargo_toml = repo_root / "Cargo.toml"
    package = _load_toml(cargo_toml).get("package", {})
    version = package.get("version")
    if not isinstance(version, str) or not version:
        raise PackagingError(f"{cargo_toml}: [package] has no `version` string")
    version = python_version(version, cargo_toml)

    table = _load_toml(METADATA_FILE).get("metadata")
    if not isinstance(table, dict):
        raise PackagingError(f"{METADATA_FILE}: no [metadata] table")

    def text(key: str) -> str:
        value = table.get(key)
        if not isinstance(value, str) or not value.strip():
            raise PackagingError(f"{METADATA_FILE}: [metadata] `{key}` must be a non-empty string")
        if "\n" in value:
            raise PackagingError(f"{METADATA_FILE}: [metadata] `{key}` must be one line")
        return value

    def strings(key: str) -> tuple[str, ...]:
        value = table.get(key, [])
        if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
            raise PackagingError(f"{METADATA_FILE}: [metadata] `{key}` must be an array of strings")
        return tuple(value)

    readme_path = repo_root / text("readme")
    try:
        readme = readme_path.read_text(encoding="utf-8")
    except OSError as error:
        raise PackagingError(f"cannot read the long description {readme_path}: {error.strerror}") from None

    license_expression = package.get("license")
    if license_expression is not None and not isinstance(license_expression, str):
        raise PackagingError(f"{cargo_toml}: [package] `license` must be an SPDX expression string")

    return ProjectMetadata(
        name=text("name"),
        version=version,
        summary=text("summary"),
        requires_python=text("requires-python"),
        license_expression=license_expression or None,
        keywords=strings("keywords"),
        classifiers=strings("classifiers"),
        readme=readme,
    )


def write_binary_wheel(
    out_dir: Path,
    metadata: ProjectMetadata,
    platform_tag: str,
    executable: Path,
    epoch: int,
) -> Path:
    """Write `<name>-<version>-py3-none-<platform_tag>.whl` into `out_dir` and return it."""
    if not re.fullmatch(r"[a-z0-9_]+", platform_tag):
        raise PackagingError(f"platform tag `{platform_tag}` is not a wheel platform tag")
    try:
        binary = executable.read_bytes()
    except OSError as error:
        raise PackagingError(f"cannot read the executable {executable}: {error.strerror}") from None

    distribution = re.sub(r"[-_.]+", "_", metadata.name).lower()
    tag = f"{PYTHON_TAG}-{ABI_TAG}-{platform_tag}"
    dist_info = f"{distribution}-{metadata.version}.dist-info"
    data_dir = f"{distribution}-{metadata.version}.data"

    files: dict[str, tuple[bytes, int]] = {
        f"{data_dir}/scripts/{metadata.name}": (binary, 0o755),
    }
    for module in sorted(LAUNCHER_DIR.glob(f"{distribution}/*.py")):
        files[f"{distribution}/{module.name}"] = (module.read_bytes(), 0o644)
    if f"{distribution}/__main__.py" not in files:
        raise PackagingError(f"{LAUNCHER_DIR / distribution}: the launcher package has no __main__.py")

    wheel_file = (
        "Wheel-Version: 1.0\n"
        f"Generator: {GENERATOR}\n"
        "Root-Is-Purelib: false\n"
        f"Tag: {tag}\n"
    )
    dist_info_files = {
        f"{dist_info}/METADATA": (metadata.core_metadata().encode(), 0o644),
        f"{dist_info}/WHEEL": (wheel_file.encode(), 0o644),
    }

    # Payload sorted, then dist-info sorted, RECORD last: what installers expect to
    # stream and what crosswheel's own writer produces.
    ordered = sorted(files.items()) + sorted(dist_info_files.items())
    record = _record(ordered, f"{dist_info}/RECORD")
    ordered.append((f"{dist_info}/RECORD", (record, 0o644)))

    out_dir.mkdir(parents=True, exist_ok=True)
    wheel_path = out_dir / f"{distribution}-{metadata.version}-{tag}.whl"
    partial = wheel_path.with_name(wheel_path.name + ".part")
    timestamp = _zip_timestamp(epoch)
    try:
        with zipfile.ZipFile(partial, "w") as archive:
            for name, (data, mode) in ordered:
                info = zipfile.ZipInfo(name, date_time=timestamp)
                info.create_system = 3  # unix, so installers honour the permission bits
                info.external_attr = (0o100000 | mode) << 16
                info.compress_type = zipfile.ZIP_DEFLATED
                archive.writestr(info, data, compresslevel=6)
        os.replace(partial, wheel_path)
    finally:
        partial.unlink(missing_ok=True)
    return wheel_path


def _record(entries: list[tuple[str, tuple[bytes, int]]], record_name: str) -> bytes:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    for name, (data, _mode) in entries:
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        writer.writerow([name, f"sha256={digest}", len(data)])
    writer.writerow([record_name, "", ""])
    return out.getvalue().encode()


def _zip_timestamp(epoch: int) -> tuple[int, int, int, int, int, int]:
    moment = time.gmtime(max(epoch, ZIP_EPOCH))
    return moment[:6]


def _load_toml(path: Path) -> dict:
    try:
        with path.open("rb") as file:
            return tomllib.load(file)
    except OSError as error:
        raise PackagingError(f"cannot read {path}: {error.strerror}") from None
    except tomllib.TOMLDecodeError as error:
        raise PackagingError(f"{path}: invalid TOML: {error}") from None


def python_version(cargo_version: str, source: Path) -> str:
    """The PEP 440 spelling of a Cargo (semver) version: `1.2.0-rc.1` is `1.2.0rc1`."""
    match = re.fullmatch(r"(\d+\.\d+\.\d+)(?:-(alpha|beta|rc)\.(\d+))?", cargo_version)
    if not match:
        raise PackagingError(
            f"{source}: version `{cargo_version}` has no Python equivalent; "
            "use MAJOR.MINOR.PATCH, optionally with -alpha.N, -beta.N or -rc.N"
        )
    release, stage, number = match.groups()
    if stage is None:
        return release
    return f"{release}{ {'alpha': 'a', 'beta': 'b', 'rc': 'rc'}[stage] }{number}"
