# The native-code architectures of the .mpy format, as MicroPython numbers them (py/persistentcode.h
# MP_NATIVE_ARCH_*: bits 10..15 of sys.implementation._mpy and bits 2..7 of an .mpy header's third
# byte) and as mpy-cross's -march names them. Host only (deploy, the virtual board's models); never
# shipped to the board.
MPY_ARCHES = (None, "x86", "x64", "armv6", "armv6m", "armv7m", "armv7em", "armv7emsp", "armv7emdp",
              "xtensa", "xtensawin", "rv32imc")


def march_of(mpy):
    # sys.implementation._mpy -> the -march name of its native code, or None (none, or unknown)
    a = (mpy >> 10) & 0x3F
    return MPY_ARCHES[a] if a < len(MPY_ARCHES) else None


def mpy_with_arch(mpy, march):
    # _mpy with its architecture bits replaced by march's
    return (mpy & 0x3FF) | (MPY_ARCHES.index(march) << 10)
