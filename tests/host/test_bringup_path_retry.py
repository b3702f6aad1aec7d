# A bring-up move's setpoint refused "path" by the board (its path check's fixed budget of checks
# ran out on the drivers' motion towards the steps before, near the table or the column: fail
# closed) is asked again once the drivers hold the step before; refused again from rest, bring-up
# stops with the reason. Whether the first refusal comes depends on how far the drivers lag, so
# on how fast the host sends against the board's ticks: a fresh-clone run once stopped there on
# one machine and went on on another. The board is played by hand on a loopback socket: it
# refuses the step to REFUSED_AT the first `refusals` times it is sent, takes every other one
# and says its drivers hold it (TELEOP_STATE).
import threading

import pytest

from surepick.host.bringup.jog import BringupStop, Jog
from surepick.host.link import hub_client
from surepick.host.link.client import LinkClient
from surepick.shared_fsm import link

from tests.support.hand_board import HandBoard

START = [0, 90000, -90000, -90000]
JAW = 25000
REFUSED_AT = 93000                 # the shoulder's third 1-degree step from START


def _play(board, refusals, seen):
    board.accept(10)
    try:
        while True:
            (ftype, f), = board.requests(1, timeout=30)
            if ftype == link.T_TELEOP:
                board.send(link.reply(f[0], link.OK, (1,) + tuple(START) + (JAW,)))
            elif ftype == link.T_SETPOINT:
                rid, seq, q, jaw = f[0], f[1], list(f[2:6]), f[6]
                refuse = q[1] == REFUSED_AT and seen.count((REFUSED_AT, "refused")) < refusals
                seen.append((q[1], "refused" if refuse else "held"))
                if refuse:
                    board.send(link.reply(rid, link.E_BAD_VALUE, ("path", seq)))
                else:
                    board.send(link.encode(link.T_TELEOP_STATE, (0, 1, 0, seq) + tuple(q) + (jaw, jaw, 0, 0)))
            else:
                board.send(link.reply(f[0], link.OK))
    except (AssertionError, OSError):
        return                       # the client hung up


def _move(refusals):
    board = HandBoard()
    seen = []
    player = threading.Thread(target=_play, args=(board, refusals, seen), daemon=True)
    player.start()
    client = LinkClient(board.port, hub=hub_client.DIRECT).open()
    jog = Jog(client, 4200)
    jog.safe = lambda: None          # the e-stop and rail reads are another test's
    try:
        jog.move(1, 95000)
        return jog, seen, None
    except BringupStop as e:
        return jog, seen, e
    finally:
        client.close()
        player.join(10)
        board.close()


def _after_refusal(seen):
    i = seen.index((REFUSED_AT, "refused"))
    return seen[i + 1:]


def test_a_step_refused_on_its_path_is_asked_again_once_the_step_before_is_held():
    jog, seen, stop = _move(refusals=1)
    assert stop is None, stop
    assert jog.q == [0, 95000, -90000, -90000]
    after = _after_refusal(seen)
    # the step before, sent until held (the same answer twice), then the refused step, taken
    k = after.index((REFUSED_AT, "held"))
    assert k >= 2 and set(after[:k]) == {(REFUSED_AT - 1000, "held")}, seen
    # then the rest of the move, its last step sent until held
    assert after[k:k + 3] == [(REFUSED_AT, "held"), (94000, "held"), (95000, "held")], seen
    assert len(after) > k + 3 and set(after[k + 3:]) == {(95000, "held")}, seen


def test_a_step_refused_again_from_rest_stops_bringup_with_the_reason():
    jog, seen, stop = _move(refusals=2)
    assert stop is not None and "BAD_VALUE path" in str(stop), stop
    after = _after_refusal(seen)
    assert after[-1] == (REFUSED_AT, "refused") and set(after[:-1]) == {(REFUSED_AT - 1000, "held")}, seen
    assert len(after) >= 3, seen
