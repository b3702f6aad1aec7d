# The firmware's heap on the emulated RP2040: what the MicroPython heap holds after the imports,
# after boot and at a job's start, measured by the chip itself (gc.mem_free / gc.mem_alloc after
# a gc.collect(), the largest free block from micropython.mem_info()), and what each shipped
# module costs to import. .mpy bytecode is loaded into the heap, so every module shipped and
# imported at boot is heap a job can no longer use.
#
#   python -m surepick.host.engines.rp2040.heap [--imports] [--run N] [--uf2 FILE] [--json FILE]
#
# The heap of the RPI_PICO build: the linker's __GcHeapStart .. __GcHeapEnd (0x200028d8 ..
# 0x20040000 in ../shared/rp2040/firmware.elf: 251,688 bytes, of which the GC's block table takes
# about 1/33); gc.mem_free() + gc.mem_alloc() on the chip says what the collector manages.
import ast
import json
import re
import sys
import tempfile
from pathlib import Path

MARK = "SUREPICK-HEAP "
DONE = "SUREPICK-HEAP-DONE"

# Runs on the chip before the line that prints: collect, then free/alloc and the largest free
# block (mem_info prints it in 16-byte blocks; the line is parsed here, on the host).
_BOARD_HEAP_FN = r'''
import gc
import micropython
def heap(label):
    before = gc.mem_free()
    gc.collect()
    print("%(mark)s" + label, before, gc.mem_free(), gc.mem_alloc())
    micropython.mem_info()
'''.replace("%(mark)s", MARK)

# main.py for the cycle figures: the firmware's own main.py (preload, then app.main on
# hal.for_this_port()), with the figures printed after the imports, after App.boot() and once the JOB
# request is handled (every attempt's moves planned, the heap collected, the job started). The
# two hooks are patched on the class, so app.main runs unchanged; they cost a few hundred bytes.
CYCLE_MAIN = _BOARD_HEAP_FN + r'''
from surepick.firmware import preload
preload.load()
from surepick.firmware import app
from surepick.firmware.hal import for_this_port
hal = for_this_port()
heap("imports")
_boot = app.App.boot
_job = app.App._job
def boot(self):
    _boot(self)
    heap("boot")
def job(self, rid, args):
    _job(self, rid, args)
    heap("job")
app.App.boot = boot
app.App._job = job
app.main(hal)
'''

# main.py for a production run's figures, read at rest and with no collection of the probe's own
# inside a cycle, so that the same run also gives the loop's overruns (test_rp2040_loop.py asserts
# both on one run; docs/rp2040.md compares its ticks with a run on the firmware's own main.py):
#   run    once the RUN is taken (production.py loaded, the run begun), at rest, without a
#          collection: the garbage still there counts as used, so these figures are at most the
#          collected ones (a collection here would change where the first cycle's plans go);
#   cycle  at each cycle's start, inside the firmware's own collection (App._collect, after its
#          moves are planned): between its gc.collect() and the filling of the low holes
#          (app._past_the_holes), so the probe adds no collection and allocates nothing there
#          (print writes str and small int arguments without allocating);
#   end    when the run stops: collected, then the low holes filled as App._collect does, the
#          tick counted as maintenance (flash_tick).
# Each figure's text (about 220 B) is followed by DRAIN_MS at rest, in which the USB FIFO can
# drain, so the ticks after it need not send it.
DRAIN_MS = 10
RUN_MAIN = r'''
import gc
import micropython
import time
from surepick.firmware import preload
preload.load()
from surepick.firmware import app
from surepick.firmware.hal import for_this_port
hal = for_this_port()
def figures(label, collect):
    before = gc.mem_free()
    if collect:
        gc.collect()
    print("%(mark)s", label, before, gc.mem_free(), gc.mem_alloc())
    micropython.mem_info()
    time.sleep_ms(%(drain)d)
_on = [0]
_fill = app._past_the_holes
_start = app.App._start_job
_frame = app.App._run_frame
def fill():
    if _on[0]:
        _on[0] = 0
        figures("cycle", 0)
    return _fill()
def start_job(self, job):
    _on[0] = 1
    r = _start(self, job)
    _on[0] = 0
    return r
_stop = [None]
def stop(run, a, why, fault):
    _stop[0](run, a, why, fault)
    figures("end", 1)
    _fill()
    a.flash_tick = 1
def run_frame(self, ftype, rid, args):
    had = self.production
    _frame(self, ftype, rid, args)
    if had is None and self.production is not None:
        figures("run", 0)
        self.flash_tick = 1
        from surepick.firmware import production
        _stop[0] = production.Run._stop
        production.Run._stop = stop
app._past_the_holes = fill
app.App._start_job = start_job
app.App._run_frame = run_frame
app.main(hal)
'''.replace("%(mark)s", MARK.strip()).replace("%(drain)d", str(DRAIN_MS))

