"""The crosswheel command-line tool, installed as a native executable.

This package only locates the executable that pip put in the environment's scripts
folder, so that `python -m crosswheel` works where the scripts folder is not on PATH.
"""

import os
import sys
import sysconfig

__all__ = ["find_crosswheel_bin"]


def find_crosswheel_bin() -> str:
    """Return the path of the crosswheel executable installed with this package."""
    exe = "crosswheel" + (sysconfig.get_config_var("EXE") or "")

    scripts = os.path.join(sysconfig.get_path("scripts"), exe)
    if os.path.isfile(scripts):
        return scripts

    # `pip install --user` puts scripts in the user scheme, not the interpreter's.
    if sys.version_info >= (3, 10):
        user_scheme = sysconfig.get_preferred_scheme("user")
    elif os.name == "nt":
        user_scheme = "nt_user"
    elif sys.platform == "darwin" and getattr(sys, "_framework", None):
        user_scheme = "osx_framework_user"
    else:
        user_scheme = "posix_user"
    user = os.path.join(sysconfig.get_path("scripts", scheme=user_scheme), exe)
    if os.path.isfile(user):
        return user

    # `pip install --target DIR` puts scripts in DIR/bin, next to the package.
    target = os.path.join(os.path.dirname(os.path.dirname(__file__)), "bin", exe)
    if os.path.isfile(target):
        return target

    raise FileNotFoundError(
        f"the crosswheel executable is not in {scripts}, {user} or {target}; "
        "reinstall with `pip install --force-reinstall crosswheel`"
    )
