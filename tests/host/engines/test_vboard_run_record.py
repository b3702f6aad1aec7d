# The virtual-board run record (kind `virtual-board`, host/vboard_run.py): the firmware itself on
# the virtual board, written in the same format as a host sim run. Its ticks.csv is reconstructed
# from the raw readings the world service sent (the firmware's own drivers in a shadow board);
# the reconstruction must reproduce the firmware's pulses and EVENT frames, replay must reproduce
# the firmware's transitions, and a bad record must fail in the loader like a sim record does.
import csv
import json
import shutil
import subprocess
import sys

import pytest

from surepick.host.records import replay
from surepick.host.records import runrecord
from surepick.host.engines import vboard as vboard_run

from tests.support.broken_switch import break_switch_at_grasp
from tests.support.needs import NEEDS_MICROPYTHON
from tests.support.period import PERIOD_MS

pytestmark = NEEDS_MICROPYTHON

SUREPICK = [sys.executable, "-m", "surepick.host.cli.main"]


def _cli(args, timeout=300):
    return subprocess.run(SUREPICK + args, capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="module")
def vb(tmp_path_factory):
    # One nominal cycle through the CLI: `surepick sim run --engine vboard`.
    out = tmp_path_factory.mktemp("vb") / "nominal"
    r = _cli(["sim", "run", "--engine", "vboard", "--scenario", "nominal", "--seed", "4", "--out", str(out)])
    assert r.returncode == 0, r.stdout + r.stderr
    assert "kind virtual-board" in r.stdout
    return out


def _copy(src, dst):
    shutil.copytree(src, dst)
    return dst


def test_the_record_loads_and_says_what_it_is(vb):
    rec = runrecord.load(str(vb))
    m = rec.meta
    assert m["kind"] == "virtual-board" and m["scenario"] == "nominal" and m["seed"] == 4
    assert m["versions"]["firmware"] and m["model_hash"] and m["plant_params"]["pot"]
    assert set(m["config"]) >= {"loop_period_ms", "grasp_dwell_ms"}
    assert m["source"]["reconstruction"] == {"pulse_mismatches": 0, "events_equal": True}
    (c,) = rec.cycles
    assert c["outcome"] == "placed" and c["judge_outcome"] == "placed"
    assert c["reconstruction"]["pulse_mismatches"] == 0 and c["reconstruction"]["state_byte_mismatches"] == 0
    assert c["board_cal"]["current_offset_counts"] > 0 and c["job"]["t_ms"] > 0
    ticks = rec.cycle_ticks(0)
    assert len(ticks) > 10000 // PERIOD_MS          # over 10 s of loop ticks
    # every tick's pulses are the firmware's (no -1 left from the reconstruction)
    assert (ticks[:, runrecord.TICK_INDEX["pulse4_us"]] > 0).all()
    assert [runrecord.event_text(e) for e in rec.events[0]][-1] == "transition PLACE>IDLE PLACED"


def test_replay_of_a_virtual_board_run_reproduces_the_firmwares_transitions(vb):
    res = replay.replay(runrecord.load(str(vb)))
    assert all(r.identical() for r in res)
    # the recorded events are the firmware's EVENT frames: replay made exactly those decisions
    assert [e[1:] for e in res[0].events] == [e[1:] for e in res[0].recorded]
    r = _cli(["replay", str(vb)], timeout=120)
    assert r.returncode == 0 and "reproduced exactly" in r.stdout and "!!" not in r.stdout


def test_a_tampered_switch_column_diverges_at_the_verify_decision(vb, tmp_path):
    d = _copy(vb, tmp_path / "tampered")
    verify_t = break_switch_at_grasp(d)
    res = replay.replay(runrecord.load(str(d)))[0]
    assert not res.identical() and res.first_divergence_ms == verify_t


# ---- bad inputs: the same loader checks as a sim record, clear errors, exit 2 ----

