"""Dot products through OpenBLAS."""

from blasdot._core import corename, dot

__all__ = ["corename", "dot"]
