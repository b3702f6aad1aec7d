# Small shims so the same source runs under MicroPython and CPython.
try:
    from micropython import const  # noqa: F401
except ImportError:  # CPython
    def const(x):
        return x
