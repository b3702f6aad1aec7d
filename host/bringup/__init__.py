"""`surepick bringup`: a guided, resumable bring-up from a freshly wired board to a calibrated arm
(docs/bringup.md). state.py keeps what was confirmed, jog.py moves one servo over the link (the
firmware's teleop mode), operators.py is the person at the bench (a console, or the stand-in that
looks at the simulated arm), servo_fit.py turns marks into servo entries, steps.py runs it."""
