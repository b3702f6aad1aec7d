# Item 6 of the bench-day issue: work a person waits on shows progress in a terminal, and only
# there: the same command with its output captured (a CI log) prints its final summary and no
# bar or status line. Each verb runs on a real pseudo-terminal (tests/support/board_cli.py).
import re

import pytest

from surepick.shared_fsm import states
from tests.support.board_cli import in_terminal, running_board
from tests.support.cli import surepick
from tests.support.short_record import keep_first_ticks
from tests.support.needs import NEEDS_MICROPYTHON

BAR_CHARS = ("━", "\x1b[", "[K")


def test_batch_bar_counts_placed_faulted_false_and_ends_with_a_table(tmp_path):
    code, text = in_terminal("sim", "batch", "--scenario", "part_missing", "--count", "3", "--jobs", "2",
                             "--out", tmp_path / "b")
    assert code == 0, text
    counts = re.findall(r"placed (\d+)\s+faulted (\d+)\s+false (\d+)", text)
    assert counts and counts[-1] == ("0", "3", "0"), text      # part_missing: every cycle GRASP_FAILED
    assert "3/3" in text
    table = text[re.search(r"^scenario\s+runs\s+placed", text, re.M).start():]
    assert re.search(r"^part_missing\s+3\s+0\s+0\s+0\s+GRASP_FAILED 3$", table, re.M), table
    # the same batch with its output captured: the summary and the table, no bar
    r = surepick("sim", "batch", "--scenario", "part_missing", "--count", "3", "--jobs", "2", "--out", tmp_path / "c")
    assert r.returncode == 0
    assert not any(c in r.stdout + r.stderr for c in BAR_CHARS) and "faulted" not in r.stderr
    assert re.search(r"^part_missing\s+3\s+0\s+0\s+0\s+GRASP_FAILED 3$", r.stdout, re.M)
    assert r.stdout.splitlines()[-2].startswith("batch: 3/3 cycles")


@NEEDS_MICROPYTHON
def test_virtual_board_cycles_show_their_virtual_time(tmp_path):
    code, text = in_terminal("sim", "run", "--engine", "vboard", "--scenario", "nominal", "--out", tmp_path / "v")
    assert code == 0, text
    # How many refreshes a cycle gets depends on how fast the machine runs it (the line is redrawn
    # at most 8 times a second of wall time, the first at once); what each one says does not:
    # the cycle's virtual time, never past where the cycle ended, never going back, and a state
    # of the firmware's machine.
    seen = re.findall(r"cycle 1 of 1: (\d+\.\d) s of virtual time, firmware in (\w+)", text)
    assert seen, text
    ended = float(re.search(r"cycle 0: firmware placed, judge placed .*?, ([0-9.]+) s virtual in", text).group(1))
    times = [float(t) for t, _ in seen]
    assert times == sorted(times) and 0.0 <= times[0] and times[-1] <= ended, (times, ended)
    assert {s for _, s in seen} <= set(states.NAMES), text


@pytest.mark.slow
def test_fit_shows_its_evaluations_and_best_cost(tmp_path):
    r = surepick("sim", "run", "--scenario", "nominal", "--out", tmp_path / "run", "--no-plots", timeout=300)
    assert r.returncode == 0
    keep_first_ticks(tmp_path / "run")       # both groups still fitted; each evaluation 1.2 s, not the cycle
    code, text = in_terminal("fit", tmp_path / "run", "--out", tmp_path / "p.json", "--max-evals", "6")
    assert code == 0, text
    evals = re.findall(r"fit: (gripper|arm) group, evaluation (\d+) of at most 6, best cost ([0-9.e+-]+)", text)
    assert evals and {g for g, _, _ in evals} == {"gripper", "arm"}, text
    r = surepick("fit", tmp_path / "run", "--out", tmp_path / "q.json", "--max-evals", "6", timeout=300)
    assert r.returncode == 0 and "group, evaluation" not in r.stdout + r.stderr
    assert "evaluations in" in r.stdout


@NEEDS_MICROPYTHON
@pytest.mark.slow
def test_deploy_without_cache_shows_each_file_it_builds_and_hil_its_plant_time(tmp_path):
    with running_board(tmp_path / "flash", None) as port:
        code, text = in_terminal("deploy", "--no-cache", "--port", port)
        assert code == 0, text
        # the status line is redrawn a few times a second, so which files it catches (and how
        # many) depends on the machine's speed: the first at once, each one a file of the firmware
        built = re.findall(r"deploy: building (\d+)/(\d+) (\S+)", text)
        assert built, text
        numbers = [int(i) for i, _, _ in built]
        assert numbers == sorted(numbers) and len({n for _, n, _ in built}) == 1, text
        assert all(f.startswith("/lib/surepick/") or f == "/main.py" for _, _, f in built), text
        assert "0 from the cache" in text, text          # --no-cache compiled every module
        code, text = in_terminal("hil", "--port", port, "--scenario", "nominal", "--seed", "3")
        assert code == 0, text
        plant = [float(t) for t in re.findall(r"hil: (\d+\.\d) s of plant time, board in \w+", text)]
        ended_ms = int(re.search(r"(\d+) ms of plant time in [0-9.]+ s wall", text).group(1))
        # both shown to 0.1 s: rounding keeps the order
        assert plant and plant == sorted(plant) and plant[-1] <= round(ended_ms / 1000.0, 1), text
