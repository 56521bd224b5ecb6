"""Dot products and LAPACK's matrix balancing through OpenBLAS."""

from blasdot._core import balance, corename, dot

__all__ = ["balance", "corename", "dot"]
