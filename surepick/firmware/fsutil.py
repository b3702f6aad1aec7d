# Small filesystem helpers shared by the firmware's file writers.
import os


def replace(tmp, path):
    # Rename tmp over path (littlefs and POSIX replace atomically: a power cut leaves the old
    # file or the new one). Quirk worked around: the unix port's VfsPosix, mounted at "/" (the
    # virtual board), fails a rename whose TARGET is absolute; relative to cwd "/" it works.
    try:
        os.rename(tmp, path)
        return
    except OSError:
        pass
    if path.startswith("/") and os.getcwd() == "/":
        try:
            os.rename(tmp, path[1:])
            return
        except OSError:
            pass
    try:
        os.remove(path)            # FAT does not replace: a cut here loses the old file
    except OSError:
        pass
    os.rename(tmp, path)


def write_atomic(path, text):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    replace(tmp, path)
