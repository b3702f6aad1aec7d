# `surepick hil`: one pick-and-place cycle with the firmware on a board (a real Pico or the virtual
# board) and the arm simulated here (host/hil.py). Exit 0 placed (machine and judge agree),
# 1 otherwise, 2 bad usage or no board.
import sys

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


def add_arguments(p):
    p.description = ("Hardware in the loop: the board's firmware reads its sensors from the host's MuJoCo "
                     "plant and its servo pulses drive it, over the serial link. lockstep: one board tick "
                     "per sensor frame (deterministic, virtual time); realtime: the board runs on its own "
                     "clock and the link's latency and jitter are measured. The judge scores the cycle as "
                     "in `sim run`. Exit 0 placed, 1 otherwise, 2 bad usage.")
    p.add_argument("--port", required=True,
                   help="the board: /dev/ttyACM0, a pty, socket://HOST:PORT (surepick board --listen) or auto")
    p.add_argument("--scenario", required=True, help="scenario name (see `surepick sim scenarios`)")
    p.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    p.add_argument("--mode", choices=("lockstep", "realtime"), default="lockstep",
                   help="lockstep (default) or realtime")
    p.add_argument("--out", metavar="DIR", help="write a run record (kind hil) here")
    p.add_argument("--clear-fault", action="store_true",
                   help="clear a fault the board has latched (e.g. from an earlier run) before starting")


def run(args):
    from surepick.sim import scenarios
    from surepick.engines.hil import HilSession, record
    from surepick.records import runrecord
    from surepick.host.link.client import LinkError, resolve_port
    if args.scenario not in scenarios.SCENARIOS:
        print("surepick hil: unknown scenario '%s'; valid: %s"
              % (args.scenario, ", ".join(sorted(scenarios.SCENARIOS))), file=sys.stderr)
        return EXIT_USAGE
    try:
        port = resolve_port(args.port)
        session = HilSession(port, args.scenario, args.seed, args.mode,
                             log=lambda msg: print("surepick hil: " + msg, file=sys.stderr))
        rec = session.run(clear_fault=args.clear_fault)
    except LinkError as e:
        print("surepick hil: %s" % e, file=sys.stderr)
        return EXIT_USAGE
    except (ValueError, OSError) as e:
        print("surepick hil: %s" % e, file=sys.stderr)
        return EXIT_USAGE
    finally:
        try:
            session.client.close()
        except NameError:
            pass
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
        runrecord.write(args.out, *record(session, rec))
        print("run record: %s" % args.out)
    return EXIT_OK if rec["success"] else EXIT_FAILED
