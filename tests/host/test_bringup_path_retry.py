# A bring-up move's setpoint refused "path" by the board (its path check's fixed budget of checks
# ran out on the drivers' motion towards the steps before, near the table or the column: fail
# closed) is asked again once the drivers hold the step before; refused again from rest, it is
# made in halves (a shorter motion needs fewer checks), and only when its smallest half is refused
# does bring-up stop, with the reason. Whether a refusal comes depends on how far the drivers lag,
# so on how fast the host sends against the board's ticks, and on where the search for a mark
# puts the hand near the column: fresh-clone runs stopped there (stand-in seeds 3 and 8) and
# went on on other runs. The board is played by hand on a loopback socket: it refuses the step
# to REFUSED_AT the first `refusals` times it is sent (or, with `max_step`, every setpoint at
# or past REFUSED_AT further than that from the last it took), takes every other one and says
# its drivers hold it (TELEOP_STATE).
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


def _play(board, refusals, seen, max_step=None, resends_refused=0, late=False):
    board.accept(10)
    took = list(START)
    held_back = None
    try:
        while True:
            (ftype, f), = board.requests(1, timeout=30)
            if ftype == link.T_TELEOP:
                board.send(link.reply(f[0], link.OK, (1,) + tuple(START) + (JAW,)))
            elif ftype == link.T_SETPOINT:
                rid, seq, q, jaw = f[0], f[1], list(f[2:6]), f[6]
                if resends_refused:
                    # the move's last step taken, then its re-sends refused while "the drivers
                    # still move" (the first `resends_refused` of them)
                    refuse = q == took and q[1] == 95000 and seen.count((95000, "refused")) < resends_refused
                elif max_step is None:
                    refuse = q[1] == REFUSED_AT and seen.count((REFUSED_AT, "refused")) < refusals
                else:
                    refuse = q[1] >= REFUSED_AT and abs(q[1] - took[1]) > max_step
                if not refuse:
                    took = q
                seen.append((q[1], "refused" if refuse else "held"))
                if refuse and late:
                    # answered only with the next setpoint, after the host stopped waiting
                    held_back = link.reply(rid, link.E_BAD_VALUE, ("path", seq))
                    continue
                if late and held_back is not None:
                    board.send(held_back)
                    held_back = None
                if refuse:
                    board.send(link.reply(rid, link.E_BAD_VALUE, ("path", seq)))
                else:
                    board.send(link.encode(link.T_TELEOP_STATE, (0, 1, 0, seq) + tuple(q) + (jaw, jaw, 0, 0)))
            else:
                board.send(link.reply(f[0], link.OK))
    except (AssertionError, OSError):
        return                       # the client hung up


def _move(refusals, max_step=None, resends_refused=0, late=False):
    board = HandBoard()
    seen = []
    player = threading.Thread(target=_play, args=(board, refusals, seen, max_step, resends_refused, late),
                              daemon=True)
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


def test_a_step_refused_again_from_rest_is_made_in_halves():
    jog, seen, stop = _move(refusals=2)
    assert stop is None, stop
    assert jog.q == [0, 95000, -90000, -90000]
    after = _after_refusal(seen)
    # held before it, refused again from rest, then its first half taken, then the step itself
    # (the board's second refusal was its last)
    k = after.index((REFUSED_AT, "refused"))
    assert k >= 2 and set(after[:k]) == {(REFUSED_AT - 1000, "held")}, seen
    assert after[k + 1] == (REFUSED_AT - 500, "held"), seen
    assert (REFUSED_AT, "held") in after[k + 2:], seen


def test_near_the_column_the_steps_shrink_until_the_board_takes_them():
    # the board takes no motion longer than 300 mdeg at or past REFUSED_AT: the halves of 250
    jog, seen, stop = _move(refusals=0, max_step=300)
    assert stop is None, stop
    assert jog.q == [0, 95000, -90000, -90000]
    taken = [q for q, what in seen if what == "held"]
    zone = [q for q in dict.fromkeys(taken) if q >= REFUSED_AT]
    assert zone == list(range(REFUSED_AT, 95001, 250)), zone


def test_a_step_refused_in_its_smallest_half_stops_bringup_with_the_reason():
    jog, seen, stop = _move(refusals=10 ** 6)
    assert stop is not None and "BAD_VALUE path" in str(stop), stop
    assert seen[-1] == (REFUSED_AT, "refused"), seen
    # the halves came ever nearer (PATH_SPLITS of them, rounded down): 500, 250, 125, 63 short
    taken = [q for q in dict.fromkeys(q for q, what in seen if what == "held")]
    assert taken == [91000, 92000, 92500, 92750, 92875, 92937], seen


def test_a_re_send_of_the_last_step_refused_on_its_path_waits_for_the_drivers():
    # The board took the move's last step; re-sent while its drivers still brake from the steps
    # before, it is refused "path" from there (a fresh-clone run at half speed stopped so, stand-in
    # seed 8: the shoulder braking at 74 deg/s past the step). The board goes on with the step it
    # took: bring-up lets the drivers move on and asks again, until they hold it.
    jog, seen, stop = _move(refusals=0, resends_refused=3)
    assert stop is None, stop
    assert jog.q == [0, 95000, -90000, -90000]
    i = seen.index((95000, "held"))
    assert seen[i + 1:i + 4] == [(95000, "refused")] * 3, seen
    assert set(seen[i + 4:]) == {(95000, "held")} and len(seen) >= i + 6, seen


def test_a_late_refusal_of_an_earlier_setpoint_is_not_taken_for_the_next_ones():
    # A slow board answers the step to REFUSED_AT only after bring-up stopped waiting (ECHO_S)
    # and sent the next: that refusal, of an earlier sequence number, says nothing of the newer
    # setpoint, which the board takes; the move goes on and ends held.
    jog, seen, stop = _move(refusals=1, late=True)
    assert stop is None, stop
    assert jog.q == [0, 95000, -90000, -90000]
    i = seen.index((REFUSED_AT, "refused"))
    assert seen[i + 1] == (94000, "held") and all(q >= 94000 for q, _ in seen[i + 1:]), seen