_MAXFREE = re.compile(r"max free sz:\s*(\d+)")
FAILED = "!"         # MARK + FAILED + module: its import raised (the line says what)
BLOCK = 16           # bytes per GC block on a 32-bit port


def parse(text, numbered=()):
    """{label: {"free_before_gc", "free", "alloc", "total", "max_free_block"}} from the chip's
    console text (MARK lines, each followed by mem_info()'s output). A label in numbered is
    printed again and again: its figures are label1, label2, ... in the order printed."""
    out = {}
    last = None
    seen = {}
    for line in text.splitlines():
        i = line.find(MARK)
        if i >= 0 and line.startswith(FAILED, i + len(MARK)):
            last = None            # an import that failed (failures() reads these lines)
            continue
        if i >= 0:
            f = line[i + len(MARK):].split()
            last = f[0]
            if last in numbered:
                seen[last] = seen.get(last, 0) + 1
                last += str(seen[last])
            before, free, alloc = int(f[1]), int(f[2]), int(f[3])
            out[last] = {"free_before_gc": before, "free": free, "alloc": alloc, "total": free + alloc}
            continue
        m = _MAXFREE.search(line)
        if m and last is not None and "max_free_block" not in out[last]:
            out[last]["max_free_block"] = int(m.group(1)) * BLOCK
    return out


def parse_run(text):
    """parse() of RUN_MAIN's console text: its cycles' figures as cycle1, cycle2, ..."""
    return parse(text, numbered=("cycle",))


def failures(text):
    """{module: what its import raised} from the chip's console text (MARK + FAILED lines)."""
    out = {}
    for line in text.splitlines():
        i = line.find(MARK + FAILED)
        if i >= 0:
            name, _, why = line[i + len(MARK + FAILED):].partition(" ")
            out[name] = why.strip()
    return out


def cycle_figures(uf2=None, scenario="nominal", after_job_ms=100, extra=None):
    """Heap figures of the firmware on a fresh chip through boot and a job's start (the
    scenario's CALIBRATE and JOB, as surepick sim run --engine rp2040 sends them).
    -> {"imports"|"boot"|"job": {...}}; raises RuntimeError when a figure is missing."""
    from surepick.host.engines.rp2040 import flashimage
    from surepick.host.engines.rp2040.cycle import ChipCycle
    from surepick.sim import scenarios
    files = flashimage.firmware_files(extra=dict(extra or {}, **{"/main.py": CYCLE_MAIN.encode()}))
    with tempfile.TemporaryDirectory(prefix="surepick-heap-") as d:
        img = Path(d) / "flash.bin"
        img.write_bytes(flashimage.whole_flash(flashimage.build_fs(files)))
        cc = ChipCycle(scenario, scenarios.get(scenario).resolve(None), 0, 0, flash_image=img, uf2=uf2,
                       stop_after_job_ms=after_job_ms)
        try:
            cc.run()
        except Exception as e:
            raise RuntimeError("heap run failed: %s\nconsole:\n%s"
                               % (e, bytes(cc.console[-2000:]).decode("utf-8", "replace"))) from None
    text = bytes(cc.console).decode("utf-8", "replace")
    figs = parse(text)
    missing = [k for k in ("imports", "boot", "job") if k not in figs]
    if missing:
        raise RuntimeError("no heap figure for %s; console:\n%s" % (missing, text[-2000:]))
    return figs


