# A stand-in for a board in the monitor's tests: a CPython process that speaks only the link
# protocol (shared_fsm.link) on a loopback TCP port, runs scripted pick-and-place
# cycles, and keeps the firmware's own flash log (firmware/flashlog.py) in a directory, so it
# can be killed and restarted with its log intact and LOG_SINCE replays from any seq.
# It is not the firmware: the real thing runs on the virtual board (`surepick board`).
#
#   python tests/support/link_standin.py --listen 127.0.0.1:PORT --flash DIR [--cycles N]
# Prints "link-stand-in: serving on socket://127.0.0.1:PORT" when ready, and CYCLES_DONE once its
# --cycles are over (every record committed). --start-on-client: the cycles begin when the first
# client connects (a test then knows its client sees them live, however slowly it started).
import argparse
import os
import select
import socket
import sys
import time

from surepick.firmware import flashlog
from surepick.shared_fsm import codes
from surepick.shared_fsm import link
from surepick.shared_fsm import states
from surepick.host.link.frames import FrameParser

READY = "link-stand-in: serving on "
CYCLES_DONE = "link-stand-in: cycles done"
_PATH = (states.APPROACH, states.DESCEND, states.GRASP, states.VERIFY, states.LIFT,
         states.TRANSFER, states.PLACE)
LOG_BATCH = 16


