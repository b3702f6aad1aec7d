#!/usr/bin/env node
// surepick's emulated RP2040: the real MicroPython RP2040 image running in rp2040js.
//
//   node emulator.mjs [--uf2 FILE] [--bootrom FILE] [--flash FILE] [--save-flash FILE]
//                   [--serial HOST:PORT] [--control stdio|HOST:PORT] [--lockstep]
//                   [--no-throttle] [--no-flash-timing] [--flash-size BYTES] [--quiet]
//
// The chip's USB-CDC serial (its REPL) is served on a loopback TCP port: `mpremote connect
// socket://127.0.0.1:PORT`. The plant side channel is JSON lines on stdin/stdout (and/or a TCP
// port); see ../README.md for the protocol. The first stdout line is {"event": "ready", ...}.
// Diagnostics and the closing time report go to stderr.
import fs from 'fs';
import net from 'net';
import path from 'path';
import readline from 'readline';
import { fileURLToPath } from 'url';
import { Chip, loadUF2, patchFlashWrites, readBootrom } from './chip.mjs';
import { PlantIO } from './io.mjs';
import { CdcLink } from './usb.mjs';

const PROTOCOL = 1;
const HERE = path.dirname(fileURLToPath(import.meta.url));
const REPO = path.resolve(HERE, '..', '..', '..', '..');
const MS = 1e6; // ns
const SLICE_HOST_MS = 15; // longest stretch of emulation between looks at the sockets
const SERVO_PINS = [2, 3, 4, 5, 6];

// ---------- arguments ----------
function usage(msg) {
  process.stderr.write(`engine: ${msg}\n`);
  process.exit(2);
}
const opt = {
  uf2: process.env.SUREPICK_RP2040_UF2 || null,
  bootrom: process.env.SUREPICK_RP2040_BOOTROM || null,
  flash: null,
  saveFlash: null,
  serial: '127.0.0.1:0',
  control: 'stdio',
  lockstep: false,
  throttle: true,
  flashTiming: true,
  flashSize: 2 * 1024 * 1024, // the Pico's W25Q16JV
  quiet: false,
};
{
  const argv = process.argv.slice(2);
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const val = () => (i + 1 < argv.length ? argv[++i] : usage(`${a} needs a value`));
    if (a === '--uf2') opt.uf2 = val();
    else if (a === '--bootrom') opt.bootrom = val();
    else if (a === '--flash') opt.flash = val();
    else if (a === '--save-flash') opt.saveFlash = val();
    else if (a === '--serial') opt.serial = val();
    else if (a === '--control') opt.control = val();
    else if (a === '--lockstep') opt.lockstep = true;
    else if (a === '--no-throttle') opt.throttle = false;
    else if (a === '--no-flash-timing') opt.flashTiming = false;
    else if (a === '--flash-size') opt.flashSize = Number(val());
    else if (a === '--quiet') opt.quiet = true;
    else usage(`unknown argument ${a}`);
  }
}

// The shared reference folder next to the checkout (for a linked git worktree, next to the
// main checkout, whose root the worktree's .git file names).
function sharedDir() {
  const candidates = [path.join(REPO, '..', 'shared', 'rp2040')];
  try {
    const m = /^gitdir:\s*(.+)$/m.exec(fs.readFileSync(path.join(REPO, '.git'), 'utf8'));
    if (m) candidates.push(path.join(path.resolve(REPO, m[1].trim()), '..', '..', '..', '..', 'shared', 'rp2040'));
  } catch {
    // .git is a directory (a plain checkout) or absent
  }
  return candidates.find((d) => fs.existsSync(d)) || candidates[0];
}

function parseHostPort(text, what) {
  const i = text.lastIndexOf(':');
  const host = (i < 0 ? '' : text.slice(0, i)).replace(/^\[|\]$/g, '') || '127.0.0.1';
  const port = Number(i < 0 ? text : text.slice(i + 1));
  if (!Number.isInteger(port) || port < 0 || port > 65535) usage(`${what} wants HOST:PORT, got ${text}`);
  if (!['127.0.0.1', 'localhost', '::1'].includes(host)) usage(`${what}: ${host} is not a loopback address (the REPL has no password)`);
  return { host, port };
}

const log = (msg) => {
  if (!opt.quiet) process.stderr.write(`engine: ${msg}\n`);
};

