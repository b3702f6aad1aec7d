"""The generated parts of docs/hardware.md: the wiring (a table and a diagram of the Pico's header)
from the pin map the firmware boots with (firmware/settings.py BOARD_FIELDS), the sensor front ends
scaled from the firmware's own calibration defaults, and the power figures measured on the
simulator's servo models (a nominal job on the MuJoCo plant; the stall law of sim/servo_model.py).

    python -m surepick.host.engines.hardware_doc            rewrite the generated blocks of the doc
    python -m surepick.host.engines.hardware_doc --check    exit 1 if the doc differs from what this makes

Each block sits between `<!-- generated: NAME -->` and `<!-- end: NAME -->`; everything else in the
doc is prose and stays as written.
"""
import argparse
import re
import sys

from surepick.host.source_tree import DOCS

DOC = DOCS / "hardware.md"

# The 40 pins of the header, the same on the Pico, Pico W, Pico 2 and Pico 2 W (Raspberry Pi Pico
# and Pico 2 datasheets, pinout): physical pin -> name. GP23-25 and GP29 are not brought out.
HEADER = {
    1: "GP0", 2: "GP1", 3: "GND", 4: "GP2", 5: "GP3", 6: "GP4", 7: "GP5", 8: "GND", 9: "GP6", 10: "GP7",
    11: "GP8", 12: "GP9", 13: "GND", 14: "GP10", 15: "GP11", 16: "GP12", 17: "GP13", 18: "GND", 19: "GP14",
    20: "GP15", 21: "GP16", 22: "GP17", 23: "GND", 24: "GP18", 25: "GP19", 26: "GP20", 27: "GP21", 28: "GND",
    29: "GP22", 30: "RUN", 31: "GP26", 32: "GP27", 33: "AGND", 34: "GP28", 35: "ADC_VREF", 36: "3V3(OUT)",
    37: "3V3_EN", 38: "GND", 39: "VSYS", 40: "VBUS",
}
SERVOS = ("base", "shoulder", "elbow", "wrist", "gripper")
ADC_GPIO0 = 26                 # ADC0 is GP26 on every Pico (hal/rp2_chips.py)
VREF_MV = 3300                 # the ADC's full scale on a Pico (firmware/sensors.py)
DIVIDER_BOTTOM_OHM = 10000     # the rail divider's lower resistor; the upper one follows


def physical_pin(gpio):
    for pin, name in HEADER.items():
        if name == "GP%d" % gpio:
            return pin
    return None


def signals(board=None, arm=None):
    # -> [(GPIO, what, direction, wire it to)] of the pin map: the servos' pins from the arm
    # description (the reference arm's by default), the rest from the firmware's defaults
    from surepick.firmware import settings
    from surepick.shared_fsm import kinematics
    b = board or settings.board_defaults()
    servo_pins = (arm or kinematics.REFERENCE).servo_pins()
    out = []
    for i, name in enumerate(SERVOS):
        if servo_pins[i] < 0:
            continue
        out.append((servo_pins[i], "%s servo signal" % name, "out, PWM 50 Hz",
                    "the servo's signal wire (orange/yellow); its red to the servo rail +, brown/black to ground"))
    out += [
        (b["pin_estop"], "e-stop (auxiliary NC contact)", "in, pull-up",
         "one side of the e-stop's auxiliary normally-closed contact; the other side to ground. Open = STOP"),
        (b["pin_switch"], "finger microswitch", "in, pull-up",
         "the switch's NO contact; its COM to ground. LOW = pressed"),
        (b["pin_beam"], "IR break-beam receiver", "in, pull-up",
         "the receiver's open-collector output; its + to 3.3 V, - to ground. LOW = beam broken"),
        (ADC_GPIO0 + b["adc_pot"], "gripper pot wiper (ADC%d)" % b["adc_pot"], "analog in",
         "the wire soldered to the gripper servo's pot wiper, through 1 kOhm"),
        (ADC_GPIO0 + b["adc_current"], "gripper current sense (ADC%d)" % b["adc_current"], "analog in",
         "the current-sense amplifier's output"),
        (ADC_GPIO0 + b["adc_rail"], "servo rail divider (ADC%d)" % b["adc_rail"], "analog in",
         "the divider's midpoint (servo rail + to the top resistor, the bottom one to AGND)"),
    ]
    led = b["pin_led"]
    out.append((led, "status LED", "out",
                "the board's own LED (on a Pico W / Pico 2 W: on the radio chip, Pin(\"LED\"))" if led == 25
                else "an LED with a 330 Ohm resistor to ground"))
    return out


