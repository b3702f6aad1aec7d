"""One simulated cycle's picture (`sim run`'s cycle_NNN.png), drawn straight with Pillow.

Five panels over the cycle's time: the machine's state, the jaw (pot, command, truth), the
gripper current, the switch / beam / finger-contact levels, and the part's height (truth); fault
events are red lines with their reason. Pillow draws a trajectory's ~1,000 rows per series in a
few milliseconds and imports in tens: the picture costs less than the cycle it shows (matplotlib
took 0.4 s to import and 0.14-0.27 s per figure, more than a cycle's simulation).
"""
import math

from PIL import Image, ImageDraw, ImageFont

from surepick.host.engines.inproc import TRAJECTORY_COLUMNS
from surepick.shared_fsm import states

WIDTH, HEIGHT = 880, 720
_LEFT, _RIGHT, _TOP, _BOTTOM = 128, 12, 28, 34
_GAP = 8
_RATIOS = (2.0, 1.3, 1.3, 1.0, 1.3)
_INK, _GRID, _FRAME = (0, 0, 0), (225, 225, 225), (90, 90, 90)
_BLUE, _ORANGE, _GREEN, _RED = (31, 119, 180), (255, 127, 14), (44, 160, 44), (214, 39, 40)
_COL = {name: i for i, name in enumerate(TRAJECTORY_COLUMNS)}


def _nice_step(span, n):
    # A 1/2/5 x 10^k step giving about n intervals over span.
    raw = span / max(n, 1)
    k = 10.0 ** math.floor(math.log10(raw)) if raw > 0 else 1.0
    for m in (1, 2, 2.5, 5, 10):
        if raw <= m * k:
            return m * k
    return 10 * k


def _label(v):
    return ("%d" % round(v)) if abs(v - round(v)) < 1e-9 else ("%.1f" % v)


class _Panel:
    def __init__(self, draw, font, box, t0, t1, lo, hi):
        self.d, self.font = draw, font
        self.x0, self.y0, self.x1, self.y1 = box
        self.t0, self.t1 = t0, t1
        if hi <= lo:
            lo, hi = lo - 1.0, hi + 1.0
        pad = (hi - lo) * 0.06
        self.lo, self.hi = lo - pad, hi + pad

    def x(self, t):
        return self.x0 + (t - self.t0) / (self.t1 - self.t0) * (self.x1 - self.x0)

    def y(self, v):
        return self.y1 - (v - self.lo) / (self.hi - self.lo) * (self.y1 - self.y0)

    def frame(self, yticks=None, ylabels=None):
        d = self.d
        step = _nice_step(self.t1 - self.t0, 10)
        t = math.ceil(self.t0 / step) * step
        while t <= self.t1:
            d.line([(self.x(t), self.y0), (self.x(t), self.y1)], fill=_GRID)
            t += step
        if yticks is None:
            ys = _nice_step(self.hi - self.lo, 4)
            v = math.ceil(self.lo / ys) * ys
            yticks = []
            while v <= self.hi:
                yticks.append(v)
                v += ys
        for i, v in enumerate(yticks):
            y = self.y(v)
            d.line([(self.x0, y), (self.x1, y)], fill=_GRID)
            text = ylabels[i] if ylabels else _label(v)
            d.text((self.x0 - 4, y), text, fill=_INK, font=self.font, anchor="rm")
        d.rectangle([self.x0, self.y0, self.x1, self.y1], outline=_FRAME)

    def series(self, t, v, colour, steps=False, dashed=False):
        # A polyline, broken where a value is missing; steps: held until the next sample.
        seg = []
        for i, val in enumerate(v):
            if val is None or val == "" or (isinstance(val, float) and math.isnan(val)):
                self._line(seg, colour, dashed)
                seg = []
                continue
            x, y = self.x(t[i]), self.y(val)
            if steps and seg:
                seg.append((x, seg[-1][1]))
            seg.append((x, y))
        self._line(seg, colour, dashed)

    def _line(self, pts, colour, dashed):
        if len(pts) < 2:
            return
        if not dashed:
            self.d.line(pts, fill=colour, width=1)
            return
        for k in range(0, len(pts) - 1, 2):   # every other segment: a dashed look
            self.d.line(pts[k:k + 2], fill=colour, width=1)

    def legend(self, items):
        y = self.y0 + 4
        for text, colour in items:
            w = self.d.textlength(text, font=self.font)
            x = self.x1 - 6 - w
            self.d.line([(x - 22, y + 6), (x - 4, y + 6)], fill=colour, width=2)
            self.d.text((x, y), text, fill=_INK, font=self.font)
            y += 13


