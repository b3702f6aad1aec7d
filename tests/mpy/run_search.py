# The part search (shared_fsm/search.py) under the `micropython` binary, against the geometric
# bench (search_bench.py): prints each case's search steps in trace_text's form, so the CPython
# side can compare them line by line.
#   micropython tests/mpy/run_search.py [heaplock]
# With "heaplock", every Machine.step() runs under micropython.heap_lock(), except the steps in
# which the search decides where to probe next: those end with a new MOVE_PLAN (the controller
# plans at rest in that same tick, a maintenance tick) and may allocate. Any other step that
# allocates is reported ("HEAP-ALLOCATION") with exit code 3.
import sys

from surepick.shared_fsm import trace_text
from surepick.shared_fsm.config import Config
from surepick.shared_fsm.machine import Job, Machine, MOVE_PLAN
import search_bench as sb

CASES = (
    ("at_pose", (160.0, -60.0, -20.0)),
    ("shifted", (172.0, -72.0, -20.0)),
    ("turned", (166.0, -50.0, 5.0)),
    ("beside", (158.0, -80.0, -25.0)),
    ("missing", None),
)
START = (1 << 30) - 3000     # the ticks wrap during the search
heaplock = len(sys.argv) > 1 and sys.argv[1] == "heaplock"
if heaplock:
    import micropython


def deciding(m):
    # This step is one where the search decides (the cycle's first, or a probe back at its top):
    # it ends in a MOVE_PLAN, at rest.
    s = m.resense
    return m.state == 0 or (m.phase == 6 and s.phase == 7 and m.inp.arrived_seq == m.out.move_seq)


def run(part):
    m = Machine(Config({"resense": 2}))
    m.start_job(Job((160000, -60000, 15500, -90000), (150000, 80000, 20500, -90000), 25000))
    bench = sb.Bench(m, part)
    now = START
    n = 0
    while n < 40000:
        bench.sense(now)
        if heaplock and not deciding(m):
            micropython.heap_lock()
            try:
                m.step(now)
            except MemoryError:
                micropython.heap_unlock()
                print("search phase", m.resense.phase, "machine phase", m.phase)
                return None, n
            micropython.heap_unlock()
        else:
            seq = m.out.move_seq
            m.step(now)
            if heaplock and m.state == 1 and m.out.move_seq != seq and m.out.move_kind != MOVE_PLAN:
                return None, -n           # a decision that did not end at rest in a MOVE_PLAN
        bench.act(now)
        now = (now + 4) & ((1 << 30) - 1)
        n += 1
        if m.state != 1 or (m.phase != 6 and n > 1):
            break
    return m, n


for name, part in CASES:
    m, n = run(part)
    if m is None:
        print("HEAP-ALLOCATION in step during case", name, "at step", n)
        sys.exit(3)
    print("== %s gx=%d gy=%d" % (name, m.gx, m.gy))
    for e in m.events.since(0):
        if e[2] == 3:
            print(trace_text.event_line(e))
print("END")
