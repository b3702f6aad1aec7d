# Runs the fake-HAL scenario suite under the `micropython` binary (no pytest there) and prints
# each scenario's event trace, one record per line, in the same text the CPython side produces.
#   micropython tests/mpy/run_fsm_scenarios.py [heaplock]     (MICROPYPATH: tests/support/mpy.py)
# With "heaplock", every machine.step() runs under micropython.heap_lock(): any allocation in
# the step raises MemoryError, which is reported and fails the run.
import sys

from surepick.shared_fsm import fake_scenarios, trace_text

heaplock = len(sys.argv) > 1 and sys.argv[1] == "heaplock"

if heaplock:
    import micropython
    from surepick.shared_fsm.machine import Machine

    _plain_step = Machine.step

    def _locked_step(self, now):
        micropython.heap_lock()
        try:
            _plain_step(self, now)
        finally:
            micropython.heap_unlock()

    Machine.step = _locked_step

START = (1 << 30) - 3000  # begin just below the tick wrap
for name in fake_scenarios.names():
    try:
        events, m, hal = fake_scenarios.run(name, start_ms=START)
    except MemoryError:
        print("HEAP-ALLOCATION in step during scenario", name)
        sys.exit(3)
    print(trace_text.scenario_text(name, events, m))
print("END")
