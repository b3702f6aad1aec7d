# What every runner script in tests/mpy reports with, under `micropython` (its CPython side, which
# starts the scripts and reads these lines, is tests/support/mpy.py):
#   check(cond, what)  a broken expectation prints "FAIL <what>" and is counted
#   fail(what)         the same, for a failure found another way
#   result(name, n)    a figure as "RESULT <name> <n>" for pytest to read
#   finish()           "RESULT fails <n>", then exit 1 if anything failed, else 0
import sys

_fails = 0
_show = -1          # FAIL lines printed at most (-1: all); a fuzz run can fail thousands of times


def check(cond, what):
    global _fails
    if not cond:
        _fails += 1
        if _show < 0 or _fails <= _show:
            print("FAIL", what)
    return cond


def fail(what):
    check(False, what)


def failures():
    return _fails


def show_at_most(n):
    global _show
    _show = n


def result(name, value):
    print("RESULT %s %d" % (name, value))


def finish():
    result("fails", _fails)
    sys.exit(1 if _fails else 0)
