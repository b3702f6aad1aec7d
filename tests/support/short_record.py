# A run record cut to its first ticks, for tests that feed a record to `fit` (and the other
# record verbs) and need it whole but not long: each fit evaluation simulates the record's length.
FIT_TICKS = 600          # 1.2 s of 2 ms ticks: past the board's current calibration (464 ms)


def keep_first_ticks(run_dir, n=FIT_TICKS):
    # ticks.csv keeps its header and its first n rows; what describes the whole run goes
    ticks = run_dir / "ticks.csv"
    lines = ticks.read_text().splitlines(keepends=True)
    ticks.write_text("".join(lines[:n + 1]))
    for whole in ("report.json", "trajectory.csv"):
        (run_dir / whole).unlink()
