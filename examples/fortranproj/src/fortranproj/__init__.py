"""Numerics computed by Fortran code, called through a C extension."""

from ._flib import format_e, series

__all__ = ["format_e", "series"]
