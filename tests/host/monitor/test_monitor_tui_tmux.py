# The live view in a real pseudo-terminal: `surepick monitor` under tmux (120x40) against the
# stand-in board, captured with `tmux capture-pane` while a job is running.
import os
import shutil
import subprocess
import time

import pytest

from tests.support.cli import SUREPICK_BIN as SUREPICK
from tests.support.monitor import free_port, start_board

# The live view sizes itself from its terminal, not from the COLUMNS/LINES pytest-xdist sets.
TERMINAL_ENV = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")


def test_live_view_shows_state_and_counters_of_a_running_job(tmp_path):
    flash = tmp_path / "flash"
    flash.mkdir()
    port = free_port()
    b = start_board(flash, port, "--name-in-ping", "--step-ms", "150", "--fault-every", "2")
    name = "surepick-test-%d" % port
    sock = str(tmp_path / "tmux.sock")   # a private tmux server: never touches the user's
    tmux = ["tmux", "-S", sock]
    db = tmp_path / "m.db"
    try:
        subprocess.run(tmux + ["new-session", "-d", "-s", name, "-x", "120", "-y", "40",
                               "stty size > %s/size.txt; %s monitor --port socket://127.0.0.1:%d --db %s --seconds 30"
                               % (tmp_path, SUREPICK, port, db)], check=True, timeout=10,
                       env=TERMINAL_ENV)
        # a fresh detached server may ignore -x/-y (window-size follows absent clients)
        subprocess.run(tmux + ["resize-window", "-t", name, "-x", "120", "-y", "40"], timeout=10)
        screen = ""
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            time.sleep(0.5)
            screen = subprocess.run(tmux + ["capture-pane", "-p", "-t", name], capture_output=True,
                                    text=True, timeout=10).stdout
            if "GRASP_FAILED" in screen and "running" in screen and "failed 1" in screen:
                break
        assert "board    fake-0001" in screen, screen
        assert any(s in screen for s in ("APPROACH", "DESCEND", "GRASP", "VERIFY", "LIFT",
                                         "TRANSFER", "PLACE", "IDLE")), screen
        assert "cycles   ok" in screen and "success" in screen, screen
        assert "loop     period 2000 us" in screen, screen
        assert "link        connected" in screen, screen
        assert "GRASP_FAILED" in screen, screen          # the faults table
        assert "corrupt 0" in screen, screen
    finally:
        subprocess.run(tmux + ["kill-server"], timeout=10)
        b.kill()
        b.wait()
