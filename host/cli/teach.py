# `surepick teach`: a teleop session (cli/teleop.py: any source, the sim or a board) in which marks
# record the pick and place poses, approach heights and the part width into a job file
# (docs/job-file.md) that `surepick job start --job` and `surepick sim run --job` run.
import os
import sys

from surepick.host.user_error import FAILED, OK
from surepick.host.cli.errors import CommandError
from surepick.host.cli.teleop import SOURCE_HELP, TARGET_HELP, add_session_arguments, open_source_and_settings, run_session


def add_arguments(p):
    p.description = (
        "Teach a job by moving the arm. " + SOURCE_HELP + TARGET_HELP + "Marks record what the arm does at "
        "that moment: keyboard 1 pick approach, 2 pick, 3 part width (while the jaw grips the part: the "
        "pot's reading), 4 place approach, 5 place, n the next one missing; an OpenVR controller's menu button "
        "and a SpaceMouse's third button mark the next one; a stream file says \"mark\": NAME on a sample. The "
        "job file is checked (reachability, table clearance, jaw range, attempts) before it is written; each "
        "problem names its pose. Exit 0 when the job file was written, 1 when what was taught cannot run "
        "(the marks are kept in JOB.json.partial), 2 for bad usage.")
    add_session_arguments(p)
    p.add_argument("--out", required=True, metavar="JOB.json", help="the job file to write")
    p.add_argument("--width", type=float, metavar="MM", help="the part width, instead of a width mark")
    p.add_argument("--attempts", type=int, metavar="N", help="max attempts written into the job (1..9)")
    p.add_argument("--log", metavar="DIR", help="also write the session's DIR/teleop.csv and DIR/summary.json")


def run(args):
    from surepick.host.teleop import jobfile
    from surepick.host.teleop.teach import Teacher
    out = args.out
    parent = os.path.dirname(os.path.abspath(out))
    if not os.path.isdir(parent):
        raise CommandError("cannot write %s: no directory %s" % (out, parent))
    if args.attempts is not None and not jobfile.ATTEMPTS_MIN <= args.attempts <= jobfile.ATTEMPTS_MAX:
        raise CommandError("--attempts must be %d..%d" % (jobfile.ATTEMPTS_MIN, jobfile.ATTEMPTS_MAX))
    if args.width is not None and not 0 < args.width <= 45.0:
        raise CommandError("--width must be within the jaw's range, 0..45 mm")
    source, settings = open_source_and_settings(args)
    teacher = Teacher(say=lambda text: print("surepick " + text, file=sys.stderr), arm=settings.arm)
    summary, _ = run_session(args, source, settings, args.log, observers=[teacher])
    taught = {"source": source.name, "target": args.target, "control_hz": settings.control_hz,
              "scale": settings.scale, "samples": summary.get("samples")}
    job, problems = teacher.job(args.width, args.attempts, taught)
    if problems:
        if teacher.history:
            import json
            with open(out + ".partial", "w") as f:
                json.dump({"marks": teacher.history, "problems": problems}, f, indent=1)
                f.write("\n")
        raise CommandError("the taught job cannot run: %s%s" % (
            "; ".join(problems), ("\n(marks kept in %s.partial)" % out) if teacher.history else ""),
            FAILED)
    jobfile.save(job, out)
    a = job.approach_height_mm
    print("job: pick x=%.1f y=%.1f z=%.1f pitch %.0f; place x=%.1f y=%.1f z=%.1f pitch %.0f; width %.1f mm; "
          "approach %s; attempts %s" % (job.pick.x_mm, job.pick.y_mm, job.pick.z_mm, job.pick.pitch_deg,
                                        job.place.x_mm, job.place.y_mm, job.place.z_mm, job.place.pitch_deg,
                                        job.part_width_mm, "the board's" if a is None else "%.1f mm" % a,
                                        "the board's" if job.max_attempts is None else job.max_attempts))
    print("wrote %s (run it: surepick job start --job %s --port PORT, or surepick sim run --job %s)" % (out, out, out))
    return OK
