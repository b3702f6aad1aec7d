# The HIL frames of the shared link (shared_fsm/link.py): HIL_MODE and HIL_SENSORS (host ->
# board), HIL_ACT (board -> host). Self-checking like every frame; a bad sensor frame with a good
# CRC still names its id, so the board's error reply can be matched.
import binascii

from surepick.shared_fsm import link


def crc_frame(body):
    return b"\x1e" + body + b"*%08X\n" % (binascii.crc32(body) & 0xFFFFFFFF)


def test_sensor_frame_round_trips_and_names_its_fields():
    f = link.hil_sensors(7, 123456, 40000, 1200, 36404, link.HIL_PIN_SWITCH | link.HIL_PIN_BEAM)
    assert f == b"\x1eSP1y,7,123456,40000,1200,36404,6" + f[-10:]
    assert link.decode(f) == (link.OK, link.T_HIL_SENSORS, (7, 123456, 40000, 1200, 36404, 6))
    assert link.SCHEMA[link.T_HIL_SENSORS][3] == ("req_id", "t_ms", "pot_counts", "current_counts",
                                                  "rail_counts", "pins")


def test_act_frame_and_mode_request():
    act = (7, 1, 123456, 1500, 1500, 1500, 1500, 1833, 2, 0, 45, 2000)
    assert link.decode(link.encode(link.T_HIL_ACT, act)) == (link.OK, link.T_HIL_ACT, act)
    for mode in (link.HIL_OFF, link.HIL_LOCKSTEP, link.HIL_REALTIME):
        assert link.decode(link.request(link.T_HIL_MODE, 3, (mode,)))[2] == (3, mode)
    assert link.request(link.T_HIL_MODE, 3, (3,)) is None
    assert link.is_request(link.T_HIL_SENSORS) and not link.is_request(link.T_HIL_ACT)


def test_bad_sensor_frames_are_refused_with_their_id():
    for body, code in ((b"SP1y,9,1,2,3,4", link.E_FIELD_COUNT),
                       (b"SP1y,9,1,2,3,4,8", link.E_RANGE),         # pins are 3 bits
                       (b"SP1y,9,1,65536,3,4,0", link.E_RANGE),
                       (b"SP1y,9,-1,2,3,4,0", link.E_RANGE),
                       (b"SP1y,9,1,2,x,4,0", link.E_BAD_FIELD)):
        line = crc_frame(body)
        assert link.decode(line, True)[0] == code, body
        assert link.request_id_of(line) == 9
    assert link.check(link.T_HIL_SENSORS, (0, 1, 2, 3, 4, 0)) == link.E_RANGE   # ids start at 1


def test_largest_hil_frames_fit():
    big = (65535, (1 << 30) - 1, (1 << 30) - 1) + (65535,) * 5 + (255, 255, (1 << 30) - 1, (1 << 30) - 1)
    f = link.encode(link.T_HIL_ACT, big)
    assert f is not None and len(f) - 1 <= link.MAX_FRAME_LEN
