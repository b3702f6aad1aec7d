# `surepick job report`'s figures from a run's records (host/production.py), against numbers
# worked out by hand from records written here the way the board's log holds them.
import subprocess

from surepick.firmware import flashlog
from surepick.host import production
from surepick.host.monitor.store import Store
from surepick.shared_fsm import codes, run_codes
from tests.support.cli import SUREPICK_BIN

N = flashlog.R_NOTE


def rec(seq, reason, x=0, y=0, z=0, value=0):
    # a K_RUN record: seq, t_ms, kind, from, to, reason, attempt, x, y, z, beam, value
    return (seq, N, [seq, seq * 10, codes.K_RUN, 0, 0, reason, 1, x, y, z, 0, value])


def cycle(seq, n, slot, ms, outcome):
    return rec(seq, run_codes.R_RUN_CYCLE, n, slot, ms, outcome)


def two_runs():
    # a run that stopped on a fault, the board restarted, then a run of six pick slots
    P, G = codes.R_PLACED, codes.F_GRASP_FAILED
    older = [rec(1, run_codes.R_RUN_START, 5, 1, 1), cycle(2, 1, 0, 777, G),
             rec(3, run_codes.R_RUN_STOP, 1, 0, run_codes.STOP_FAULT, G)]
    return older + [
        (4, flashlog.R_BOOT, [0] * 12),
        rec(5, run_codes.R_RUN_START, 0, 6, 1),
        cycle(6, 1, 0, 1000, P), cycle(7, 2, 1, 1200, P), cycle(8, 3, 2, 3000, G),
        rec(9, run_codes.R_RUN_SKIP, 3, 2, 0, G),
        cycle(10, 4, 3, 900, P), cycle(11, 5, 4, 1100, P), cycle(12, 6, 5, 950, P),
        rec(13, run_codes.R_RUN_STOP, 6, 5, run_codes.STOP_PICKS_DONE, 0)]


def test_the_report_counts_what_the_records_say():
    rep = production.report(two_runs())
    # the last run only: 6 cycles, 5 placed, one GRASP_FAILED, slot 2 skipped
    assert rep["cycles"] == 6 and rep["placed"] == 5 and rep["faults"] == {"GRASP_FAILED": 1}
    assert rep["skipped_slots"] == [2] and rep["count"] == 0 and rep["pick_slots"] == 6
    # placed cycle times 900, 950, 1000, 1100, 1200: median 1000; p95 by nearest rank: the 5th
    assert rep["cycle_ms_median"] == 1000 and rep["cycle_ms_p95"] == 1200
    # placed, placed, fault, placed, placed, placed: the longest run without a fault is 3
    assert rep["longest_fault_free"] == 3
    assert rep["stop"]["why"] == "picks_done" and rep["stop"]["normal"] and not rep["reset"]
    text = "\n".join(production.report_lines(rep))
    assert "6 cycles, 5 placed" in text and "slots skipped: 2" in text and "stopped: picks_done" in text


def test_a_reset_mid_run_ends_it_without_a_stop_record():
    records = [rec(1, run_codes.R_RUN_START, 10, 1, 1), cycle(2, 1, 0, 1000, codes.R_PLACED),
               (3, flashlog.R_BOOT, [0] * 12)]
    rep = production.report(records)
    assert rep["stop"] is None and rep["reset"] and rep["placed"] == 1
    assert "the board restarted mid-run" in "\n".join(production.report_lines(rep))


def test_no_run_in_the_log():
    assert production.report([(1, flashlog.R_BOOT, [0] * 12)]) is None
    assert production.report_lines(None) == ["the board's log holds no production run"]


def test_a_run_whose_start_rotated_out_of_the_log_reports_its_stop_totals():
    # the log kept cycles 199 and 200 only: totals from the STOP record, the rest over what is left
    P = codes.R_PLACED
    records = [cycle(1536, 199, 0, 9800, P), cycle(1537, 200, 0, 9700, P),
               rec(1538, run_codes.R_RUN_STOP, 200, 200, run_codes.STOP_COUNT, 0)]
    rep = production.report(records)
    assert rep["partial"] and rep["cycles"] == 200 and rep["placed"] == 200 and rep["from_cycle"] == 199
    assert rep["faults"] == {} and rep["cycle_ms_median"] == 9750
    text = "\n".join(production.report_lines(rep))
    assert "its start rotated out of the log, 200 cycles, 200 placed" in text and "cycle 199 on" in text, text


def test_the_report_from_the_monitors_database(tmp_path):
    # `job report --db`: the records `surepick monitor` stored, no board needed; the same figures
    # as worked out above, and a file with two boards asks which
    db = tmp_path / "monitor.sqlite3"
    st = Store(str(db))
    st.add_records("pico-a", 1, two_runs())
    st.close()
    r = subprocess.run([SUREPICK_BIN, "job", "report", "--db", str(db)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert "board pico-a" in r.stdout and "6 cycles, 5 placed" in r.stdout, r.stdout
    assert "slots skipped: 2" in r.stdout and "stopped: picks_done" in r.stdout, r.stdout
    st = Store(str(db))
    st.add_records("pico-b", 1, [rec(1, run_codes.R_RUN_START, 1, 1, 1), cycle(2, 1, 0, 500, codes.R_PLACED),
                                 rec(3, run_codes.R_RUN_STOP, 1, 1, run_codes.STOP_COUNT, 0)])
    st.close()
    r = subprocess.run([SUREPICK_BIN, "job", "report", "--db", str(db)], capture_output=True, text=True, timeout=60)
    assert r.returncode != 0 and "--board" in r.stderr and "pico-a, pico-b" in r.stderr, r.stderr
    r = subprocess.run([SUREPICK_BIN, "job", "report", "--db", str(db), "--board", "pico-b"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and "1 cycles, 1 placed" in r.stdout and "stopped: count_done" in r.stdout, r.stdout
    r = subprocess.run([SUREPICK_BIN, "job", "report", "--db", str(tmp_path / "none.sqlite3")],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode != 0 and "surepick monitor --db" in r.stderr, r.stderr
