# Random and mutated lines into the RUNNING firmware's command parser under the real
# `micropython`: firmware/app.py's own main loop (App.run) on the scripted stand-in HAL
# (firmware/hal/scripted.py, virtual time), the lines fed through its console input one after the
# other, at most link_rx_bytes per tick as on the board.
#
# What each line must get comes from an independent oracle (tests/support/link_oracle.py, written
# from docs/protocol.md's rules, never from firmware/cmdparse.py or shared_fsm/link.py), and the
# board's replies are decoded by that oracle too. Only deterministic things are checked: every
# bad line gets exactly the error REPLY the document prescribes (or silence), nothing starts, no
# handler fails, each line costs exactly the ticks its bytes need at 32 bytes a tick, and
# the loop keeps ticking and talking (telemetry on time, a STATUS at the end answered). How long
# a tick that takes a line lasts is a speed figure: tools/bench/cmdfuzz_timing.py measures it.
import math
import random
import subprocess

import pytest

from tests.conftest import REPO
from tests.support import link_oracle as oracle
from tests.support import mpy as host_helpers

pytestmark = pytest.mark.skipif(host_helpers.micropython() is None, reason="no micropython")

RX_BYTES = 32             # link_rx_bytes, the firmware's default: request bytes read per tick
TELEMETRY_MS = 100        # telemetry_hz 10
STATUS_ID = 9999
CATS = ("mutated", "bad_fields", "echo", "text", "random", "overlong", "version", "cut_short")
PRINTABLE = bytes(range(0x20, 0x7F))

# Runs under micropython: the firmware's App on the stand-in HAL, fed from the lines file. After
# each line it writes "<ticks the line took> <hex of everything the board wrote meanwhile>"; at
# the end "RESULT name value" lines. Nothing here forces a GC or feeds a line twice.
HARNESS = r'''
import os
import sys
from surepick.shared_fsm import link
from surepick.shared_fsm.config import Config
from surepick.firmware.hal.scripted import ScriptedHal, StopRun
from surepick.firmware import app as app_mod
from checks import result

lines = open(sys.argv[1], "rb")
out = open(sys.argv[3], "w")
hal = ScriptedHal(Config(), {})
a = app_mod.App(hal, root=sys.argv[2])
hal.out = a.m.out
st = {"busy": 0, "ticks": 0, "line_ticks": 0, "not_idle": 0, "tail": 0, "status": 0,
      "t0": -1, "t1": -1, "after": b""}


def take_output():
    b = bytes(hal.console_out)
    hal.console_out = bytearray()
    return b


def on_tick(h):
    if a.stats.ticks == 0:
        return                        # still booting (its sense loop sleeps): lines wait
    st["ticks"] += 1
    if a.m.state != 0 or a.m.fault or a.busy() or a.cal is not None or a.rescue_op is not None \
            or a.hil is not None:
        st["not_idle"] += 1
    if st["busy"]:
        st["line_ticks"] += 1
        if h.in_pos < len(h.console_in):
            return
        # the line's last byte was read in this tick: its answer, if any, is out
        out.write("%d %s\n" % (st["line_ticks"], take_output().hex()))
        st["busy"] = 0
    if st["tail"]:
        st["tail"] -= 1
        if st["tail"] == 0:
            st["after"] = take_output()
            raise StopRun()
        return
    line = lines.readline()
    if not line:
        if not st["status"]:
            st["t1"] = h.ticks_ms()
            st["status"] = 1
            take_output()
            h.send(link.request(link.T_STATUS, 9999))
            st["tail"] = 50
        return
    if st["t0"] < 0:
        st["t0"] = h.ticks_ms()
        take_output()                 # HELLO and what came before the first line
    st["line_ticks"] = 0
    st["busy"] = 1
    h.send(line)


hal.on_tick = on_tick
try:
    a.run()
except StopRun:
    pass
out.close()
result("ticks", st["ticks"])
result("not_idle", st["not_idle"])
result("rx_lines", a.rx_lines)
result("reader_overlong", a.reader.overlong)
result("virtual_ms", (st["t1"] - st["t0"]) & 0x3FFFFFFF)
result("flash_files", len([n for n in os.listdir(sys.argv[2]) if n != "log"]))
print("STATUS_OUT " + st["after"].hex())
print("END")
'''


# ---- the lines: built with the oracle's own framing, never with the firmware's encoder ----

