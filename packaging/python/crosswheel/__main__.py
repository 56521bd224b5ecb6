"""`python -m crosswheel ARGS`: run the installed crosswheel executable with ARGS."""

import os
import sys

from crosswheel import find_crosswheel_bin


def main() -> None:
    try:
        executable = os.fsdecode(find_crosswheel_bin())
    except FileNotFoundError as error:
        sys.exit(f"error: {error}")
    if sys.platform == "win32":
        # Windows has no exec: a child process is the closest equivalent.
        import subprocess

        sys.exit(subprocess.run([executable, *sys.argv[1:]]).returncode)
    os.execv(executable, [executable, *sys.argv[1:]])


if __name__ == "__main__":
    main()
