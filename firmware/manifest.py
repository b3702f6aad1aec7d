# What goes to the board, and where: a positive list. Nothing ships unless it is named here
# (host-only code such as the simulator's pins or the fake HAL never reaches the board).
# Board code is one package: /lib/surepick/... with relative imports, exactly as it imports on
# the host as surepick.firmware / surepick.shared_fsm. Only main.py sits in the root, because
# MicroPython runs /main.py (as source) at boot.
# Read by host/deploy.py (compiles modules to .mpy) and by anything that builds a flash image.

PACKAGE_DIR = "/lib/surepick"

# Modules, as paths under the surepick package without ".py". /lib/surepick itself has no
# __init__: MicroPython imports a folder without one as a package, as CPython does a namespace.
MODULES = (
    "shared_fsm/__init__",
    "shared_fsm/arm",
    "shared_fsm/arm_check",
    "shared_fsm/arm_reference",
    "shared_fsm/codes",
    "shared_fsm/compat",
    "shared_fsm/config",
    "shared_fsm/events",
    "shared_fsm/gripper_geometry",
    "shared_fsm/kinematics",
    "shared_fsm/link",
    "shared_fsm/machine",
    "shared_fsm/motion",
    "shared_fsm/payload",
    "shared_fsm/run_codes",
    "shared_fsm/run_frame",
    "shared_fsm/search",
    "shared_fsm/servo_cal",
    "shared_fsm/states",
    "shared_fsm/ticks",
    "firmware/__init__",
    "firmware/app",
    "firmware/arm_file",
    "firmware/arm_read",
    "firmware/boot_recovery",
    "firmware/calibrate",
    "firmware/cmdparse",
    "firmware/controller",
    "firmware/flashlog",
    "firmware/framewriter",
    "firmware/fsutil",
    "firmware/preload",
    "firmware/production",
    "firmware/rejects",
    "firmware/repack",
    "firmware/rescue",
    "firmware/sensors",
    "firmware/servo",
    "firmware/servo_geared",
    "firmware/settings",
    "firmware/status_led",
    "firmware/telemetry",
    "firmware/teleop_mode",
    "firmware/teleop_check",
    "firmware/hal/__init__",
    "firmware/hal/contract",
    "firmware/hal/hil",
    "firmware/hal/rp2040",
    "firmware/hal/rp2_chips",
    "firmware/hal/virtual",
    "firmware/hal/virtual_guard",
)

# (source under the surepick package, board path): run as source from the root.
ENTRY = (
    ("firmware/main.py", "/main.py"),
)


def board_dirs():
    # Every directory the shipped files live in, parents first (deploy creates them).
    out = ["/lib", PACKAGE_DIR]
    for m in MODULES:
        if "/" in m:
            parts = m.split("/")[:-1]
            for i in range(1, len(parts) + 1):
                d = PACKAGE_DIR + "/" + "/".join(parts[:i])
                if d not in out:
                    out.append(d)
    return out
