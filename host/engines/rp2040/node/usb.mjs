// The USB host side of the chip's CDC serial port (the MicroPython REPL).
//
// rp2040js' USBCDC helper enumerates the device and completes every OUT transfer the device
// arms at once, with zero bytes when it has nothing to send; the device then re-arms ~10 us
// later and takes a USB interrupt each time, which a real host never causes (it NAKs until it
// has data). So we hold the armed OUT transfer and complete it only when the host has bytes.
import { USBCDC } from 'rp2040js';

export class CdcLink {
  // onData(Uint8Array): bytes the device sent to the host
  constructor(onData) {
    this.onData = onData;
    this.queue = []; // host -> device chunks (Buffers); the first may be partly sent
    this.queued = 0;
    this.head = 0; // bytes of queue[0] already sent
    this.connected = false;
    this.connectedAtNs = null;
    this.bytesIn = 0;
    this.bytesOut = 0;
  }

  // (Re)attach to a chip: at power-on and after every reset the device enumerates afresh.
  attach(mcu, nowNs) {
    this.mcu = mcu;
    this.connected = false;
    this.pendingOut = null;
    const cdc = new USBCDC(mcu.usbCtrl);
    this.cdc = cdc;
    cdc.onDeviceConnected = () => {
      this.connected = true;
      this.connectedAtNs = nowNs();
      this.pump();
    };
    cdc.onSerialData = (buf) => {
      this.bytesOut += buf.length;
      this.onData(buf);
    };
    mcu.usbCtrl.onEndpointRead = (endpoint, size) => {
      if (endpoint === cdc.outEndpoint) {
        this.pendingOut = { endpoint, size };
        this.pump();
      }
    };
  }

  send(bytes) {
    if (!bytes.length) return;
    this.queue.push(Buffer.from(bytes));
    this.queued += bytes.length;
    this.pump();
  }

  // Complete the armed OUT transfer with up to its size of queued bytes.
  pump() {
    const out = this.pendingOut;
    if (!out || !this.queued) return;
    const n = Math.min(out.size, this.queued);
    const buf = new Uint8Array(n);
    let filled = 0;
    while (filled < n) {
      const chunk = this.queue[0];
      const take = Math.min(n - filled, chunk.length - this.head);
      buf.set(chunk.subarray(this.head, this.head + take), filled);
      filled += take;
      this.head += take;
      if (this.head === chunk.length) {
        this.queue.shift();
        this.head = 0;
      }
    }
    this.queued -= n;
    this.bytesIn += n;
    this.pendingOut = null;
    this.mcu.usbCtrl.endpointReadDone(out.endpoint, buf);
  }

  // Bytes typed before a reset are not delivered to the new boot (the port went away).
  clear() {
    this.queue = [];
    this.queued = 0;
    this.head = 0;
  }
}
