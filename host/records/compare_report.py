# Renders a Comparison (records/compare.py) as DIR/summary.md, DIR/report.html and the PNG plots the
# HTML shows: overlaid state timelines, sensor traces and dwell-time histograms.
import html
import json
import os

import numpy as np

from surepick.shared_fsm import states

from surepick.host.records.runrecord import TICK_INDEX

PLOT_CYCLES = 3   # cycles overlaid in the timeline plot


def write(cmp, out_dir, label_a="A", label_b="B"):
    os.makedirs(out_dir, exist_ok=True)
    plots = [("timeline.png", "State timelines, overlaid (first aligned cycles)", _plot_timeline),
             ("sensors.png", "Sensor traces of the first aligned cycle", _plot_sensors),
             ("dwell.png", "Dwell-time distributions per state", _plot_dwell)]
    made = []
    for name, title, fn in plots:
        fn(cmp, os.path.join(out_dir, name), label_a, label_b)
        made.append((name, title))
    md = summary_markdown(cmp, label_a, label_b)
    _atomic(os.path.join(out_dir, "summary.md"), md)
    _atomic(os.path.join(out_dir, "report.html"), _html(cmp, made, label_a, label_b))
    _atomic(os.path.join(out_dir, "comparison.json"), json.dumps(
        {"passed": cmp.passed, "failing_phases": cmp.failing_phases(), "tolerances": cmp.tol, "notes": cmp.notes,
         "a": cmp.a.rec.path, "b": cmp.b.rec.path, "aligned_cycles": len(cmp.aligned),
         "checks": [c.as_dict() for c in cmp.checks]}, indent=1, default=str))
    return os.path.join(out_dir, "report.html")


def _atomic(path, text):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)


def _fmt(v):
    if isinstance(v, dict):
        return ", ".join("%s %s" % (k, n) for k, n in v.items())
    if isinstance(v, float):
        return "%g" % v
    return "-" if v is None else str(v)


def summary_markdown(cmp, la="A", lb="B"):
    a, b = cmp.a.rec, cmp.b.rec
    verdict = "PASS: every difference is within tolerance" if cmp.passed else \
        "FAIL: differences beyond tolerance in %s" % ", ".join(cmp.failing_phases())
    lines = ["# Run comparison: %s" % verdict, "",
             "| | %s | %s |" % (la, lb), "| --- | --- | --- |",
             "| run | `%s` | `%s` |" % (a.path, b.path),
             "| kind | %s | %s |" % (a.meta["kind"], b.meta["kind"]),
             "| scenario, seed | %s, %s | %s, %s |" % (a.scenario, a.meta["seed"], b.scenario, b.meta["seed"]),
             "| cycles | %d | %d |" % (len(a.cycles), len(b.cycles)), ""]
    for n in cmp.notes:
        lines.append("- note: %s" % n)
    if cmp.notes:
        lines.append("")
    lines += ["| phase | metric | %s | %s | B - A | tolerance | ok |" % (la, lb),
              "| --- | --- | --- | --- | --- | --- | --- |"]
    for c in cmp.checks:
        lines.append("| %s | %s | %s | %s | %s | %s | %s |" % (
            c.phase, c.metric + (" (%s)" % c.note if c.note else ""), _fmt(c.a), _fmt(c.b), _fmt(c.diff),
            _fmt(c.tol), "one side only" if c.one_sided else "yes" if c.ok else "**NO**"))
    return "\n".join(lines) + "\n"


