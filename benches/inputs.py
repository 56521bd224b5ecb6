"""Inputs the benchmarks share: fixture wheels and an unrepaired wheel whose
extension links OpenBLAS, cross-compiled with zig like the test suite does."""

from __future__ import annotations

import base64
import hashlib
import os
import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = Path(os.environ.get("CROSSWHEEL_FIXTURES", Path.home() / ".cache/crosswheel-fixtures"))

EXTENSION = """
double scipy_cblas_ddot(int n, const double *x, int incx, const double *y, int incy);
double blasdot_check(void) {
    const double x[] = {1, 2, 3, 4};
    const double y[] = {5, 6, 7, 8};
    return scipy_cblas_ddot(4, x, 1, y, 1);
}
"""

OPENBLAS = {
    "aarch64": "scipy_openblas32-0.3.31.188.0-py3-none-manylinux2014_aarch64.manylinux_2_17_aarch64.whl",
    "ppc64le": "scipy_openblas32-0.3.31.188.0-py3-none-manylinux2014_ppc64le.manylinux_2_17_ppc64le.whl",
}
ZIG_TARGET = {"aarch64": "aarch64-linux-gnu.2.17", "ppc64le": "powerpc64le-linux-gnu.2.19"}
EXT_SUFFIX = {"aarch64": ".cpython-311-aarch64-linux-gnu.so", "ppc64le": ".cpython-311-powerpc64le-linux-gnu.so"}


def fixture(name: str) -> Path:
    path = FIXTURES / name
    if not path.is_file():
        sys.exit(f"missing fixture {name}: run scripts/fetch-fixtures")
    return path


def record_line(name: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}\n"


def openblas_wheel_needing_graft(arch: str, work: Path) -> tuple[Path, Path]:
    """`demo-1.0-cp311-cp311-linux_<arch>.whl` and the folder of its OpenBLAS."""
    openblas = work / f"openblas-{arch}"
    with zipfile.ZipFile(fixture(OPENBLAS[arch])) as wheel:
        wheel.extractall(openblas)
    lib_dir = openblas / "scipy_openblas32/lib"
    (work / "ext.c").write_text(EXTENSION)
    ext_name = f"_blas{EXT_SUFFIX[arch]}"
    flags = ["-mabi=ibmlongdouble"] if arch == "ppc64le" else []
    subprocess.run([sys.executable, "-m", "ziglang", "cc", "-target", ZIG_TARGET[arch], "-O2", *flags, "-shared",
                    "-fPIC", "ext.c", "-L", str(lib_dir), "-lscipy_openblas", "-o", ext_name], cwd=work, check=True)
    files = {
        "demo/__init__.py": b"",
        f"demo/{ext_name}": (work / ext_name).read_bytes(),
        "demo-1.0.dist-info/WHEEL": f"Wheel-Version: 1.0\nGenerator: bench\nRoot-Is-Purelib: false\nTag: cp311-cp311-linux_{arch}\n".encode(),
        "demo-1.0.dist-info/METADATA": b"Metadata-Version: 2.1\nName: demo\nVersion: 1.0\n",
    }
    wheel_path = work / f"demo-1.0-cp311-cp311-linux_{arch}.whl"
    write_wheel(wheel_path, files)
    return wheel_path, lib_dir


MACOS_OPENBLAS = "scipy_openblas32-0.3.34.481.3-py3-none-macosx_11_0_arm64.whl"


def macos_wheel_needing_graft(work: Path) -> tuple[Path, Path]:
    """`demo-1.0-cp311-cp311-macosx_11_0_arm64.whl`, its extension linked by zig
    against the real libscipy_openblas.dylib (with its /opt/gfortran rpaths)."""
    openblas = work / "openblas-macos"
    with zipfile.ZipFile(fixture(MACOS_OPENBLAS)) as wheel:
        wheel.extractall(openblas)
    lib_dir = openblas / "scipy_openblas32/lib"
    (work / "ext.c").write_text(EXTENSION)
    ext_name = "_blas.cpython-311-darwin.so"
    subprocess.run([sys.executable, "-m", "ziglang", "cc", "-target", "aarch64-macos.11.0", "-O2", "-shared",
                    "-undefined", "dynamic_lookup", "-Wl,-headerpad_max_install_names", "ext.c", "-L", str(lib_dir),
                    "-lscipy_openblas", "-Wl,-rpath," + str(lib_dir), "-o", ext_name], cwd=work, check=True)
    files = {
        "demo/__init__.py": b"",
        f"demo/{ext_name}": (work / ext_name).read_bytes(),
        "demo-1.0.dist-info/WHEEL": b"Wheel-Version: 1.0\nGenerator: bench\nRoot-Is-Purelib: false\nTag: cp311-cp311-macosx_11_0_arm64\n",
        "demo-1.0.dist-info/METADATA": b"Metadata-Version: 2.1\nName: demo\nVersion: 1.0\n",
    }
    wheel_path = work / "demo-1.0-cp311-cp311-macosx_11_0_arm64.whl"
    write_wheel(wheel_path, files)
    return wheel_path, lib_dir


def write_wheel(path: Path, files: dict[str, bytes]) -> None:
    dist_info = next(name.split("/")[0] for name in files if ".dist-info/" in name)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as wheel:
        record = ""
        for name, data in files.items():
            info = zipfile.ZipInfo(name, (2020, 1, 1, 0, 0, 0))
            info.external_attr = 0o755 << 16
            wheel.writestr(info, data, zipfile.ZIP_DEFLATED)
            record += record_line(name, data)
        record += f"{dist_info}/RECORD,,\n"
        wheel.writestr(f"{dist_info}/RECORD", record)
