# The firmware's modules imported one at a time at boot, the heap collected after each, before
# main.py imports the app (which then finds them all loaded).
#
# Why: the .mpy bytecode of every module lives in the RP2040's MicroPython heap, and loading a
# module also makes garbage (the file's buffers, the loader's scratch). Imported in one go (app.py
# imports everything), that garbage is collected only when the heap runs out, and the holes it
# leaves lie between the modules' bytecode: measured on the emulated RP2040, 115 KB free after
# the imports but the largest free block only 43 KB, so a 3 KB bytearray failed once a bench
# probe sat next to the firmware. Collected after each module, the next module's garbage reuses
# the last one's holes: 112 KB free in one 109 KB block (docs/rp2040.md, heap on the chip).
#
# Leaves first (each step's modules import only what earlier steps loaded). A module left out
# still loads, with its dependant; it only fragments the heap again. Boot only: never in the loop.
import gc


def load():
    # First the arm description's boot-only modules (its validator, the reference's dict, the
    # copier that packs the Arm): the controller drops them once the description is checked
    # (arm_file.py), and loaded at the bottom of the heap they leave one block there instead of
    # holes between the firmware's.
    from ..shared_fsm import arm, arm_check, arm_reference  # noqa: F401
    from . import repack  # noqa: F401
    gc.collect()
    from ..shared_fsm import codes, config, events, states, ticks  # noqa: F401
    gc.collect()
    from ..shared_fsm import link  # noqa: F401
    gc.collect()
    from ..shared_fsm import machine  # noqa: F401
    gc.collect()
    from ..shared_fsm import motion, servo_cal  # noqa: F401
    gc.collect()
    from . import fsutil, cmdparse  # noqa: F401
    gc.collect()
    from . import boot_recovery  # noqa: F401
    gc.collect()
    from . import sensors, servo, rejects, arm_file  # noqa: F401
    gc.collect()
    from . import settings  # noqa: F401
    gc.collect()
    from . import controller  # noqa: F401
    gc.collect()
    from . import flashlog, framewriter, status_led  # noqa: F401
    gc.collect()
    from . import telemetry  # noqa: F401
    gc.collect()
    from . import app  # noqa: F401
    gc.collect()
