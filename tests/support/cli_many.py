# Many `surepick` commands in one Python process, for a test that runs one verb on many inputs
# (the record fuzz): each command calls the function the installed console script calls (its
# entry point, looked up in the package's metadata) with that command's arguments, its stdout
# and stderr captured, exactly as the script would end: the function's return value or
# SystemExit is the exit code; any other exception escaping it is what the script would print
# as a traceback (printed into that command's stderr, exit code 1). A process per command cost
# its start-up (Python, NumPy, the verb's imports) each time.
#
#   python tests/support/cli_many.py TIMEOUT_S < commands.json > results.json
#
# commands.json: a list of argument lists; results.json: a list of [exit code, stdout, stderr,
# seconds], one per command, in order. A command still running after TIMEOUT_S is stopped
# (SIGALRM) and given exit code None.
import contextlib
import io
import json
import signal
import sys
import time
import traceback
import warnings
from importlib.metadata import entry_points


class _TimedOut(BaseException):
    pass


def _alarm(signum, frame):
    raise _TimedOut()


def _one(main, argv, timeout_s):
    out, err = io.StringIO(), io.StringIO()
    t0 = time.monotonic()
    signal.alarm(timeout_s)
    try:
        # catch_warnings: each command shows its warnings afresh (the "once" registries are
        # reset), as in a process of its own
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), warnings.catch_warnings():
            try:
                code = _exit_code(main(argv), err)
            except SystemExit as e:
                code = _exit_code(e.code, err)
            except _TimedOut:
                code = None
            except BaseException:
                traceback.print_exc()
                code = 1
    finally:
        signal.alarm(0)
    return [code, out.getvalue(), err.getvalue(), time.monotonic() - t0]


def _exit_code(value, err):
    # what sys.exit(value) makes of it
    if value is None:
        return 0
    if isinstance(value, int):
        return value
    err.write("%s\n" % value)
    return 1


def main():
    timeout_s = int(sys.argv[1])
    (script,) = entry_points(group="console_scripts", name="surepick")
    entry = script.load()
    signal.signal(signal.SIGALRM, _alarm)
    commands = json.load(sys.stdin)
    json.dump([_one(entry, [str(a) for a in argv], timeout_s) for argv in commands], sys.stdout)


if __name__ == "__main__":
    main()