def plot_cycle(path, rows, cycle):
    """rows: the cycle's trajectory rows (engines/inproc.TRAJECTORY_COLUMNS); cycle: its record."""
    img = Image.new("RGB", (WIDTH, HEIGHT), (255, 255, 255))
    d = ImageDraw.Draw(img)
    font = ImageFont.load_default(size=10)

    def series(name):
        return [r[_COL[name]] for r in rows]
    t = [r[_COL["t_ms"]] / 1000.0 for r in rows]
    t0, t1 = (t[0], t[-1]) if len(t) > 1 and t[-1] > t[0] else (0.0, 1.0)
    title = "%s seed %d cycle %d: machine %s%s, judge %s (%s)" % (
        cycle.get("scenario", ""), cycle["seed"], cycle["cycle"], cycle["fsm_outcome"],
        (" " + cycle["fsm_fault"]) if cycle["fsm_fault"] else "", cycle["judge_outcome"], cycle["judge_reason"])
    d.text((_LEFT, 8), title[:150], fill=_INK, font=font)
    height = HEIGHT - _TOP - _BOTTOM - _GAP * (len(_RATIOS) - 1)
    boxes, y = [], _TOP
    for r in _RATIOS:
        h = height * r / sum(_RATIOS)
        boxes.append((_LEFT, y, WIDTH - _RIGHT, y + h))
        y += h + _GAP

    def numbers(v):
        return [x for x in v if isinstance(x, (int, float)) and not (isinstance(x, float) and math.isnan(x))]

    def panel(k, *lists):
        vals = [x for v in lists for x in numbers(v)] or [0.0]
        return _Panel(d, font, boxes[k], t0, t1, min(vals), max(vals))

    st = series("state")
    p = _Panel(d, font, boxes[0], t0, t1, 0, len(states.NAMES) - 1)
    p.frame(list(range(len(states.NAMES))), list(states.NAMES))
    p.series(t, st, _INK, steps=True)
    for e in cycle.get("events", []):
        if e["kind"] == "fault" and t0 <= e["t_ms"] / 1000.0 <= t1:
            x = p.x(e["t_ms"] / 1000.0)
            d.line([(x, p.y0), (x, p.y1)], fill=_RED)
            d.text((x + 2, p.y0 + 2), e["reason"], fill=_RED, font=font)

    pot = [(c - 8000) / 1067.0 for c in series("pot_counts")]
    cmd = [v / 1000.0 for v in series("jaw_cmd_um")]
    true = series("jaw_true_mm")
    p = panel(1, pot, cmd, true)
    p.frame()
    p.series(t, pot, _BLUE)
    p.series(t, cmd, _ORANGE, dashed=True)
    p.series(t, true, _GREEN)
    p.legend([("jaw from pot (mm)", _BLUE), ("jaw command (mm)", _ORANGE), ("jaw true (mm)", _GREEN)])

    cur = series("current_ma")
    p = panel(2, cur)
    p.frame()
    p.series(t, cur, _RED)
    p.legend([("gripper current (mA)", _RED)])

    sw = series("switch_pressed")
    beam = [v + 1.2 for v in series("beam_broken")]
    touch = [v + 2.4 for v in series("finger_contact")]
    p = _Panel(d, font, boxes[3], t0, t1, 0.0, 3.4)
    # three levels, each 0..1, stacked: named on the axis, no legend over the lines
    p.frame([0.5, 1.7, 2.9], ["switch pressed", "beam broken", "finger contact (truth)"])
    p.series(t, sw, _BLUE, steps=True)
    p.series(t, beam, _ORANGE, steps=True)
    p.series(t, touch, _GREEN, steps=True)

    z = series("part_z_mm")
    p = panel(4, z)
    p.frame()
    p.series(t, z, _GREEN)
    p.legend([("part z, truth (mm)", _GREEN)])
    step = _nice_step(t1 - t0, 10)
    v = math.ceil(t0 / step) * step
    while v <= t1:
        d.text((p.x(v), p.y1 + 4), _label(v), fill=_INK, font=font, anchor="mt")
        v += step
    d.text(((p.x0 + p.x1) / 2, HEIGHT - 12), "time (s)", fill=_INK, font=font, anchor="mm")
    img.save(path, format="PNG", compress_level=1)
