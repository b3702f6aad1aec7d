# What bring-up and `surepick teleop` say when the board refuses TELEOP: one function for both
# (host/link/answers.py), each refusal the firmware gives (firmware/teleop_mode.py enter(),
# app.py) naming the command that leaves it, with the port the person gave. The expected commands
# are the CLI's verbs, written out here.
import re

import pytest

from surepick.host.link.answers import teleop_refusal
from surepick.shared_fsm import codes, link

PORT = "socket://127.0.0.1:7713"


@pytest.mark.parametrize("code,payload,command", [
    (link.E_FAULTED, (codes.F_STALL,), "surepick job clear --port %s" % PORT),
    (link.E_STATE, ("estop",), "surepick job clear --port %s" % PORT),
    (link.E_STATE, ("arm_invalid",), "surepick deploy --arm FILE --port %s" % PORT),
    (link.E_BUSY, (), "surepick job abort --port %s" % PORT),
    (link.E_UNKNOWN_TYPE, (), "surepick deploy --port %s" % PORT),
    (link.E_BUSY, ("heap",), "surepick deploy --port %s" % PORT),
])
def test_a_refused_teleop_names_the_command_that_leaves_it(code, payload, command):
    text = teleop_refusal(code, payload, PORT)
    assert command in re.findall(r"`(surepick [^`]+)`", text), text


def test_a_heap_too_full_is_not_called_a_busy_arm():
    # E_BUSY "heap": the module could not be loaded (docs/rp2040.md), nothing is moving
    text = teleop_refusal(link.E_BUSY, ("heap",), PORT)
    assert "heap" in text and "busy" not in text and "job abort" not in text, text


def test_teleop_refusals_that_need_no_command_say_what_holds():
    assert "STALL" in teleop_refusal(link.E_FAULTED, (codes.F_STALL,), None)
    assert teleop_refusal(link.E_STATE, ("not_teleop",), PORT) == "the board is not in teleop mode"
    assert "hardware-in-the-loop" in teleop_refusal(link.E_STATE, ("hil",), PORT)
    assert "--port" not in teleop_refusal(link.E_UNKNOWN_TYPE, (), None)