def wiring_table(board=None):
    rows = ["| GPIO | header pin | signal | direction | wire it to |", "| --- | --- | --- | --- | --- |"]
    for gpio, what, direction, to in sorted(signals(board)):
        pin = physical_pin(gpio)
        rows.append("| GP%d | %s | %s | %s | %s |" % (gpio, pin if pin else "(on the board)", what, direction, to))
    rows.append("| GND | 3, 8, 13, 18, 23, 28, 38 | ground | | the servo rail's -, every sensor's ground: one common ground |")
    rows.append("| AGND | 33 | analog ground | | the divider's bottom resistor, the current amplifier's and the pot's ground |")
    rows.append("| VSYS | 39 | the Pico's own 5 V | in | a separate 5 V (or USB alone): never the servo rail |")
    return "\n".join(rows)


def header_diagram(board=None):
    # The header, top view with the USB connector up: pin 1 top left, pin 40 top right.
    short = {}
    for gpio, what, _, _ in signals(board):
        short["GP%d" % gpio] = what
    width = max(len(v) for v in short.values()) + 4
    lines = [" " * (width + 10) + "+-----[ USB ]-----+"]
    for row in range(20):
        left, right = row + 1, 40 - row
        ln, rn = HEADER[left], HEADER[right]
        ltxt = (short.get(ln, "") + " <-") if ln in short else ""
        rtxt = ("-> " + short.get(rn, "")) if rn in short else ""
        lines.append("%*s %-5s %2d |o             o| %-2d %-8s %s" % (width, ltxt, ln, left, right, rn, rtxt))
    lines.append(" " * (width + 10) + "+-----------------+")
    return "```text\n" + "\n".join(line.rstrip() for line in lines) + "\n```"


def power_diagram(board=None):
    # The supply, the e-stop's contacts and the senses on the rail, with this pin map's GPIOs.
    from surepick.firmware import settings
    b = board or settings.board_defaults()
    rail = "GP%d" % (ADC_GPIO0 + b["adc_rail"])
    cur = "GP%d" % (ADC_GPIO0 + b["adc_current"])
    estop = "GP%d" % b["pin_estop"]
    lines = [
        "servo supply + --[fuse]--[e-stop main NC contact, or the contactor it drops]-- servo rail +",
        "",
        "servo rail + --+-- bulk capacitor, at the servos -- ground",
        "               +-- base, shoulder, elbow, wrist: each servo's red wire",
        "               +-- shunt -- the gripper servo's red wire  (amplifier across the shunt, out -> %s)" % cur,
        "               +-- divider top resistor --+-- %s (ADC)" % rail,
        "                                          +-- bottom resistor -- AGND",
        "",
        "servo supply - -- every servo's brown/black wire -- one wire to a Pico GND pin",
        "",
        "e-stop auxiliary NC contact:  %s ---o  o--- GND   (closed = run, open = STOP)" % estop,
        "the Pico's own power: its USB cable, or a separate 5 V into VSYS; never the servo rail",
    ]
    return "```text\n" + "\n".join(line.rstrip() for line in lines) + "\n```"


def front_ends(board=None):
    # The sensor front ends, scaled from the firmware's calibration defaults.
    from surepick.firmware import settings
    b = board or settings.board_defaults()
    ratio = b["rail_divider_milli"] / 1000.0
    top = DIVIDER_BOTTOM_OHM * (ratio - 1.0)
    full_mv = VREF_MV * ratio
    v_per_a = b["current_counts_per_a"] * VREF_MV / 65535.0 / 1000.0
    offset_mv = b["current_offset_counts"] * VREF_MV / 65535.0
    acs712_counts = round(0.185 * 65535 / (VREF_MV / 1000.0))
    lines = [
        "| front end | values | what the firmware expects |",
        "| --- | --- | --- |",
        "| servo rail divider | %.0f kOhm over %.0f kOhm (%g:1) | `rail_divider_milli` %d: full scale %.1f V at the rail |"
        % (top / 1000, DIVIDER_BOTTOM_OHM / 1000, ratio, b["rail_divider_milli"], full_mv / 1000),
        "| current sense, shunt + amplifier | 50 mOhm high-side shunt, amplifier gain 20 (1.0 V/A) | "
        "`current_counts_per_a` %d = %.2f V/A, zero near %.0f mV (`current_offset_counts` %d; `surepick calibrate "
        "current` measures it, `surepick bringup --apply` runs it) |"
        % (b["current_counts_per_a"], v_per_a, offset_mv, b["current_offset_counts"]),
        "| current sense, ACS712-5A instead | 185 mV/A, zero at half its 5 V supply | set `current_counts_per_a` %d, "
        "then `surepick calibrate current` |" % acs712_counts,
    ]
    return "\n".join(lines)


