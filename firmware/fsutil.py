# Small filesystem helpers shared by the firmware's file readers and writers.
import os

from ..shared_fsm.compat import const

# errno values (the unix port's errno module lacks some; littlefs and POSIX agree on these)
ENOENT = const(2)
ENOTDIR = const(20)
EISDIR = const(21)
ENOSPC = const(28)

_S_IFDIR = const(0x4000)

# read_bounded() results
READ_OK = const(0)
READ_MISSING = const(1)     # no such file: not an error
READ_TOO_BIG = const(2)     # larger than the caller's limit: never read into RAM
READ_IS_DIR = const(3)      # a directory where a file belongs
READ_ERROR = const(4)       # any other filesystem error
READ_NO_MEMORY = const(5)   # the heap could not hold even the bounded read
# the reason a boot reader gives for each (rejects.py); None: nothing to reject
READ_REASONS = (None, None, "too_big", "is_dir", "unreadable", "no_memory")


def errno_of(e):
    # OSError.errno on both interpreters (MicroPython: args[0])
    try:
        return e.args[0]
    except (AttributeError, IndexError):
        return -1


def read_bounded(path, limit):
    # -> (READ_*, bytes or None). Never raises on what the flash holds, and never reads more
    # than limit + 1 bytes: the size is checked first, and the read is capped anyway in case
    # the size lied (a file growing meanwhile, a device node).
    try:
        st = os.stat(path)
    except OSError as e:
        return (READ_MISSING if errno_of(e) == ENOENT else READ_ERROR), None
    if st[0] & _S_IFDIR:
        return READ_IS_DIR, None
    if st[6] > limit:
        return READ_TOO_BIG, None
    try:
        with open(path, "rb") as f:
            data = f.read(limit + 1)
    except MemoryError:
        return READ_NO_MEMORY, None
    except OSError as e:
        return (READ_IS_DIR if errno_of(e) == EISDIR else READ_ERROR), None
    if len(data) > limit:
        return READ_TOO_BIG, None
    return READ_OK, data


def rename(src, dst):
    # os.rename, with the quirk worked around: the unix port's VfsPosix, mounted at "/" (the
    # virtual board), fails a rename whose TARGET is absolute; relative to cwd "/" it works.
    try:
        os.rename(src, dst)
        return
    except OSError:
        if not (dst.startswith("/") and os.getcwd() == "/"):
            raise
    os.rename(src, dst[1:])


def replace(tmp, path):
    # Rename tmp over path (littlefs and POSIX replace atomically: a power cut leaves the old
    # file or the new one).
    try:
        rename(tmp, path)
        return
    except OSError:
        pass
    try:
        os.remove(path)            # FAT does not replace: a cut here loses the old file
    except OSError:
        pass
    os.rename(tmp, path)


def is_dir(path):
    try:
        return os.stat(path)[0] & _S_IFDIR
    except OSError:
        return 0


def clear_way(path):
    # A directory where one of the board's files belongs (made by hand or by someone hostile):
    # moved aside to path + ".dir", whatever it holds kept. Raises OSError when it cannot be.
    if is_dir(path):
        rename(path, path + ".dir")


def write_atomic(path, text):
    # -> 1 written, 0 the flash refused it (full, read-only, a directory in the way that could
    # not be moved). Never raises OSError: the callers run in the loop.
    tmp = path + ".tmp"
    try:
        clear_way(tmp)
        clear_way(path)
        with open(tmp, "w") as f:
            f.write(text)
        replace(tmp, path)
        return 1
    except OSError:
        return 0
