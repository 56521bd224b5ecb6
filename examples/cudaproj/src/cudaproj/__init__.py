"""A CUDA kernel (y = a*x + y) and what the CUDA runtime says about the machine."""

from cudaproj._saxpy import device_count, runtime_version, saxpy

__all__ = ["device_count", "runtime_version", "saxpy"]
