# Two sweeps of the same axes (before and after a config change, say) as one picture: the
# difference of placed rates B - A per cell, A's envelope dashed, B's solid, the cells that entered
# or left the envelope marked; compare.png, compare.html and compare.json. Read from each sweep's
# cells.csv and summary.json only.
import json
import os

from surepick.host.engines.sweep import SweepError, fmt
from surepick.host.records import envelope
from surepick.host.records.envelope_plot import STYLE, colour, draw_panel, escape, facets, figure_of, outline, pyplot


def _load(d):
    try:
        with open(os.path.join(d, envelope.SUMMARY_FILE)) as f:
            summ = json.load(f)
        _, rows = envelope.read_cells(d)
    except FileNotFoundError as e:
        raise SweepError("%s is not a finished sweep: %s is missing" % (d, os.path.basename(e.filename))) from None
    except (OSError, ValueError) as e:
        raise SweepError("cannot read the sweep in %s: %s" % (d, e)) from None
    names = [a["name"] for a in summ["axes"]]
    cells = {}
    for r in rows:
        try:
            key = tuple(r[n] for n in names)
            cells[key] = {"runs": int(r["runs"]), "placed": int(r["placed"]),
                          "rate": float(r["placed_rate"]) if r["placed_rate"] else None,
                          "in": r["in_envelope"] == "1", "false_success": int(r["false_success"])}
        except (KeyError, ValueError) as e:
            raise SweepError("%s/cells.csv does not match its summary.json: %s" % (d, e)) from None
    return summ, names, cells


def _differences(sa, sb):
    # What changed between the two sweeps' settings, in words.
    out = []
    for k in ("scenario", "fixed", "config_overrides", "plant_params", "seeds"):
        if sa.get(k) != sb.get(k):
            out.append("%s: %s -> %s" % (k, json.dumps(sa.get(k), sort_keys=True), json.dumps(sb.get(k), sort_keys=True)))
    return out


def compare(dir_a, dir_b, out_dir):
    sa, na, ca = _load(dir_a)
    sb, nb, cb = _load(dir_b)
    if sorted(na) != sorted(nb):
        raise SweepError("the sweeps have different axes: %s in %s, %s in %s" % (na, dir_a, nb, dir_b))
    order = [nb.index(n) for n in na]
    cb = {tuple(k[i] for i in order): v for k, v in cb.items()}
    # each axis's values: both sweeps' together, in numeric order
    values = []
    for i, n in enumerate(na):
        vs = {k[i] for k in list(ca) + list(cb)}
        values.append(sorted(vs, key=float))
    rows, entered, left = [], [], []
    for key in sorted(set(ca) | set(cb), key=lambda k: [float(v) for v in k]):
        a, b = ca.get(key), cb.get(key)
        where = ", ".join("%s=%s" % (n, v) for n, v in zip(na, key)) or "the one cell"
        row = {"where": where, "values": dict(zip(na, key)), "a": a, "b": b}
        if a and b and a["rate"] is not None and b["rate"] is not None:
            row["change"] = round(b["rate"] - a["rate"], 4)
            lo_a, hi_a = envelope.wilson(a["placed"], a["runs"])
            lo_b, hi_b = envelope.wilson(b["placed"], b["runs"])
            row["intervals_apart"] = hi_a < lo_b or hi_b < lo_a   # the 95% intervals do not overlap
            if b["in"] and not a["in"]:
                entered.append(row)
            if a["in"] and not b["in"]:
                left.append(row)
        rows.append(row)
    os.makedirs(out_dir, exist_ok=True)
    changes = [r["change"] for r in rows if "change" in r]
    res = {"a": os.path.abspath(dir_a), "b": os.path.abspath(dir_b), "axes": na, "settings_changed": _differences(sa, sb),
           "matched": len(changes), "only_in_a": [r["where"] for r in rows if r["b"] is None],
           "only_in_b": [r["where"] for r in rows if r["a"] is None],
           "envelope_a": sum(1 for v in ca.values() if v["in"]), "envelope_b": sum(1 for v in cb.values() if v["in"]),
           "entered": entered, "left": left,
           "mean_rate_change": round(sum(changes) / len(changes), 4) if changes else 0.0, "cells": rows}
    by_key = {tuple(r["values"][n] for n in na): r for r in rows}
    panels = facets(na, values, by_key.get)
    res["png"] = _plot(os.path.join(out_dir, "compare.png"), na, values, panels, sa, sb, res)
    res["html"] = _html(os.path.join(out_dir, "compare.html"), na, values, panels, res)
    envelope.write_json(os.path.join(out_dir, "compare.json"), res)
    return res


