"""Links blasdot._core against OpenBLAS from the scipy-openblas32 wheel, as numpy does."""

import os
from pathlib import Path

from setuptools import Extension, setup


def openblas_location():
    """Return (include_dir, lib_dir, library) of the scipy-openblas32 to link against.

    Natively this asks the installed package, exactly as numpy's build does. When
    cross-compiling, the installed package is the build machine's copy (and importing it
    loads its library), so crosswheel unpacks the target's copy and names the folder in
    CROSSWHEEL_TARGET_SITE.
    """
    target_site = os.environ.get("CROSSWHEEL_TARGET_SITE")
    if target_site:
        root = Path(target_site, "scipy_openblas32")
        lib_dir = root / "lib"
        libraries = sorted(p.name for p in lib_dir.iterdir() if p.name.startswith("libscipy_openblas"))
        if not libraries:
            raise SystemExit(f"no libscipy_openblas in {lib_dir}: is scipy-openblas32 in target-requires?")
        # libscipy_openblas.so / .dylib -> scipy_openblas
        return str(root / "include"), str(lib_dir), libraries[0].split(".")[0][3:]
    import scipy_openblas32

    return scipy_openblas32.get_include_dir(), scipy_openblas32.get_lib_dir(), scipy_openblas32.get_library()


include_dir, lib_dir, library = openblas_location()

setup(
    ext_modules=[
        Extension(
            "blasdot._core",
            sources=["csrc/_core.c"],
            include_dirs=[include_dir],
            library_dirs=[lib_dir],
            libraries=[library],
            # scipy-openblas32 prefixes every symbol with scipy_.
            define_macros=[("BLAS_SYMBOL_PREFIX", "scipy_")],
        )
    ],
)
