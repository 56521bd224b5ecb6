"""A tiny Rust extension: a crosswheel example."""

from ._rustproj import factorial, unwinds

__all__ = ["factorial", "unwinds"]
