// What the plant sees of the chip and does to it: PWM pulse widths decoded from the slices'
// registers, input levels on the pads (with the pad's pull resistors), ADC inputs.
//
// rp2040js keeps a pin's input level only as what someone last set (default low) and ignores
// the pad's pulls; a real pad reads what drives it: the pin's own output, else an external
// driver, else its pull-up/pull-down. We recompute that whenever the pin's state changes.

const FUNC_PWM = 4;
const NPINS = 30;
export const ADC_CHANNELS = 5; // ADC0..3 = GP26..29, 4 = temperature sensor

export class PlantIO {
  constructor() {
    this.drive = new Array(NPINS).fill(null); // external level per pin: null (released), 0 or 1
    // 12-bit ADC inputs; channel 4 at the sensor's 0.706 V (27 C) so machine.ADC(4) reads sane.
    this.adc = [0, 0, 0, 0, Math.round((0.706 / 3.3) * 4095)];
  }

  // nowNs(): the emulated clock (absolute, across resets); onConversion(t_ns, channel, counts):
  // every ADC conversion the chip completes, what a logic analyser on the ADC would show.
  attach(mcu, nowNs = () => 0, onConversion = null) {
    this.mcu = mcu;
    for (const pin of mcu.gpio) {
      pin.addListener(() => this.refresh(pin));
      this.refresh(pin);
    }
    mcu.adc.channelValues.splice(0, ADC_CHANNELS, ...this.adc);
    if (onConversion) {
      const adc = mcu.adc;
      const complete = adc.completeADCRead.bind(adc);
      adc.completeADCRead = (value, error) => {
        onConversion(nowNs(), adc.currentChannel, value);
        complete(value, error);
      };
    }
  }

  refresh(pin) {
    let level;
    const ext = this.drive[pin.index];
    if (pin.outputEnable) level = pin.outputValue; // the pad drives itself (and reads back)
    else if (ext !== null) level = !!ext;
    else if (pin.pullupEnabled && pin.pulldownEnabled) level = pin.rawInputValue; // bus keeper
    else if (pin.pullupEnabled) level = true;
    else level = false; // pulled down, or floating (read as low here)
    if (level !== pin.rawInputValue) pin.setInputValue(level);
  }

  setPin(index, value) {
    if (!Number.isInteger(index) || index < 0 || index >= NPINS) throw new Error(`no GPIO ${index}`);
    if (value !== null && value !== 0 && value !== 1) throw new Error(`pin ${index}: level must be 0, 1 or null`);
    this.drive[index] = value;
    this.refresh(this.mcu.gpio[index]);
  }

  setAdc(channel, counts) {
    if (!Number.isInteger(channel) || channel < 0 || channel >= ADC_CHANNELS) throw new Error(`no ADC channel ${channel}`);
    if (!Number.isFinite(counts)) throw new Error(`ADC ${channel}: counts must be a number`);
    const v = Math.max(0, Math.min(4095, Math.round(counts)));
    this.adc[channel] = v;
    this.mcu.adc.channelValues[channel] = v;
  }

  // Levels of all pins as the pads see them (bit n = GPIOn), and which ones the chip drives.
  levels() {
    let level = 0;
    let oe = 0;
    for (const pin of this.mcu.gpio) {
      if (pin.outputEnable) {
        oe |= 1 << pin.index;
        if (pin.outputValue) level |= 1 << pin.index;
      } else if (pin.rawInputValue) level |= 1 << pin.index;
    }
    return { level: level >>> 0, oe: oe >>> 0 };
  }

  // The PWM output on a pin as {pulse_us, period_us}, from its slice's registers (CSR, DIV, CC,
  // TOP: the values last written; the hardware latches CC/TOP at the next wrap, at most one period
  // later). null when the pin is not muxed to PWM or its slice is stopped (a servo sees no pulses).
  pwm(index) {
    const mcu = this.mcu;
    const pin = mcu.gpio[index];
    if (pin.functionSelect !== FUNC_PWM) return null;
    const ch = mcu.pwm.channels[(index >> 1) & 7];
    const csr = ch.csr;
    if (!(csr & 1)) return null;
    if ((csr >> 4) & 3) return null; // B-pin gated/counting modes: not an output waveform
    const divInt = (ch.div >> 4) & 0xff || 256;
    const divider = divInt + (ch.div & 0xf) / 16;
    const tickUs = (divider * 1e6) / mcu.clkSys;
    const phaseCorrect = csr & 2 ? 2 : 1;
    const top = ch.top;
    const isB = index & 1;
    const cc = isB ? ch.cc >>> 16 : ch.cc & 0xffff;
    let high = Math.min(cc, top + 1);
    if (csr & (isB ? 8 : 4)) high = top + 1 - high; // output inverted
    return {
      pulse_us: round3(high * phaseCorrect * tickUs),
      period_us: round3((top + 1) * phaseCorrect * tickUs),
    };
  }
}

const round3 = (x) => Math.round(x * 1000) / 1000;
