// The emulated chip: an rp2040js RP2040 with the B1 bootrom, the firmware from a UF2 (over an
// optional whole-flash image), and the flash writes rp2040js lacks.
//
// rp2040js does not emulate the QSPI flash's erase/program commands. The SDK reaches them only
// through two bootrom functions (looked up in the ROM function table by the codes 'RE' and 'RP'),
// so we put a BKPT at the entry of each, do the work on the flash array with NOR semantics when
// the core hits it, charge the flash chip's typical busy time to the emulated clock, and return
// to the caller.
import fs from 'fs';
import { RP2040, ConsoleLogger, LogLevel } from 'rp2040js';

export const FLASH_BASE = 0x10000000;
export const ROM_WORDS = 4096; // 16 KiB mask ROM
const CYCLE_NS = 8; // rp2040js' fixed 125 MHz time base

// Our private BKPT numbers (any imm8 the SDK does not use itself; it uses BKPT #0 for panics).
const BKPT_ERASE = 0x5e;
const BKPT_PROGRAM = 0x5f;

// Winbond W25Q16JV (the Pico's flash), typical figures from its datasheet.
const T_SECTOR_ERASE_NS = 45e6; // 4 KiB
const T_BLOCK32_ERASE_NS = 120e6;
const T_BLOCK64_ERASE_NS = 150e6;
const T_PAGE_PROGRAM_NS = 0.4e6; // 256 B page
const SECTOR = 4096;
const PAGE = 256;

// Core 1 is not emulated (rp2040js has one core). The SDK still talks to it through the SIO
// mailbox: at boot and at every soft reset it resets core 1 through the PSM and waits for the
// 0 that core 1's bootrom then pushes into core 0's FIFO. We play that part of core 1.
const SIO_FIFO_ST = 0x50;
const SIO_FIFO_WR = 0x54;
const SIO_FIFO_RD = 0x58;
const PSM_FRCE_OFF = 0x04;
const PSM_PROC1 = 1 << 16;
function emulateCore1Mailbox(mcu, log) {
  const mailbox = []; // core 1 -> core 0
  const sio = mcu.sio;
  const sioRead = sio.readUint32.bind(sio);
  const sioWrite = sio.writeUint32.bind(sio);
  sio.readUint32 = (offset) => {
    if (offset === SIO_FIFO_ST) return (mailbox.length ? 1 : 0) | 2; // VLD, RDY
    if (offset === SIO_FIFO_RD) return mailbox.length ? mailbox.shift() : 0;
    return sioRead(offset);
  };
  let warned = false;
  sio.writeUint32 = (offset, value) => {
    if (offset === SIO_FIFO_ST) return; // clears sticky error flags: we raise none
    if (offset === SIO_FIFO_WR) {
      if (!warned) log('core 1 is not emulated: a launch on it (e.g. _thread) will wait forever');
      warned = true;
      return;
    }
    sioWrite(offset, value);
  };
  const psm = mcu.peripherals[0x40010];
  const psmWrite = psm.writeUint32.bind(psm);
  psm.writeUint32 = (offset, value) => {
    const wasOff = psm.frceOff & PSM_PROC1;
    psmWrite(offset, value);
    if (offset === PSM_FRCE_OFF && wasOff && !(psm.frceOff & PSM_PROC1)) mailbox.push(0);
  };
}

const code2 = (s) => s.charCodeAt(0) | (s.charCodeAt(1) << 8);

// Read a bootrom image: a raw 16 KiB .bin, or a JS module holding it as `new Uint32Array([...])`
// (the form the rp2040js repository's demo ships).
export function readBootrom(path) {
  let data;
  try {
    data = fs.readFileSync(path);
  } catch (e) {
    throw new Error(`bootrom ${path}: ${e.code === 'ENOENT' ? 'not found' : e.message} (pass --bootrom FILE or set SUREPICK_RP2040_BOOTROM)`);
  }
  let words;
  if (data.length === ROM_WORDS * 4) {
    words = new Uint32Array(ROM_WORDS);
    new Uint8Array(words.buffer).set(data);
  } else {
    const text = data.toString('latin1');
    const start = text.indexOf('Uint32Array([');
    const end = start < 0 ? -1 : text.indexOf('])', start);
    if (end < 0) throw new Error(`bootrom ${path}: neither a ${ROM_WORDS * 4}-byte image nor a Uint32Array([...]) module`);
    const literals = text.slice(start, end).match(/0x[0-9a-fA-F]{1,8}/g) || [];
    words = Uint32Array.from(literals, (h) => parseInt(h, 16));
  }
  if (words.length !== ROM_WORDS) throw new Error(`bootrom ${path}: ${words.length} words, expected ${ROM_WORDS}`);
  return words;
}

// The ROM's public function table: {code: address (thumb bit set)}. Also checks the ROM header.
export function romFunctions(words) {
  const b = new Uint8Array(words.buffer, words.byteOffset, words.byteLength);
  const u16 = (a) => b[a] | (b[a + 1] << 8);
  if (b[0x10] !== 0x4d || b[0x11] !== 0x75 || b[0x12] !== 0x01) {
    throw new Error("bootrom: no RP2040 ROM header ('Mu', 1) at 0x10");
  }
  const table = new Map();
  for (let a = u16(0x14); a + 3 < b.length && u16(a) !== 0; a += 4) table.set(u16(a), u16(a + 2));
  return { version: b[0x13], table };
}

