# A sweep's tables and pictures from cycles written out by hand (counts worked out here, not by
# the code under test): cells.csv's columns and content, the Wilson interval against published
# values, the envelope rule, which failing cycle a cell's drill-down re-runs, the heat maps and
# the HTML grid's links, and the compare of two sweeps (cells in, cells out, exit code).
import csv
import json
import random

import pytest

from surepick.host.engines.sweep import make_plan
from surepick.host.engines.sweep_run import SweepRun
from surepick.host.records import envelope, envelope_compare, envelope_plot
from tests.support.cli import surepick


def _r(cell, seed, outcome="placed", fault=None, judge=None, attempts=1):
    # One cycle's result as results.jsonl holds it.
    fsm = "placed" if outcome == "placed" else ("fault" if fault else outcome)
    judge = judge or ("placed" if outcome == "placed" else "not_picked")
    return {"cell": cell, "seed": seed, "fsm_outcome": fsm, "fsm_fault": fault, "fault_state": "VERIFY" if fault else None,
            "attempts": attempts, "judge_outcome": judge, "judge_reason": "", "expected": outcome == "placed",
            "false_success": fsm == "placed" and judge != "placed", "false_failure": fsm != "placed" and judge == "placed",
            "controller_restarts": 0, "sim_ms": 1000, "wall_s": 0.1, "worker": "here:1"}


def _plan():
    # 3 offsets x 2 yaws, 4 seeds: cells 0..5 in order (0,0) (0,20) (5,0) (5,20) (10,0) (10,20)
    return make_plan("part_offset", ["offset_mm=0:10:5", "yaw_deg=0,20"], seeds=4)


def _results():
    rs = []
    for s in range(4):
        rs.append(_r(0, s))                                                     # 4/4
        rs.append(_r(1, s) if s else _r(1, s, "fault", "DROPPED", attempts=1))  # 3/4
        rs.append(_r(2, s, attempts=2 if s == 3 else 1))                        # 4/4, 1.25 attempts
        rs.append(_r(3, s, judge="dropped") if s == 2 else _r(3, s))            # 4 said placed, 1 false
        rs.append(_r(4, s, "fault", "GRASP_FAILED", attempts=3) if s < 2 else _r(4, s, "fault", "CRUSH"))
        rs.append(_r(5, s, "fault", "GRASP_FAILED", judge="placed") if s == 1 else _r(5, s, "fault", "CRUSH"))
    return {(r["cell"], r["seed"]): r for r in rs}


def test_wilson_interval_matches_published_values():
    # Newcombe (1998), Statistics in Medicine 17:857, Table I, method 3 (score interval): 0/10 and 8/10 (hand
    # check: centre (p + z^2/2n)/(1 + z^2/n), half z sqrt(p(1-p)/n + z^2/4n^2)/(1 + z^2/n))
    lo, hi = envelope.wilson(0, 10)
    assert lo == 0.0 and hi == pytest.approx(0.2775, abs=1e-4)
    lo, hi = envelope.wilson(8, 10)
    assert (lo, hi) == (pytest.approx(0.4902, abs=1e-4), pytest.approx(0.9433, abs=1e-4))
    assert envelope.wilson(0, 0) == (0.0, 1.0)


def test_cells_csv_columns_counts_and_envelope(tmp_path):
    plan = _plan()
    cells = envelope.build_cells(plan, _results(), threshold=0.75)
    envelope.write_cells(str(tmp_path), plan, cells)
    with open(tmp_path / "cells.csv", newline="") as f:
        rows = list(csv.reader(f))
    head = rows[0]
    assert head[:7] == ["offset_mm", "yaw_deg", "runs", "placed", "false_success", "false_failure", "faults"]
    assert head[-3:] == ["fault_CRUSH", "fault_DROPPED", "fault_GRASP_FAILED"]
    got = {(r[0], r[1]): dict(zip(head, r)) for r in rows[1:]}
    assert list(got) == [("0", "0"), ("0", "20"), ("5", "0"), ("5", "20"), ("10", "0"), ("10", "20")]
    c = got[("0", "20")]
    assert (c["runs"], c["placed"], c["faults"], c["placed_rate"], c["in_envelope"]) == ("4", "3", "DROPPED=1", "0.7500", "1")
    assert got[("5", "0")]["attempts_mean"] == "1.250"
    fs = got[("5", "20")]   # 3 verified, 1 the machine called placed but the judge saw dropped
    assert (fs["placed"], fs["false_success"], fs["fsm_placed"], fs["in_envelope"]) == ("3", "1", "4", "0")
    assert got[("10", "0")]["faults"] == "CRUSH=2;GRASP_FAILED=2" and got[("10", "0")]["fault_CRUSH"] == "2"
    ff = got[("10", "20")]
    assert (ff["false_failure"], ff["judge_placed"], ff["placed"]) == ("1", "1", "0")
    assert [r[head.index("in_envelope")] for r in rows[1:]] == ["1", "1", "1", "0", "0", "0"]


