# One boot of the firmware on a fresh flash under the scripted stand-in HAL (the nominal
# scenario's plant), a JOB sent once it has booted, and what that run shows for the board files
# put on the flash: the runner scripts that boot the board on case after case of files use it.
from surepick.shared_fsm import link, fake_scenarios
from surepick.shared_fsm.config import Config
from surepick.firmware.hal.scripted import ScriptedHal, StopRun
from surepick.firmware import app as app_mod
from checks import result

JOB_RID = 7
SPEC = fake_scenarios.find("nominal")


def copy_file(src, dst):
    f = open(src, "rb")
    data = f.read()
    f.close()
    f = open(dst, "wb")
    f.write(data)
    f.close()


def boot_and_send_job(root, pick, ticks):
    # Boot on the flash at `root`, send JOB 7 (pick, the scenario's place, a 25 mm part) after
    # 40 ticks, stop after `ticks` ticks. -> (the HAL, its pulses logged; the App)
    hal = ScriptedHal(Config(SPEC[2]), SPEC[1])
    hal.log_pulses = 1
    a = app_mod.App(hal, root=root)
    hal.out = a.m.out
    st = {"sent": 0, "ticks": 0}

    def on_tick(h):
        st["ticks"] += 1
        if not st["sent"] and h.ticks > 40:
            h.send(link.job(JOB_RID, pick, fake_scenarios.PLACE, 25000))
            st["sent"] = 1
        if st["ticks"] > ticks:
            raise StopRun()

    hal.run_app(a, on_tick)
    return hal, a


def job_results(name, hal):
    # RESULT <name>_job_code (the JOB's reply code, -1 without one), <name>_job_invalid (1 when
    # its payload says arm_invalid), <name>_arm_pulses (arm servo pulses set to anything but 0,
    # PWM off, during the run)
    code = -1
    invalid = 0
    for ftype, fields in hal.frames():
        if ftype == link.T_REPLY and fields[0] == JOB_RID:
            code = fields[1]
            invalid = 1 if "arm_invalid" in fields[2:] else 0
    moved = 0
    for t, i, us in hal.pulse_log:
        if i < 4 and us != 0:
            moved += 1
    result(name + "_job_code", code)
    result(name + "_job_invalid", invalid)
    result(name + "_arm_pulses", moved)
