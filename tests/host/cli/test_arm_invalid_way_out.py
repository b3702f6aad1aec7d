# A board whose /arm.json fails the description's check keeps every servo unpowered and refuses
# jobs, rescues and teleop (docs/arm-description.md). Through the real CLI against the real
# firmware on the virtual board, with its MuJoCo plant read for what really happened: every tool
# names that state (`arm_invalid`) and its one way out, deploying a valid description, and not the
# rescue an unpowered arm would otherwise need (the board refuses that rescue too); deploy is not
# refused for a soft reset that can power nothing off; doctor moves nothing; and doing what the
# refusal says, as a person would (check the file, mend the field it names, deploy it), gets a job
# accepted with the servos powered.
import copy
import json
import re

from surepick.shared_fsm.arm_reference import DESCRIPTION
from tests.support.bench import PlantBench
from tests.support.doctor import findings
from tests.support.needs import NEEDS_MICROPYTHON

pytestmark = NEEDS_MICROPYTHON

_COMMAND = re.compile(r"`(surepick [^`]+)`")


def _bad_description():
    # The reference arm with a typo: a negative upper arm, which the check names by its field.
    d = copy.deepcopy(DESCRIPTION)
    d["geometry"]["upper_arm_mm"] = -105.0
    return d


def test_an_invalid_arm_description_names_deploy_as_the_way_out_and_it_works(tmp_path):
    flash = tmp_path / "flash"
    flash.mkdir()
    (flash / "arm.json").write_text(json.dumps(_bad_description()))
    mine = tmp_path / "my_arm.json"
    mine.write_text(json.dumps(_bad_description()))
    with PlantBench(tmp_path, "nominal", 1) as b:
        b.wait_firmware()
        assert not any(b.truth()["servos_powered"]), b.truth()["servos_powered"]

        status = b.run("job", "status", "--port", b.port).stdout
        assert "arm_invalid:" in status and "geometry.upper_arm_mm" in status, status
        for consequence in ("arm_unpowered:", "arm_stalled:", "gripper_off:", "job rescue"):
            assert consequence not in status, status

        deploy = "surepick deploy --arm FILE --port %s" % b.port
        for verb in (("job", "start"), ("job", "rescue", "--rest", "--arm-near", "rest")):
            r = b.run(*verb, "--port", b.port)
            assert r.returncode == 1 and "refused" in r.stderr, r.stdout + r.stderr
            named = _COMMAND.findall(r.stderr)
            assert named and named[0] == deploy, r.stderr
            assert not [c for c in named if c.startswith("surepick job rescue")], r.stderr

        r = b.run("doctor", "--port", b.port, timeout=180)
        got = findings(r.stdout)
        assert got["arm_invalid"][0] == "FAIL" and got["boot"][0] == "WARN", r.stdout
        for topic in ("arm_invalid", "boot"):      # the fix is the deploy, not a setting or a rescue
            fix = got[topic][2] or ""
            assert "`%s`" % deploy in fix and "config set" not in fix, r.stdout
        assert not any(b.truth()["servos_powered"]), "doctor powered a servo"

        # The person: `arm check` on their file names the field; they mend it and deploy it.
        r = b.run("arm", "check", mine)
        assert r.returncode == 2 and "upper_arm_mm" in (r.stdout + r.stderr), r.stdout + r.stderr
        mine.write_text(json.dumps(DESCRIPTION))
        assert b.run("arm", "check", mine).returncode == 0
        r = b.run(*deploy.replace("FILE", str(mine)).split()[1:], timeout=300)
        assert r.returncode == 0, r.stdout + r.stderr
        status = b.run("job", "status", "--port", b.port).stdout
        assert "arm_invalid" not in status and "rejected at boot" not in status, status
        r = b.run("job", "start", "--port", b.port)
        assert r.returncode == 0 and "job accepted" in r.stdout, r.stdout + r.stderr
        assert all(b.truth()["servos_powered"]), b.truth()["servos_powered"]
