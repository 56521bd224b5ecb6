"""crosswheel's smoke test of a CPython it built for a target, run under qemu-user before
the build enters the cache. Arguments: the target's EXT_SUFFIX, byte order and pointer
size in bits, then the modules to import. Prints one line: what works, or (exit 1) every
problem found, so the error names them all at once."""

import sys


def problems(ext_suffix, byteorder, bits, modules):
    import importlib
    import struct
    import sysconfig

    found = []
    missing = []
    for name in modules:
        try:
            importlib.import_module(name)
        except ImportError as error:
            missing.append(f"{name} ({error})")
    if missing:
        found.append("cannot import " + ", ".join(missing))
    suffix = sysconfig.get_config_var("EXT_SUFFIX")
    if suffix != ext_suffix:
        found.append(f"its EXT_SUFFIX is {suffix}, the target's wheels use {ext_suffix}")
    if sys.byteorder != byteorder:
        found.append(f"it runs {sys.byteorder}-endian, the target is {byteorder}-endian")
    if struct.calcsize("P") * 8 != bits:
        found.append(f"its pointers have {struct.calcsize('P') * 8} bits, the target's {bits}")
    if "_ctypes" not in " ".join(missing):
        found += ctypes_problems()
    if "zlib" not in " ".join(missing):
        import zlib

        data = b"crosswheel " * 1000
        if zlib.decompress(zlib.compress(data)) != data:
            found.append("a zlib round trip changes the data")
    import hashlib

    if hashlib.sha256(b"abc").hexdigest()[:16] != "ba7816bf8f01cfea":
        found.append("hashlib's sha256 gives a wrong digest")
    return found


def ctypes_problems():
    """A call into the C library through libffi, a double return value (the float ABI:
    armv7l's hard-float) and a Python callback called from C (libffi's closures)."""
    import ctypes

    libc = ctypes.CDLL(None)
    if libc.strlen(b"crosswheel") != 10:
        return ["ctypes: strlen gives a wrong length"]
    libc.strtod.restype = ctypes.c_double
    libc.strtod.argtypes = [ctypes.c_char_p, ctypes.c_void_p]
    if libc.strtod(b"2.5", None) != 2.5:
        return ["ctypes: a C function returning a double gives a wrong value"]
    values = (ctypes.c_int * 5)(5, 1, 4, 2, 3)
    compare = ctypes.CFUNCTYPE(
        ctypes.c_int, ctypes.POINTER(ctypes.c_int), ctypes.POINTER(ctypes.c_int)
    )
    libc.qsort(values, 5, ctypes.sizeof(ctypes.c_int), compare(lambda a, b: a[0] - b[0]))
    if list(values) != [1, 2, 3, 4, 5]:
        return ["ctypes: qsort with a Python callback does not sort"]
    return []


def main():
    ext_suffix, byteorder, bits, *modules = sys.argv[1:]
    found = problems(ext_suffix, byteorder, int(bits), modules)
    if found:
        print("; ".join(found))
        return 1
    print(f"CPython {sys.version.split()[0]} imports {len(modules)} modules, calls C through ctypes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
