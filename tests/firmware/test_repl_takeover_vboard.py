# Taking over the REPL on the virtual board, the way a human does: `mpremote resume exec` Ctrl-Cs
# the running firmware in the middle of a job (the part held, the arm carrying it) and runs code
# at the REPL. The e-stop must still be honoured (docs/safety.md, taking over the board): pressed in the
# plant (WorldService.inject("estop")), every servo freezes at the pulse it had at the press and
# stays there, whatever the REPL code writes. Checked from the plant's own exchange log (the
# pulses it was given, and the e-stop level it answered) and its physics (the part still held).
import json
import subprocess
import sys
import threading
import time
from pathlib import Path

from surepick.firmware import settings as fw_settings
from surepick.host import vboard
from surepick.host.engines.world_service import EXCHANGE_FIELDS, WorldService
from surepick.shared_fsm import link, states
from surepick.shared_fsm.config import FIELDS as CONFIG_FIELDS

from tests.support.needs import NEEDS_MICROPYTHON
from tests.support.vboard import Console, deploy_firmware, first_hello, hold_at_boot

pytestmark = NEEDS_MICROPYTHON

BIN = Path(sys.executable).parent
MPREMOTE = str(BIN / "mpremote") if (BIN / "mpremote").exists() else "mpremote"
F = {name: i for i, name in enumerate(EXCHANGE_FIELDS)}
PULSES = [F["p%d" % i] for i in range(5)]
GUARD_MS = 5              # hal/virtual.py: the guard's step after Ctrl-C, ms of real time
SWEPT_US = 40             # the e-stop is pressed once the sweep has moved the base this far (0.8 s)
PRESS_TIMEOUT_S = 20.0
SLOWER = 10               # the arm's speed divided by this for the test
# the setting's upper bound (shared_fsm/config.py): a tenth of the speed, ten times the move's time
MOVE_TIMEOUT_MS = next(f[3] for f in CONFIG_FIELDS if f[0] == "move_timeout_ms")

# REPL code that moves the base servo 1 us every 20 ms through the firmware's HAL for 3 s, as a
# human poking at the arm would; it prints what the HAL's base pulse reads before and after, then
# the four other servos' pulses as it found them (the REPL code writes none of them).
SWEEP = """\
import time
from surepick.firmware.hal import for_this_port
h = for_this_port()
found = [h.pulse_us(i) for i in range(5)]
p0 = found[0]
for i in range(150):
    h.set_pulse_us(0, p0 + i)
    time.sleep_ms(20)
print("SWEEP", p0, h.pulse_us(0), *found[1:])
"""


def _pulses(row):
    return tuple(row[i] for i in PULSES)


def _part_z_mm(ps):
    return ps.truth()["part_pos_mm"][2]


