from ._core import dot
