# The virtual board's byte-stream pieces, without any interpreter: marker extraction across
# arbitrary chunk boundaries, REPL-mode tracking, listen-address policy, settings rendering.
import pytest
from hypothesis import given
from hypothesis import strategies as st

from surepick.vboard.console import parse_listen
from surepick.vboard.runtime import render_settings
from surepick.vboard.stream import (FRIENDLY, FRIENDLY_BANNER, RAW, RAW_BANNER,
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
