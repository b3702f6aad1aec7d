# The line a started board prints once it serves ("serving on ADDRESS", one line per address; the
# emulated chip's once its firmware answers), and reading the address back from it: one place for
# `surepick board`, which prints it, and for every script, bench and test that starts a board and
# needs its address.
import re
import subprocess
import time

READY_PREFIX = "surepick-board: serving on "
_SERVING = re.compile(r"serving on (\S+)")      # the emulated chip's own entry point says it too


class BoardDidNotServe(RuntimeError):
    """A started board ended, or printed no ready line in time. The message quotes what it printed."""


def served_address(text, scheme="socket://"):
    """The first served address in text (a line, or a whole log) that starts with scheme, or None.
    scheme "" takes any (a board serves a pty and TCP unless told one: a line for each)."""
    for m in _SERVING.finditer(text):
        if m.group(1).startswith(scheme):
            return m.group(1)
    return None


def wait_served(proc, timeout_s, scheme="socket://", printed=None, log=None):
    """Reads a started board's stdout (a text pipe) line by line up to the ready line with an
    address starting with scheme -> that address. The lines before it are appended to printed (a
    list) when given; log, when given, is called for what the board wrote elsewhere (its stderr),
    quoted in the error too. A read blocks until a line comes: timeout_s is checked between lines
    (the board prints its notes as it starts, and closes stdout when it ends)."""
    seen = [] if printed is None else printed
    deadline = time.monotonic() + timeout_s
    why = "printed no ready line in %g s" % timeout_s
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:               # stdout closed: the board is ending
            try:
                why = "ended (exit code %s)" % proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                why = "closed its output"
            break
        address = served_address(line, scheme)
        if address is not None:
            return address
        seen.append(line)
    text = "the board %s without serving on %s...; it printed:\n%s" % (
        why, scheme or "an address", "".join(seen)[-3000:] or "(nothing)")
    if log is not None:
        text += "\nits log:\n%s" % log()
    raise BoardDidNotServe(text)
