# The board boots on every /arm.json under the real `micropython` with the scripted stand-in HAL:
# one boot per file in CASES_DIR (named NAME.json), a JOB sent after the boot. For each file it
# prints what a person at the bench and on the link sees:
#   RESULT <name>_job_code N       the JOB's reply code (0 OK, 21 E_STATE, ...)
#   RESULT <name>_job_invalid N    1 when the reply's payload says arm_invalid
#   RESULT <name>_arm_pulses N     arm servo pulse changes to anything but 0 (PWM off) during the run
#   RESULT <name>_hello_arm N      1 when HELLO's first rejected item names the arm file
#   FIELD <name> <key>             the key HELLO names
#   micropython tests/mpy/fw_arm_files.py CASES_DIR FLASH_DIR PICK_X_UM (the pick x of *far* cases)
import os
import sys

from surepick.shared_fsm import link, fake_scenarios
from checks import result
from boot_then_job import boot_and_send_job, copy_file, job_results

cases = sys.argv[1]
flash = sys.argv[2]
pick_x = int(sys.argv[3])


def boot(name):
    root = flash + "/" + name          # a fresh flash per boot
    os.mkdir(root)
    copy_file(cases + "/" + name + ".json", root + "/arm.json")
    # a case named *far* sends the job to PICK_X_UM (its pad), the others the scenario's pick
    x = pick_x if "far" in name else fake_scenarios.PICK[0]
    pick = (x, fake_scenarios.PICK[1], fake_scenarios.PICK[2], fake_scenarios.PICK[3])
    hal, _ = boot_and_send_job(root, pick, 400)
    hello_arm = 0
    field = "-"
    for ftype, fields in hal.frames():
        if ftype == link.T_HELLO and len(fields) >= 10:
            hello_arm = 1 if fields[7] == "arm" else 0
            field = fields[8]
    job_results(name, hal)
    result(name + "_hello_arm", hello_arm)
    print("FIELD", name, field)


names = sorted(n[:-5] for n in os.listdir(cases) if n.endswith(".json"))
for n in names:
    boot(n)
print("END")
