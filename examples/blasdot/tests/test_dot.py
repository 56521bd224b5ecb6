import math
import platform

import pytest

import blasdot

# Core names OpenBLAS's DYNAMIC_ARCH dispatch reports (driver/others/dynamic_arm64.c,
# dynamic_power.c, dynamic.c in OpenBLAS 0.3.2x-0.3.3x).
ARM64_CORES = {
    "armv8", "cortexa53", "cortexa55", "cortexa57", "cortexa72", "cortexa73", "cortexa76",
    "falkor", "thunderx", "thunderx2t99", "thunderx3t110", "tsv110", "emag8180",
    "neoversen1", "neoversen2", "neoversev1", "neoversev2", "a64fx", "armv8sve", "armv9sme",
    "vortex", "vortexm4", "ampere1",
}
POWER_CORES = {"power6", "power8", "power9", "power10"}
# OpenBLAS's DYNAMIC_ARCH kernels for IBM Z (kernel/zarch).
Z_CORES = {"zarch_generic", "z13", "z14"}
X86_64_CORES = {
    "prescott", "core2", "penryn", "dunnington", "nehalem", "sandybridge", "haswell",
    "skylakex", "cooperlake", "sapphirerapids", "atom", "opteron", "barcelona", "bobcat",
    "bulldozer", "piledriver", "steamroller", "excavator", "zen",
}

# The single-CPU builds crosswheel's catalogue OpenBLAS makes for 32-bit Arm and RISC-V
# (OpenBLAS 0.3.21 has no DYNAMIC_ARCH there).
ARMV7_CORES = {"armv7", "cortexa9", "cortexa15"}
RISCV64_CORES = {"riscv64_generic", "c910v"}

# 32-bit x86 adds the pre-SSE2 cores OpenBLAS's DYNAMIC_ARCH keeps there (qemu-i386's default
# CPU is a Pentium III: Katmai).
X86_32_CORES = X86_64_CORES | {"katmai", "coppermine", "northwood", "banias", "yonah", "athlon"}


def test_dot_of_known_vectors():
    assert blasdot.dot([1.0, 2.0, 3.0], [4.0, 5.0, 6.0]) == 32.0


def test_dot_accepts_ints_tuples_and_empty():
    assert blasdot.dot((1, -2), [3, 4]) == -5.0
    assert blasdot.dot([], []) == 0.0


def test_dot_of_long_vector_matches_closed_form():
    n = 100_000
    a = [float(i) for i in range(n)]
    b = [2.0] * n
    # sum(2i) = n(n-1): exact in binary64 at this size, whatever the summation order.
    assert blasdot.dot(a, b) == float(n * (n - 1))


def test_dot_of_long_vector_matches_python_sum():
    n = 12_345
    a = [math.sin(i) for i in range(n)]
    b = [math.cos(i) for i in range(n)]
    expected = math.fsum(x * y for x, y in zip(a, b))
    assert blasdot.dot(a, b) == pytest.approx(expected, rel=1e-12, abs=1e-9)


def test_dot_rejects_unequal_lengths():
    with pytest.raises(ValueError, match="equal length"):
        blasdot.dot([1.0], [1.0, 2.0])


def test_dot_rejects_non_numbers():
    with pytest.raises(TypeError):
        blasdot.dot(["x"], [1.0])


def test_balance_scales_by_powers_of_two_as_lapack_does():
    # [[1000, 1], [1000, 0]] by columns. dgebal scales the second row and column by 32, so
    # that both have similar norms: the balanced matrix is D^-1 A D with D = diag(1, 32).
    balanced, scale = blasdot.balance([1000.0, 1000.0, 1.0, 0.0], 2)
    assert scale == [1.0, 32.0]
    assert balanced == [1000.0, 31.25, 32.0, 0.0]


def test_corename_is_a_real_openblas_core_for_this_machine():
    machine = platform.machine().lower()
    if machine in ("aarch64", "arm64"):
        known = ARM64_CORES
    elif machine.startswith("ppc64"):
        known = POWER_CORES
    elif machine == "s390x":
        known = Z_CORES
    elif machine.startswith("armv7"):
        known = ARMV7_CORES
    elif machine == "riscv64":
        known = RISCV64_CORES
    elif machine in ("i386", "i486", "i586", "i686", "x86"):
        known = X86_32_CORES
    else:
        known = X86_64_CORES
    assert blasdot.corename().lower() in known