def boards_table():
    # What differs between the four Picos, from the HAL's own table (firmware/hal/rp2_chips.py).
    from surepick.firmware.hal import rp2_chips
    cols = []
    for key in ("pico", "pico_w", "pico2", "pico2_w"):
        name, chip = rp2_chips.MODELS[key]
        b = rp2_chips.identify(rp2_chips.machine_string(key))
        riscv = rp2_chips.identify(name + " with " + rp2_chips.RP2350_RISCV) if chip == rp2_chips.RP2350 else None
        cols.append((name, chip + (" (Arm or RISC-V)" if riscv else ""), "0x%08X" % b.watchdog_ctrl_clear(),
                     b.march + (" / " + riscv.march if riscv else ""),
                     "on the radio: `Pin(\"LED\")`" if b.led_is_radio(rp2_chips.BOARD_LED_GPIO)
                     else "GP%d" % rp2_chips.BOARD_LED_GPIO,
                     "GP%d-%d" % (b.adc_gpio0, b.adc_gpio0 + 2)))
    rows = ["| | " + " | ".join(c[0] for c in cols) + " |", "| --- |" + " --- |" * len(cols)]
    for i, what in enumerate(("chip", "watchdog CTRL clear alias the HAL writes", "native code deploy compiles",
                              "status LED", "ADC0-2"), start=1):
        rows.append("| %s | %s |" % (what, " | ".join(c[i] for c in cols)))
    return "\n".join(rows)


# ---- power ----

def power_figures(seed=0):
    # -> dict of the figures, from one nominal job on the plant and the servo models' stall law.
    from surepick.host.engines.inproc import InprocCycle
    from surepick.firmware import settings
    # the reference world (sim/world.py): its plant computes the servos' total current through
    # ServoBank.total_current_ma at every reading, which is where this hooks in (the fast path
    # computes the same current inline)
    run = InprocCycle("nominal", None, seed, 0, sample_ms=20, reference=True)
    plant = run.plant
    bank = plant.servos
    rail = plant.params.rail
    samples = []
    total = bank.total_current_ma

    def sampled(d):
        v = total(d)
        samples.append((plant.now_ms, v, bank.currents_ma(d)))
        return v
    bank.total_current_ma = sampled
    rec = run.run(record_trajectory=False)
    if rec["judge_outcome"] != "placed":
        raise RuntimeError("the nominal job did not place its part (%s): no power figures" % rec["judge_reason"])
    job = [s for s in samples if s[0] > 0]
    peak = max(job, key=lambda s: s[1])
    r_ohm = rail.source_mohm / 1000.0
    b = settings.board_defaults()

    def sag_point(which):
        # the rail where the source's drop meets the stalled servos' draw (the rest at idle)
        v = rail.nominal_mv
        for _ in range(50):
            stall = bank.stall_currents_ma(v)
            i = sum(stall[k] if k in which else bank.idle_ma[k] for k in range(len(stall)))
            v = rail.nominal_mv - i * r_ohm
        return v, i

    stall_nominal = bank.stall_currents_ma(rail.nominal_mv)
    two_v, two_i = sag_point((1, 2))
    all_v, all_i = sag_point(range(5))
    low = b["rail_low_mv"]
    two_at_low = sum(s if k in (1, 2) else bank.idle_ma[k] for k, s in enumerate(bank.stall_currents_ma(low)))
    return {
        "nominal_mv": rail.nominal_mv, "source_mohm": rail.source_mohm, "reset_mv": rail.reset_mv,
        "rail_low_mv": low, "job_ms": job[-1][0], "job_mean_ma": sum(s[1] for s in job) / len(job),
        "job_peak_ma": peak[1], "job_peak_at_ms": peak[0], "job_peak_servos_ma": peak[2],
        "job_servo_peaks_ma": [max(s[2][k] for s in job) for k in range(5)],
        "job_min_rail_mv": rail.nominal_mv - peak[1] * r_ohm,
        "kinds": [s.kind for s in plant.params.servos],
        "stall_ma": stall_nominal, "stall_total_ma": sum(stall_nominal),
        "two_stall_mv": two_v, "two_stall_ma": two_i, "all_stall_mv": all_v, "all_stall_ma": all_i,
        "max_source_mohm": (rail.nominal_mv - low) / two_at_low * 1000.0,
    }


