# What the board rejected from its flash at boot reaches the people who look: `surepick job status`
# and the monitor (status, plain output), against the real firmware on the virtual board (real
# micropython, the MuJoCo plant, the link over a loopback socket), with a hostile /config.json and
# /rest.json on its flash.
import io
import json
import time

from surepick.host.engines.world_service import WorldService
from surepick.host import rejects
from tests.support.vboard import deploy_firmware
from surepick.host.monitor.plain import PlainPrinter
from surepick.host.vboard import VirtualBoard
from tests.support.cli import surepick
from tests.support.monitor import Monitor, wait_until
from tests.support.needs import NEEDS_MICROPYTHON

pytestmark = NEEDS_MICROPYTHON

WANT = [("config", "bogus_key", "unknown"), ("config", "wdt_ms", "range"),
        ("rest", "joints_mdeg", "range")]


class PrintingMonitor(Monitor):
    # The threaded monitor loop of the monitor tests, printing as `surepick monitor --plain` does.
    def __init__(self, port, db):
        self.text = io.StringIO()
        self.printer = None
        super().__init__(port, db)

    def _out(self, kind, data):
        super()._out(kind, data)
        if self.printer is None:
            self.printer = PlainPrinter(self.status, out=self.text, err=io.StringIO())
        self.printer(kind, data)


def _hostile_flash(tmp_path):
    flash = tmp_path / "flash"
    flash.mkdir()
    deploy_firmware(flash)
    (flash / "config.json").write_text(json.dumps(
        {"version": 1, "board": {"wdt_ms": 1, "servo0_speed_dps": 40, "bogus_key": 7}, "machine": {}}))
    (flash / "rest.json").write_text('{"joints_mdeg": [999999999999, 0, 0, 0], "jaw_um": 30000}')
    return flash


def test_describe_reads_like_a_sentence():
    assert rejects.describe(("config", "wdt_ms", "range")) == "/config.json wdt_ms: out of range (default used)"
    assert rejects.describe(("config", "-", "utf8")) == \
        "/config.json: not UTF-8 (erased or torn flash) (defaults used)"
    assert rejects.describe(("rest", "joints_mdeg", "type")) == \
        "/rest.json joints_mdeg: not an integer (started at the home pose)"
    assert rejects.describe(("log", "seg00000001.log", "is_dir")) == \
        "/log seg00000001.log: a directory where a file belongs"
    assert rejects.from_hello(("b", "0.1.0", 1, 1, 2, 3)) == (None, None)       # older firmware
    assert rejects.from_hello(("b", "0.1.0", 1, 1, 2, 3, 0)) == (0, None)
    assert rejects.lines(0, []) == []
    assert rejects.lines(14, [("config", "x", "unknown")])[-1] == "  ... 13 more not listed"


def test_job_status_and_monitor_name_what_the_board_rejected(tmp_path):
    flash = _hostile_flash(tmp_path)
    with VirtualBoard(flash, world_service=WorldService("nominal", seed=1)) as board:
        port = board.address
        out = None
        for _ in range(80):       # until the firmware answers (it boots main.py from the flash)
            r = surepick("job", "status", "--port", port, timeout=60)
            if r.returncode == 0:
                out = r.stdout
                break
            time.sleep(0.25)
        assert out is not None, r.stdout + r.stderr
        assert out.startswith("state IDLE")
        assert "rejected at boot: 3 items" in out, out
        for item in WANT:
            assert "  " + rejects.describe(item) in out.splitlines(), out
        # the monitor: it joins after the boot (STATUS says 3), then sees the next boot's HELLO
        m = PrintingMonitor(port, str(tmp_path / "m.db"))
        text = m.text
        try:
            wait_until(lambda: m.status.snapshot()["rejects"] == WANT, 30, "the rejects list")
            assert m.status.snapshot()["rejected"] == 3 and text.getvalue().count("rejected board=") == 3
            board.hard_reset()
            wait_until(lambda: "rejected=3" in text.getvalue(), 60, "a HELLO")
            wait_until(lambda: text.getvalue().count("rejected board=") >= 6, 30, "the list again")
        finally:
            m.close()
    lines = text.getvalue().splitlines()
    hello = [l for l in lines if " hello " in l]
    assert hello and hello[-1].endswith("rejected=3"), lines
    listed = [l.split(" rejected board=")[1].split(" ", 1)[1] for l in lines if " rejected board=" in l]
    assert listed[-3:] == [rejects.describe(i) for i in WANT], lines