def test_estop_at_the_repl_freezes_the_servos_mid_transfer(tmp_path):
    deploy_firmware(tmp_path)
    # The arm at a tenth of its speed (a slow move's timeout to match), at a Pico's pace: TRANSFER
    # lasts long enough that the arm is still carrying the part when mpremote has stopped the
    # loop, however long mpremote takes to start on a loaded machine (seconds, measured).
    slow = fw_settings.Settings()
    slow.set("arm_speed_mdeg_s", fw_settings.Settings().cfg.arm_speed_mdeg_s // SLOWER)
    slow.set("move_timeout_ms", MOVE_TIMEOUT_MS)
    (tmp_path / fw_settings.PATH.lstrip("/")).write_text(json.dumps(slow.to_json_dict()))
    ps = WorldService("nominal", seed=7, realtime=True)
    log = ps.record()
    pick, place, width = ps.job_um()
    hold_at_boot(ps)
    with vboard.VirtualBoard(tmp_path, world_service=ps) as board:
        con = Console(board.address)
        try:
            assert first_hello(con, 99, 20)[0] is not None, con.tail()
            con.send(link.job(1, pick, place, width))
            ev = con.wait(lambda f: f.ftype == link.T_EVENT and f.fields[4] == states.TRANSFER, 180)
            assert ev is not None, con.tail()
        finally:
            con.close()                         # one client at a time: mpremote is next
        n_loop = len(log)
        press = {}

        def press_later():
            # Press once the REPL code has visibly swept the base (the plant's log: SWEPT_US on
            # from its pulse at the first guard step), not after a fixed wait: mpremote's own
            # start and Ctrl-C take a second or more of wall time on a loaded machine. Pressed
            # anyway after PRESS_TIMEOUT_S, so a sweep that never came fails the checks below.
            t_end = time.monotonic() + PRESS_TIMEOUT_S
            g = n_loop
            p0 = None
            while time.monotonic() < t_end:
                rows_now = list(log)
                if p0 is None:
                    while g < len(rows_now) and rows_now[g][F["advance_ms"]] < GUARD_MS:
                        g += 1
                    if g < len(rows_now):
                        p0 = rows_now[g][PULSES[0]]
                if p0 is not None and any(r[PULSES[0]] >= p0 + SWEPT_US for r in rows_now[g:]):
                    break
                time.sleep(0.01)
            press["row"] = len(log)
            press["z_mm"] = _part_z_mm(ps)
            ps.inject("estop", on=True)
        t = threading.Thread(target=press_later)
        t.start()
        out = subprocess.run([MPREMOTE, "connect", board.address, "resume", "exec", SWEEP],
                             capture_output=True, timeout=60)
        t.join()
        time.sleep(0.5)                         # the guard keeps the plant going meanwhile
        held_z = _part_z_mm(ps)
        rows = list(log)
    text = out.stdout.decode(errors="replace")
    assert out.returncode == 0 and "SWEEP" in text, (text, out.stderr.decode(errors="replace"))
    p_start, p_end, *found = (int(v) for v in text.split("SWEEP", 1)[1].split()[:6])

    # after Ctrl-C the loop's exchanges (2 ms each) end and the guard's go on (the bench in real
    # time, a step each 5 ms or more of wall time)
    guard = next(i for i in range(n_loop, len(rows)) if rows[i][F["advance_ms"]] >= GUARD_MS)
    after = rows[guard:]
    assert len(after) > 100, len(after)
    assert all(r[F["advance_ms"]] >= GUARD_MS for r in after[1:])     # no loop tick after Ctrl-C
    # until the REPL code ran, the servos held the pulses the loop last wrote: those the REPL code
    # found. The loop's last tick reads the Ctrl-C after its servo frame, so that frame's pulses
    # reach the plant only in the guard's first exchange: from the loop's last exchange to it no
    # servo moves further than the loop moved one between two of its own exchanges (nothing snaps)
    assert _pulses(after[0])[1:] == tuple(found), (_pulses(after[0]), found)
    loop_step = max((abs(a - b) for r0, r1 in zip(rows[n_loop:guard - 1], rows[n_loop + 1:guard])
                     for a, b in zip(_pulses(r0), _pulses(r1))), default=0)
    takeover_step = max(abs(a - b) for a, b in zip(_pulses(rows[guard - 1]), [p_start] + found))
    assert takeover_step <= loop_step, (_pulses(rows[guard - 1]), found, loop_step)
    first = next(i for i, r in enumerate(after) if r[F["flags"]] & 1)     # the plant's e-stop
    before, at, later = after[:first], after[first], after[first + 1:]
    # before the press the REPL code moved the base servo, and only it
    bases = [r[PULSES[0]] for r in before]
    assert max(bases) > min(bases) + 20, (min(bases), max(bases))
    assert len({_pulses(r)[1:] for r in before}) == 1
    # from the press on: every servo at the pulse it had at the press, through the rest of the
    # sweep (its writes refused) and after it, the e-stop read HIGH all along
    frozen = _pulses(at)
    assert len(later) > 50, len(later)
    moved = [r for r in later if _pulses(r) != frozen]
    assert not moved, (frozen, moved[:5])
    assert all(r[F["flags"]] & 1 for r in later)
    assert p_end == frozen[0] < p_start + 149, (p_start, p_end, frozen)   # the sweep was cut short
    # the jaw kept its grip: the part is still in the air where the press found it
    assert abs(held_z - press["z_mm"]) < 3.0 and held_z > 30.0, (press["z_mm"], held_z)
    print("\nTRANSFER began at board ms %d, the loop stopped at plant ms %d" % (ev.fields[1], rows[guard][F["now_ms"]]))
    print("Ctrl-C in TRANSFER; REPL code swept the base servo %d -> %d us; e-stop pressed: pulses "
          "frozen at %s us for %d exchanges (%d ms of plant time); part held at z %.1f -> %.1f mm"
          % (p_start, max(bases), list(frozen), len(later),
             later[-1][F["now_ms"]] - at[F["now_ms"]], press["z_mm"], held_z))
