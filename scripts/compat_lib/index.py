"""The package index pip is configured with, read through its JSON Simple API (PEP 691/700).

Downloading an sdist with `pip download` would make pip prepare its metadata, which for
meson-python projects means configuring the project for the host (and fails when a
dependency such as BLAS is missing there). The Simple API lists each file with its
sha256 and size, which is all the corpus needs: the pinned sdist, and the sizes of the
index's own wheels for comparison. The index is the one pip uses (PIP_INDEX_URL, pip's
configuration, or pip's default), so mirrors and proxies keep working.
"""

import json
import os
import subprocess
import urllib.request

ACCEPT = "application/vnd.pypi.simple.v1+json"
_listings = {}


def index_url():
    if os.environ.get("PIP_INDEX_URL"):
        return os.environ["PIP_INDEX_URL"]
    python = os.environ.get("PYTHON", "python3")
    configured = subprocess.run(
        [python, "-m", "pip", "config", "get", "global.index-url"], capture_output=True, text=True
    )
    if configured.returncode == 0 and configured.stdout.strip():
        return configured.stdout.strip()
    default = subprocess.run(
        [python, "-c", "from pip._internal.models.index import PyPI; print(PyPI.simple_url)"],
        capture_output=True,
        text=True,
        check=True,
    )
    return default.stdout.strip()


def _normalise(name):
    return name.lower().replace("_", "-").replace(".", "-")


def files(name):
    """Every file the index has for a project: dicts with filename, url, hashes, size."""
    key = _normalise(name)
    if key not in _listings:
        url = f"{index_url().rstrip('/')}/{key}/"
        request = urllib.request.Request(url, headers={"Accept": ACCEPT})
        with urllib.request.urlopen(request, timeout=120) as response:
            _listings[key] = json.load(response)["files"]
    return _listings[key]


def download(url, dest):
    with urllib.request.urlopen(url, timeout=300) as response, open(dest, "wb") as out:
        while block := response.read(1 << 20):
            out.write(block)


# Platform tags of the index's wheels that run on each target, best first.
def _platform_rank(target, platform_tag):
    tags = platform_tag.split(".")
    if target == "macos-arm64":
        if any(t.startswith("macosx_") and t.endswith("_arm64") for t in tags):
            return 0
        return 1 if any(t.endswith("_universal2") for t in tags) else None
    arch = target.split("-")[1]
    return 0 if any(t.startswith("manylinux") and t.endswith(f"_{arch}") for t in tags) else None


def _abi_rank(python_tag, abi_tag, cp):
    if python_tag == cp and abi_tag == cp:
        return 0
    if abi_tag == "abi3":
        return 1
    return 2 if abi_tag == "none" else None


def reference_wheel(name, version, target, python):
    """(file name, size) of the index's wheel of that version for the target, or None."""
    cp = "cp" + python.replace(".", "")
    best = None
    for entry in files(name):
        filename = entry["filename"]
        if not filename.endswith(".whl"):
            continue
        parts = filename[:-4].split("-")
        if len(parts) < 5 or parts[1] != version:
            continue
        python_tag, abi_tag, platform_tag = parts[-3:]
        abi = _abi_rank(python_tag, abi_tag, cp)
        platform = _platform_rank(target, platform_tag)
        if abi is None or platform is None or entry.get("size") is None:
            continue
        if abi == 1 and int(python_tag[3:] or 0) > int(cp[3:]):
            continue  # an abi3 wheel for a newer CPython does not serve this one
        rank = (abi, platform)
        if best is None or rank < best[0]:
            best = (rank, filename, entry["size"])
    return None if best is None else (best[1], best[2])
