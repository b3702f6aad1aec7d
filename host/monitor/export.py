# The monitor store's records as a person or a spreadsheet reads them: CSV or JSON, oldest
# first, with state, kind and reason names beside the numbers. Reads the store, never writes.
import csv
import datetime
import json
import re
import time

from surepick.host.monitor.names import EVENT_RECORD_TYPES, code_name, record_type_name, state_name

FORMATS = ("csv", "json")
CSV_COLUMNS = ("board_id", "epoch", "seq", "type", "received", "from", "to", "reason_name",
               "rtype", "ev_seq", "t_ms", "kind", "from_state", "to_state", "reason", "attempt",
               "pot_counts", "switch_pressed", "current_ma", "beam_broken", "present_mask")


def parse_since(text, now=None):
    # `--since` -> ("time", epoch seconds) or ("seq", N), as Store.records takes it. Accepts an
    # ISO date/time, an age (30m, 12h, 7d) or seq:N. Raises ValueError with a message.
    now = time.time() if now is None else now
    if text.startswith("seq:"):
        n = text[4:]
        if not n.isdigit():
            raise ValueError("seq:N wants a number, got %r" % text)
        return "seq", int(n)
    m = re.fullmatch(r"(\d+(?:\.\d+)?)([smhd])", text)
    if m:
        return "time", now - float(m.group(1)) * {"s": 1, "m": 60, "h": 3600, "d": 86400}[m.group(2)]
    try:
        dt = datetime.datetime.fromisoformat(text)
    except ValueError:
        raise ValueError("--since %r is not an ISO date/time, an age like 12h, or seq:N" % text) from None
    return "time", dt.timestamp()


def named(row):
    # A Store.records row with names added: type, received (ISO), from, to, reason_name.
    d = dict(row)
    d["type"] = record_type_name(row["rtype"])
    d["received"] = datetime.datetime.fromtimestamp(row["received_at"]).isoformat(timespec="milliseconds")
    if row["rtype"] in EVENT_RECORD_TYPES:
        d["from"] = state_name(row["from_state"])
        d["to"] = state_name(row["to_state"])
        d["reason_name"] = code_name(row["reason"])
    else:
        d["from"] = d["to"] = d["reason_name"] = ""
    return d


def write_records(rows, out, fmt):
    # Write Store.records rows to the open text file `out` in `fmt` (csv or json).
    if fmt not in FORMATS:
        raise ValueError("unknown format %r: use csv or json" % fmt)
    rows = [named(r) for r in rows]
    if fmt == "json":
        json.dump(rows, out, indent=1)
        out.write("\n")
    else:
        w = csv.DictWriter(out, fieldnames=CSV_COLUMNS, extrasaction="ignore")
        w.writeheader()
        w.writerows(rows)
    return len(rows)
