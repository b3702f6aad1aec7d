# `surepick hil`: one pick-and-place cycle with the firmware on a board (a real Pico or the virtual
# board) and the arm simulated here (engines/hil.py). Exit 0 placed (machine and judge agree),
# 1 otherwise (including no board or a link failure), 2 bad usage.
import sys

from surepick.host.user_error import FAILED, OK
from surepick.host.cli.errors import CommandError, cannot
from surepick.host.cli.options import add_port_argument, board_port, seed_arg


def add_arguments(p):
    p.description = ("Hardware in the loop: the board's firmware reads its sensors from the host's MuJoCo "
                     "plant and its servo pulses drive it, over the serial link. lockstep: one board tick "
                     "per sensor frame (deterministic, virtual time); realtime: the board runs on its own "
                     "clock and the link's latency and jitter are measured. The judge scores the cycle as "
                     "in `sim run`. Exit 0 placed, 1 otherwise (or no board), 2 bad usage.")
    add_port_argument(p)
    p.add_argument("--scenario", required=True, help="scenario name (see `surepick sim scenarios`)")
    p.add_argument("--seed", type=seed_arg, default=0, help="random seed (default 0)")
    p.add_argument("--arm", metavar="NAME|FILE",
                   help="the simulated arm: a preset (`surepick arm list`) or a description file (default the "
                   "reference arm). The board must run the same description (`surepick deploy --arm NAME|FILE`): "
                   "its kinematics drive this arm's servos")
    p.add_argument("--mode", choices=("lockstep", "realtime"), default="lockstep",
                   help="lockstep (default) or realtime")
    p.add_argument("--out", metavar="DIR", help="write a run record (kind hil) here (checked before the run; "
                   "refused when it holds another run, unless --force)")
    p.add_argument("--force", action="store_true", help="clear --out's run files first")
    p.add_argument("--clear-fault", action="store_true",
                   help="clear a fault the board has latched (e.g. from an earlier run) before starting")


def run(args):
    from surepick.sim import scenarios
    from surepick.host.engines.hil import HilCycle, record
    from surepick.host.records import runrecord
    if args.scenario not in scenarios.SCENARIOS:
        raise CommandError("unknown scenario '%s'; valid: %s"
                           % (args.scenario, ", ".join(sorted(scenarios.SCENARIOS))))
    from surepick.host.cli.progress import Status
    from surepick.shared_fsm import states
    if args.out:
        from surepick.host.cli.outputs import prepare_run_dir
        prepare_run_dir(args.out, force=args.force, can_resume=False)
    arm = None
    if args.arm is not None:
        from surepick.host.cli.arm import load_arm
        arm = load_arm(args.arm)[0]
    port = board_port(args)
    status = Status("hil")

    def log(msg):
        status.close()
        print("surepick hil: " + msg, file=sys.stderr)
    try:
        hil = HilCycle(port, args.scenario, args.seed, args.mode, log=log, arm=arm)
    except ValueError as e:
        raise CommandError(str(e)) from None
    hil.progress = lambda now, st: status.update("%.1f s of plant time, board in %s" % (now / 1000.0, states.name(st)))
    try:
        rec = hil.run(clear_fault=args.clear_fault)
    except OSError as e:
        raise CommandError(str(e), FAILED) from None
    finally:
        status.close()
        hil.client.close()
    lk = rec["link"]
    print("board %s firmware %s, %s mode, scenario %s seed %d"
          % (rec["board"]["board_id"], rec["board"]["fw_version"], args.mode, args.scenario, args.seed))
    print("cycle 0: machine %s%s, judge %s (%s)"
          % (rec["fsm_outcome"], " " + rec["fsm_fault"] if rec["fsm_fault"] else "", rec["judge_outcome"],
             rec["judge_reason"]))
    print("%d board ticks, %d ms of plant time in %.1f s wall" % (lk["acts"], lk["plant_ms"], lk["wall_s"]))
    if "latency_us_median" in lk:
        print("link round trip (sensor frame -> HIL_ACT): median %d us, p99 %d us, max %d us, jitter (sd) %d us"
              % (lk["latency_us_median"], lk["latency_us_p99"], lk["latency_us_max"], lk["jitter_us"]))
    if args.mode == "realtime":
        print("board loop period median %s us, p99 %s us; host late sends %d; plant/wall %.2f"
              % (lk.get("board_period_us_median"), lk.get("board_period_us_p99"), lk["late_sends"],
                 lk["realtime_ratio"] or 0))
    if args.out:
        try:
            runrecord.write(args.out, *record(hil, rec))
        except OSError as e:
            raise cannot("write the run record in", args.out, e) from None
        print("run record: %s" % args.out)
    return OK if rec["success"] else FAILED
