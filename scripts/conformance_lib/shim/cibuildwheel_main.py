"""cibuildwheel's command line, answered by crosswheel (installed by scripts/conformance as
`cibuildwheel/__main__.py` in the run's copy of cibuildwheel's sdist).

cibuildwheel's integration tests start `python -m cibuildwheel ...` (utils.cibuildwheel_run,
test_from_sdist's own runner); this hands the same arguments to `crosswheel build`. Only
the flags crosswheel spells differently are translated: `--platform P` is CIBW_PLATFORM
(crosswheel reads it), `--enable G` is CIBW_ENABLE. A run that selects no build itself is
narrowed to cp311 (the conformance run's one CPython; utils.expected_wheels is narrowed
alike by the pytest plugin), so a test that builds "everything" builds every target once.

A Linux run that names no architectures (no CIBW_ARCHS/CIBW_ARCHS_LINUX, no crosswheel
spelling of them, no `--archs`, no `archs` in the project's pyproject.toml) gets
CIBW_ARCHS_LINUX="aarch64 ppc64le": the conformance run's architectures, in cibuildwheel's
meaning, each its manylinux and its musllinux build. That is what cibuildwheel's own default
(`auto`) is on the x86_64 runner its suite expects, one manylinux and one musllinux build
per architecture (utils.expected_wheels' default `musllinux_versions`), moved to the two
architectures crosswheel is for. crosswheel's own default (manylinux aarch64 and ppc64le, no
musllinux: docs/configuration.md) would build no musllinux wheel the suite expects.
"""

import os
import sys
import tomllib

CROSSWHEEL = os.environ["CROSSWHEEL_CONFORMANCE_BINARY"]
NARROWED_BUILD = "cp311-*"
LINUX_ARCHS = "aarch64 ppc64le"
ARCHS_VARIABLES = ("CIBW_ARCHS", "CIBW_ARCHS_LINUX", "CROSSWHEEL_ARCHS", "CROSSWHEEL_ARCHS_LINUX",
                   "CROSSWHEEL_TARGETS", "CROSSWHEEL_TARGETS_LINUX")


def translate(argv, env):
    args = []
    it = iter(argv)
    for arg in it:
        flag, eq, value = arg.partition("=")
        if flag in ("--platform", "--enable"):
            value = value if eq else next(it, "")
            env["CIBW_PLATFORM" if flag == "--platform" else "CIBW_ENABLE"] = value
        elif flag in ("--debug-traceback", "--clean-cache"):
            continue  # nothing crosswheel prints or caches differently for them
        else:
            args.append(arg)
    return args


def _names_archs(args, env):
    if any(env.get(name) for name in ARCHS_VARIABLES):
        return True
    if any(arg.partition("=")[0] == "--archs" for arg in args):
        return True
    # The package folder (the one positional argument the suite passes) and the working
    # folder: a `tool.cibuildwheel`/`tool.crosswheel` table there that sets `archs`.
    positional = [a for a in args if not a.startswith("-")]
    for folder in {".", *positional}:
        pyproject = os.path.join(folder, "pyproject.toml")
        if not os.path.isfile(pyproject):
            continue
        with open(pyproject, "rb") as file:
            tool = tomllib.load(file).get("tool", {})
        for table in (tool.get("cibuildwheel", {}), tool.get("crosswheel", {})):
            if "archs" in table or "archs" in table.get("linux", {}):
                return True
    return False


def main():
    env = dict(os.environ)
    args = translate(sys.argv[1:], env)
    if not env.get("CIBW_BUILD") and not env.get("CROSSWHEEL_BUILD"):
        env["CIBW_BUILD"] = NARROWED_BUILD
    if env.get("CIBW_PLATFORM", "linux") == "linux" and not _names_archs(args, env):
        env["CIBW_ARCHS_LINUX"] = LINUX_ARCHS
    env.setdefault("CROSSWHEEL_JOBS", "1")
    sys.stdout.flush()
    os.execve(CROSSWHEEL, [CROSSWHEEL, "build", *args], env)


if __name__ == "__main__":
    main()
