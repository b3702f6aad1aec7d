# The hook where the simulated arm ("plant") plugs into the virtual board. A plant service
# is any object with start() -> (host, port) and stop(): the board starts it before the
# first boot and writes its loopback address into vboard_settings.PLANT, where the virtual
# board_hal finds it. Until the MuJoCo wiring lands, no scenario has a plant.


def make_plant_service(scenario=None, seed=None):
    # -> a plant service for `surepick board --scenario NAME --seed N`, or None.
    return None
