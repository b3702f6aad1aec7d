# The board HALs, one module per kind of board, all against one contract (contract.py):
#   rp2040      a real Raspberry Pi Pico (and the emulated RP2040): machine.PWM/ADC/Pin/WDT
#   virtual     the virtual board: the unix micropython binary, lockstep with the MuJoCo plant
#   hil         the read/PWM half fed by HIL frames from the host's plant (swapped in by the app)
#   world_pins  the in-process simulator's pins over a sim.world.World (host only)
#   scripted    a scripted stand-in for tests and benchmarks (both interpreters)


def for_this_port():
    # The HAL of the board this runs on: the RP2040 port reports 'rp2'; the unix port
    # (the virtual board) reports 'linux'.
    import sys
    if sys.platform == "rp2":
        from . import rp2040 as hal
    else:
        from . import virtual as hal
    return hal
