# Teleoperation: a 6-DoF pose stream (VR controller, SpaceMouse, keyboard jog, recorded file)
# turned into Cartesian targets and joint setpoints at a fixed rate, for the MuJoCo arm now and a
# board over the link later. A layer above sim, beside engines: it may import shared_fsm,
# firmware, sim and engines, never cli.
