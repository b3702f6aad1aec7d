# The virtual board's byte-stream pieces, without any interpreter: marker extraction across
# arbitrary chunk boundaries, REPL-mode tracking, line endings, listen-address policy, settings
# rendering, the board id kept with the flash, the registry of running boards.
import json
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from surepick.host.vboard import chip_id, control
from surepick.host.vboard.console import parse_listen
from surepick.host.vboard.runtime import render_settings
from surepick.host.vboard.stream import (FRIENDLY, FRIENDLY_BANNER, RAW, RAW_BANNER, LineEndings,
                                    MarkerFilter, ReplModeTracker, UntilBanner)


def mark(name):
    return b"\x1b_vboard:" + name.encode() + b"\x1b\\"


def run_filter(chunks):
    f = MarkerFilter()
    data, marks = b"", []
    for c in chunks:
        for kind, value in f.feed(c):
            if kind == "data":
                data += value
            else:
                marks.append(value)
    return data + f.flush(), marks


STREAM = (b"boot.py says hi\r\n" + mark("fs") + b"\x1b[1mbold\x1b[0m" + mark("booted")
          + b"x\x1b_not a marker" + b"\x1b" + mark("reset:soft") + b">>> \x1b")
PLAIN = b"boot.py says hi\r\n\x1b[1mbold\x1b[0mx\x1b_not a marker\x1b>>> \x1b"


@given(st.lists(st.integers(0, len(STREAM)), max_size=12))
def test_markers_come_out_whatever_the_chunking(cuts):
    cuts = sorted(set(cuts))
    chunks = [STREAM[a:b] for a, b in zip([0] + cuts, cuts + [len(STREAM)])]
    assert run_filter(chunks) == (PLAIN, ["fs", "booted", "reset:soft"])


def test_an_unterminated_marker_start_is_just_output():
    junk = b"\x1b_vboard:" + b"y" * 100 + b"\r\n"
    assert run_filter([junk]) == (junk, [])


def test_only_a_possible_marker_start_is_held_back():
    f = MarkerFilter()
    assert f.feed(b"abc\x1b_vb") == [("data", b"abc")]
    assert f.holding
    assert f.feed(b"x") == [("data", b"\x1b_vbx")]
    assert not f.holding


def test_repl_mode_follows_the_last_banner_even_split():
    t = ReplModeTracker()
    assert t.mode == FRIENDLY
    t.feed(b"\r\n" + RAW_BANNER[:7])
    t.feed(RAW_BANNER[7:] + b">")
    assert t.mode == RAW
    t.feed(b"OK\x04\x04>\r\nMicroPython v1; linux\r\n" + FRIENDLY_BANNER[:5])
    t.feed(FRIENDLY_BANNER[5:] + b">>> ")
    assert t.mode == FRIENDLY
    t.feed(RAW_BANNER + b">")
    t.reset()
    assert t.mode == FRIENDLY


def test_until_banner_swallows_the_friendly_repl_it_walks_through():
    u = UntilBanner(RAW_BANNER)
    out = u.feed(b"MicroPython ...\r\n" + FRIENDLY_BANNER + b">>> \r\nraw REPL; CTR")
    out += u.feed(b"L-B to exit\r\n>")
    assert out == RAW_BANNER + b">" and u.done
    assert u.feed(b"OK") == b"OK"


def test_listen_addresses_are_loopback_unless_allowed():
    assert parse_listen("127.0.0.1:0") == ("127.0.0.1", 0)
    assert parse_listen(":4000") == ("127.0.0.1", 4000)
    assert parse_listen("4000") == ("127.0.0.1", 4000)
    assert parse_listen("[::1]:5") == ("::1", 5)
    with pytest.raises(ValueError, match="allow-remote"):
        parse_listen("0.0.0.0:4000")
    assert parse_listen("0.0.0.0:4000", allow_remote=True) == ("0.0.0.0", 4000)
    with pytest.raises(ValueError):
        parse_listen("127.0.0.1:http")


