"""cibuildwheel's command line, answered by crosswheel (installed by scripts/conformance as
`cibuildwheel/__main__.py` in the run's copy of cibuildwheel's sdist).

cibuildwheel's integration tests start `python -m cibuildwheel ...` (utils.cibuildwheel_run,
test_from_sdist's own runner); this hands the same arguments to `crosswheel build`. Only
the flags crosswheel spells differently are translated: `--platform P` is CIBW_PLATFORM
(crosswheel reads it), `--enable G` is CIBW_ENABLE. A run that selects no build itself is
narrowed to cp311 (the conformance run's one CPython; utils.expected_wheels is narrowed
alike by the pytest plugin), so a test that builds "everything" builds every target once.
"""

import os
import sys

CROSSWHEEL = os.environ["CROSSWHEEL_CONFORMANCE_BINARY"]
NARROWED_BUILD = "cp311-*"


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


def main():
    env = dict(os.environ)
    args = translate(sys.argv[1:], env)
    if not env.get("CIBW_BUILD") and not env.get("CROSSWHEEL_BUILD"):
        env["CIBW_BUILD"] = NARROWED_BUILD
    env.setdefault("CROSSWHEEL_JOBS", "1")
    sys.stdout.flush()
    os.execve(CROSSWHEEL, [CROSSWHEEL, "build", *args], env)


if __name__ == "__main__":
    main()