def test_the_table_does_not_depend_on_the_order_cycles_finished(tmp_path):
    plan = _plan()
    items = list(_results().items())
    random.Random(3).shuffle(items)
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    envelope.write_cells(str(tmp_path / "a"), plan, envelope.build_cells(plan, _results()))
    envelope.write_cells(str(tmp_path / "b"), plan, envelope.build_cells(plan, dict(items)))
    assert (tmp_path / "a" / "cells.csv").read_bytes() == (tmp_path / "b" / "cells.csv").read_bytes()


def test_unfinished_cells_are_never_in_the_envelope():
    plan = _plan()
    partial = {k: v for k, v in _results().items() if not (k[0] == 0 and k[1] == 3)}
    cells = envelope.build_cells(plan, partial, threshold=0.75)
    assert cells[0].runs == 3 and cells[0].rate == 1.0 and not cells[0].in_envelope


def test_drill_down_takes_the_worst_failure_of_each_failing_cell():
    cells = envelope.build_cells(_plan(), _results())
    # false success first (cell 3, seed 2), then the false failure (cell 5, seed 1), then by cell
    assert envelope.drill_picks(cells) == [(3, 2), (5, 1), (1, 0), (4, 0)]
    assert envelope.drill_picks(cells, limit=1) == [(3, 2)]


def _summary(plan, cells, threshold=0.95):
    run = SweepRun({}, 24, 24, 10.0, False, {"backend": "local", "workers": 2}, {"surepick": "x"})
    return envelope.summary(plan, cells, run, threshold, ["surepick", "sim", "sweep"], {"surepick": "x"})


def test_pictures_and_html_grid_link_failing_cells_to_their_reports(tmp_path):
    plan = _plan()
    cells = envelope.build_cells(plan, _results(), threshold=0.75)
    summ = _summary(plan, cells, 0.75)
    assert summ["totals"] == {"runs": 24, "placed": 14, "false_success": 1, "false_failure": 1,
                              "faults": {"CRUSH": 5, "DROPPED": 1, "GRASP_FAILED": 3}}
    assert summ["envelope"]["cells_in"] == 3 and summ["false_success_cells"] == [3]
    drills = {3: {"dir": "drill/cell_0003", "seed": 2, "same": True, "rerun": {}}}
    images = [envelope_plot.plot_envelope(str(tmp_path / "envelope.png"), plan, cells, 0.75),
              envelope_plot.plot_attempts(str(tmp_path / "attempts.png"), plan, cells)]
    for img in images:
        assert open(img, "rb").read(8) == b"\x89PNG\r\n\x1a\n"
    page = open(envelope_plot.write_html(str(tmp_path), plan, cells, summ, drills, images)).read()
    assert page.count('href="drill/cell_0003/cycle_000.png"') == 2        # grid and table
    assert 'href="drill/cell_0003/report.json"' in page
    assert "drill/cell_0000" not in page
    assert '<img src="envelope.png"' in page and "1 false OK" in page


def test_more_than_two_axes_become_panels(tmp_path):
    plan = make_plan("part_offset", ["offset_mm=0,5", "yaw_deg=0,20", "config.grasp_dwell_ms=250,350,450"], seeds=1)
    results = {(c, 0): _r(c, 0) for c in range(len(plan.cells))}
    cells = envelope.build_cells(plan, results)
    panels = envelope_plot.facets([a.name for a in plan.axes], [a.values for a in plan.axes],
                                  {tuple(c.values.values()): c for c in cells}.get)
    assert [p[0] for p in panels] == ["config.grasp_dwell_ms=250", "config.grasp_dwell_ms=350",
                                      "config.grasp_dwell_ms=450"]
    # rows along yaw, columns along offset; every cell lands in exactly one place
    assert sorted(c.index for _, g in panels for row in g for c in row) == list(range(12))
    assert panels[1][1][1][0].values == {"offset_mm": 0.0, "yaw_deg": 20.0, "config.grasp_dwell_ms": 350}
    envelope_plot.plot_envelope(str(tmp_path / "e.png"), plan, cells, 0.95)


