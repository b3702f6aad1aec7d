# Runs at boot (after boot.py): the firmware's main loop on the Pico's own HAL.
# Ctrl-C stops it with the servos holding their last pulses; mpremote then has the REPL.
import board_hal
import app

app.main(board_hal)
