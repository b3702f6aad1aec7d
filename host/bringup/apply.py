"""Giving a board a description: the firmware takes every servo's pin and pulse calibration
(min_us, max_us, trim_us, direction) from its /arm.json alone (docs/arm-description.md), so what
bring-up found, and a servo it mirrors mid-bring-up, reach the board as deploy --arm ships a
description (host/deploy/install.py deploy(arm_json=...)). The board restarts to take it."""
from surepick.shared_fsm import arm as arm_mod
from surepick.host.user_error import Failure


SHIP_ATTEMPTS = 2
CONNECT_TIMEOUT_S = 20       # the board's raw-REPL prompt (deploy's own default is 6 s)


class ApplyError(Failure):
    pass


def with_directions(arm, directions):
    """`arm` with servos.NAME.direction set for each {name: +1 or -1} -> a validated Arm."""
    if not directions:
        return arm
    d = arm.to_dict()
    for name, direction in directions.items():
        d["servos"][name]["direction"] = int(direction)
    return arm_mod.validate(d)


def ship(client, port, arm, say=lambda msg: None, warn=print):
    """Ship `arm` as the board's /arm.json (deploy --arm's code: the old servo settings settled,
    the firmware's files checked, the board restarted and its hello awaited). say: deploy's progress; warn: a failed attempt. `client`, the
    bring-up's link, is closed meanwhile (deploy needs the port's console) and opened again."""
    from surepick.host.arms import files
    from surepick.host.deploy import deploy
    from surepick.host.deploy.errors import DeployError
    from surepick.host.link.errors import LinkError
    client.close()
    try:
        for attempt in range(SHIP_ATTEMPTS):
            try:
                return deploy(port, arm_json=files.compact_json(arm), progress=say,
                              connect_timeout=CONNECT_TIMEOUT_S)
            except (DeployError, LinkError) as e:
                # deploy leaves nothing half-installed and says "run deploy again": once more
                # (a loaded host can miss its raw-REPL prompt); a refusal refuses again
                if attempt + 1 == SHIP_ATTEMPTS:
                    raise ApplyError(str(e)) from None
                warn("the deploy failed (%s): once more" % e)
    finally:
        client.open()
