# `surepick job start` refused E_BUSY by a board whose rescue (or calibration) ends just then:
# the STATUS that follows says nothing runs, and the job is asked again instead of refused with
# "busy ... `surepick job abort`" (an abort then finds nothing to abort). A board still busy is
# refused once, in the words of the one look at it that found it busy. The board is played by hand on a real loopback socket
# and the real console script talks to it, so the order of the answers is the test's.
import os
import threading

import pytest

from surepick.shared_fsm import link, states

from tests.support.cli import surepick
from tests.support.hand_board import HandBoard


def _status(busy):
    # STATUS's fields (docs/protocol.md): state, fault, busy, boot_count, log_last_seq,
    # worst_step_us, boot_action, rejected, max_attempts
    return (states.IDLE, 0, busy, 1, 0, 0, 0, 0, 0)


def _play(board, status_busy, seen):
    # Answers every request: JOB with E_BUSY the first time and OK after, STATUS with `busy`.
    board.accept(10)
    jobs = 0
    try:
        while True:
            (ftype, fields), = board.requests(1, timeout=10)
            seen.append(ftype)
            if ftype == link.T_JOB:
                jobs += 1
                board.send(link.reply(fields[0], link.E_BUSY if jobs == 1 else link.OK))
            elif ftype == link.T_STATUS:
                board.send(link.encode(link.T_TELEMETRY, (9,) + (0,) * 16))
                board.send(link.reply(fields[0], link.OK, _status(status_busy)))
            else:
                board.send(link.reply(fields[0], link.OK))
    except (AssertionError, OSError):
        return                       # the tool hung up


@pytest.mark.parametrize("status_busy", [link.BUSY_NONE, link.BUSY_RESCUE])
def test_a_job_refused_busy_is_asked_again_only_when_the_board_says_nothing_runs(status_busy):
    board = HandBoard()
    seen = []
    t = threading.Thread(target=_play, args=(board, status_busy, seen), daemon=True)
    t.start()
    try:
        r = surepick("job", "start", "--port", board.port, timeout=60,
                     env=dict(os.environ, SUREPICK_HUB="off"))
    finally:
        t.join(15)
        board.close()
    jobs = seen.count(link.T_JOB)
    if status_busy == link.BUSY_NONE:
        assert r.returncode == 0 and "job accepted" in r.stdout, r.stdout + r.stderr
        assert jobs == 2, seen
    else:
        assert r.returncode == 1 and jobs == 1, (seen, r.stdout + r.stderr)
        # its words come from the one look that decided (a second look could find it ended)
        assert seen.count(link.T_STATUS) == 1, seen
        assert "rescue is moving the arm" in r.stderr and "job abort" in r.stderr, r.stderr
