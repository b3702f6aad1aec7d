"""What a person at a simulated bench sees and does, for the control channel of every simulated
board with a plant: the virtual board (board.py) and the emulated RP2040 (engines/rp2040/serve.py).
One source, so bring-up's stand-in person (`bringup --operator sim`) checks the inputs of either
alike.

    HANDS               control command -> (the world's injection, its arguments): a hand on the
                        bench's e-stop, finger switch, beam, taking the part off its pad, or
                        holding it between the open jaws (bring-up's squeeze current) and
                        putting it back on its pad
    look(plant, now_ms) where the arm physically is: each joint's angle (deg) and the jaw's
                        opening (mm) off the marks and a caliper, the rail on a multimeter (V),
                        and the plant's clock. Never the servos' calibration.
"""

HANDS = {"estop-press": ("estop", {"on": True}), "estop-release": ("estop", {"on": False}),
         "switch-press": ("switch_stuck", {"level": 0}), "switch-release": ("switch_stuck", {"level": None}),
         "beam-block": ("beam_blocked", {"on": True}), "beam-clear": ("beam_blocked", {"on": False}),
         "part-remove": ("part_away", {}), "part-in-jaw": ("part_in_jaw", {}),
         "part-on-pad": ("part_on_pad", {})}


def look(plant, now_ms):
    q = plant.joint_angles_mdeg()
    return {"joints_deg": [v / 1000.0 for v in q[:-1]], "jaw_mm": q[-1] / 1000.0,
            "rail_v": plant.rail_mv() / 1000.0, "plant_ms": now_ms}


def hand_handlers(inject):
    """{command: callable() -> {"done": command}} that call inject(name, **kw) for each hand."""
    def hand(command):
        def act():
            name, kw = HANDS[command]
            inject(name, **kw)
            return {"done": command}
        return act
    return {c: hand(c) for c in HANDS}
