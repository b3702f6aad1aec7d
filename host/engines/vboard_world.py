# The hook where a scenario's world (the MuJoCo plant, the injected faults and the judge) plugs
# into the virtual board. A world service is any object with start() -> (host, port) and stop():
# the board starts it before the first boot and writes its loopback address into
# vboard_settings.PLANT, where the virtual HAL (firmware/hal/virtual.py) finds it. Here: the
# world of a sim scenario (engines/world_service.py WorldService), its faults, and the wiring of
# its controller resets (brownout, power cut) to the board's power.
from surepick.sim import seeds
from surepick.host.vboard.board import VirtualBoard

# --power-cut-random picks a moment in this window of plant time: from just after boot to the
# end of a typical cycle (a nominal pick-and-place ends near 10.4 s).
RANDOM_CUT_MS = (100, 12000)


def scenario_names():
    from surepick.sim import scenarios
    return sorted(scenarios.SCENARIOS)


def random_cut_ms(seed):
    # Even ms (seeded runs kept from the 2 ms days); at a longer period the cut lands on the next tick.
    lo, hi = RANDOM_CUT_MS
    return seeds.rng("power_cut", seed).randrange(lo // 2, hi // 2) * 2


def make_world_service(scenario=None, seed=None, power_cut_at_ms=None, power_cut_random=None, realtime=False,
                       arm=None, plant_params=None, overrides=None, default_part=None):
    """-> a WorldService for `surepick board --scenario NAME --seed N`, or None (no scenario:
    a bare board, REPL only). Unknown scenario -> ValueError naming the valid ones. Power cuts
    are in plant (virtual) milliseconds. realtime: virtual time no faster than the wall clock.
    arm: the world's arm (an Arm; None the reference), the board's /arm.json (board_arm.py).
    plant_params: the plant's own (hidden) parameters, e.g. the stand-in bench's (sim/standin.py).
    overrides: the scenario's parameters ({name: value}), as `--param` gives them.
    default_part: a part spec for the scenario's usual 25 mm cube (the stand-in bench's own part)."""
    if scenario is None:
        if power_cut_at_ms is not None or power_cut_random is not None:
            raise ValueError("power cuts need a plant: give --scenario too")
        return None
    from surepick.sim import scenarios
    if scenario not in scenarios.SCENARIOS:
        raise ValueError("unknown scenario '%s'; valid scenarios: %s" % (scenario, ", ".join(scenario_names())))
    from surepick.host.engines.world_service import WorldService
    service = WorldService(scenario, seed or 0, overrides=overrides, realtime=realtime, arm=arm,
                           plant_params=plant_params, default_part=default_part)
    if power_cut_at_ms is not None:
        if power_cut_at_ms < 0:
            raise ValueError("--power-cut-at-ms must be >= 0")
        service.power_cut_at(power_cut_at_ms)
    if power_cut_random is not None:
        service.power_cut_at(random_cut_ms(power_cut_random))
    return service


def wire(board, service):
    """Let the plant reset the board's controller (brownout on the shared rail, power cut): the
    interpreter loses power, the flash stays, the board boots again."""
    if service is None:
        return board

    def reset():
        try:
            board.power_cut()
        except (RuntimeError, TimeoutError):
            pass  # the board is shutting down
    service.on_controller_reset = reset
    return board


def board_in_world(flash_dir=None, scenario="nominal", seed=0, power_cut_at_ms=None,
                power_cut_random=None, realtime=False, overrides=None, **board_kw):
    """A VirtualBoard (not started) with the scenario's plant attached and wired; the plant is
    board.world_service. What `VirtualBoard(scenario=..., seed=...)` alone does not do.
    realtime: the plant no faster than the wall clock (a person, or a live stream, drives it)."""
    service = make_world_service(scenario, seed, power_cut_at_ms, power_cut_random, realtime=realtime,
                                 overrides=overrides)
    board = VirtualBoard(flash_dir, world_service=service, scenario=scenario, seed=seed, **board_kw)
    return wire(board, service)
