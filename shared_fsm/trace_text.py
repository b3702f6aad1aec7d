# One text form of an event trace, so traces from MicroPython and CPython compare as strings.
from .states import name as state_name
from .codes import name as code_name, KIND_NAMES, K_SEARCH


def event_line(e):
    # (seq, t_ms, kind, from, to, reason, attempt, pot, switch, current, beam, present); a
    # search step's last five are where (x, y, z um), the beam and its value
    if e[2] == K_SEARCH:
        return "%d %d %s %s %s a%d x=%d y=%d z=%d beam=%d value=%d" % (
            e[0], e[1], KIND_NAMES[e[2]], state_name(e[3]), code_name(e[5]), e[6], e[7], e[8], e[9],
            e[10], e[11])
    return "%d %d %s %s>%s %s a%d pot=%d sw=%d i=%d beam=%d chk=%d" % (
        e[0], e[1], KIND_NAMES[e[2]], state_name(e[3]), state_name(e[4]), code_name(e[5]),
        e[6], e[7], e[8], e[9], e[10], e[11])


def scenario_text(name, events, m):
    lines = ["== %s fault=%s placed=%d attempt=%d" % (name, code_name(m.fault), m.cycles_placed, m.attempt)]
    for e in events:
        lines.append(event_line(e))
    return "\n".join(lines)
