import platform

import pytest

from mesonproj import fib


def test_small_fibonacci_numbers():
    assert [fib(n) for n in range(10)] == [0, 1, 1, 2, 3, 5, 8, 13, 21, 34]


def test_largest_64_bit_fibonacci_number():
    a, b = 0, 1
    for _ in range(93):
        a, b = b, a + b
    assert fib(93) == a == 12200160415121876738


def test_rejects_out_of_range():
    with pytest.raises(ValueError):
        fib(94)
    with pytest.raises(ValueError):
        fib(-1)


def test_configure_checks_ran_on_the_target():
    from mesonproj import _fib

    assert _fib.configured_machine == platform.machine()