// ---------- the chip ----------
const shared = sharedDir();
let chip;
let romInfo;
try {
  const rom = readBootrom(opt.bootrom || path.join(shared, 'probe', 'bootrom.mjs'));
  romInfo = patchFlashWrites(rom);
  const flash = new Uint8Array(16 * 1024 * 1024).fill(0xff);
  if (opt.flash && fs.existsSync(opt.flash)) {
    const img = fs.readFileSync(opt.flash);
    if (img.length > flash.length) throw new Error(`flash image ${opt.flash} is larger than 16 MiB`);
    flash.set(img);
    log(`flash image ${opt.flash} (${img.length} bytes) loaded`);
  } else if (opt.flash) {
    log(`flash image ${opt.flash} does not exist yet: starting with an erased flash`);
  }
  const uf2 = opt.uf2 || path.join(shared, 'firmware.uf2');
  const blocks = loadUF2(uf2, flash);
  log(`${uf2}: ${blocks} UF2 blocks written over the flash`);
  chip = new Chip({ rom, flash, flashTiming: opt.flashTiming, log });
} catch (e) {
  process.stderr.write(`engine: ${e.message}\n`);
  process.exit(3);
}

const io = new PlantIO();
let serialClient = null;
// The tap (the `tap` request): what the chip sent on its serial port and the ADC conversions it
// made since the last reply, handed out with each state (serial_out, adc_log), so a plant in
// lockstep knows exactly what happened inside each step whoever holds the serial port.
let tap = false;
let tapOut = [];
let tapAdc = [];
const link = new CdcLink((buf) => {
  if (tap) tapOut.push(Buffer.from(buf));
  if (serialClient && !serialClient.destroyed) serialClient.write(buf);
  // nobody on the port: the bytes are lost, as on a Pico with no terminal open
});
function onConversion(ns, channel, value) {
  if (tap) tapAdc.push([Math.round(ns) / 1e3, channel, value]);
}
function attach(mcu) {
  io.attach(mcu, () => chip.nanos, onConversion);
  link.clear();
  link.attach(mcu, () => chip.nanos);
}
attach(chip.mcu);
chip.onReset = (mcu) => {
  attach(mcu);
  // The chip's USB device went away with the reset: hang up on the client, as the host's
  // serial port would vanish under it (it may connect again at once).
  if (serialClient) serialClient.destroy();
  serialClient = null;
};

// ---------- serial port (one client at a time) ----------
const HIGH_WATER = 64 * 1024;
const serialServer = net.createServer((sock) => {
  if (serialClient) {
    sock.end('surepick-rp2040: busy, another client is connected\r\n');
    return;
  }
  serialClient = sock;
  sock.setNoDelay(true);
  sock.on('data', (data) => {
    link.send(data);
    if (link.queued > HIGH_WATER) sock.pause(); // the chip is not reading: push back on the client
    wake();
  });
  const gone = () => {
    if (serialClient === sock) serialClient = null;
  };
  sock.on('close', gone);
  sock.on('error', gone);
});

// ---------- time keeping ----------
const wall0 = performance.now();
let anchorWall = wall0; // free-running with throttle: emulated time may not run ahead of wall time
let anchorEmu = 0;
let runTarget = null; // lockstep: {targetNs, resolve}
let lastTarget = 0; // lockstep: where the plant's clock is (ns); the chip runs up to it
const waiters = []; // free-running: [{targetNs, resolve}] for `run` requests
let scheduled = false;
let timer = null;
let closing = false;

function wake() {
  if (timer) {
    clearTimeout(timer);
    timer = null;
  }
  if (!scheduled && !closing) {
    scheduled = true;
    setImmediate(loop);
  }
}

function loop() {
  scheduled = false;
  if (closing) return;
  const deadline = performance.now() + SLICE_HOST_MS;
  let sleepMs = 0;
  if (opt.lockstep) {
    if (runTarget && chip.runTo(runTarget.targetNs, deadline)) {
      const r = runTarget;
      runTarget = null;
      r.resolve();
    }
    if (!runTarget) sleepMs = Infinity; // frozen until the plant asks for time
  } else {
    let target = chip.nanos + 50 * MS;
    if (opt.throttle) target = Math.min(target, anchorEmu + (performance.now() - anchorWall) * MS + 2 * MS);
    if (target > chip.nanos && !chip.runTo(target, deadline) && opt.throttle) {
      // Busy code fell behind the wall clock: go on from here, no catching up in a burst later.
      anchorWall = performance.now();
      anchorEmu = chip.nanos;
    }
    let nextWaiter = Infinity;
    for (let i = waiters.length - 1; i >= 0; i--) {
      if (chip.nanos >= waiters[i].targetNs) waiters.splice(i, 1)[0].resolve();
      else nextWaiter = Math.min(nextWaiter, waiters[i].targetNs);
    }
    if (opt.throttle) {
      // Ahead of the wall clock: sleep until it catches up, and on through the time the core
      // will sleep anyway (serial bytes and requests wake us at once).
      const ahead = chip.nanos - (anchorEmu + (performance.now() - anchorWall) * MS);
      if (ahead >= 0) {
        const idle = Math.min(chip.idleNs(), nextWaiter - chip.nanos);
        sleepMs = Math.min(50, Math.max(1, (ahead + idle) / MS));
      }
    }
  }
  link.pump();
  if (serialClient && serialClient.isPaused() && link.queued < HIGH_WATER / 2) serialClient.resume();
  if (sleepMs === Infinity) return;
  if (sleepMs > 0) {
    timer = setTimeout(() => {
      timer = null;
      wake();
    }, sleepMs);
    return;
  }
  wake();
}

