# Runs INSIDE the unix `micropython` binary (`micropython -i boot_shim.py`), never under
# CPython. It does what rp2's main.c does between reset and the REPL: make the flash the
# root filesystem (vboard_fs.Flash), run boot.py, then main.py (only when a Pico would), and
# fall through to the REPL that -i starts. Settings arrive in environment variables from the
# supervisor (board.py); the board-side modules (vboard_settings, vboard_ctl, vboard_io,
# machine, vboard_fs) come from its runtime directory.
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


def _vb_mount():
    # The board's own modules first, from the runtime directory (.mpy), while the host
    # filesystem is still the root: they stay in sys.modules, as built-in and frozen modules
    # are there on a Pico, loaded before anything can fragment the heap (a firmware stopped at
    # the REPL leaves too little room in one piece to load `machine` then). Nothing of the
    # virtual board is in the board's filesystem or on its sys.path.
    del _vb_sys.path[:]
    _vb_sys.path.append(_vb_os.getenv("VBOARD_RUNTIME"))
    import vboard_settings  # noqa: F401
    import vboard_ctl  # noqa: F401
    import vboard_io  # noqa: F401
    import machine  # noqa: F401  (vboard_machine, over the unix port's machine)
    import vboard_fs
    flash = vboard_fs.Flash(_vb_os.getenv("VBOARD_FLASH"))
    _vb_os.umount("/")
    _vb_os.mount(flash, "/")
    _vb_os.chdir("/")
    del _vb_sys.path[:]
    _vb_sys.path.extend(["", ".frozen", "/lib"])
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
del _vb_k, _vb_mark, _vb_hang, _vb_mount, _vb_run, _vb_boot, _vb_os, _vb_sys