def _token(rng):
    first = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_."
    rest = first + "0123456789-"
    n = 1 + rng.randrange(oracle.TOKEN_MAX)
    return (rng.choice(first) + "".join(rng.choice(rest) for _ in range(n - 1))).encode()


def _value(rng, spec):
    if spec == oracle.TOKEN:
        return _token(rng)
    lo, hi = spec
    r = rng.randrange(6)
    v = lo if r == 0 else hi if r == 1 else rng.randint(max(lo, -9), min(hi, 9)) if r == 2 \
        else rng.randint(lo, hi)
    return b"%d" % v


def valid_request(rng):
    letter = rng.choice(sorted(oracle.REQUESTS))
    _, specs, optional = oracle.REQUESTS[letter]
    specs = specs[:len(specs) - rng.randrange(optional + 1)]
    fields = [b"%d" % rng.randint(*oracle.RID)] + [_value(rng, s) for s in specs]
    return oracle.frame(b"SP1" + letter.encode() + b"," + b",".join(fields))


def board_frame(rng):
    # A CRC-valid frame of a board -> host type, as an echoing terminal would send back.
    letter = rng.choice(oracle.BOARD_TYPES)
    fields = [b"%d" % rng.randrange(1000) for _ in range(1 + rng.randrange(14))]
    return oracle.frame(b"SP1" + letter.encode() + b"," + b",".join(fields))


def mutate(rng, b):
    # 1-3 edits after the RS: bit flip, byte replace, delete, insert, truncate
    for _ in range(1 + rng.randrange(3)):
        r = rng.randrange(5)
        i = 1 + rng.randrange(len(b) - 1)
        if r == 0:
            b = b[:i] + bytes([b[i] ^ (1 << rng.randrange(8))]) + b[i + 1:]
        elif r == 1:
            b = b[:i] + bytes([rng.randrange(256)]) + b[i + 1:]
        elif r == 2 and len(b) > 2:
            b = b[:i] + b[i + 1:]
        elif r == 3:
            b = b[:i] + bytes([rng.randrange(256)]) + b[i:]
        else:
            b = b[:max(i, 2)]
    return b


def make_line(rng, cat):
    # -> one line WITHOUT its LF
    if cat == 0:
        return mutate(rng, valid_request(rng))
    if cat == 1:
        letter = rng.choice(sorted(oracle.REQUESTS))
        n = len(oracle.REQUESTS[letter][1])
        r = rng.randrange(3)
        tail = b",1" * (n + 1) if r == 0 else b",70000" if r == 1 else b",007"
        return oracle.frame(b"SP1%s,%d%s" % (letter.encode(), rng.randint(*oracle.RID), tail))
    if cat == 2:
        return board_frame(rng)
    if cat == 3:
        return bytes(rng.choice(PRINTABLE) for _ in range(rng.randrange(120)))
    if cat == 4:
        raw = rng.randbytes(rng.randrange(300))
        return (b"\x1e" + raw) if rng.randrange(2) else raw
    if cat == 5:
        return b"\x1eSP1p," + bytes(rng.choice(PRINTABLE) for _ in range(260 + rng.randrange(400)))
    if cat == 6:
        return oracle.frame(b"SP%dp,%d" % (2 + rng.randrange(8), rng.randint(*oracle.RID)))
    good = valid_request(rng)
    cut = good[:1 + rng.randrange(len(good) - 1)]
    return cut + (b"\x1eSP1" if rng.randrange(2) else b"")


def make_lines(seed, count):
    # Ctrl-C (0x03) is left out on purpose: it interrupts the program (mpremote's takeover).
    rng = random.Random(seed)
    out, made = [], [0] * len(CATS)
    while len(out) < count:
        cat = rng.randrange(len(CATS))
        line = make_line(rng, cat).replace(b"\n", b"\x0b").replace(b"\x03", b"\x02")
        if oracle.judge(line)[0] == oracle.OK:
            continue                                   # a mutation that happens to be valid
        out.append(line)
        made[cat] += 1
    return out, made