// Put our BKPTs at flash_range_erase and flash_range_program; returns their addresses.
export function patchFlashWrites(words) {
  const { version, table } = romFunctions(words);
  const at = {};
  for (const [name, code, bkpt] of [['erase', 'RE', BKPT_ERASE], ['program', 'RP', BKPT_PROGRAM]]) {
    const fn = table.get(code2(code));
    if (fn === undefined || !(fn & 1)) throw new Error(`bootrom: function table has no thumb entry '${code}'`);
    const addr = fn & ~1;
    const shift = (addr & 2) * 8;
    const old = (words[addr >> 2] >>> shift) & 0xffff;
    if (old >> 8 === 0xbe) throw new Error(`bootrom: '${code}' at 0x${addr.toString(16)} is already a BKPT`);
    words[addr >> 2] = (words[addr >> 2] & ~(0xffff << shift)) | ((0xbe00 | bkpt) << shift);
    at[name] = addr;
  }
  return { version, ...at };
}

// Write the main-flash payload of a UF2 into `flash` (offsets from FLASH_BASE). Returns the count.
export function loadUF2(path, flash) {
  let data;
  try {
    data = fs.readFileSync(path);
  } catch (e) {
    throw new Error(`UF2 ${path}: ${e.code === 'ENOENT' ? 'not found' : e.message} (pass --uf2 FILE or set SUREPICK_RP2040_UF2)`);
  }
  const RP2040_FAMILY = 0xe48bff56;
  let blocks = 0;
  for (let off = 0; off + 512 <= data.length; off += 512) {
    const dv = new DataView(data.buffer, data.byteOffset + off, 512);
    if (dv.getUint32(0, true) !== 0x0a324655 || dv.getUint32(4, true) !== 0x9e5d5157 || dv.getUint32(508, true) !== 0x0ab16f30) continue;
    const flags = dv.getUint32(8, true);
    if (flags & 0x1) continue; // "not main flash"
    if (flags & 0x2000 && dv.getUint32(28, true) !== RP2040_FAMILY) {
      throw new Error(`UF2 ${path}: family 0x${dv.getUint32(28, true).toString(16)} is not the RP2040's`);
    }
    const addr = dv.getUint32(12, true);
    const size = dv.getUint32(16, true);
    const offset = addr - FLASH_BASE;
    if (size > 476 || offset < 0 || offset + size > flash.length) throw new Error(`UF2 ${path}: block at 0x${addr.toString(16)} is outside flash`);
    flash.set(data.subarray(off + 32, off + 32 + size), offset);
    blocks++;
  }
  if (!blocks) throw new Error(`UF2 ${path}: no RP2040 flash blocks in it`);
  return blocks;
}

export class Chip {
  // rom: patched bootrom words; flash: initial contents (copied); flashTiming: charge busy times
  constructor({ rom, flash, flashTiming = true, log = () => {} }) {
    this.rom = rom;
    this.flashTiming = flashTiming;
    this.log = log;
    this.flashStats = { erases: 0, eraseBytes: 0, programs: 0, programBytes: 0, busyNs: 0 };
    this.halted = null; // why the core stopped (an unexpected BKPT), or null
    this.resets = 0;
    this.instructions = 0;
    this.onReset = null; // called with the new mcu after a watchdog reset
    this.nanosBase = 0; // emulated time before the current mcu (its clock restarts at 0)
    this.powerOn = false;
    this.build(flash, 0);
  }

  build(flash, resetReason) {
    const mcu = new RP2040();
    mcu.logger = new ConsoleLogger(LogLevel.Error);
    mcu.loadBootrom(this.rom); // resets the core and erases the flash array
    mcu.flash.set(flash.subarray(0, mcu.flash.length));
    mcu.onBreak = (code) => this.onBreak(code);
    emulateCore1Mailbox(mcu, this.log);
    const wd = mcu.peripherals[0x40058];
    wd.reason = resetReason; // what machine.reset_cause() reads after a watchdog/forced reset
    wd.onWatchdogTrigger = () => {
      // Stop its timer: rp2040js re-arms the expired alarm 0 ns ahead, which would fire forever
      // inside one clock tick. The chip resets as soon as the current instruction is done.
      wd.alarm.enable = false;
      wd.timer.enable = false;
      this.pendingReset = wd.reason;
    };
    this.pendingReset = null;
    // Start at boot2 in flash, as the rp2040js demo does: the ROM's own flash boot path needs
    // SSI reads that rp2040js does not model.
    mcu.core.PC = FLASH_BASE;
    this.mcu = mcu;
  }

  get nanos() {
    return this.nanosBase + this.mcu.clock.nanos;
  }

