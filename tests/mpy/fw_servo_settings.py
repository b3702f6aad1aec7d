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

from surepick.shared_fsm import fake_scenarios
from boot_then_job import boot_and_send_job, copy_file, job_results

cases = sys.argv[1]
flash = sys.argv[2]


def boot(name):
    root = flash + "/" + name          # a fresh flash per boot
    os.mkdir(root)
    for fn in ("arm.json", "config.json"):
        try:
            copy_file(cases + "/" + name + "/" + fn, root + "/" + fn)
        except OSError:
            pass
    hal, a = boot_and_send_job(root, fake_scenarios.PICK, 200)
    start = [0, 0, 0, 0, 0]
    for t, i, us in hal.pulse_log[:5]:
        start[i] = us
    job_results(name, hal)
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
