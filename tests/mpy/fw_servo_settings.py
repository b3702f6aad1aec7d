# Where the board's servo pins and pulse calibration come from, under the real `micropython` with
# the scripted stand-in HAL: one boot per case folder in CASES_DIR (an arm.json and/or a
# config.json to put on a fresh flash), a JOB sent after the boot. For each case it prints:
#   RESULT <name>_job_code N       the JOB's reply code (0 OK, 21 E_STATE, ...)
#   RESULT <name>_job_invalid N    1 when the reply's payload says arm_invalid
#   RESULT <name>_arm_pulses N     arm servo pulse changes to anything but 0 during the run
#   PINS <name> a b c d e          the servo pins the HAL had when the PWM started
#   START <name> a b c d e         the pulses the PWM started at
#   REJECT <name> file key reason  each item of the board's rejects list
#   SAVED <name> key=value ...     the board keys a settings save would write to /config.json
#   micropython tests/mpy/fw_servo_settings.py CASES_DIR FLASH_DIR
import os
import sys

from surepick.shared_fsm import link, fake_scenarios
from surepick.shared_fsm.config import Config
from surepick.firmware.hal.scripted import ScriptedHal, StopRun
from surepick.firmware import app as app_mod
from checks import result

cases = sys.argv[1]
flash = sys.argv[2]
spec = fake_scenarios.find("nominal")


def copy(src, dst):
    f = open(src, "rb")
    data = f.read()
    f.close()
    f = open(dst, "wb")
    f.write(data)
    f.close()


def boot(name):
    root = flash + "/" + name          # a fresh flash per boot
    os.mkdir(root)
    for fn in ("arm.json", "config.json"):
        try:
            copy(cases + "/" + name + "/" + fn, root + "/" + fn)
        except OSError:
            pass
    hal = ScriptedHal(Config(spec[2]), spec[1])
    hal.log_pulses = 1
    a = app_mod.App(hal, root=root)
    hal.out = a.m.out
    st = {"sent": 0, "ticks": 0}

    def on_tick(h):
        st["ticks"] += 1
        if not st["sent"] and h.ticks > 40:
            h.send(link.job(7, fake_scenarios.PICK, fake_scenarios.PLACE, 25000))
            st["sent"] = 1
        if st["ticks"] > 200:
            raise StopRun()

    hal.run_app(a, on_tick)
    code = -1
    invalid = 0
    for ftype, fields in hal.frames():
        if ftype == link.T_REPLY and fields[0] == 7:
            code = fields[1]
            invalid = 1 if "arm_invalid" in fields[2:] else 0
    moved = 0
    start = [0, 0, 0, 0, 0]
    for t, i, us in hal.pulse_log[:5]:
        start[i] = us
    for t, i, us in hal.pulse_log:
        if i < 4 and us != 0:
            moved += 1
    result(name + "_job_code", code)
    result(name + "_job_invalid", invalid)
    result(name + "_arm_pulses", moved)
    print("PINS", name, " ".join(str(p) for p in hal.pins.servo))
    print("START", name, " ".join(str(p) for p in start))
    for item in a.settings.rejected.items:
        print("REJECT", name, item[0], item[1], item[2])
    b = a.settings.to_json_dict()["board"]
    print("SAVED", name, " ".join("%s=%s" % (k, b[k]) for k in sorted(b)))


names = sorted(os.listdir(cases))
for n in names:
    boot(n)
print("END")
