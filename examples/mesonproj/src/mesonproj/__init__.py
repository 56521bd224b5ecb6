"""Fibonacci numbers from a meson-built extension."""

from mesonproj._fib import fib

__all__ = ["fib"]