def run_figures(count=5, seed=1, uf2=None, ready_ms=500, measure_heap=True):
    """A production run of `count` cycles on a fresh chip with the `feeder` scenario's world
    (a part on the pad a seeded while after each pick): CALIBRATE, then a RUN of the scenario's
    job with one attempt a part and part-ready `check` every ready_ms (as
    tests/host/cli/test_production_feeder.py sends it), to the run's RUN_STOP record.
    measure_heap: the firmware runs under RUN_MAIN (the heap read at rest, no collection of the
    probe's own inside a cycle: RUN_MAIN's comment); False: the firmware's own main.py.
    -> {"heap": {"run"|"cycle1".."cycleN"|"end": {...}}, "telemetry": the last TELEMETRY's
    fields by name, "stop": the RUN_STOP record's (cycles, placed, why, fault), "binned": parts
    the world's feeder counted in the bin}. Raises RuntimeError when the run does not end."""
    from surepick.host import production as host_run
    from surepick.host.engines.rp2040 import flashimage
    from surepick.host.engines.rp2040.cycle import ChipCycle
    from surepick.sim import scenarios
    from surepick.shared_fsm import codes, link, run_codes, ticks

    def is_stop(f):
        return (f.ftype == link.T_EVENT and f.fields[2] == codes.K_RUN
                and f.fields[5] == run_codes.R_RUN_STOP)

    def request(world):
        pick, place, width = world.job_um()
        a = host_run.run_args(count, (pick, place, width, 1), ready=(run_codes.READY_CHECK, ready_ms))
        # a cycle is within CYCLE_LIMIT_MS; the feeder's waits between them are a few seconds
        return link.request(link.T_RUN, 2, a), is_stop, count * 60000

    files = flashimage.firmware_files(extra={"/main.py": RUN_MAIN.encode()} if measure_heap else None)
    with tempfile.TemporaryDirectory(prefix="surepick-heap-") as d:
        img = Path(d) / "flash.bin"
        img.write_bytes(flashimage.whole_flash(flashimage.build_fs(files)))
        cc = ChipCycle("feeder", scenarios.get("feeder").resolve(None), seed, 0, flash_image=img, uf2=uf2,
                       request=request)
        try:
            cc.run()
        except Exception as e:
            raise RuntimeError("run failed: %s\nconsole:\n%s"
                               % (e, bytes(cc.console[-2000:]).decode("utf-8", "replace"))) from None
    figs = parse_run(bytes(cc.console).decode("utf-8", "replace"))
    names = link.SCHEMA[link.T_TELEMETRY][3]
    # TELEMETRY's overruns count since boot: the run's are the last frame's less the first one's
    # begun after the RUN_START record. Before it: boot, the calibration, and reading the RUN line
    # itself at rest (32 bytes a tick, link_rx_bytes)
    began = next(f.fields[1] for f in cc.frames if f.ftype == link.T_EVENT and f.fields[2] == codes.K_RUN
                 and f.fields[5] == run_codes.R_RUN_START)
    tel = [dict(zip(names, f.fields)) for f in cc.frames if f.ftype == link.T_TELEMETRY]
    after = [t for t in tel if ticks.ticks_diff(t["t_ms"], began) > 0]
    last = tel[-1]
    stop = next(f.fields for f in cc.frames if is_stop(f))
    feeder = cc.ps.feeder
    return {"heap": figs, "telemetry": last,
            "overruns_before_run": after[0]["overruns"], "run_overruns": last["overruns"] - after[0]["overruns"],
            "stop": (stop[7], stop[8], stop[9], stop[11]), "binned": feeder.binned if feeder else None}


# ---- per-module import cost ----

