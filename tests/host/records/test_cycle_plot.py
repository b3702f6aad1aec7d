# sim run's cycle picture (records/cycle_plot.py): a PNG of the documented size whose top panel
# carries a red line at each fault event, where the time axis puts it, and none without one.
from PIL import Image

from surepick.host.engines.inproc import TRAJECTORY_COLUMNS
from surepick.host.records import cycle_plot
from surepick.shared_fsm import states


def _rows(n=500):
    rows = []
    for i in range(n):
        r = dict.fromkeys(TRAJECTORY_COLUMNS, 0)
        r.update(t_ms=i * 10, state=min(i // 60, len(states.NAMES) - 1), pot_counts=8000 + 20 * i, jaw_cmd_um=30000,
                 jaw_true_mm=30.0, current_ma=(i * 7) % 400, part_z_mm=None if i < 10 else 15.0 + i * 0.1,
                 switch_pressed=i // 250, beam_broken=(i // 100) % 2, finger_contact=i // 300)
        rows.append(tuple(r[c] for c in TRAJECTORY_COLUMNS))
    return rows


def _cycle(events):
    return {"scenario": "nominal", "seed": 1, "cycle": 0, "fsm_outcome": "fault", "fsm_fault": "ESTOP",
            "judge_outcome": "not_picked", "judge_reason": "the part never left its support", "events": events}


def _red_columns(png, top, bottom):
    img = Image.open(png).convert("RGB")
    px = img.load()
    return img.size, {x for x in range(img.size[0]) for y in range(top, bottom) if px[x, y] == cycle_plot._RED}


def test_a_fault_is_a_red_line_at_its_time_in_the_state_panel(tmp_path):
    rows = _rows()
    fault = {"kind": "fault", "t_ms": 2500, "reason": "ESTOP"}
    cycle_plot.plot_cycle(str(tmp_path / "f.png"), rows, _cycle([fault]))
    cycle_plot.plot_cycle(str(tmp_path / "n.png"), rows, _cycle([]))
    # the state panel spans the time axis from the first row (0 s) to the last (4.99 s)
    x0, x1 = cycle_plot._LEFT, cycle_plot.WIDTH - cycle_plot._RIGHT
    want = round(x0 + 2.5 / 4.99 * (x1 - x0))
    top, bottom = cycle_plot._TOP + 20, cycle_plot._TOP + 60    # below the reason's text
    size, red = _red_columns(tmp_path / "f.png", top, bottom)
    assert size == (cycle_plot.WIDTH, cycle_plot.HEIGHT)
    assert red and all(abs(x - want) <= 1 for x in red), (sorted(red), want)
    assert _red_columns(tmp_path / "n.png", top, bottom)[1] == set()
