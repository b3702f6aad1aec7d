# `surepick doctor`'s report as a test reads it: the findings by topic.
import re


def findings(stdout):
    # -> {topic: [level, text, fix or None]} from doctor's lines ("FAIL  arm_invalid ..." and the
    # "fix: ..." line under a finding)
    out, last = {}, None
    for line in stdout.splitlines():
        m = re.match(r"(OK|WARN|FAIL)\s+(\w+)\s+(.*)$", line)
        if m:
            last = m.group(2)
            out[last] = [m.group(1), m.group(3), None]
        elif line.strip().startswith("fix: ") and last:
            out[last][2] = line.strip()[len("fix: "):]
    return out