def test_settings_are_micropython_literals():
    text = render_settings({"PLANT": ("127.0.0.1", 4000), "SEED": None, "BOOT_KIND": "soft"})
    assert "PLANT = ('127.0.0.1', 4000, )" in text and "SEED = None" in text
    with pytest.raises(TypeError):
        render_settings({"X": 1.5})
    with pytest.raises(ValueError):
        render_settings({"lower": 1})


# -- line endings: CR LF as a Pico's cooked stdout sends them ---------------------------------

def chunked(data, cuts):
    cuts = sorted(set(c for c in cuts if 0 < c < len(data)))
    return [data[a:b] for a, b in zip([0] + cuts, cuts + [len(data)])]


TEXT = st.lists(st.sampled_from([b"a", b"\n", b"\r", b"\r\n", b">>> ", b"\x04", b"\xff"]),
                max_size=30).map(b"".join)


@given(TEXT, st.lists(st.integers(0, 60), max_size=8))
def test_every_bare_lf_becomes_cr_lf_whatever_the_chunking(text, cuts):
    eol = LineEndings()
    out = b"".join(eol.feed(c) for c in chunked(text, cuts))
    assert out == re.sub(rb"(?<!\r)\n", b"\r\n", text)   # the rule, stated independently


@given(st.lists(st.integers(0, 60), max_size=8))
def test_a_marked_frame_keeps_its_bare_lf(cuts):
    # REPL text, then a frame the HAL marked (its LF as written), then text again
    eol = LineEndings()
    out = eol.feed(b"x\ny")
    eol.raw_line()
    stream = b"\x1eSP1T,1,2*0A0B0C0D\nok\n"
    out += b"".join(eol.feed(c) for c in chunked(stream, cuts))
    assert out == b"x\r\ny\x1eSP1T,1,2*0A0B0C0D\nok\r\n"


def test_from_a_can_byte_on_the_stream_is_binary_until_the_boot_ends():
    # mpremote's mount protocol: CAN, a command byte, then binary arguments both ways
    eol = LineEndings()
    assert eol.feed(b"mounted\n\x18\x03\n\x00\n") == b"mounted\r\n\x18\x03\n\x00\n"
    assert eol.feed(b"later\n") == b"later\n"
    assert LineEndings().feed(b"later\n") == b"later\r\n"      # the next boot's


# -- the board id kept with the flash ------------------------------------------------------------

