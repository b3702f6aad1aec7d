"""Arm descriptions on the host: the presets, the TOML file a maker edits, the host-only checks
(reach of the bench poses, a reach map) and the verbs' plumbing. The description's format, the
validator and the kinematics are shared with the board: shared_fsm/arm.py."""