  onBreak(code) {
    const mcu = this.mcu;
    const r = mcu.core.registers;
    if (code === BKPT_ERASE) {
      this.erase(r[0] >>> 0, r[1] >>> 0, r[2] >>> 0, r[3] & 0xff);
    } else if (code === BKPT_PROGRAM) {
      this.program(r[0] >>> 0, r[1] >>> 0, r[2] >>> 0);
    } else {
      const pc = (mcu.core.PC - 2) >>> 0;
      this.halted = `BKPT #${code} at 0x${pc.toString(16)} (firmware panic or breakpoint)`;
      this.log(`core halted: ${this.halted}`);
      return;
    }
    mcu.core.PC = mcu.core.LR & ~1; // return from the ROM function
  }

  // flash_range_erase(addr, count, block_size, block_cmd): like the ROM, a large aligned span
  // goes by block_cmd, the rest by 4 KiB sector erases.
  erase(addr, count, blockSize, blockCmd) {
    const flash = this.mcu.flash;
    let busy = 0;
    let a = addr;
    const end = Math.min(addr + count, flash.length); // addresses are offsets into the flash
    while (a < end) {
      if (blockSize > SECTOR && a % blockSize === 0 && end - a >= blockSize) {
        flash.fill(0xff, a, a + blockSize);
        busy += blockCmd === 0x52 ? T_BLOCK32_ERASE_NS : T_BLOCK64_ERASE_NS;
        a += blockSize;
      } else {
        const sector = a - (a % SECTOR); // the chip erases the whole sector an address falls in
        flash.fill(0xff, sector, Math.min(sector + SECTOR, flash.length));
        busy += T_SECTOR_ERASE_NS;
        a += SECTOR;
      }
    }
    this.flashStats.erases++;
    this.flashStats.eraseBytes += count;
    this.charge(busy);
  }

  // flash_range_program(addr, data, count): NOR programming only clears bits.
  program(addr, src, count) {
    const mcu = this.mcu;
    const flash = mcu.flash;
    for (let i = 0; i < count && addr + i < flash.length; i++) flash[addr + i] &= mcu.readUint8(src + i);
    const pages = count ? Math.floor((addr + count - 1) / PAGE) - Math.floor(addr / PAGE) + 1 : 0;
    this.flashStats.programs++;
    this.flashStats.programBytes += count;
    this.charge(pages * T_PAGE_PROGRAM_NS);
  }

  charge(ns) {
    this.flashStats.busyNs += ns;
    if (this.flashTiming && ns > 0) this.mcu.clock.tick(ns);
  }

  // Run the core until the emulated clock reaches `targetNs` (absolute, across resets) or
  // `hostDeadline` (performance.now() ms) passes. Returns true when the target was reached.
  runTo(targetNs, hostDeadline = Infinity) {
    for (;;) {
      const { core, clock } = this.mcu;
      const target = targetNs - this.nanosBase;
      let n = 0;
      let executed = 0;
      while (clock.nanos < target && !this.stopped) {
        if (core.waiting) {
          // WFI/WFE: jump to the next timer event (or the target) instead of spinning.
          const next = clock.nextAlarm;
          if (!next || next.nanos >= target) clock.tick(target - clock.nanos);
          else clock.tick(Math.max(next.nanos - clock.nanos, 0));
        } else {
          clock.tick(core.executeInstruction() * CYCLE_NS);
          executed++;
        }
        if (++n === 65536) {
          n = 0;
          if (performance.now() > hostDeadline) break;
        }
      }
      this.instructions += executed;
      if (this.pendingReset !== null) {
        this.hardReset(this.pendingReset);
        continue;
      }
      if (this.halted && clock.nanos < target) clock.tick(target - clock.nanos); // a halted core lets time pass
      return clock.nanos >= target;
    }
  }

  // How long the core will sleep from now unless something outside wakes it (0: it is running).
  idleNs() {
    const { core, clock } = this.mcu;
    if (!core.waiting && !this.halted) return 0;
    if (this.pendingReset !== null) return 0;
    return clock.nextAlarm ? Math.max(0, clock.nextAlarm.nanos - clock.nanos) : Infinity;
  }

  // Set when the core must leave runTo(): a reset is due or it halted.
  get stopped() {
    return this.pendingReset !== null || this.halted !== null;
  }

  // A watchdog (or machine.reset()) reset: a fresh chip with the same flash; time goes on.
  hardReset(reason) {
    const flash = this.mcu.flash;
    this.nanosBase += this.mcu.clock.nanos;
    this.resets++;
    this.log(`chip reset (watchdog reason ${reason}) at ${(this.nanosBase / 1e6).toFixed(1)} ms`);
    // The watchdog's scratch registers survive its resets, not a power cycle.
    const scratch = this.powerOn ? null : this.mcu.peripherals[0x40058].scratchData.slice();
    this.powerOn = false;
    this.halted = null;
    this.build(flash, reason);
    if (scratch) this.mcu.peripherals[0x40058].scratchData.set(scratch);
    if (this.onReset) this.onReset(this.mcu);
  }

  // Power cycle from the outside: like a watchdog reset but with the power-on cause.
  powerCycle() {
    this.powerOn = true;
    this.pendingReset = 0;
  }
}