class LinkStandIn:
    def __init__(self, flash_dir, board_id="fake-0001", telemetry_hz=10, step_ms=20,
                 fault_every=5, cycles=None, noise=0.0, name_in_ping=False, start_on_client=False):
        self.log = flashlog.FlashLog(os.path.join(flash_dir, "log"), n_segments=4, seg_records=64)
        self.board_id = board_id
        self.telemetry_hz = telemetry_hz
        self.step_ms = step_ms
        self.fault_every = fault_every
        self.cycles = cycles
        self.noise = noise
        self.name_in_ping = name_in_ping
        self.running = not start_on_client
        self.done_said = False
        self.t0 = time.monotonic()
        self.state = states.IDLE
        self.fault = 0
        self.attempt = 0
        self.ev_seq = 0
        self.cycle = 0
        self.path_i = -1
        self.config = {"telemetry_hz": telemetry_hz, "grasp_dwell_ms": 350}
        self.out = None
        self.parser = FrameParser(accept_requests=True)
        self._noise_n = 0

    def now_ms(self):
        return int((time.monotonic() - self.t0) * 1000) & ((1 << 30) - 1)

    # ---- output ----

    def send(self, data):
        if self.out is None or data is None:
            return
        try:
            self.out.sendall(data.replace(b"\n", b"\r\n"))
        except OSError:
            self.out = None

    def _maybe_noise(self):
        if not self.noise:
            return
        self._noise_n += 1
        if self._noise_n % int(1 / self.noise) == 0:
            self.send(b"REPL text >>> \x1eSP1T,1,2*0000DEAD\n\x1eSP1E,1,2\x1e")

    # ---- the scripted machine ----

    def boot(self):
        self.log.count(flashlog.C_BOOTS)
        boots = self.log.counters[flashlog.C_BOOTS]
        self.log.append(flashlog.R_BOOT, [0, self.now_ms(), 1, boots, 0, -1, 0, 0, 0, 0, 0, 0])
        self.log.commit()
        self.send(link.hello(self.board_id, "fake-0.1", 1, boots, self.log.last_seq))

    def _event(self, kind, frm, to, reason):
        self.ev_seq += 1
        ev = (self.ev_seq, self.now_ms(), kind, frm, to, reason, self.attempt,
              20000 + to * 1000, 1 if to in (states.VERIFY, states.LIFT) else 0, 100 + 10 * to,
              0, 7)
        self.send(link.event(ev))
        if kind == codes.K_FAULT:
            self.log.append(flashlog.R_FAULT, ev)
            self.log.count(flashlog.C_FAULTS)
            self.log.count(flashlog.C_CYCLES_FAILED)
            self.send(link.encode(link.T_FAULT, (ev[1], reason, frm, self.attempt, reason,
                                                 self.log.counters[flashlog.C_FAULTS])))
        else:
            self.log.append(flashlog.R_TRANSITION if kind == codes.K_TRANSITION else flashlog.R_NOTE, ev)

    def step(self):
        # One scripted step: walk the path; every fault_every-th cycle fails in VERIFY.
        if not self.running:
            return
        if self.cycles is not None and self.cycle >= self.cycles and self.state == states.IDLE:
            if not self.done_said:
                self.done_said = True
                print(CYCLES_DONE, flush=True)
            return
        if self.state == states.IDLE:
            self.cycle += 1
            self.attempt = 1
            self.path_i = 0
            self._event(codes.K_TRANSITION, states.IDLE, _PATH[0], codes.R_JOB_START)
            self.state = _PATH[0]
            return
        if (self.state == states.VERIFY and self.fault_every
                and self.cycle % self.fault_every == 0):
            self._event(codes.K_FAULT, states.VERIFY, states.IDLE, codes.F_GRASP_FAILED)
            self._event(codes.K_NOTE, states.IDLE, states.IDLE, codes.R_CLEARED)
            self.state = states.IDLE
            self.log.commit()    # at rest
            return
        self.path_i += 1
        if self.path_i >= len(_PATH):
            self._event(codes.K_TRANSITION, self.state, states.IDLE, codes.R_PLACED)
            self.log.count(flashlog.C_CYCLES_OK)
            self.state = states.IDLE
            self.log.commit()    # at rest
            return
        nxt = _PATH[self.path_i]
        self._event(codes.K_TRANSITION, self.state, nxt, codes.R_ARRIVED)
        self.state = nxt

    def telemetry(self):
        c = self.log.counters
        return link.encode(link.T_TELEMETRY, (
            self.now_ms(), self.state, self.attempt, self.fault, c[0], c[1], c[2],
            20000 + self.state * 1000, 100 + 10 * self.state, 0, 0, 7, 5000, 0, 2000, 350, 0))

    # ---- requests ----

    def handle(self, frame):
        t, f = frame.ftype, frame.fields
        rid = f[0]
        if t == link.T_PING:
            self.send(link.reply(rid, link.OK, (self.board_id,) if self.name_in_ping else ()))
        elif t == link.T_STATUS:
            self.send(self.telemetry())
            self.send(link.reply(rid, link.OK, (self.state, self.fault, 0,
                                                self.log.counters[flashlog.C_BOOTS],
                                                self.log.last_seq, 350, 0, 0)))
        elif t == link.T_LOG_SINCE:
            if self.state == states.IDLE:
                self.log.commit()
            n, last = 0, f[1]
            for seq, rtype, r in self.log.read_since(f[1], LOG_BATCH):
                self.send(link.log_record(seq, rtype, r))
                n, last = n + 1, seq
            self.send(link.reply(rid, link.OK, (n, last, 1 if self.log.last_seq > last else 0)))
        elif t == link.T_CONFIG_GET:
            if f[1] in self.config:
                self.send(link.reply(rid, link.OK, (f[1], self.config[f[1]])))
            else:
                self.send(link.reply(rid, link.E_UNKNOWN_KEY, (f[1],)))
        elif t == link.T_CONFIG_SET:
            if f[1] not in self.config:
                self.send(link.reply(rid, link.E_UNKNOWN_KEY, (f[1],)))
            else:
                self.config[f[1]] = f[2]
                self.send(link.reply(rid, link.OK, (f[1], f[2], 0)))
        elif t == link.T_CALIBRATE:
            key = "pot_closed_counts" if f[1] == link.CAL_POT else "current_offset_counts"
            self.send(link.reply(rid, link.OK, (key, 8123)))
        else:
            self.send(link.reply(rid, link.E_UNSUPPORTED))

    # ---- serving ----

    def serve(self, host, port, stop_after_s=None):
        ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        ls.bind((host, port))
        ls.listen(1)
        print(READY + "socket://%s:%d" % ls.getsockname(), flush=True)
        self.boot()
        next_step = next_tel = time.monotonic()
        end = None if stop_after_s is None else time.monotonic() + stop_after_s
        while end is None or time.monotonic() < end:
            now = time.monotonic()
            wait = max(0.0, min(next_step, next_tel) - now)
            socks = [ls] + ([self.out] if self.out is not None else [])
            ready, _, _ = select.select(socks, [], [], wait)
            for s in ready:
                if s is ls:
                    c, _ = ls.accept()
                    if self.out is not None:
                        c.sendall(b"surepick-board: busy, another client is connected\r\n")
                        c.close()
                    else:
                        c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                        self.out = c
                        self.running = True
                else:
                    try:
                        data = s.recv(4096)
                    except OSError:
                        data = b""
                    if not data:
                        self.out = None
                        continue
                    for fr in self.parser.feed(data):
                        if link.is_request(fr.ftype):
                            self.handle(fr)
            now = time.monotonic()
            if now >= next_step:
                next_step = now + self.step_ms / 1000.0
                self.step()
                self._maybe_noise()
            if self.telemetry_hz and now >= next_tel:
                next_tel = now + 1.0 / self.telemetry_hz
                self.send(self.telemetry())


def main(argv=None):
    ap = argparse.ArgumentParser(description="a link-protocol stand-in for a board, for the monitor's tests")
    ap.add_argument("--listen", default="127.0.0.1:0")
    ap.add_argument("--flash", required=True)
    ap.add_argument("--board-id", default="fake-0001")
    ap.add_argument("--cycles", type=int, default=None)
    ap.add_argument("--step-ms", type=int, default=20)
    ap.add_argument("--telemetry-hz", type=int, default=10)
    ap.add_argument("--fault-every", type=int, default=5)
    ap.add_argument("--noise", type=float, default=0.0, help="fraction of steps followed by garbage")
    ap.add_argument("--name-in-ping", action="store_true", help="PING replies carry the board id")
    ap.add_argument("--seconds", type=float, default=None)
    ap.add_argument("--start-on-client", action="store_true", help="begin the cycles when a client connects")
    a = ap.parse_args(argv)
    host, _, port = a.listen.rpartition(":")
    b = LinkStandIn(a.flash, a.board_id, a.telemetry_hz, a.step_ms, a.fault_every, a.cycles, a.noise,
                  a.name_in_ping, a.start_on_client)
    try:
        b.serve(host or "127.0.0.1", int(port), a.seconds)
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
