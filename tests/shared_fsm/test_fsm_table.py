# The transition table is data a test can check: every state reachable from IDLE, every state
# can get back to IDLE (no trap), and the machine never takes a transition outside the table.
from surepick.shared_fsm import states
from surepick.shared_fsm import fake_scenarios
from surepick.shared_fsm import codes


def _reach(start, edges):
    seen = {start}
    todo = [start]
    while todo:
        s = todo.pop()
        for a, b in edges:
            if a == s and b not in seen:
                seen.add(b)
                todo.append(b)
    return seen


def test_names_table_matches_constants():
    assert len(states.NAMES) == states.N_STATES == 9
    for i, n in enumerate(states.NAMES):
        assert getattr(states, n) == i


def test_no_unreachable_state():
    assert _reach(states.IDLE, states.TRANSITIONS) == set(range(states.N_STATES))


def test_no_trap_state():
    reverse = [(b, a) for a, b in states.TRANSITIONS]
    assert _reach(states.IDLE, reverse) == set(range(states.N_STATES))


def test_every_transition_taken_is_in_the_table_and_all_are_exercised():
    table = set(states.TRANSITIONS)
    taken = set()
    for name in fake_scenarios.names():
        events, m, hal = fake_scenarios.run(name)
        for e in events:
            if e[2] == codes.K_NOTE:
                continue
            pair = (e[3], e[4])
            assert pair in table, (name, states.name(pair[0]), states.name(pair[1]))
            taken.add(pair)
    # the forward cycle and the retry loop are all exercised by the scenario suite
    forward = {p for p in table if p[1] != states.IDLE or p[0] == states.PLACE}
    assert forward <= taken, sorted(forward - taken)
