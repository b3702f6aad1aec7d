# A sweep's pictures: heat maps over the first two axes (one panel per combination of any
# further axes) with the envelope outlined and false successes marked, as PNG (matplotlib) and
# as envelope.html, whose grid links each failing cell to the report of one of its failing cycles.
import html
import itertools
import textwrap
import os

from surepick.host.engines.sweep import fmt

MAX_FACETS = 24
ENVELOPE_PNG = "envelope.png"
ATTEMPTS_PNG = "attempts.png"
HTML_FILE = "envelope.html"


def facets(axis_names, axis_values, lookup):
    """Panels: [(label, grid)] where grid[row][col] = lookup(values) (None when missing), columns
    along the first axis, rows along the second; one panel per combination of the others."""
    xs = axis_values[0] if axis_values else [None]
    ys = axis_values[1] if len(axis_values) > 1 else [None]
    rest_names, rest_values = axis_names[2:], axis_values[2:]
    out = []
    for combo in itertools.product(*rest_values):
        label = ", ".join("%s=%s" % (n, fmt(v)) for n, v in zip(rest_names, combo))
        grid = []
        for y in ys:
            row = []
            for x in xs:
                key = tuple(v for v in (x, y) if v is not None)[:len(axis_values)] + tuple(combo)
                row.append(lookup(key))
            grid.append(row)
        out.append((label, grid))
    return out


def pyplot():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def _cmap(name):
    import matplotlib
    return matplotlib.colormaps[name]


def draw_panel(ax, values, xs, ys, xname, yname, cmap, vmin, vmax, text=None, outlines=(), marks=()):
    """One heat map: values[row][col] (None: not run, grey); text[row][col] written in each cell;
    outlines: [(mask, line style)] drawn around the region where mask is true; marks:
    [(mask, text, colour)] written over the cells where mask is true."""
    import numpy as np
    arr = np.array([[np.nan if v is None else v for v in row] for row in values], dtype=float)
    cm = _cmap(cmap).with_extremes(bad="#bbbbbb")     # not run: grey
    im = ax.imshow(np.ma.masked_invalid(arr), origin="lower", cmap=cm, vmin=vmin, vmax=vmax, aspect="auto",
                   interpolation="nearest")
    ny, nx = arr.shape
    ax.set_xticks(range(nx))
    ax.set_xticklabels([fmt(x) for x in xs] if xs != [None] else [""], fontsize=7, rotation=90 if nx > 12 else 0)
    ax.set_yticks(range(ny))
    ax.set_yticklabels([fmt(y) for y in ys] if ys != [None] else [""], fontsize=7)
    ax.set_xlabel(xname or "")
    ax.set_ylabel(yname or "")
    small = nx * ny <= 400
    if text is not None and small:
        for r in range(ny):
            for c in range(nx):
                if text[r][c]:
                    ax.text(c, r, text[r][c], ha="center", va="center", fontsize=6 if nx > 10 else 8)
    for mask, style in outlines:
        outline(ax, mask, **style)
    for mask, label, colour in marks:
        for r in range(ny):
            for c in range(nx):
                if mask[r][c]:
                    ax.text(c, r - 0.3, label, ha="center", va="center", fontsize=7, color=colour, weight="bold")
    return im


def outline(ax, mask, **style):
    # The border of the region where mask is true: every cell edge with the region on one side only.
    ny, nx = len(mask), len(mask[0])

    def inside(r, c):
        return 0 <= r < ny and 0 <= c < nx and bool(mask[r][c])
    for r in range(ny):
        for c in range(nx):
            if not inside(r, c):
                continue
            if not inside(r, c - 1):
                ax.plot([c - 0.5, c - 0.5], [r - 0.5, r + 0.5], **style)
            if not inside(r, c + 1):
                ax.plot([c + 0.5, c + 0.5], [r - 0.5, r + 0.5], **style)
            if not inside(r - 1, c):
                ax.plot([c - 0.5, c + 0.5], [r - 0.5, r - 0.5], **style)
            if not inside(r + 1, c):
                ax.plot([c - 0.5, c + 0.5], [r + 0.5, r + 0.5], **style)


