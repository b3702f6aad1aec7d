# Runs INSIDE the unix `micropython` binary (`micropython -i boot_shim.py`), never under
# CPython. It does what rp2's main.c does between reset and the REPL: make the flash the
# root filesystem, run boot.py, then main.py (only when a Pico would), and fall through to
# the REPL that -i starts. Settings arrive in environment variables from tools/vboard.
# Progress goes to the supervisor as ESC _ vboard:<name> ESC \ markers, which it strips.
import os as _vb_os
import sys as _vb_sys


def _vb_mark(name):
    _vb_sys.stdout.write("\x1b_vboard:" + name + "\x1b\\")


def _vb_hang():
    # After asking for a reset: wait to be replaced (the supervisor kills this process).
    import time
    while True:
        try:
            time.sleep(1)
        except BaseException:
            pass


class _VbFlash:
    # The flash as the root filesystem: os.VfsPosix(DIR) with one fix. VfsPosix builds both
    # host paths of a rename in one shared buffer, so with a root the old path is replaced by
    # the new one and os.rename('/a', '/b') fails (ENOENT) or renames the wrong file. Here
    # rename resolves both paths to host paths itself and renames through a rootless VfsPosix;
    # everything else goes straight to the rooted one.
    def __init__(self, root):
        self._root = root.rstrip("/")
        self._v = _vb_os.VfsPosix(root)
        self._host = _vb_os.VfsPosix()

    def _host_path(self, p):
        if not p.startswith("/"):
            p = self._v.getcwd().rstrip("/") + "/" + p
        parts = []
        for part in p.split("/"):
            if part == "..":
                if parts:
                    parts.pop()
            elif part and part != ".":
                parts.append(part)
        return self._root + "/" + "/".join(parts)   # never above the flash root

    def mount(self, readonly, mkfs):
        self._v.mount(readonly, mkfs)

    def umount(self):
        self._v.umount()

    def rename(self, old, new):
        self._host.rename(self._host_path(old), self._host_path(new))

    def open(self, p, mode):
        return self._v.open(p, mode)

    def ilistdir(self, p):
        return self._v.ilistdir(p)

    def stat(self, p):
        return self._v.stat(p)

    def statvfs(self, p):
        return self._v.statvfs(p)

    def chdir(self, p):
        return self._v.chdir(p)

    def getcwd(self):
        return self._v.getcwd()

    def mkdir(self, p):
        return self._v.mkdir(p)

    def remove(self, p):
        return self._v.remove(p)

    def rmdir(self, p):
        return self._v.rmdir(p)


def _vb_mount():
    _vb_os.umount("/")
    _vb_os.mount(_VbFlash(_vb_os.getenv("VBOARD_FLASH")), "/")
    # Board-side runtime: generated settings and vboard_ctl.
    _vb_os.mount(_vb_os.VfsPosix(_vb_os.getenv("VBOARD_RUNTIME")), "/.vboard", readonly=True)
    _vb_os.chdir("/")
    path = ["", ".frozen", "/lib", "/.vboard"]
    del _vb_sys.path[:]
    _vb_sys.path.extend(path)
    del _vb_sys.argv[:]  # a Pico has no command line


def _vb_run(name):
    # Like pyexec_file_if_exists(): True if absent or ran to the end, False if it raised.
    try:
        _vb_os.stat(name)
    except OSError:
        return True
    try:
        execfile(name)
        return True
    except SystemExit:
        # sys.exit() / machine.soft_reset() in boot.py or main.py: a Pico soft-resets.
        _vb_mark("reset:soft")
        _vb_hang()
    except BaseException as e:  # noqa: B036 - KeyboardInterrupt included, as on a Pico
        _vb_sys.print_exception(e)
    return False


def _vb_boot():
    _vb_mount()
    for k in ("VBOARD_FLASH", "VBOARD_RUNTIME"):
        _vb_os.unsetenv(k)
    _vb_mark("fs")
    if _vb_os.getenv("VBOARD_SAFE") == "1":
        _vb_mark("booted")
        return
    ok = _vb_run("boot.py")
    _vb_mark("booted")
    # rp2 main.c: main.py runs only in friendly-REPL mode and only if boot.py succeeded.
    if ok and _vb_os.getenv("VBOARD_RUN_MAIN") == "1":
        _vb_run("main.py")


try:
    _vb_boot()
except KeyboardInterrupt as _vb_e:
    _vb_sys.print_exception(_vb_e)
    del _vb_e
_vb_mark("repl")
for _vb_k in ("VBOARD_RUN_MAIN", "VBOARD_SAFE"):
    _vb_os.unsetenv(_vb_k)
del _vb_k, _VbFlash, _vb_mark, _vb_hang, _vb_mount, _vb_run, _vb_boot, _vb_os, _vb_sys
