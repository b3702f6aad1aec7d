"""What a board rejected from its flash at boot, for people: HELLO carries the count and the
first item, STATUS the count, REJECTS each (file, key, reason) item (docs/protocol.md, "What the
board rejected at boot"; the board side is firmware/rejects.py). Used by `surepick job status`
and the monitor."""
from surepick.shared_fsm import link

FILES = {"config": "/config.json", "rest": "/rest.json", "job": "/job.json", "log": "/log", "arm": "/arm.json"}

REASONS = {
    "too_big": "too big to read",
    "utf8": "not UTF-8 (erased or torn flash)",
    "json": "not JSON",
    "no_memory": "did not fit in the board's memory",
    "not_object": "not a JSON object",
    "version": "another config version",
    "is_dir": "a directory where a file belongs",
    "not_dir": "a file where the directory belongs (moved aside)",
    "unreadable": "could not be read",
    "unknown": "unknown key",
    "type": "not an integer",
    "range": "out of range",
    "relation": "disagrees with another setting",
    "shape": "wrong shape",
    "disabled": "log disabled: records kept in RAM only",
    "invalid": "fails the arm description's check (`surepick arm check FILE` names why)",
    "moved": "a servo setting that moved to the arm description (its servos entries); ignored here",
    "differs": "an old servo setting that the arm description contradicts: put the value in the "
               "description and `surepick deploy --arm FILE` (it removes the old setting)",
}

# What the board did instead, per file (when the whole file, key "-", was rejected).
INSTEAD = {"config": "defaults used", "rest": "started at the home pose",
           "job": "cycle treated as interrupted", "log": "",
           "arm": "arm kept still, jobs refused: deploy a valid description"}


def describe(item):
    """(file, key, reason) -> one line, e.g. "/config.json wdt_ms: out of range (default used)"."""
    file, key, reason = item
    where = FILES.get(file, file)
    if key != "-":
        where = "%s %s" % (where, key)
    text = "%s: %s" % (where, REASONS.get(reason, reason))
    if file == "config" and reason == "differs":
        text += " (arm kept still, jobs refused)"
    elif file == "config" and reason == "moved":
        pass
    elif file == "config" and key != "-":
        text += " (default used)"
    elif file in ("rest", "arm"):
        text += " (%s)" % INSTEAD[file]
    elif key == "-" and INSTEAD.get(file):
        text += " (%s)" % INSTEAD[file]
    return text


def from_hello(fields):
    """HELLO fields -> (count or None for a firmware that does not say, first item or None)."""
    if len(fields) < 7:
        return None, None
    first = tuple(fields[7:10]) if len(fields) >= 10 else None
    return fields[6], first


def fetch(client, timeout=2.0):
    """Ask the board for its list: -> (count, [items]), or None when the firmware has no REJECTS
    request (older firmware). Raises the client's LinkError on link trouble."""
    items = []
    i = 0
    kept = 1
    count = 0
    while i < kept:
        r = client.request(link.T_REJECTS, (i,), timeout)
        if r.code == link.E_UNKNOWN_TYPE:
            return None
        if not r.ok or len(r.payload) < 2:
            return None
        count, kept = r.payload[0], r.payload[1]
        if i < kept and len(r.payload) >= 5:
            items.append(tuple(r.payload[2:5]))
        i += 1
    return count, items


def lines(count, items):
    """-> text lines for a count and the items listed (the board keeps at most 12)."""
    if not count:
        return []
    out = ["rejected at boot: %d item%s" % (count, "" if count == 1 else "s")]
    out += ["  " + describe(it) for it in items]
    if count > len(items):
        out.append("  ... %d more not listed" % (count - len(items)))
    return out