def figure_of(panels, title, draw, colorbar_label):
    """panels: [(label, grid)]; draw(ax, grid) -> the image for the colour bar. -> a figure."""
    plt = pyplot()
    shown = panels[:MAX_FACETS]
    n = len(shown)
    cols = min(n, 3)
    rows = (n + cols - 1) // cols
    nx = len(shown[0][1][0])
    ny = len(shown[0][1])
    w = max(4.0, min(9.0, 1.4 + 0.5 * nx))
    h = max(2.2, min(6.0, 1.4 + 0.42 * ny))
    fig, axs = plt.subplots(rows, cols, figsize=(w * cols + 1.2, h * rows + 1.2), squeeze=False, layout="constrained")
    im = None
    for k, (label, grid) in enumerate(shown):
        ax = axs[k // cols][k % cols]
        im = draw(ax, grid)
        if label:
            ax.set_title(label, fontsize=8)
    for k in range(n, rows * cols):
        axs[k // cols][k % cols].axis("off")
    more = "" if len(panels) <= MAX_FACETS else " (first %d of %d panels)" % (MAX_FACETS, len(panels))
    width = int(12 * (w * cols + 1.2))   # characters of a 9-point title line across the figure
    lines = [wrapped for part in (title + more).split("\n") for wrapped in textwrap.wrap(part, width)]
    fig.suptitle("\n".join(lines), fontsize=9)
    fig.colorbar(im, ax=axs.ravel().tolist(), label=colorbar_label, shrink=0.8)
    return fig


def _cell_panels(plan, cells):
    by_key = {tuple(c.values[a.name] for a in plan.axes): c for c in cells}
    return facets([a.name for a in plan.axes], [a.values for a in plan.axes], by_key.get)


def _xy(plan):
    xs = plan.axes[0].values if plan.axes else [None]
    ys = plan.axes[1].values if len(plan.axes) > 1 else [None]
    xn = plan.axes[0].name if plan.axes else ""
    yn = plan.axes[1].name if len(plan.axes) > 1 else ""
    return xs, ys, xn, yn


def plot_envelope(path, plan, cells, threshold):
    xs, ys, xn, yn = _xy(plan)

    def draw(ax, grid):
        rate = [[None if c is None or c.rate is None else c.rate for c in row] for row in grid]
        text = [["" if c is None or c.rate is None else "%.2f" % c.rate for c in row] for row in grid]
        env = [[c is not None and c.in_envelope for c in row] for row in grid]
        fs = [[c is not None and c.false_success > 0 for c in row] for row in grid]
        return draw_panel(ax, rate, xs, ys, xn, yn, "RdYlGn", 0.0, 1.0, text,
                          outlines=[(env, dict(color="k", lw=2.2))], marks=[(fs, "FALSE OK", "#b00000")])
    fig = figure_of(_cell_panels(plan, cells),
                    "%s: placed rate over %d seeds (the machine said placed and the judge measured it); outlined: the envelope (rate >= %g, no false success)"
                    % (plan.scenario, plan.seeds, threshold), draw, "placed rate")
    fig.savefig(path, dpi=90)
    pyplot().close(fig)
    return path


def plot_attempts(path, plan, cells):
    xs, ys, xn, yn = _xy(plan)
    top = max([c.attempts_mean for c in cells if c.attempts_mean is not None] or [1.0])

    def draw(ax, grid):
        att = [[None if c is None else c.attempts_mean for c in row] for row in grid]
        text = [["" if c is None or c.attempts_mean is None else "%.1f" % c.attempts_mean for c in row]
                for row in grid]
        return draw_panel(ax, att, xs, ys, xn, yn, "viridis", 0.0, max(top, 1.0), text)
    fig = figure_of(_cell_panels(plan, cells), "%s: mean grasp attempts per cycle" % plan.scenario, draw, "attempts")
    fig.savefig(path, dpi=90)
    pyplot().close(fig)
    return path


def colour(rate, cmap="RdYlGn", vmin=0.0, vmax=1.0):
    # A value as the heat map's colour, for the HTML grid.
    import matplotlib.colors
    if rate is None:
        return "#bbbbbb"
    return matplotlib.colors.to_hex(_cmap(cmap)((rate - vmin) / (vmax - vmin)))


def escape(x):
    return html.escape(str(x))


def _cell_td(c, drills):
    if c is None:
        return "<td></td>"
    d = drills.get(c.index)
    tip = "cell %d: placed %d/%d, Wilson 95%% [%.2f, %.2f]; %s" % (
        c.index, c.placed, c.runs, c.low, c.high,
        ", ".join("%s=%d" % kv for kv in c.faults.items()) or "no faults")
    style = "background:%s;%s" % (colour(c.rate), "outline:3px solid #000;outline-offset:-3px;" if c.in_envelope else "")
    body = "%s<br><small>%d/%d</small>" % ("&ndash;" if c.rate is None else "%.2f" % c.rate, c.placed, c.runs)
    if c.false_success:
        body += "<br><b class=fs>%d false OK</b>" % c.false_success
    if d:
        body += '<br><a href="%s">seed %d</a>' % (escape(d["dir"] + "/cycle_000.png"), d["seed"])
    return '<td style="%s" title="%s">%s</td>' % (style, escape(tip), body)


def _grid_tables(plan, cells, drills):
    xs, ys, xn, yn = _xy(plan)
    out = []
    for label, grid in _cell_panels(plan, cells):
        if label:
            out.append("<h3>%s</h3>" % escape(label))
        out.append('<table class=grid><tr><th>%s &darr; / %s &rarr;</th>%s</tr>' % (
            escape(yn), escape(xn), "".join("<th>%s</th>" % escape(fmt(x) if x is not None else "") for x in xs)))
        for y, row in reversed(list(zip(ys, grid))):   # highest value on top, as in the picture
            out.append("<tr><th>%s</th>%s</tr>" % (escape(fmt(y) if y is not None else ""),
                                                   "".join(_cell_td(c, drills) for c in row)))
        out.append("</table>")
    return "\n".join(out)


STYLE = """body{font-family:sans-serif;margin:1.5em;max-width:90em}
table{border-collapse:collapse;font-size:12px}td,th{border:1px solid #999;padding:3px 5px;text-align:center}
table.grid td{min-width:3.2em}.fs{color:#b00000}.bad{background:#fdd}code{background:#eee;padding:1px 3px}"""


def write_html(out_dir, plan, cells, summ, drills, images):
    """envelope.html: what was swept, the pictures, the grid (links to failing cycles' reports)
    and every cell's row."""
    t = summ["totals"]
    parts = ["<!doctype html><html><head><meta charset=utf-8><title>surepick sweep: %s</title><style>%s</style>"
             "</head><body>" % (escape(plan.scenario), STYLE),
             "<h1>Robustness envelope: %s</h1>" % escape(plan.scenario),
             "<p><code>%s</code></p>" % escape(" ".join(summ["command"])),
             "<p>%d cells &times; %d seeds (first %d); %d cycles: placed %d, <b>false successes %d</b>, false "
             "failures %d. Envelope: %s (threshold %g): <b>%d cells</b>.</p>" % (
                 len(cells), plan.seeds, plan.first_seed, t["runs"], t["placed"], t["false_success"],
                 t["false_failure"], escape(summ["envelope"]["rule"]), summ["envelope"]["threshold"],
                 summ["envelope"]["cells_in"])]
    fixed = dict(summ["fixed"])
    fixed.update({"config." + k: v for k, v in plan.config.items()})
    if fixed or plan.plant:
        parts.append("<p>Fixed: %s%s</p>" % (escape(", ".join("%s=%s" % (k, fmt(v)) for k, v in fixed.items())),
                                              escape(" plant %s" % plan.plant) if plan.plant else ""))
    if summ.get("interrupted"):
        parts.append("<p class=bad>Interrupted: %d of %d cycles done; <code>--resume</code> finishes it.</p>"
                     % (summ["cycles_done"], summ["cycles_planned"]))
    for img in images:
        parts.append('<p><img src="%s" style="max-width:100%%"></p>' % escape(os.path.basename(img)))
    parts.append("<h2>Grid</h2><p>Colour: placed rate; thick border: in the envelope; a link: the report of "
                 "one failing cycle of that cell, re-run with its trajectory.</p>")
    parts.append(_grid_tables(plan, cells, drills))
    parts.append("<h2>Cells</h2>" + _cells_table(plan, cells, drills))
    parts.append("<p><small>versions %s; backend %s</small></p></body></html>" % (
        escape(summ["versions"]), escape(summ["backend"])))
    path = os.path.join(out_dir, HTML_FILE)
    with open(path + ".tmp", "w") as f:
        f.write("\n".join(parts))
    os.replace(path + ".tmp", path)
    return path


def _cells_table(plan, cells, drills):
    head = [a.name for a in plan.axes] + ["runs", "placed", "rate [95%]", "false success", "false failure",
                                          "faults", "attempts", "envelope", "failing cycle"]
    out = ["<table><tr>%s</tr>" % "".join("<th>%s</th>" % escape(h) for h in head)]
    for c in cells:
        d = drills.get(c.index)
        link = ""
        if d:
            link = '<a href="%s">seed %d</a> (<a href="%s">report.json</a>)%s' % (
                escape(d["dir"] + "/cycle_000.png"), d["seed"], escape(d["dir"] + "/report.json"),
                "" if d["same"] else " <b class=fs>re-run ended differently: %s</b>" % escape(d["rerun"]))
        vals = [fmt(c.values[a.name]) for a in plan.axes]
        rate = "&ndash;" if c.rate is None else "%.2f [%.2f, %.2f]" % (c.rate, c.low, c.high)
        cls = ' class=bad' if c.false_success else ""
        out.append("<tr%s>%s<td>%d</td><td>%d</td><td>%s</td><td>%d</td><td>%d</td><td>%s</td><td>%s</td>"
                   "<td>%s</td><td>%s</td></tr>" % (
                       cls, "".join("<td>%s</td>" % escape(v) for v in vals), c.runs, c.placed, rate, c.false_success,
                       c.false_failure, escape(", ".join("%s=%d" % kv for kv in c.faults.items())),
                       "" if c.attempts_mean is None else "%.2f" % c.attempts_mean, "yes" if c.in_envelope else "",
                       link))
    out.append("</table>")
    return "\n".join(out)
