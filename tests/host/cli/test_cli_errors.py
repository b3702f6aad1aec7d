# A verb that cannot do its job says so once: one line `surepick <verb>: <message>` on stderr,
# nothing on stdout, and the exit code of its kind (1 the board or the run failed, 2 bad
# input). Real verbs with real bad input, through the installed console script.
import os

import pytest

from surepick.host.link.ports import find_pico_ports
from tests.support.cli import surepick

NO_BOARD = "socket://127.0.0.1:1"    # nothing listens on port 1 (a privileged port)


def one_line(r, prefix):
    # The whole stderr is one line that starts with prefix; stdout is empty.
    assert r.stderr.endswith("\n") and r.stderr.count("\n") == 1, r.stderr
    assert r.stderr.startswith(prefix), r.stderr
    assert r.stdout == "", r.stdout
    return r.stderr


def test_compare_of_a_missing_directory_is_bad_input(tmp_path):
    r = surepick("compare", tmp_path / "nope", tmp_path / "nope2", "--out", tmp_path / "c")
    assert r.returncode == 2
    assert "not a run directory" in one_line(r, "surepick compare: %s" % (tmp_path / "nope"))
    assert not (tmp_path / "c").exists()


def test_replay_of_a_corrupt_record_is_bad_input(tmp_path):
    d = tmp_path / "run"
    d.mkdir()
    (d / "run.json").write_text('{"format": "surepick-run", "kind": ')      # cut short
    for name in ("cycles.jsonl", "events.csv", "ticks.csv"):
        (d / name).write_text("")
    r = surepick("replay", d)
    assert r.returncode == 2
    assert "run.json is not valid JSON" in one_line(r, "surepick replay: ")


@pytest.mark.parametrize("verb", [
    ("config", "get", "grasp_dwell_ms"),
    ("config", "set", "telemetry_hz", "5"),
    ("calibrate", "pot"),
    ("job", "status"),
    ("job", "start"),
    ("job", "abort"),
    ("deploy",),
    ("hil", "--scenario", "nominal"),
], ids=" ".join)
def test_a_verb_with_no_board_on_its_port_fails_with_one_line(verb):
    r = surepick(*verb, "--port", NO_BOARD, timeout=60)
    assert r.returncode == 1
    # Errors are named after what was run, actions included ("surepick job start: ...").
    prog = " ".join(verb[:2]) if verb[0] == "job" else verb[0]
    text = one_line(r, "surepick %s: no board on %s" % (prog, NO_BOARD))
    assert "Connection refused" in text


def test_a_missing_device_is_named(tmp_path):
    r = surepick("config", "get", "telemetry_hz", "--port", tmp_path / "ttyACM9")
    assert r.returncode == 1
    assert "the device does not exist" in one_line(r, "surepick config: no board on %s" % (tmp_path / "ttyACM9"))


@pytest.mark.skipif(bool(find_pico_ports()), reason="a Pico is plugged in: `auto` would find it")
@pytest.mark.parametrize("verb", [("monitor", "--seconds", "1"), ("job", "status"), ("deploy",)], ids=" ".join)
def test_auto_without_a_pico_is_one_clear_line(verb, tmp_path):
    # an empty runtime directory: no virtual board of another test is found either
    env = dict(os.environ, XDG_RUNTIME_DIR=str(tmp_path))
    r = surepick(*verb, "--port", "auto", timeout=60, env=env)
    assert r.returncode == 1
    assert "plug it in" in one_line(r, "surepick %s: no Raspberry Pi Pico found" % " ".join(verb[:1] if verb[0] != "job" else verb[:2]))


@pytest.mark.parametrize("args,prefix,needle", [
    (("config", "get", "telemetry_hz", "5", "--port", NO_BOARD), "surepick config: ", "`get` takes no VALUE"),
    (("config", "set", "telemetry_hz", "--port", NO_BOARD), "surepick config: ", "`set` needs a VALUE"),
    (("job",), "surepick job: ", "say what to do"),
    (("sim",), "surepick sim: ", "say what to do"),
    (("demo", "--scenario", "no_such"), "surepick demo: ", "unknown scenario 'no_such'"),
    (("fit", "--out", "x.json"), "surepick fit: ", "give a run directory"),
    (("log", "stats", "--db", "/nonexistent/m.db"), "surepick log stats: ", "no database at"),
])
def test_bad_input_is_exit_2_and_one_line(args, prefix, needle):
    r = surepick(*args, timeout=60)
    assert r.returncode == 2
    assert needle in one_line(r, prefix)


def test_a_bad_json_file_is_named_before_any_work(tmp_path):
    bad = tmp_path / "plant.json"
    bad.write_text("[1, 2]")
    r = surepick("sim", "run", "--scenario", "nominal", "--plant", bad, "--out", tmp_path / "o", timeout=60)
    assert r.returncode == 2
    assert "must hold a JSON object" in one_line(r, "surepick sim run: plant file %s" % bad)
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("verb", [("sim", "run", "--scenario", "nominal"),
                                  ("sim", "batch", "--scenario", "nominal", "--count", "2")], ids=" ".join)
def test_an_unusable_out_is_found_before_any_simulation(tmp_path, verb):
    blocker = tmp_path / "a_file"
    blocker.write_text("not a directory")
    r = surepick(*verb, "--out", blocker / "run", timeout=60)
    assert r.returncode == 2
    assert "Not a directory" in one_line(r, "surepick %s: cannot use --out %s" % (" ".join(verb[:2]), blocker / "run"))


@pytest.mark.parametrize("args", [("arm", "list"), ("sim", "scenarios")])
def test_a_reader_that_goes_away_ends_the_verb_quietly(args):
    # `surepick ... | head -1`: the reader closes the pipe. The verb stops as a pipe's writer does
    # (exit 141, 128 + SIGPIPE, as shells report it), with no traceback. The read end is closed
    # before the verb starts, so its first write finds the pipe broken on any machine.
    import subprocess
    from tests.support.cli import SUREPICK_BIN
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        r = subprocess.run([SUREPICK_BIN, *args], stdout=write_end, stderr=subprocess.PIPE, text=True,
                           timeout=120)
    finally:
        os.close(write_end)
    assert r.returncode == 141, r.stderr
    assert r.stderr == ""