def _html(cmp, plots, la, lb):
    a, b = cmp.a.rec, cmp.b.rec
    ok = cmp.passed
    rows = []
    for c in cmp.checks:
        rows.append("<tr class='%s'><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td></tr>" % (
            "ok" if c.ok else "bad", html.escape(c.phase), html.escape(c.metric + (" (%s)" % c.note if c.note else "")),
            html.escape(_fmt(c.a)), html.escape(_fmt(c.b)), html.escape(_fmt(c.diff)), html.escape(_fmt(c.tol)),
            "yes" if c.ok else "NO"))
    notes = "".join("<li>%s</li>" % html.escape(n) for n in cmp.notes)
    imgs = "".join("<h2>%s</h2><img src='%s' alt='%s'>" % (html.escape(t), n, html.escape(t)) for n, t in plots)
    return """<!doctype html><html><head><meta charset="utf-8"><title>surepick compare</title>
<style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:3px 8px}
tr.bad{background:#fdd}h1.pass{color:#060}h1.fail{color:#a00}img{max-width:100%%}</style></head><body>
<h1 class="%s">%s</h1>
<p>%s: <code>%s</code> (%s, scenario %s, seed %s, %d cycles)<br>%s: <code>%s</code> (%s, scenario %s, seed %s, %d cycles)<br>
aligned cycles: %d</p><ul>%s</ul>
<table><tr><th>phase</th><th>metric</th><th>%s</th><th>%s</th><th>B - A</th><th>tolerance</th><th>ok</th></tr>%s</table>
%s</body></html>
""" % ("pass" if ok else "fail", "PASS" if ok else "FAIL: " + html.escape(", ".join(cmp.failing_phases())),
       html.escape(la), html.escape(a.path), a.meta["kind"], html.escape(str(a.scenario)), a.meta["seed"], len(a.cycles),
       html.escape(lb), html.escape(b.path), b.meta["kind"], html.escape(str(b.scenario)), b.meta["seed"], len(b.cycles),
       len(cmp.aligned), notes, html.escape(la), html.escape(lb), "".join(rows), imgs)


def _plt():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def _series(rec, cycle, name):
    rows = rec.cycle_ticks(cycle)
    return rows[:, TICK_INDEX["t_ms"]] / 1000.0, rows[:, TICK_INDEX[name]]


def _plot_timeline(cmp, path, la, lb):
    plt = _plt()
    fig, ax = plt.subplots(figsize=(11, 3.8))
    for k, c in enumerate(cmp.aligned[:PLOT_CYCLES]):
        for rec, color, style, lab in ((cmp.a.rec, "tab:blue", "-", la), (cmp.b.rec, "tab:orange", "--", lb)):
            t, s = _series(rec, c, "state")
            if len(t):
                ax.step(t - t[0], s + 0.08 * k, where="post", color=color, ls=style, lw=1,
                        label="%s cycle %d" % (lab, c))
    ax.set_yticks(range(len(states.NAMES)))
    ax.set_yticklabels(states.NAMES, fontsize=7)
    ax.set_xlabel("time since the cycle's first tick (s)")
    ax.legend(fontsize=7, loc="upper right")
    fig.tight_layout()
    fig.savefig(path, dpi=80)
    plt.close(fig)


def _plot_sensors(cmp, path, la, lb):
    plt = _plt()
    c = cmp.aligned[0]
    names = (("pot_counts", "pot (counts)"), ("current_ma", "gripper current (mA)"),
             ("switch_pressed", "switch pressed"), ("beam_broken", "beam broken"), ("rail_mv", "rail (mV)"))
    fig, axes = plt.subplots(len(names), 1, sharex=True, figsize=(11, 9))
    for ax, (name, label) in zip(axes, names):
        for rec, color, style, lab in ((cmp.a.rec, "tab:blue", "-", la), (cmp.b.rec, "tab:orange", "--", lb)):
            t, v = _series(rec, c, name)
            if len(t):
                ax.plot(t - t[0], v, color=color, ls=style, lw=0.8, label=lab)
        ax.set_ylabel(label, fontsize=7)
    axes[0].legend(fontsize=7, loc="upper right")
    axes[0].set_title("cycle %d" % c, fontsize=9)
    axes[-1].set_xlabel("time since the cycle's first tick (s)")
    fig.tight_layout()
    fig.savefig(path, dpi=80)
    plt.close(fig)


def _plot_dwell(cmp, path, la, lb):
    plt = _plt()
    names = states.NAMES[1:]
    fig, axes = plt.subplots(2, 4, figsize=(12, 5.5))
    for ax, s in zip(axes.flat, names):
        da = [v for c in cmp.aligned for v in cmp.a.per_cycle[c]["dwell"].get(s, [])]
        db = [v for c in cmp.aligned for v in cmp.b.per_cycle[c]["dwell"].get(s, [])]
        if da or db:
            lo, hi = min(da + db), max(da + db)
            bins = np.linspace(lo - 1, hi + 1, 21)
            ax.hist(da, bins=bins, alpha=0.5, color="tab:blue", label=la)
            ax.hist(db, bins=bins, alpha=0.5, color="tab:orange", label=lb)
        ax.set_title(s, fontsize=8)
        ax.tick_params(labelsize=6)
    axes.flat[0].legend(fontsize=7)
    fig.supxlabel("dwell (ms)", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=80)
    plt.close(fig)