def module_deps():
    """{dotted name: the shipped modules it imports at module level} for manifest.MODULES, read
    from the sources (an import inside a function is lazy and not counted)."""
    from surepick.firmware import manifest
    from surepick.host.source_tree import PACKAGE as root
    names = ["surepick." + m.replace("/", ".").replace(".__init__", "") for m in manifest.MODULES]
    deps = {}
    for m, name in zip(manifest.MODULES, names):
        path = root / (m + ".py")
        pkg = name if m.endswith("__init__") else name.rsplit(".", 1)[0]
        tree = ast.parse(path.read_text())
        ds = set()
        for node in tree.body:        # module level only
            if isinstance(node, ast.ImportFrom) and node.level:
                base = pkg.split(".")
                base = base[:len(base) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
                if node.module:
                    ds.add(target)
                for a in node.names:
                    ds.add(target + "." + a.name)
        deps[name] = {d for d in ds if d in names and d != name}
    return deps


def import_order():
    """The shipped modules (manifest.MODULES) as dotted names, each after the board modules it
    imports at module level, so importing them in this order loads one module per import."""
    deps = module_deps()
    order = []

    def visit(n):
        if n in order:
            return
        for d in sorted(deps[n]):
            visit(d)
        order.append(n)
    for n in deps:
        visit(n)
    return order


def _imports_main(order):
    lines = [_BOARD_HEAP_FN, "heap('start')"]
    for n in order:
        lines.append("try:\n    __import__(%r)\n    heap(%r)\nexcept Exception as e:\n"
                     "    print(%r, repr(e))" % (n, n, MARK + FAILED + n))
    lines.append("print(%r)" % DONE)
    return "\n".join(lines) + "\n"


def import_costs(uf2=None, max_ms=60000):
    """-> (the heap before any import, [(module, bytes its import keeps on the heap, free after
    it, None)]) on a fresh chip, in import_order(); a module whose import raised on the chip is
    listed as (module, None, None, what it raised)."""
    from surepick.host.engines.rp2040 import flashimage
    from surepick.host.engines.rp2040.chip import Chip
    order = import_order()
    files = flashimage.firmware_files(extra={"/main.py": _imports_main(order).encode()})
    with tempfile.TemporaryDirectory(prefix="surepick-heap-") as d:
        img = Path(d) / "flash.bin"
        img.write_bytes(flashimage.whole_flash(flashimage.build_fs(files)))
        text = ""
        with Chip(uf2, flash=img, lockstep=True) as chip:
            chip.tap(True)
            t = 0
            while DONE not in text and t < max_ms:
                st = chip.run(ms=200)
                text += st.get("serial_out") or ""
                t += 200
    if DONE not in text:
        raise RuntimeError("the import run did not finish; console:\n%s" % text[-2000:])
    figs = parse(text)
    failed = failures(text)
    out = []
    prev = figs["start"]["alloc"]
    for n in order:
        f = figs.get(n)
        if f is None:
            out.append((n, None, None, failed.get(n, "no figure printed")))
            continue
        out.append((n, f["alloc"] - prev, f["free"], None))
        prev = f["alloc"]
    return figs["start"], out


def main(argv=None):
    import argparse
    ap = argparse.ArgumentParser(description="the firmware's heap on the emulated RP2040")
    ap.add_argument("--uf2")
    ap.add_argument("--imports", action="store_true", help="also the import cost of each module")
    ap.add_argument("--json", metavar="FILE")
    ap.add_argument("--run", type=int, metavar="N", help="also a production run of N cycles (the feeder "
                    "scenario): the heap at its start and each cycle's, the loop's overruns")
    args = ap.parse_args(argv)
    res = {}
    if args.run:
        r = run_figures(args.run, uf2=args.uf2)
        res["run"] = r
        for k in ["boot", "run"] + ["cycle%d" % (i + 1) for i in range(args.run)] + ["end"]:
            f = r["heap"].get(k)
            if f is not None:
                print("%-8s free %6d B, largest free block %s B" % (k, f["free"], f.get("max_free_block")))
        t = r["telemetry"]
        print("run: %d cycles, %d placed, stop %s; the world's bin counted %s; overruns during the run %d "
              "(before it, boot and the requests read: %d)" % (r["stop"][0], r["stop"][1], r["stop"][2],
                                                                r["binned"], r["run_overruns"], r["overruns_before_run"]))
    if args.imports:
        start, costs = import_costs(args.uf2)
        res["import_start"] = start
        res["imports"] = costs
        print("heap at the REPL before any import: free %d of %d" % (start["free"], start["total"]))
        for n, c, free, why in sorted(costs, key=lambda x: -(x[1] or 0)):
            print("  %-44s %s" % (n, "import failed on the chip: %s" % why if c is None
                                  else "%6d B  (free after %d)" % (c, free)))
        print("  total %d B" % sum(c for _, c, _, _ in costs if c))
    figs = cycle_figures(args.uf2)
    res["cycle"] = figs
    for k in ("imports", "boot", "job"):
        f = figs[k]
        print("%-8s free %6d B of %d (before collect %d), largest free block %s B"
              % (k, f["free"], f["total"], f["free_before_gc"], f.get("max_free_block")))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(res, fh, indent=1, sort_keys=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
