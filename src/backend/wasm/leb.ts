// LEB128 and the other primitive encodings of the WebAssembly binary format.

export function uleb(n: number, out: number[] = []): number[] {
  do {
    let b = n & 0x7f;
    n = Math.floor(n / 128);
    if (n !== 0) b |= 0x80;
    out.push(b);
  } while (n !== 0);
  return out;
}

/** Signed LEB128 of a 32- or 64-bit integer given as a safe JS integer. */
export function sleb(n: number, out: number[] = []): number[] {
  for (;;) {
    const b = n & 0x7f;
    n = Math.floor(n / 128);
    const done = (n === 0 && (b & 0x40) === 0) || (n === -1 && (b & 0x40) !== 0);
    out.push(done ? b : b | 0x80);
    if (done) return out;
  }
}

const f32buf = new DataView(new ArrayBuffer(8));
export function f32bytes(x: number, out: number[]): void {
  f32buf.setFloat32(0, x, true);
  for (let i = 0; i < 4; i++) out.push(f32buf.getUint8(i));
}
export function f64bytes(x: number, out: number[]): void {
  f32buf.setFloat64(0, x, true);
  for (let i = 0; i < 8; i++) out.push(f32buf.getUint8(i));
}

export function name(s: string, out: number[]): void {
  const b = new TextEncoder().encode(s);
  uleb(b.length, out);
  for (const x of b) out.push(x);
}
