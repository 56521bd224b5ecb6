"""Links blasdot._core against OpenBLAS from the scipy-openblas32 wheel, as numpy does, or
against the OpenBLAS crosswheel builds with the same names where the index has no such
wheel for the target (`target-libraries = ["scipy-openblas32"]`)."""

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
    built = built_openblas()
    if built and not (target_site and Path(target_site, "scipy_openblas32").is_dir()):
        return built
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


def built_openblas():
    """crosswheel's catalogue OpenBLAS, if this build has one: the target prefix it is
    built into is among the -L folders of LDFLAGS, beside its include/ folder."""
    for flag in os.environ.get("LDFLAGS", "").split():
        lib_dir = Path(flag[2:]) if flag.startswith("-L") else None
        if lib_dir and any(lib_dir.glob("libscipy_openblas.*")):
            return str(lib_dir.parent / "include"), str(lib_dir), "scipy_openblas"
    return None


include_dir, lib_dir, library = openblas_location()

setup(
    ext_modules=[
        Extension(
            "blasdot._core",
            sources=["csrc/_core.c", "csrc/_lapack.c"],
            include_dirs=[include_dir],
            library_dirs=[lib_dir],
            libraries=[library],
            # scipy-openblas32 prefixes every symbol with scipy_.
            define_macros=[("BLAS_SYMBOL_PREFIX", "scipy_")],
        )
    ],
)
