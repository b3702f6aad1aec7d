# Reading a started board's address from its ready line (host/cli/board_ready.py), the helper
# every script and test that starts a board uses. The boards here are stand-in processes that
# print what a board prints; the real `surepick board` is read this way by tests/support/bench.py.
import subprocess
import sys

import pytest

from surepick.host.cli.board_ready import READY_PREFIX, BoardDidNotServe, served_address, wait_served


def _printer(*lines, then_exit=0):
    code = "import sys\n"
    code += "".join("print(%r, flush=True)\n" % ln for ln in lines)
    code += "sys.exit(%d)\n" % then_exit
    return subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)


def test_the_address_is_the_first_one_of_the_asked_scheme():
    text = "note: plant ready\n%s/dev/pts/7\n%ssocket://127.0.0.1:4321\n" % (READY_PREFIX, READY_PREFIX)
    assert served_address(text) == "socket://127.0.0.1:4321"
    assert served_address(text, scheme="") == "/dev/pts/7"
    assert served_address("surepick-rp2040: serving on socket://127.0.0.1:9 (USB up at 14900 emulated ms)") \
        == "socket://127.0.0.1:9"
    assert served_address("note: no ready line yet\n") is None


def test_waiting_returns_the_address_and_keeps_what_came_before():
    p = _printer("arm: reference", READY_PREFIX + "/dev/pts/3", READY_PREFIX + "socket://127.0.0.1:5555")
    printed = []
    try:
        assert wait_served(p, 60, printed=printed) == "socket://127.0.0.1:5555"
        assert printed == ["arm: reference\n", READY_PREFIX + "/dev/pts/3\n"]
    finally:
        p.communicate(timeout=30)


def test_a_board_that_ends_without_serving_is_named_with_what_it_printed():
    p = _printer("surepick board: the flash directory /nowhere does not exist", then_exit=2)
    try:
        with pytest.raises(BoardDidNotServe) as e:
            wait_served(p, 60, log=lambda: "surepick board: its stderr, from the log file")
    finally:
        p.communicate(timeout=30)
    text = str(e.value)
    assert "ended (exit code 2)" in text, text
    assert "the flash directory /nowhere does not exist" in text, text
    assert "its log:\nsurepick board: its stderr, from the log file" in text, text
