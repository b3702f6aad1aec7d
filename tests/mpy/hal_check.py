# Checks one HAL implementation against firmware/hal/contract.py, on either interpreter:
# every function of its level is there, callable, and takes exactly the contract's number of
# positional arguments; every constant of its level is there with the contract's value.
#   micropython tests/mpy/hal_check.py LEVEL SETUP
# LEVEL is PINS or BOARD; SETUP is Python source that leaves the implementation (a module or an
# object) in `impl`. Prints "FAIL <problem>" per mismatch and RESULT lines (tests/mpy/checks.py);
# exit 1 on any problem. From CPython: problems(impl, level).
#
# Arity: CPython reads the signature (inspect). MicroPython has no introspection, so the
# function is called with far too many arguments: the interpreter refuses that call before the
# body runs, and its message says how many it takes ("f() takes 2 positional arguments but 17
# were given", self included for a method); only a *args function would run. CPython builtins
# without a signature (e.g. a bound list.__getitem__) are asked the same way.
import sys

from surepick.firmware.hal import contract

_WORDS = {"no": 0, "one": 1, "two": 2, "three": 3}
_TOO_MANY = 16       # more arguments than any HAL function could mean to take


def functions(level):
    # -> [(name, (parameter, ...))] an implementation of `level` must have; BOARD includes PINS.
    out = []
    for table in (contract.PINS_FUNCTIONS, contract.BOARD_FUNCTIONS)[:level]:
        for sig in table.split(")"):
            sig = sig.strip()
            if sig:
                name, params = sig.split("(")
                out.append((name, tuple([p.strip() for p in params.split(",") if p.strip()])))
    return out


def constants(level):
    # -> [(name, value)] an implementation of `level` must have.
    if level < contract.BOARD:
        return []
    return [(name, getattr(contract, name)) for name in contract.BOARD_CONSTANTS.split()]


def _numbers(text):
    out = []
    for word in text.split():
        w = word.strip("(),.")
        if w.isdigit():
            out.append(int(w))
        elif w in _WORDS:
            out.append(_WORDS[w])
    return out


def _arity_by_calling(fn, n):
    # -> (positional parameters, None) or (None, problem).
    extra = n + _TOO_MANY
    try:
        fn(*([None] * extra))
    except TypeError as e:
        msg = str(e)
        nums = _numbers(msg)
        if ("given" in msg or "got" in msg) and len(nums) >= 2:
            takes, given = nums[0], nums[1]
            return takes - (given - extra), None     # a bound method counts its self in both
        return None, "refused %d arguments for another reason: %s" % (extra, msg)
    except Exception as e:
        return None, "ran when called with %d arguments (%r)" % (extra, e)
    return None, "accepts %d arguments (the contract passes %d)" % (extra, n)


def _arity(fn, n):
    if sys.implementation.name == "micropython":
        return _arity_by_calling(fn, n)
    import inspect
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return _arity_by_calling(fn, n)
    count = 0
    for p in sig.parameters.values():
        if p.kind == p.VAR_POSITIONAL:
            return None, "takes *%s (the contract passes %d)" % (p.name, n)
        if p.kind == p.KEYWORD_ONLY and p.default is p.empty:
            return None, "needs keyword argument %s" % p.name
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            count += 1
    return count, None


def problems(impl, level):
    # -> [str], empty when impl meets the contract at `level`.
    out = []
    for name, params in functions(level):
        fn = getattr(impl, name, None)
        if fn is None:
            out.append("%s: missing" % name)
            continue
        if not callable(fn):
            out.append("%s: not callable" % name)
            continue
        got, why = _arity(fn, len(params))
        if why is not None:
            out.append("%s(%s): %s" % (name, ", ".join(params), why))
        elif got != len(params):
            out.append("%s(%s): takes %d positional arguments" % (name, ", ".join(params), got))
    for name, value in constants(level):
        if not hasattr(impl, name):
            out.append("%s: missing" % name)
        elif getattr(impl, name) != value:
            out.append("%s = %r, the contract says %r" % (name, getattr(impl, name), value))
    return out


def main(argv):
    from checks import fail, finish, result
    level = getattr(contract, argv[1])
    ns = {}
    exec(argv[2], ns)
    for p in problems(ns["impl"], level):
        fail(p)
    result("functions", len(functions(level)))
    result("constants", len(constants(level)))
    finish()


if __name__ == "__main__":
    main(sys.argv)
