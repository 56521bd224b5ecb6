import platform

import pytest

from rustproj import factorial, unwinds


def test_factorials():
    assert [factorial(n) for n in range(8)] == [1, 1, 2, 6, 24, 120, 720, 5040]


def test_refuses_what_a_c_long_cannot_hold():
    with pytest.raises(OverflowError):
        factorial(40)


def test_a_panic_unwinds_to_catch_unwind():
    assert unwinds() == 1


def test_runs_on_the_target():
    assert platform.machine() in {"aarch64", "ppc64le", "s390x", "x86_64", "armv7l", "i686", "riscv64"}