def _sweep_dir(path, plan, results, threshold=0.95, config=None):
    path.mkdir()
    plan.config = config or {}
    cells = envelope.build_cells(plan, results, threshold)
    envelope.write_cells(str(path), plan, cells)
    envelope.write_json(str(path / "summary.json"), _summary(plan, cells, threshold))


def test_compare_marks_cells_that_entered_and_left_the_envelope(tmp_path):
    plan = _plan()
    before = _results()
    after = dict(before)
    for s in range(4):                      # cell 4 (offset 10, yaw 0) now always placed
        after[(4, s)] = _r(4, s)
    after[(0, 1)] = _r(0, 1, "fault", "DROPPED")  # cell 0 (offset 0, yaw 0) loses one of four
    _sweep_dir(tmp_path / "a", plan, before, config={"grasp_dwell_ms": 350})
    _sweep_dir(tmp_path / "b", plan, after, config={"grasp_dwell_ms": 250})
    res = envelope_compare.compare(str(tmp_path / "a"), str(tmp_path / "b"), str(tmp_path / "cmp"))
    assert [r["where"] for r in res["entered"]] == ["offset_mm=10, yaw_deg=0"]
    assert [r["where"] for r in res["left"]] == ["offset_mm=0, yaw_deg=0"]
    assert res["envelope_a"] == 2 and res["envelope_b"] == 2 and res["matched"] == 6
    assert res["mean_rate_change"] == pytest.approx((1.0 - 0.25) / 6, abs=1e-4)
    assert any("grasp_dwell_ms" in s for s in res["settings_changed"])
    assert json.loads((tmp_path / "cmp" / "compare.json").read_text())["left"][0]["b"]["rate"] == 0.75
    assert (tmp_path / "cmp" / "compare.png").read_bytes()[:4] == b"\x89PNG"
    # the verb: exit 1 when a cell left the envelope, 0 when none did
    r = surepick("sim", "sweep", "--compare", tmp_path / "a", tmp_path / "b", "--out", tmp_path / "cmp2")
    assert r.returncode == 1, r.stdout + r.stderr
    assert "left the envelope: offset_mm=0, yaw_deg=0" in r.stdout
    r = surepick("sim", "sweep", "--compare", tmp_path / "a", tmp_path / "a", "--out", tmp_path / "cmp3")
    assert r.returncode == 0 and "0 entered, 0 left" in r.stdout, r.stdout + r.stderr


def test_compare_refuses_sweeps_of_other_axes(tmp_path):
    _sweep_dir(tmp_path / "a", _plan(), _results())
    other = make_plan("part_offset", ["offset_mm=0:10:5"], seeds=4)
    _sweep_dir(tmp_path / "b", other, {(c, s): _r(c, s) for c in range(3) for s in range(4)})
    r = surepick("sim", "sweep", "--compare", tmp_path / "a", tmp_path / "b")
    assert r.returncode == 2 and "different axes" in r.stderr, r.stderr
    r = surepick("sim", "sweep", "--compare", tmp_path / "a", tmp_path / "nowhere")
    assert r.returncode == 2 and "is not a finished sweep: summary.json is missing" in r.stderr, r.stderr


def test_a_sweep_of_one_cell_still_draws(tmp_path):
    plan = make_plan("nominal", ["config.grasp_dwell_ms=350"], seeds=2)     # one value: no axis at all
    assert plan.axes == [] and plan.cells == [()]
    cells = envelope.build_cells(plan, {(0, 0): _r(0, 0), (0, 1): _r(0, 1, "fault", "DROPPED")})
    assert (cells[0].placed, cells[0].runs) == (1, 2)
    header, body = envelope.rows(plan, cells)
    assert header[:5] == list(envelope.FIRST_COLUMNS) and body[0][:5] == ["2", "1", "0", "0", "DROPPED=1"]
    envelope_plot.plot_envelope(str(tmp_path / "e.png"), plan, cells, 0.95)
    summ = _summary(plan, cells)
    assert summ["fixed"] == {"config.grasp_dwell_ms": 350}
    page = open(envelope_plot.write_html(str(tmp_path), plan, cells, summ, {}, [])).read()
    assert "config.grasp_dwell_ms=350" in page