def _refused(args, *words):
    r = _cli(args, timeout=120)
    assert r.returncode == 2, r.stdout + r.stderr
    assert "Traceback" not in r.stderr
    for w in words:
        assert w in r.stderr, r.stderr
    return r.stderr


def test_a_truncated_virtual_board_run_is_a_clear_error(vb, tmp_path):
    d = _copy(vb, tmp_path / "trunc")
    (d / "ticks.csv").unlink()
    with pytest.raises(runrecord.RunRecordError, match="missing ticks.csv"):
        runrecord.load(str(d))
    for verb in (["replay", str(d)], ["compare", str(vb), str(d), "--out", str(tmp_path / "c")],
                 ["fit", str(d), "--out", str(tmp_path / "p.json")]):
        _refused(verb, "incomplete run record", "ticks.csv")
    # ticks.csv cut in the middle of a line
    d2 = _copy(vb, tmp_path / "cut")
    body = (d2 / "ticks.csv").read_text()
    (d2 / "ticks.csv").write_text(body[:len(body) // 2])
    _refused(["replay", str(d2)], "ticks.csv", "truncated")


def test_a_virtual_board_csv_missing_a_column_is_named(vb, tmp_path):
    d = _copy(vb, tmp_path / "nocol")
    rows = list(csv.reader((d / "ticks.csv").open()))
    k = rows[0].index("current_ma")
    with (d / "ticks.csv").open("w", newline="") as f:
        csv.writer(f, lineterminator="\n").writerows([r[:k] + r[k + 1:] for r in rows])
    _refused(["replay", str(d)], "ticks.csv is missing column current_ma")
    d2 = _copy(vb, tmp_path / "noevcol")
    rows = list(csv.reader((d2 / "events.csv").open()))
    k = rows[0].index("reason")
    with (d2 / "events.csv").open("w", newline="") as f:
        csv.writer(f, lineterminator="\n").writerows([r[:k] + r[k + 1:] for r in rows])
    _refused(["compare", str(vb), str(d2), "--out", str(tmp_path / "c")], "events.csv is missing column reason")


def test_a_virtual_board_run_and_a_sim_run_of_another_scenario_do_not_compare(vb, tmp_path):
    other = tmp_path / "offset"
    r = _cli(["sim", "run", "--scenario", "part_offset", "--seed", "4", "--out", str(other), "--no-plots"])
    assert r.returncode == 0, r.stderr
    _refused(["compare", str(vb), str(other), "--out", str(tmp_path / "c")], "different scenarios")
    # and a cycle count that disagrees with run.json
    d = _copy(vb, tmp_path / "count")
    meta = json.loads((d / "run.json").read_text())
    meta["cycles"] = 2
    (d / "run.json").write_text(json.dumps(meta))
    _refused(["replay", str(d)], "cycles.jsonl has 1 cycles but run.json says 2")


def test_engine_vboard_refuses_an_unknown_scenario(tmp_path):
    _refused(["sim", "run", "--engine", "vboard", "--scenario", "no_such", "--out", str(tmp_path / "y")],
             "no_such")


def test_the_reconstruction_check_catches_a_record_that_is_not_the_firmwares(tmp_path):
    # Feed the shadow board other readings than the firmware got: its pulses stop matching.
    sc_values = None
    bc = vboard_run.VboardCycle("nominal", sc_values, 2, 0, None, tmp_path / "flash").run()
    good = vboard_run.reconstruct(bc, bc.settings)
    assert good["pulse_mismatches"] == 0
    i = vboard_run._I["pot"]
    bc.log = [e[:i] + (e[i] + (3000 if e[vboard_run._I["now_ms"]] > 2000 else 0),) + e[i + 1:] for e in bc.log]
    bad = vboard_run.reconstruct(bc, bc.settings)
    assert bad["pulse_mismatches"] > 0 or [e[1:] for e in bad["events"]] != [e[1:] for e in good["events"]]
