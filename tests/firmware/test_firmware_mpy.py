# The firmware under the real unix `micropython` (tests/mpy/fw_*.py runners): drivers, the main
# loop running fake-HAL scenario jobs end to end through the link, boot recovery, link handlers
# and config persistence, the frame writer and Ctrl-C. Each runner prints FAIL lines and
# "RESULT name value" figures.

import pytest

from tests.support import mpy as host_helpers  # noqa: E402
from tests.support.period import PERIOD_MS, PERIOD_US

pytestmark = pytest.mark.skipif(host_helpers.micropython() is None, reason="no micropython")


def run(script, *args, timeout=120):
    proc = host_helpers.run(script, *args, timeout=timeout)
    text = proc.stdout.decode() + proc.stderr.decode()
    failed = [l for l in text.splitlines() if l.startswith("FAIL ")]
    assert proc.returncode == 0 and not failed and "Traceback" not in text, text[-4000:]
    return host_helpers.results(text), text


def test_drivers_slew_accel_estop_current_pot():
    res, _ = run("fw_drivers.py")
    assert res["fails"] == 0
    assert res["servo_step_max_dv"] <= 4800       # 2400 deg/s^2 over a 2 ms tick
    assert res["servo_ramp_lag_mdeg"] <= 200


@pytest.mark.parametrize("scenario", ["nominal", "part_offset_retry", "flicker_in_transfer"])
def test_main_loop_runs_a_job_to_placed(scenario, tmp_path):
    res, text = run("fw_app_job.py", scenario, tmp_path)
    assert res["outcome_placed"] == 1 and res["fault"] == 0, text
    assert res["job_reply_ok"] == 1 and res["hello"] == 1
    assert res["event_frames_match"] == 1          # every machine event went out as a frame
    assert res["cycles_ok"] == 1 and res["tel_cycles_ok"] == 1
    assert res["marker"] == 0 and res["rest"] == 1 and res["log_pending"] == 0
    # loop timing reported in telemetry: the virtual period, a measured worst step, overruns
    assert res["tel_period_us"] == PERIOD_US
    # The work is timed in real CPU time here, so how many ticks overrun depends on this host's
    # pace and load, not on the firmware: the counts must agree with each other instead. A tick
    # overruns when its work (flash ticks aside) exceeds the period, so some did exactly when the
    # worst one did; telemetry's figures are the same counters, sent before the run's end.
    assert res["tel_worst_us"] > 0
    assert (res["overruns"] > 0) == (res["worst_step_us"] > res["tel_period_us"]), res
    assert res["tel_overruns"] <= res["overruns"] and res["tel_worst_us"] <= res["worst_step_us"], res
    # the watchdog: fed once a tick (twice or more when the tick wrote flash: before each write)
    assert res["feed_bad_ticks"] == 0 and res["feeds"] >= res["ticks"] and res["wdt_ms"] == 500
    # telemetry at 10 Hz: one frame per 100 ms of virtual time, give or take
    assert abs(res["telemetry"] - res["virtual_ms"] // 100) <= 3


@pytest.mark.parametrize("scenario,fault", [("part_missing", 32), ("wide_rigid_part", 35),
                                            ("estop_mid_lift", 40), ("pot_broken", 34),
                                            ("slip_in_transfer", 36)])
def test_main_loop_latches_the_scenarios_fault(scenario, fault, tmp_path):
    res, text = run("fw_app_job.py", scenario, tmp_path)
    assert res["outcome_placed"] == 0 and res["fault"] == fault, text
    assert res["cycles_failed"] == 1 and res["faults"] == 1
    assert res["marker"] == 1       # kept until a human clears the fault
    assert res["log_pending"] == 0  # committed at rest (a latched fault is rest)


def test_boot_recovery(tmp_path):
    res, _ = run("fw_recovery.py", tmp_path)
    assert res["fails"] == 0
    assert res["rescue_arm_pulse_step_us"] <= 3     # the rescue moves gently (a few us per 2 ms tick)


def test_stall_and_rail_watches_and_the_flash_settle_rule(tmp_path):
    res, text = run("fw_watches.py", tmp_path)
    assert res["fails"] == 0, text
    assert 0 <= res["stall_detect_lag_ms"] <= 20       # the current filter's lag, no more
    assert res["first_write_after_fault_ms"] >= 300     # flash_settle_ms after the arm stopped


def test_link_requests_config_calibration_and_garbage(tmp_path):
    res, _ = run("fw_link.py", tmp_path)
    assert res["fails"] == 0


def test_frame_writer_and_ctrl_c(tmp_path):
    res, _ = run("fw_misc.py", tmp_path)
    assert res["frames_identical"] == 600 and res["ints_identical"] == 600 and res["fails"] == 0


def test_watchdog_setting_start_and_feeding(tmp_path):
    # fed only in ticks whose controller part completed, and before each flash write at rest
    res, _ = run("fw_watchdog.py", tmp_path)
    assert res["fails"] == 0
    assert res["feeds"] == res["ticks"] + res["flash_ticks"] and res["flash_ticks"] >= 1


def test_bench_loop_allocates_nothing_in_plain_ticks():
    proc = host_helpers.run("../../tools/bench/fw_loop.py", "--json", timeout=120)
    import json
    text = proc.stdout.decode()
    assert proc.returncode == 0, text + proc.stderr.decode()
    res = json.loads(text.strip().splitlines()[-1])
    assert res["outcome"] == "placed"
    assert res["alloc_bytes_worst_plain"] == 0 and res["heap_locked_ticks_failed"] == 0
    assert res["heap_locked_ticks_ok"] > 1000
    print(res)


def test_one_heavy_piece_of_link_work_per_tick(tmp_path):
    # On the RP2040 an event's log record, EVENT frame, FAULT frame and a TELEMETRY part cost
    # 0.3-0.8 ms each; a transition's own tick is already the longest (tools/bench/chip_tick.py).
    res, text = run("fw_event_pieces.py", tmp_path)
    assert res["fails"] == 0, text
    assert res["events"] >= 10 and res["faults_sent"] == 1     # three attempts, then the fault
    assert res["event_ticks"] >= 10 and res["piece_ticks"] > res["events"] * 2


def test_a_refused_job_changes_nothing_and_a_taken_one_keeps_its_height(tmp_path):
    # (a job refused for a latched fault once left its approach height set and saved)
    res, text = run("fw_job_refused.py", tmp_path)
    assert res["fails"] == 0, text
    for name in ("faulted", "faulted_bad_height", "estop", "unreachable", "height_too_low", "height_too_high"):
        assert res["refused_" + name] == 1, text
    assert res["taken_height_saved"] == 1
