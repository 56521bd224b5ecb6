"""pytest plugin for scripts/conformance: cibuildwheel's integration tests, crosswheel's targets.

Loaded with `-p crosswheel_conformance` into a run of cibuildwheel 4.3.5's `test/`. It
changes only what names the wheels a run should give, never what a test asserts:

- `utils.SINGLE_PYTHON_VERSION` is (3, 11): crosswheel's conformance run builds cp311
  (the "single python" tests and the stand-in `cibuildwheel` narrow to it alike).
- `utils.expected_wheels` asks cibuildwheel's own function once per architecture of the
  conformance run (Linux: aarch64 and ppc64le; macOS: arm64) instead of for the machine's
  architecture, with crosswheel's manylinux tag (`manylinux_2_17_<arch>.manylinux2014_<arch>`:
  zig links against glibc 2.17, where cibuildwheel's default image is manylinux_2_28) and
  cibuildwheel's own musllinux default (`musllinux_1_2_<arch>`, the tag crosswheel's
  musllinux targets are repaired for): on Linux the stand-in `cibuildwheel` builds each
  architecture's manylinux and musllinux target, as cibuildwheel's default `archs` does
  (cibuildwheel_main.py says when). A call that names no Python and is not
  "single python" keeps cp311's wheels only, as the stand-in narrows the run. Wheels of
  interpreters crosswheel does not build (CPython before 3.10, PyPy, GraalPy: the
  README's supported versions) are not expected; a selection naming them builds the rest.
- Tests listed in the not-applicable table (CROSSWHEEL_CONFORMANCE_NOT_APPLICABLE) are
  skipped with `not applicable: <reason>`; the report counts them apart from failures.
- With CROSSWHEEL_CONFORMANCE_LOCAL_HTTPS (a directory; scripts/conformance
  --local-https-for-ssl-test), test_ssl's call runs with `https://google.com/generate_204`
  answered on this machine (conformance_lib/local_https.py) and SSL_CERT_FILE naming the
  throwaway CA; the test's code is unchanged. Its result carries a note saying so, and how
  many requests the local server answered, for the report.
"""

import fnmatch
import os
import tomllib
from contextlib import contextmanager

import pytest

LINUX_ARCHS = ["aarch64", "ppc64le"]
MACOS_ARCHS = ["arm64"]
CROSSWHEEL_MANYLINUX = ["manylinux_2_17", "manylinux2014"]
NARROWED_PYTHON = "cp311"
# Python tags of interpreters crosswheel does not build.
NOT_BUILT_PYTHONS = ("cp36", "cp37", "cp38", "cp39", "pp", "graalpy")


def _patch_utils():
    from test import utils

    original = utils.expected_wheels
    utils.SINGLE_PYTHON_VERSION = (3, 11)

    def expected_wheels(package_name, package_version, **kwargs):
        platform = kwargs.pop("platform", None) or utils.get_platform()
        arch = kwargs.pop("machine_arch", None)
        archs = [arch] if arch else {"linux": LINUX_ARCHS, "macos": MACOS_ARCHS}.get(platform, [None])
        if kwargs.get("manylinux_versions") is None:
            kwargs["manylinux_versions"] = CROSSWHEEL_MANYLINUX
        kwargs.pop("single_arch", None)
        kwargs.pop("full_auto", None)
        narrowed = kwargs.get("python_abi_tags") is None and not kwargs.get("single_python")
        wheels = [
            wheel
            for one in archs
            for wheel in original(
                package_name, package_version, platform=platform, machine_arch=one, single_arch=True, **kwargs
            )
        ]
        if narrowed:
            wheels = [w for w in wheels if w.split("-")[-3] == NARROWED_PYTHON]
        return [w for w in wheels if not w.split("-")[-3].startswith(NOT_BUILT_PYTHONS)]

    utils.expected_wheels = expected_wheels


_patched = False


def _ensure_patched():
    global _patched
    if not _patched:
        _patch_utils()
        _patched = True


def pytest_collectstart(collector):
    # Before the first test module is imported: some build their projects at import time
    # from `utils.SINGLE_PYTHON_VERSION` (test_build_skip's setup.py asserts the version),
    # which must already be cp311's then.
    if isinstance(collector, pytest.Module):
        _ensure_patched()


def _not_applicable():
    path = os.environ.get("CROSSWHEEL_CONFORMANCE_NOT_APPLICABLE")
    if not path:
        return []
    with open(path, "rb") as file:
        table = tomllib.load(file)
    platform = os.environ.get("CIBW_PLATFORM", "linux")
    rows = []
    for row in table["test"]:
        if platform in row.get("platforms", ["linux", "macos"]):
            rows.append((row["id"], row["reason"]))
    return rows


def pytest_collection_modifyitems(config, items):
    _ensure_patched()
    rows = _not_applicable()
    for item in items:
        for pattern, reason in rows:
            # `[` of a parametrized id is literal here, not an fnmatch character class.
            if fnmatch.fnmatchcase(item.nodeid, pattern.replace("[", "[[]")):
                item.add_marker(pytest.mark.skip(reason=f"not applicable: {reason}"))
                break


LOCAL_HTTPS_TESTS = "test/test_ssl.py::"


@contextmanager
def _local_https(item):
    import local_https

    with local_https.google_com_on_this_machine(os.environ["CROSSWHEEL_CONFORMANCE_LOCAL_HTTPS"]) as (ca, server):
        # cibuildwheel_run hands os.environ to the build tool; a test's own `env=` would not
        # get it, and test_ssl passes none.
        previous = os.environ.get("SSL_CERT_FILE")
        os.environ["SSL_CERT_FILE"] = str(ca)
        try:
            yield
        finally:
            if previous is None:
                del os.environ["SSL_CERT_FILE"]
            else:
                os.environ["SSL_CERT_FILE"] = previous
            note = (f"ran offline: {local_https.HOST} was a local HTTPS server (127.0.0.1:443, certificate of a "
                    f"throwaway CA given to the build as SSL_CERT_FILE, /etc/hosts entry) that answered "
                    f"{server.requests.count('/generate_204')} request(s) for /generate_204")
            if server.handshake_errors:
                errors = server.handshake_errors
                note += f"; {len(errors)} failed handshake(s), the first: {errors[0]}"
            # junit_logging writes user properties into the XML; results.read_junit reads it.
            item.user_properties.append(("crosswheel_note", note))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item):
    # Only the call phase of test_ssl: no other test, and none of its own setup, sees the
    # local server, the /etc/hosts entry or SSL_CERT_FILE.
    if not (os.environ.get("CROSSWHEEL_CONFORMANCE_LOCAL_HTTPS") and item.nodeid.startswith(LOCAL_HTTPS_TESTS)):
        return (yield)
    with _local_https(item):
        return (yield)
