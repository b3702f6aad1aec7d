# Bring-up reads the pot and the gripper's current as the mean of 1 s of the board's TELEMETRY by
# the board's own clock (its t_ms), from what it sends after the listen starts: a virtual board
# runs faster (or slower) than the wall, and what waited on the link from before (while a person
# looked at the arm) is not the reading now. The board is played by hand on a loopback socket:
# some frames wait before the listen, then a thread sends a frame every 5 ms of wall with its
# clock moving 100 ms each (a board twenty times faster than the wall).
import threading

from surepick.host.bringup.jog import LISTEN_MS, Jog
from surepick.host.link import hub_client
from surepick.host.link.client import LinkClient
from surepick.shared_fsm import link

from tests.support.hand_board import HandBoard

STEP_MS = 100
STALE, NOW = 111, 222          # pot_counts of the frames sent before the listen, and after


def _telemetry(t_ms, pot):
    return link.encode(link.T_TELEMETRY, (t_ms, 0, 0, 0, 0, 0, 0, pot, 10, 0, 0, 0, 5600, 0, 10000, 0, 0))


def test_a_reading_is_one_second_of_the_boards_clock_sent_after_it_starts():
    board = HandBoard()
    client = LinkClient(board.port, hub=hub_client.DIRECT).open()
    stop = threading.Event()
    try:
        board.accept()
        board.send(b"".join(_telemetry(t, STALE) for t in range(0, 2000, STEP_MS)))
        assert client.wait_for(link.T_TELEMETRY, 5.0) is not None      # they wait on the client's side

        def play():
            t = 50000
            while not stop.wait(0.005):
                board.send(_telemetry(t, NOW))
                t += STEP_MS
        player = threading.Thread(target=play, daemon=True)
        player.start()
        frames = Jog(client, 4200).listen_board()
    finally:
        stop.set()
        client.close()
        board.close()
    assert {f["pot_counts"] for f in frames} == {NOW}, frames                 # none from before
    span = frames[-1]["t_ms"] - frames[0]["t_ms"]
    assert LISTEN_MS <= span < LISTEN_MS + STEP_MS, span                        # 1 s of its clock, no more
    assert [b["t_ms"] - a["t_ms"] for a, b in zip(frames, frames[1:])] == [STEP_MS] * (len(frames) - 1)
