"""Greatest common divisors from a CMake-built extension."""

from cmakeproj._gcd import gcd

__all__ = ["gcd"]
