# The RUN frame's entry in link.SCHEMA (a production run; docs/protocol.md, docs/production-run.md).
# A module apart from link.py so that a board that never runs a production run does not hold its
# 24 fields in its heap: link.load_run_frame() adds it, on the board when the first RUN arrives
# (firmware/app.py), on the host when link is imported. Imported through load_run_frame only.
from .link import K_RID, K_U30, K_POS, K_MDEG, K_WIDTH, K_U8, K_BIT

# count (0: until stopped, run_codes.RUN_UNTIL_STOPPED), the job's poses, width and attempts (0:
# the board's max_attempts) with the pick and place poses the origins of their patterns (a grid of
# nx by ny slots, dx_um/dy_um apart along x and y; 1 by 1: the same pose every cycle, e.g. a
# feeder's pad or the bin), the part-ready condition (run_codes.READY_*) and its ms, place_wrap
# (1: the place slots are drop spots used in turn, a bin never fills; 0: each is filled once, a
# tray), then the job's approach height (optional). REPLY: none; errors as JOB's.
RUN_SCHEMA = ("RUN", 23,
              (K_RID, K_U30, K_POS, K_POS, K_POS, K_MDEG, K_POS, K_POS, K_POS, K_MDEG, K_WIDTH, K_U8,
               K_POS, K_POS, K_U8, K_U8, K_POS, K_POS, K_U8, K_U8, K_U8, K_U30, K_BIT, K_U30),
              ("req_id", "count", "pick_x_um", "pick_y_um", "pick_z_um", "pick_pitch_mdeg",
               "place_x_um", "place_y_um", "place_z_um", "place_pitch_mdeg", "width_um", "max_attempts",
               "pick_dx_um", "pick_dy_um", "pick_nx", "pick_ny", "place_dx_um", "place_dy_um",
               "place_nx", "place_ny", "ready", "ready_ms", "place_wrap", "approach_height_um"))