def power_block(f=None):
    f = f or power_figures()
    kinds = f["kinds"]
    lines = [
        "Measured on the simulator's servo models: one nominal job (seed 0, %.1f s of plant time), the rail at "
        "%.1f V behind %.0f mOhm (the reference source: battery or supply plus wiring), current sampled at every "
        "read of the rail." % (f["job_ms"] / 1000, f["nominal_mv"] / 1000, f["source_mohm"]),
        "",
        "| figure | value |",
        "| --- | --- |",
        "| the job's mean current, all five servos | %.2f A |" % (f["job_mean_ma"] / 1000),
        "| the job's peak current (%.2f s in: %s) | %.2f A |" % (
            f["job_peak_at_ms"] / 1000, ", ".join("%s %.2f" % (n, v / 1000) for n, v in zip(SERVOS, f["job_peak_servos_ma"])),
            f["job_peak_ma"] / 1000),
        "| each servo's peak in the job | %s A |" % ", ".join("%s %.2f" % (n, v / 1000) for n, v in zip(SERVOS, f["job_servo_peaks_ma"])),
        "| the rail at the job's peak | %.2f V |" % (f["job_min_rail_mv"] / 1000),
        "| stall current per servo at %.1f V | %s A |" % (f["nominal_mv"] / 1000, ", ".join(
            "%s (%s) %.2f" % (n, k, v / 1000) for n, k, v in zip(SERVOS, kinds, f["stall_ma"]))),
        "| all five at stall, no sag | %.1f A |" % (f["stall_total_ma"] / 1000),
        "| shoulder and elbow at stall, behind the source | %.2f A, the rail at %.2f V |" % (f["two_stall_ma"] / 1000, f["two_stall_mv"] / 1000),
        "| all five at stall, behind the source | %.2f A, the rail at %.2f V (the servos reset below %.1f V) |" % (
            f["all_stall_ma"] / 1000, f["all_stall_mv"] / 1000, f["reset_mv"] / 1000),
        "| the highest source resistance that keeps two stalled arm servos above `rail_low_mv` (%.1f V) | %.0f mOhm |" % (
            f["rail_low_mv"] / 1000, f["max_source_mohm"]),
    ]
    return "\n".join(lines)


# ---- the doc ----

def blocks(power=True):
    out = {"wiring-table": wiring_table(), "header-diagram": header_diagram(), "power-diagram": power_diagram(),
           "front-ends": front_ends(), "boards": boards_table()}
    if power:
        out["power"] = power_block()
    return out


def render(text, made):
    # -> the doc with each generated block replaced; raises ValueError for a block the doc lacks
    for name, body in made.items():
        pat = re.compile(r"(<!-- generated: %s -->\n)(?:.*?\n)?(<!-- end: %s -->)" % (re.escape(name), re.escape(name)), re.S)
        if not pat.search(text):
            raise ValueError("%s has no block %r (<!-- generated: %s --> ... <!-- end: %s -->)" % (DOC, name, name, name))
        text = pat.sub(lambda m: m.group(1) + body + "\n" + m.group(2), text)
    return text


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="exit 1 if docs/hardware.md differs from what this makes")
    ap.add_argument("--no-power", action="store_true", help="leave the power figures (the slow part) alone")
    args = ap.parse_args(argv)
    text = DOC.read_text()
    new = render(text, blocks(power=not args.no_power))
    if args.check:
        if new != text:
            print("docs/hardware.md is out of date: run `python -m surepick.host.engines.hardware_doc`", file=sys.stderr)
            return 1
        print("docs/hardware.md is up to date")
        return 0
    if new != text:
        DOC.write_text(new)
        print("docs/hardware.md: generated blocks rewritten")
    else:
        print("docs/hardware.md: already up to date")
    return 0


if __name__ == "__main__":
    sys.exit(main())