// ---------- side channel ----------
// Whole emulated microseconds elapsed (floor: a step that ends a few ns past its target reads
// as the target).
const nowUs = () => Math.floor(chip.nanos / 1e3);

function pulses(pins = SERVO_PINS) {
  const pulse = {};
  const period = {};
  for (const p of pins) {
    const w = io.pwm(p);
    pulse[p] = w ? w.pulse_us : null;
    period[p] = w ? w.period_us : null;
  }
  return { pulse_us: pulse, period_us: period };
}

function snapshot() {
  const { level, oe } = io.levels();
  const s = {
    t_us: nowUs(),
    ...pulses(),
    gpio_level: level,
    gpio_oe: oe,
    usb: link.connected,
    resets: chip.resets,
    halted: chip.halted,
  };
  if (tap) {
    s.serial_out = Buffer.concat(tapOut).toString('latin1');
    s.adc_log = tapAdc;
    tapOut = [];
    tapAdc = [];
  }
  return s;
}

function applyInputs(req) {
  if (req.pins) for (const [k, v] of Object.entries(req.pins)) io.setPin(Number(k), v);
  if (req.adc) for (const [k, v] of Object.entries(req.adc)) io.setAdc(Number(k), v);
  // Bytes for the chip's serial port, queued now: in lockstep they reach the chip at this
  // instant of emulated time, whatever the host's sockets do.
  if (typeof req.serial === 'string' && req.serial.length) link.send(Buffer.from(req.serial, 'latin1'));
}

function stats() {
  const wall = (performance.now() - wall0) / 1000;
  const cpu = process.cpuUsage();
  const cpuS = (cpu.user + cpu.system) / 1e6;
  const emu = chip.nanos / 1e9;
  return {
    emulated_s: emu,
    host_wall_s: wall,
    host_cpu_s: cpuS,
    instructions: chip.instructions,
    usb_connected_at_ms: link.connectedAtNs === null ? null : link.connectedAtNs / MS,
    serial_bytes_in: link.bytesIn,
    serial_bytes_out: link.bytesOut,
    flash: { ...chip.flashStats },
    resets: chip.resets,
    halted: chip.halted,
  };
}

function saveFlash(file) {
  fs.writeFileSync(file, chip.mcu.flash.subarray(0, opt.flashSize));
  return { path: path.resolve(file), bytes: opt.flashSize };
}