def test_one_flash_directory_is_one_board_id(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    first = chip_id.unique_id(a)
    assert re.fullmatch("5642[0-9a-f]{12}", first)           # 8 bytes, "VB" first
    assert chip_id.unique_id(a) == first                        # read back, not made again
    assert chip_id.unique_id(b) != first
    assert json.loads((a / ".vboard-chip").read_text()) == {"unique_id": first}


def test_a_damaged_chip_file_is_refused_not_replaced(tmp_path):
    (tmp_path / ".vboard-chip").write_text("{not json")
    with pytest.raises(ValueError, match="damaged.*delete it"):
        chip_id.unique_id(tmp_path)
    assert (tmp_path / ".vboard-chip").read_text() == "{not json"


# -- the registry of running boards ------------------------------------------------------------

def test_a_board_is_found_by_any_spelling_of_its_console(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    reg = control.Registration({"console": ["socket://127.0.0.1:4711", "/dev/pts/9"],
                                "control": "127.0.0.1:4712"})
    try:
        for port in ("socket://127.0.0.1:4711", "socket://localhost:4711", "/dev/pts/9"):
            assert control.find_board(port)["control"] == "127.0.0.1:4712"
        for port in ("socket://127.0.0.1:4713", "/dev/pts/10", "socket://10.0.0.1:4711"):
            with pytest.raises(control.ControlError, match="no virtual board is serving"):
                control.find_board(port)
    finally:
        reg.remove()
    with pytest.raises(control.ControlError):
        control.find_board("/dev/pts/9")


def test_an_entry_of_a_dead_process_is_dropped(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    d = control.registry_dir()
    d.mkdir(parents=True)
    dead = d / "999999999-1.json"
    dead.write_text(json.dumps({"pid": 999999999, "console": ["/dev/pts/3"], "control": "x:1"}))
    assert control.running_boards() == []
    assert not dead.exists()


# -- Ctrl-C while the interpreter is still starting ------------------------------------------

class _Interp:
    # What InterpreterLifetime asks of an Interpreter, recorded (the real one is exercised end to end in
    # test_vboard_mpremote.py and tests/host/deploy).
    def __init__(self):
        self.inq = bytearray()
        self.log = []
        self.cpu = 5.0          # its CPU time, s

    def cpu_s(self):
        return self.cpu

    def flush_input(self):
        self.log.append(("flush", bytes(self.inq)))
        self.inq.clear()

    def interrupt(self):
        self.log.append(("sigint", bytes(self.inq)))

    def interrupt_enabled(self):
        return False


def test_a_ctrl_c_while_starting_raw_drops_what_came_before_and_keeps_what_came_after():
    # mpremote right after a soft reboot into the raw REPL (boot.py only): "\r\x03" (stop the
    # program), then "\r\x01" (raw REPL). The interrupt waits for the flash to be mounted; the
    # Ctrl-A must survive it.
    from surepick.host.vboard.lifetime import InterpreterLifetime
    interp = _Interp()
    s = InterpreterLifetime(interp, RAW, ReplModeTracker())
    s.client_input(b"junk\r\x03")
    s.client_input(b"\r\x01")
    assert interp.log == [("flush", b"")]            # raw: what comes waits for the banner
    s.output(mark("fs"))
    assert interp.log[1:] == [("sigint", b"")]


def test_a_ctrl_c_while_starting_for_main_py_is_a_byte_for_its_loop():
    # The same right after a soft reboot that runs main.py: what came before goes, the Ctrl-C
    # waits as a byte for the loop's first tick, the Ctrl-A after it.
    from surepick.host.vboard.lifetime import InterpreterLifetime
    interp = _Interp()
    s = InterpreterLifetime(interp, FRIENDLY, ReplModeTracker())
    s.client_input(b"junk\r\x03")
    s.client_input(b"\r\x01")
    assert interp.log == [("flush", b"junk\r")]
    assert bytes(interp.inq) == b"\x03\r\x01"
    interp.cpu += 0.08                               # the boot
    s.output(mark("fs") + mark("booted") + mark("loop"))
    s.check_ctrl_c()
    interp.cpu += 0.01
    s.output(mark("stop"))                           # the loop read the Ctrl-C
    assert s.sigints == 0 and s.ctrl_c_wait() is None


# -- Ctrl-C to the firmware's running loop: a byte, and a SIGINT only when it is not read -----

def _looping(monkeypatch, clock):
    # A lifetime whose interpreter runs the firmware's loop ("loop" marker inside the boot step).
    from surepick.host.vboard import lifetime
    monkeypatch.setattr(lifetime.time, "monotonic", lambda: clock[0])
    interp = _Interp()
    s = lifetime.InterpreterLifetime(interp, FRIENDLY, ReplModeTracker())
    s.output(mark("fs") + mark("booted") + mark("loop"))
    return s, interp


def test_a_ctrl_c_to_the_loop_is_a_byte_after_what_came_before_is_dropped(monkeypatch):
    clock = [100.0]
    s, interp = _looping(monkeypatch, clock)
    interp.inq += b"half a li"
    s.client_input(b"ne\r\x03\x03\r\x01")       # mpremote: stop the program, then the raw REPL
    assert interp.log == [("flush", b"half a line\r")]
    assert bytes(interp.inq) == b"\x03\r\x01"      # one Ctrl-C (the second came with it)
    assert s.ctrl_c_wait() is not None
    clock[0] += 0.5
    interp.cpu += 0.05
    s.check_ctrl_c()
    s.output(mark("stop"))                          # the loop read it: its shutdown runs
    clock[0] += 0.5
    s.check_ctrl_c()
    assert s.ctrl_c_wait() is None and s.sigints == 0 and [e[0] for e in interp.log] == ["flush"]
    assert not s.loop_reads_ctrl_c                  # it stops (its shutdown runs)
    clock[0] += 1.0
    s.client_input(b"\x03")                        # another: it waits out the boot budget
    assert interp.log[-1][0] == "flush" and bytes(interp.inq) == b"\x03"
    assert s.ctrl_c_wait() is not None and s.sigints == 0


@pytest.mark.parametrize("how", ["cpu", "wall"])
def test_a_ctrl_c_byte_the_loop_does_not_read_becomes_a_sigint(monkeypatch, how):
    # The loop hangs in code that never reads the console (cpu: it runs; wall: it waits).
    from surepick.host.vboard import lifetime
    clock = [100.0]
    s, interp = _looping(monkeypatch, clock)
    s.client_input(b"\x03")
    step = 0.01
    waited = 0.0
    while not any(e[0] == "sigint" for e in interp.log):
        assert waited < 10, "no SIGINT after %.1f s" % waited
        clock[0] += step
        waited += step
        if how == "cpu":
            interp.cpu += step
        s.check_ctrl_c()
    limit = lifetime._BYTE_CPU_S if how == "cpu" else lifetime._BYTE_WALL_S
    assert limit - step / 2 < waited < limit + 2 * step      # as soon as it is past the limit
    assert s.sigints == 1 and s.ctrl_c_wait() is None


def test_a_ctrl_c_before_the_loop_waits_for_the_boot_then_is_a_sigint(monkeypatch):
    # main.py runs but no loop says it reads (a main.py of the user's own that never reads the
    # console): the byte waits out the boot's CPU budget, then a SIGINT stops it.
    from surepick.host.vboard import lifetime
    clock = [100.0]
    monkeypatch.setattr(lifetime.time, "monotonic", lambda: clock[0])
    interp = _Interp()
    s = lifetime.InterpreterLifetime(interp, FRIENDLY, ReplModeTracker())
    s.output(mark("fs") + mark("booted"))
    s.client_input(b"\x03")
    interp.cpu += lifetime._BOOT_CPU_S * 0.9
    clock[0] += 0.5
    s.check_ctrl_c()
    assert s.sigints == 0                            # still booting, as far as anyone can tell
    interp.cpu += lifetime._BOOT_CPU_S * 0.2
    clock[0] += 0.5
    s.check_ctrl_c()
    assert interp.log[-1][0] == "sigint" and s.sigints == 1


def test_a_ctrl_c_byte_is_done_with_when_main_py_ends():
    # main.py ended before reading it (or at it, without a loop): the REPL reads it at its prompt.
    from surepick.host.vboard import lifetime
    interp = _Interp()
    s = lifetime.InterpreterLifetime(interp, FRIENDLY, ReplModeTracker())
    s.output(mark("fs") + mark("booted"))
    s.client_input(b"\x03")
    s.output(mark("repl"))
    interp.cpu += 10
    s.check_ctrl_c()
    assert s.sigints == 0 and s.ctrl_c_wait() is None and bytes(interp.inq) == b"\x03"


def test_at_the_repl_a_ctrl_c_is_the_byte_or_a_sigint_while_code_runs():
    from surepick.host.vboard import lifetime
    interp = _Interp()
    s = lifetime.InterpreterLifetime(interp, FRIENDLY, ReplModeTracker())
    s.output(mark("fs") + mark("booted") + mark("repl"))
    s.client_input(b"\x03")
    assert bytes(interp.inq) == b"\x03" and interp.log == []       # at the prompt
    interp.interrupt_enabled = lambda: True                          # code runs
    s.client_input(b"\x03")
    assert interp.log[-1][0] == "sigint"
