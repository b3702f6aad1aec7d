# Small shims so the same source runs under MicroPython and CPython.
try:
    from micropython import const  # noqa: F401
except ImportError:  # CPython
    def const(x):
        return x


try:
    import micropython  # noqa: F401
except ImportError:  # CPython: @micropython.native / viper compile nothing and change nothing
    class micropython:
        @staticmethod
        def native(f):
            return f

        @staticmethod
        def viper(f):
            return f
