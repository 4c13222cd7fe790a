// The wasm heap hands out zeroed buffers while writing zeros only where memory was used before
// (memory it never handed out is still the zeros it grew with).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { JsBuffer } from '../src/backend/js/index.js';
import { Heap } from '../src/backend/wasm/heap.js';

const make = (heap: Heap, n: number) => heap.allocBuffer((data) => new JsBuffer('float32', data), 'float32', n);

test('wasm heap: every new buffer reads zeros, over reused, partly reused and fresh memory', () => {
  for (const shared of [false, true]) {
    const heap = new Heap(!shared);
    const a = make(heap, 1000);
    const b = make(heap, 3000);
    assert.ok((a.data as Float32Array).every((v) => v === 0) && (b.data as Float32Array).every((v) => v === 0));
    a.data.fill(7);
    b.data.fill(9);
    // b at the top: released, the top comes down; a fresh buffer twice its size spans b's dirty
    // memory and memory never handed out
    b.release!();
    const c = make(heap, 6000);
    assert.ok((c.data as Float32Array).every((v) => v === 0), `${shared ? 'shared' : 'unshared'}: dirty then fresh`);
    c.data.fill(5);
    // a's region from the free list
    a.release!();
    const d = make(heap, 900);
    assert.ok((d.data as Float32Array).every((v) => v === 0), 'reused region');
    // growth past the initial memory
    const e = make(heap, 1 << 20);
    assert.ok((e.data as Float32Array).every((v) => v === 0), 'grown memory');
    e.data.fill(3);
    e.release!();
    c.release!();
    const f = make(heap, (1 << 20) + 5000);
    assert.ok((f.data as Float32Array).every((v) => v === 0), 'after releasing the top');
  }
});

test('wasm heap: growing an unshared memory (it detaches its buffer) re-points every live buffer, values kept', () => {
  const heap = new Heap(true);
  const a = make(heap, 1000);
  (a.data as Float32Array).forEach((_, i, d) => (d[i] = i + 0.5));
  const before = a.data;
  const big = make(heap, 4 << 20); // past the initial 1 MiB: the memory grows
  assert.notEqual(a.data, before, 'a new view');
  assert.equal(before.length, 0, 'the old view was detached by the growth');
  assert.equal(a.data.length, 1000);
  assert.ok((a.data as Float32Array).every((v, i) => v === i + 0.5), 'values kept');
  big.release!();
  a.release!();
});
