# Two runs of one in-process cycle that must be the very same cycle (a fast path or a cost cut
# against its reference): each run logs what the board's pins read at every tick, then the two
# runs' readings, events, records and trajectories are compared.

# What may differ between two runs of one cycle: the host's CPU time.
HOST_TIME = ("wall_s", "loop")


def run_logged(run, trajectory):
    # run: an inproc.InprocCycle not yet run.
    # -> (its record without the host's time, [(t_ms, what the pins read)] every tick, its trajectory)
    readings = []
    read = run.world.read_inputs

    def logged():
        r = read()
        readings.append((run.plant.now_ms, r))
        return r
    run.world.read_inputs = logged        # what the board's pins see, every tick
    rec = run.run(record_trajectory=trajectory)
    return {k: v for k, v in rec.items() if k not in HOST_TIME}, readings, run.trajectory


def assert_same_cycle(ref, new, case):
    # ref, new: run_logged's answers for the two runs; case: what a failure names
    ref_rec, ref_reads, ref_traj = ref
    new_rec, new_reads, new_traj = new
    assert len(new_reads) == len(ref_reads) > 100, case
    for a, b in zip(ref_reads, new_reads):
        assert a == b, (case, a, b)
    assert new_rec["events"] == ref_rec["events"], case
    assert new_rec == ref_rec, case
    assert new_traj == ref_traj, case
