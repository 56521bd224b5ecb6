import math
import platform
import random

from cmakeproj import gcd


def test_known_values():
    assert gcd(12, 18) == 6
    assert gcd(17, 5) == 1
    assert gcd(0, 7) == 7


def test_matches_math_gcd_on_64_bit_values():
    rng = random.Random(1234)
    for _ in range(1000):
        a, b = rng.getrandbits(64), rng.getrandbits(64)
        assert gcd(a, b) == math.gcd(a, b)


def test_configure_checks_ran_on_the_target():
    from cmakeproj import _gcd

    assert _gcd.configured_machine == platform.machine()