def run_fuzz(tmp_path, seed, count):
    lines, made = make_lines(seed, count)
    src = tmp_path / "lines.bin"
    src.write_bytes(b"".join(l + b"\n" for l in lines))
    harness = tmp_path / "fw_cmdfuzz_run.py"
    harness.write_text(HARNESS)
    flash = tmp_path / "flash"
    flash.mkdir()
    res_path = tmp_path / "answers.txt"
    proc = subprocess.run(
        [host_helpers.micropython(), str(harness), str(src), str(flash), str(res_path)],
        cwd=str(REPO), env=host_helpers.env(), capture_output=True, timeout=900)
    text = proc.stdout.decode()
    assert proc.returncode == 0 and "END" in text, proc.stderr.decode()[-3000:] + text[-2000:]
    res = host_helpers.results(text)
    status_out = bytes.fromhex(text.split("STATUS_OUT ", 1)[1].split()[0])
    got = []
    for row in res_path.read_text().splitlines():
        ticks, _, hexed = row.partition(" ")
        got.append((int(ticks), oracle.board_frames(bytes.fromhex(hexed))))
    return lines, made, res, got, status_out


def check(lines, res, got, status_out):
    assert len(got) == len(lines)                     # every line was read by the loop
    wrong, slow, telemetry = [], [], 0
    for i, (line, (ticks, frames)) in enumerate(zip(lines, got)):
        code, rid = oracle.judge(line)
        replies = [(int(f[0]), int(f[1])) for t, f in frames if t == "R"]
        telemetry += sum(1 for t, _ in frames if t == "T")
        want = [] if code in oracle.SILENT else [(rid, code)]
        if replies != want:
            wrong.append((i, line[:60], replies, want))
        # bounded work: the loop reads its 32 bytes a tick and stops at the LF, no more, no less
        if ticks != math.ceil((len(line) + 1) / RX_BYTES):
            slow.append((i, len(line), ticks))
    assert not wrong, wrong[:10]
    assert not slow, slow[:10]
    assert res["not_idle"] == 0                       # no bad line started anything
    assert res["flash_files"] == 0                    # no job marker, no config written
    # the loop kept its telemetry schedule the whole time (one frame per 100 ms of its clock)
    assert abs(telemetry - res["virtual_ms"] // TELEMETRY_MS) <= 1, (telemetry, res["virtual_ms"])
    # and still answers a good request after all that: one TELEMETRY, then the REPLY
    end = oracle.board_frames(status_out)
    at = [i for i, (t, f) in enumerate(end) if t == "R" and int(f[0]) == STATUS_ID]
    assert len(at) == 1 and at[0] > 0 and end[at[0] - 1][0] == "T", end
    assert int(end[at[0]][1][1]) == oracle.OK, end


def show(lines, made, res, got):
    answered = sum(1 for _, frames in got if any(t == "R" for t, _ in frames))
    print("\nlines by kind: %s" % dict(zip(CATS, made)))
    print("answered %d, silent %d (each as docs/protocol.md prescribes); loop ticks %d, "
          "virtual %d ms" % (answered, len(got) - answered, res["ticks"], res["virtual_ms"]))


def test_oracle_agrees_with_the_documents_examples():
    # docs/protocol.md's two example frames, and one of each silent kind
    assert oracle.judge(b"\x1eSP1p,7*9E212D04") == (oracle.OK, 7)
    assert oracle.judge(b"\x1eSP1p,7*9E212D04\r") == (oracle.OK, 7)
    assert oracle.judge(b"\x1eSP1E,1,2,3,4,5,6,7,8,1,-10,0,3*1EBC9026")[0] == oracle.DIRECTION
    assert oracle.judge(b">>> print(1)")[0] == oracle.NOT_FRAME
    assert oracle.judge(b"\x1eSP1p,7*9e212d04") == (oracle.CRC, 0)
    assert oracle.judge(b"\x1eSP1p,0*" + oracle.crc_hex(b"SP1p,0")) == (oracle.RANGE, 0)
    assert oracle.judge(oracle.frame(b"SP1z,12")) == (oracle.UNKNOWN_TYPE, 12)
    assert oracle.judge(oracle.frame(b"SP1s,12,1")) == (oracle.FIELD_COUNT, 12)


def test_running_firmware_takes_bad_lines(tmp_path):
    lines, made, res, got, status_out = run_fuzz(tmp_path, 20240607, 1500)
    check(lines, res, got, status_out)
    show(lines, made, res, got)


@pytest.mark.slow
def test_running_firmware_takes_10k_bad_lines(tmp_path):
    lines, made, res, got, status_out = run_fuzz(tmp_path, 20241201, 10000)
    check(lines, res, got, status_out)
    show(lines, made, res, got)
