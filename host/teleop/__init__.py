# Teleoperation: a 6-DoF pose stream (VR controller, SpaceMouse, keyboard jog, recorded file)
# turned into Cartesian targets and joint setpoints at a fixed rate, for the MuJoCo arm or a board
# over the link (its firmware's teleop mode); and teaching jobs by moving the arm. A layer above
# engines: it may import shared_fsm, firmware, sim, vboard, host and engines, never records or
# cli (tools/import_graph.py checks it).
#
#   sources/      where poses come from (one interface: iterate Samples)
#   pipeline.py   the two stages (per sample / per control tick) and the mailbox between them
#   coord_frames, quat, outlier, clutch, workspace, smoothing, reach, ik, joint_limits: one step each
#   feedforward   what a hobby servo needs on top of the IK angles (gravity, damping)
#   sim_target    the MuJoCo arm driven by a simulated board in the firmware's teleop mode
#   board_target  a board over the link: setpoints to firmware/teleop_mode.py, its answers back
#   runner        virtual-time replay and the real-time two-thread loop; session_log the CSV
#   display       the viewer (own thread, ~30 Hz) or an offscreen picture
#   teach         marks during a session -> a job; jobfile the job file (docs/job-file.md)