def _plot(path, names, values, panels, sa, sb, res):
    xs = values[0] if values else [None]
    ys = values[1] if len(values) > 1 else [None]
    xn = names[0] if names else ""
    yn = names[1] if len(names) > 1 else ""

    def draw(ax, grid):
        diff = [[None if r is None or "change" not in r else r["change"] for r in row] for row in grid]
        text = [["" if r is None or "change" not in r else "%+.2f" % r["change"] for r in row] for row in grid]
        env_a = [[bool(r and r["a"] and r["a"]["in"]) for r in row] for row in grid]
        env_b = [[bool(r and r["b"] and r["b"]["in"]) for r in row] for row in grid]
        came = [[bool(r and r["b"] and r["b"]["in"] and not (r["a"] and r["a"]["in"])) for r in row] for row in grid]
        went = [[bool(r and r["a"] and r["a"]["in"] and not (r["b"] and r["b"]["in"])) for r in row] for row in grid]
        im = draw_panel(ax, diff, _num(xs), _num(ys), xn, yn, "RdBu", -1.0, 1.0, text,
                        outlines=[(env_b, dict(color="k", lw=2.4))], marks=[(came, "IN", "#006400"), (went, "OUT", "#b00000")])
        outline(ax, env_a, color="#1f4fd0", lw=1.6, ls="--")
        return im
    changed = "; ".join(res["settings_changed"]) or "no settings differ"
    fig = figure_of(panels, "placed rate B - A (A: %s, B: %s)\n%s\nenvelope: A dashed blue, B solid black; IN / OUT: "
                    "cells that entered / left it" % (os.path.basename(res["a"]), os.path.basename(res["b"]), changed),
                    draw, "change in placed rate")
    fig.savefig(path, dpi=90)
    pyplot().close(fig)
    return path


def _num(vs):
    return [None if v is None else float(v) for v in vs]


def _html(path, names, values, panels, res):
    xs = values[0] if values else [None]
    ys = values[1] if len(values) > 1 else [None]
    parts = ["<!doctype html><html><head><meta charset=utf-8><title>sweep compare</title><style>%s</style></head><body>"
             % STYLE, "<h1>Envelope: %s &rarr; %s</h1>" % (escape(res["a"]), escape(res["b"])),
             "<p>Settings changed: %s</p>" % escape("; ".join(res["settings_changed"]) or "none"),
             "<p>%d cells matched; envelope %d &rarr; %d cells; <b>%d entered, %d left</b>; mean change in placed "
             "rate %+.3f.</p>" % (res["matched"], res["envelope_a"], res["envelope_b"], len(res["entered"]),
                                  len(res["left"]), res["mean_rate_change"]),
             '<p><img src="compare.png" style="max-width:100%"></p>']
    for label, grid in panels:
        if label:
            parts.append("<h3>%s</h3>" % escape(label))
        parts.append("<table class=grid><tr><th>%s &darr; / %s &rarr;</th>%s</tr>" % (
            escape(names[1] if len(names) > 1 else ""), escape(names[0] if names else ""),
            "".join("<th>%s</th>" % escape(x if x is not None else "") for x in xs)))
        for y, row in reversed(list(zip(ys, grid))):
            tds = []
            for r in row:
                if r is None or "change" not in r:
                    tds.append("<td></td>")
                    continue
                mark = " IN" if r in res["entered"] else " OUT" if r in res["left"] else ""
                tds.append('<td style="background:%s" title="%s">%+.2f%s<br><small>%s &rarr; %s</small></td>' % (
                    colour(r["change"], "RdBu", -1.0, 1.0), escape(r["where"]), r["change"], mark,
                    fmt(r["a"]["rate"]), fmt(r["b"]["rate"])))
            parts.append("<tr><th>%s</th>%s</tr>" % (escape(y if y is not None else ""), "".join(tds)))
        parts.append("</table>")
    for title, rows in (("Entered the envelope", res["entered"]), ("Left the envelope", res["left"])):
        parts.append("<h2>%s (%d)</h2><ul>%s</ul>" % (title, len(rows), "".join(
            "<li>%s: %.2f &rarr; %.2f%s</li>" % (escape(r["where"]), r["a"]["rate"], r["b"]["rate"],
                                                 " (95%% intervals apart)" if r["intervals_apart"] else "")
            for r in rows)))
    parts.append("</body></html>")
    with open(path + ".tmp", "w") as f:
        f.write("\n".join(parts))
    os.replace(path + ".tmp", path)
    return path