const ops = {
  hello: () => ({ protocol: PROTOCOL, engine: 'surepick-rp2040', lockstep: opt.lockstep, ...snapshot() }),
  state: () => snapshot(),
  set: (req) => {
    applyInputs(req);
    return snapshot();
  },
  pwm: (req) => ({ t_us: nowUs(), ...pulses(req.pins || SERVO_PINS) }),
  run: (req) => {
    const us = req.us !== undefined ? Number(req.us) : Number(req.ms) * 1000;
    if (!(us >= 0) || !Number.isFinite(us)) throw new Error('run needs "ms" or "us" >= 0');
    applyInputs(req);
    if (opt.lockstep) {
      // Targets are absolute, so overshoot (an instruction, a flash erase) is not carried forward.
      lastTarget += us * 1e3;
      return new Promise((resolve) => {
        runTarget = { targetNs: lastTarget, resolve: () => resolve(snapshot()) };
        wake();
      });
    }
    const targetNs = chip.nanos + us * 1e3;
    return new Promise((resolve) => {
      waiters.push({ targetNs, resolve: () => resolve(snapshot()) });
      wake();
    });
  },
  lockstep: (req) => {
    opt.lockstep = !!req.on;
    lastTarget = Math.ceil(chip.nanos / 1e3) * 1e3; // the plant's clock starts on a whole us
    anchorWall = performance.now();
    anchorEmu = chip.nanos;
    wake();
    return { lockstep: opt.lockstep, t_us: opt.lockstep ? lastTarget / 1e3 : nowUs() };
  },
  wait_usb: (req) => {
    if (link.connected || opt.lockstep) return { usb: link.connected, t_us: nowUs() };
    const limitNs = chip.nanos + (req.max_ms ?? 5000) * MS;
    return new Promise((resolve, reject) => {
      const check = () => {
        if (link.connected) resolve({ usb: true, t_us: nowUs(), connected_at_ms: link.connectedAtNs / MS });
        else if (chip.nanos > limitNs) reject(new Error(`USB CDC did not enumerate within ${req.max_ms ?? 5000} emulated ms`));
        else waiters.push({ targetNs: chip.nanos + 5 * MS, resolve: check });
      };
      check();
      wake();
    });
  },
  tap: (req) => {
    tap = !!req.on;
    tapOut = [];
    tapAdc = [];
    return { tap, t_us: nowUs() };
  },
  reset: () => {
    chip.powerCycle();
    wake();
    return { t_us: nowUs() };
  },
  save_flash: (req) => {
    if (!req.path) throw new Error('save_flash needs "path"');
    return saveFlash(req.path);
  },
  stats: () => stats(),
  quit: () => {
    setImmediate(() => shutdown(0));
    return {};
  },
};

function serveControl(input, output) {
  let chain = Promise.resolve();
  const rl = readline.createInterface({ input, crlfDelay: Infinity });
  rl.on('line', (line) => {
    if (!line.trim()) return;
    chain = chain.then(async () => {
      let req;
      let reply;
      try {
        req = JSON.parse(line);
        const fn = ops[req.op];
        if (!fn) throw new Error(`unknown op ${JSON.stringify(req.op)}`);
        reply = { ok: true, ...(await fn(req)) };
      } catch (e) {
        reply = { ok: false, error: e.message };
      }
      if (req && req.id !== undefined) reply.id = req.id;
      if (output.writable) output.write(JSON.stringify(reply) + '\n');
    });
  });
  return rl;
}

// ---------- shutdown ----------
function shutdown(code) {
  if (closing) return;
  closing = true;
  if (opt.saveFlash) {
    try {
      const r = saveFlash(opt.saveFlash);
      log(`flash saved to ${r.path}`);
    } catch (e) {
      process.stderr.write(`engine: saving the flash failed: ${e.message}\n`);
      code = code || 1;
    }
  }
  const s = stats();
  const f = s.flash;
  process.stderr.write(
    `engine: emulated ${s.emulated_s.toFixed(3)} s in ${s.host_wall_s.toFixed(2)} s wall, ${s.host_cpu_s.toFixed(2)} s CPU ` +
      `(${(s.host_cpu_s / Math.max(s.emulated_s, 1e-9)).toFixed(2)} CPU s per emulated s); ` +
      `${(s.instructions / 1e6).toFixed(1)} M instructions; flash: ${f.erases} erases (${f.eraseBytes} B), ` +
      `${f.programs} programs (${f.programBytes} B), ${(f.busyNs / MS).toFixed(1)} ms busy; resets ${s.resets}\n`,
  );
  process.exit(code);
}
process.on('SIGTERM', () => shutdown(0));
process.stdout.on('error', () => shutdown(0)); // the parent stopped reading
process.on('SIGINT', () => shutdown(0));

// ---------- start ----------
const serialAt = parseHostPort(opt.serial, '--serial');
serialServer.listen(serialAt.port, serialAt.host, async () => {
  const a = serialServer.address();
  const host = a.family === 'IPv6' ? `[${a.address}]` : a.address;
  let control = null;
  if (opt.control !== 'stdio') {
    const c = parseHostPort(opt.control, '--control');
    const server = net.createServer((sock) => serveControl(sock, sock));
    await new Promise((res) => server.listen(c.port, c.host, res));
    control = `${c.host}:${server.address().port}`;
  }
  // stdin is the control channel unless --control moved it; its end (the parent went) ends us.
  if (opt.control === 'stdio') serveControl(process.stdin, process.stdout).on('close', () => shutdown(0));
  process.stdout.write(
    JSON.stringify({
      event: 'ready',
      protocol: PROTOCOL,
      serial: `socket://${host}:${a.port}`,
      control: control || 'stdio',
      lockstep: opt.lockstep,
      bootrom_version: romInfo.version,
      rom_erase: romInfo.erase,
      rom_program: romInfo.program,
    }) + '\n',
  );
  wake();
});
