import math
import platform

import fortranproj


def test_series_matches_python():
    n = 1000
    expected = sum(math.exp(i / n) + math.log(i) for i in range(1, n + 1))
    assert fortranproj.series(n) == round(expected, 4)


def test_series_runs_on_the_wheels_machine():
    # The suite runs where the wheel's architecture is, under qemu-user or natively.
    assert platform.machine() in {"aarch64", "ppc64le", "s390x", "x86_64", "riscv64", "armv7l", "i686"}
    assert fortranproj.series(1) == round(math.exp(1.0), 4)


def test_fortran_formats_through_its_runtime():
    assert fortranproj.format_e(12345.678) == " 1.23457E+04"
    assert fortranproj.format_e(-0.000125) == "-1.25000E-04"
