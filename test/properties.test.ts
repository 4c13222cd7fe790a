// Property tests (fast-check): broadcasting rules, and the shape / value / memory-sharing
// rules of the view ops (reshape, view, permute, transpose, expand, slice, narrow, select,
// squeeze, unsqueeze, flatten).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import * as kiln from 'kilnjs';
import * as R from './helpers/reference.js';
import { mismatch, toND, type Tensor } from './op-table.js';
import { prng } from './helpers/prng.js';

const fmt = (s: readonly number[]) => `[${s.join(', ')}]`;

const pick = (rand: () => number, lo: number, hi: number) => lo + Math.floor(rand() * (hi - lo + 1)); // inclusive

function shuffle<T>(xs: T[], rand: () => number): T[] {
  for (let i = xs.length - 1; i > 0; i--) {
    const j = Math.floor(rand() * (i + 1));
    [xs[i], xs[j]] = [xs[j]!, xs[i]!];
  }
  return xs;
}

const arange = (shape: readonly number[]) => Float32Array.from({ length: R.numel(shape) }, (_, i) => i + 1);

function assertValues(t: Tensor, expected: R.ND, what: string): void {
  assert.deepEqual([...t.shape], [...expected.shape], `${what}: shape ${fmt(t.shape)}, expected ${fmt(expected.shape)}`);
  const m = mismatch(t.dataSync() as ArrayLike<number>, expected, 'exact');
  assert.equal(m, null, `${what}: ${m}`);
}

// ---- broadcasting -----------------------------------------------------------------------

const dimArb = fc.integer({ min: 1, max: 4 });
/** Two shapes derived from one full shape (dims dropped from the front or set to 1), so most pairs broadcast. */
const compatiblePair = fc
  .record({ full: fc.array(dimArb, { maxLength: 4 }), seed: fc.integer() })
  .map(({ full, seed }) => {
    const rand = prng(seed);
    const derive = () => full.slice(pick(rand, 0, full.length)).map((d) => (rand() < 0.35 ? 1 : d));
    return [derive(), derive()] as const;
  });
/** Unrelated small shapes (often incompatible). */
const randomPair = fc.tuple(fc.array(fc.integer({ min: 1, max: 3 }), { maxLength: 3 }), fc.array(fc.integer({ min: 1, max: 3 }), { maxLength: 3 }));
const shapePair = fc.oneof(compatiblePair, randomPair);

test('broadcastShapes agrees with a reference, is symmetric, and names op and shapes on failure', () => {
  fc.assert(
    fc.property(shapePair, ([a, b]) => {
      const expected = R.broadcastShape(a, b);
      if (expected) {
        assert.deepEqual(kiln.broadcastShapes('add', a, b), expected);
        assert.deepEqual(kiln.broadcastShapes('add', b, a), expected);
      } else {
        assert.throws(() => kiln.broadcastShapes('myOp', a, b), (e: unknown) => {
          assert.ok(e instanceof kiln.ShapeError, `expected ShapeError, got ${String(e)}`);
          assert.match(e.message, /^myOp: /);
          assert.ok(e.message.includes(fmt(a)) && e.message.includes(fmt(b)), e.message);
          return true;
        });
      }
    }),
    { numRuns: 300 },
  );
});

test('add of broadcastable shapes has the broadcast shape and broadcast values; others throw ShapeError', () => {
  fc.assert(
    fc.property(shapePair, fc.integer(), ([sa, sb], seed) => {
      kiln.scope(() => {
        kiln.manualSeed(seed >>> 0);
        const a = kiln.randn(sa);
        const b = kiln.randn(sb);
        const expected = R.broadcastShape(sa, sb);
        if (!expected) {
          assert.throws(() => kiln.add(a, b), (e: unknown) => e instanceof kiln.ShapeError && /^add: /.test(e.message));
          return;
        }
        const out = kiln.add(a, b);
        assert.deepEqual([...out.shape], expected);
        const ref = R.zip(toND(a), toND(b), (x, y) => x + y);
        // float32 a + b rounds once: compare with the float32 rounding of the exact sum
        assert.equal(mismatch(out.dataSync(), R.map(ref, Math.fround), 'exact'), null);
      });
    }),
    { numRuns: 200 },
  );
});

// ---- view rules -------------------------------------------------------------------------

interface ViewCase {
  /** the base tensor's shape */
  readonly base: readonly number[];
  readonly label: string;
  apply(x: Tensor): Tensor;
  /** the same op on a reference array (applied to the base's flat indices, it gives the index map) */
  ref(x: R.ND): R.ND;
  /** whether the view may be written through (false for expand: overlapping memory) */
  readonly writable: boolean;
}

/** Splits numel(shape) into a new random shape (regrouped prime factors, maybe 1s and one -1). */
function regroup(shape: readonly number[], rand: () => number): number[] {
  const factors: number[] = [];
  for (let d of shape) {
    for (let p = 2; d > 1; p++) while (d % p === 0) { factors.push(p); d /= p; }
  }
  if (shape.includes(0)) return [0, ...shape.filter((d) => d !== 0)];
  shuffle(factors, rand);
  const out: number[] = [];
  for (const f of factors) {
    if (out.length && rand() < 0.5) out[out.length - 1]! *= f;
    else out.push(f);
  }
  if (rand() < 0.3) out.splice(pick(rand, 0, out.length), 0, 1);
  if (out.length && rand() < 0.4) out[pick(rand, 0, out.length - 1)] = -1;
  return out;
}

function viewCase(shape: readonly number[], seed: number): ViewCase {
  const rand = prng(seed);
  const n = shape.length;
  const kinds = ['reshape', 'view', 'permute', 'transpose', 'expand', 'slice', 'narrow', 'select', 'squeeze', 'unsqueeze', 'flatten'];
  const kind = kinds[pick(rand, 0, kinds.length - 1)]!;
  const needsDim = ['transpose', 'slice', 'narrow', 'select'];
  if (n === 0 && needsDim.includes(kind)) return viewCase([3], seed + 1);
  const dim = pick(rand, 0, Math.max(n - 1, 0));
  const negDim = rand() < 0.5 ? dim : dim - n; // exercise negative dims
  switch (kind) {
    case 'reshape':
    case 'view': {
      const to = regroup(shape, rand);
      return {
        base: shape, label: `${kind}(${fmt(to)})`, writable: true,
        apply: (x) => (kind === 'view' ? x.view(to) : kiln.reshape(x, to)), ref: (x) => R.reshape(x, to),
      };
    }
    case 'permute': {
      const perm = shuffle(shape.map((_, i) => i), rand);
      return { base: shape, label: `permute(${fmt(perm)})`, writable: true, apply: (x) => kiln.permute(x, perm), ref: (x) => R.permute(x, perm) };
    }
    case 'transpose': {
      const other = pick(rand, 0, n - 1);
      return { base: shape, label: `transpose(${negDim}, ${other})`, writable: true, apply: (x) => kiln.transpose(x, negDim, other), ref: (x) => R.transpose(x, negDim, other) };
    }
    case 'expand': {
      const base = shape.map((d) => (rand() < 0.5 ? 1 : d));
      const target = [...Array.from({ length: pick(rand, 0, 2) }, () => pick(rand, 1, 3)), ...shape];
      const arg = target.map((d, i) => (i >= target.length - n && base[i - (target.length - n)] === d && rand() < 0.3 ? -1 : d));
      return { base, label: `expand ${fmt(base)} -> ${fmt(arg)}`, writable: false, apply: (x) => kiln.expand(x, arg), ref: (x) => R.expandTo(x, target) };
    }
    case 'slice': {
      const size = shape[dim]!;
      const start = pick(rand, -size - 1, size + 1);
      const end = rand() < 0.2 ? undefined : pick(rand, -size - 1, size + 1);
      const step = pick(rand, 1, 3);
      return {
        base: shape, label: `slice(${negDim}, ${start}, ${end}, ${step})`, writable: true,
        apply: (x) => kiln.slice(x, negDim, start, end, step), ref: (x) => R.sliceDim(x, dim, start, end, step),
      };
    }
    case 'narrow': {
      const size = shape[dim]!;
      const start = pick(rand, 0, size);
      const len = pick(rand, 0, size - start);
      return { base: shape, label: `narrow(${negDim}, ${start}, ${len})`, writable: true, apply: (x) => kiln.narrow(x, negDim, start, len), ref: (x) => R.sliceDim(x, dim, start, start + len) };
    }
    case 'select': {
      const size = shape[dim]!;
      if (size === 0) return viewCase(shape.map((d) => d || 1), seed + 1);
      const index = pick(rand, -size, size - 1);
      const i = index < 0 ? index + size : index;
      const outShape = shape.filter((_, d) => d !== dim);
      return { base: shape, label: `select(${negDim}, ${index})`, writable: true, apply: (x) => kiln.select(x, negDim, index), ref: (x) => R.reshape(R.sliceDim(x, dim, i, i + 1), outShape) };
    }
    case 'squeeze': {
      const base = [...shape];
      base.splice(pick(rand, 0, n), 0, 1);
      const all = rand() < 0.5;
      const d = all ? undefined : pick(rand, 0, base.length - 1);
      const out = base.filter((s, i) => !(s === 1 && (d === undefined || i === d)));
      return { base, label: `squeeze(${d ?? ''}) of ${fmt(base)}`, writable: true, apply: (x) => kiln.squeeze(x, d), ref: (x) => R.reshape(x, out) };
    }
    case 'unsqueeze': {
      const d = pick(rand, -n - 1, n);
      return { base: shape, label: `unsqueeze(${d})`, writable: true, apply: (x) => kiln.unsqueeze(x, d), ref: (x) => R.unsqueeze(x, d) };
    }
    default: {
      if (n === 0) return { base: shape, label: 'flatten() of 0-d', writable: true, apply: (x) => kiln.flatten(x), ref: (x) => R.reshape(x, [1]) };
      const s = pick(rand, 0, n - 1), e = pick(rand, s, n - 1);
      const out = [...shape.slice(0, s), R.numel(shape.slice(s, e + 1)), ...shape.slice(e + 1)];
      return { base: shape, label: `flatten(${s}, ${e})`, writable: true, apply: (x) => kiln.flatten(x, s, e), ref: (x) => R.reshape(x, out) };
    }
  }
}

const viewArb = fc
  .record({ shape: fc.array(fc.integer({ min: 0, max: 4 }), { maxLength: 4 }), seed: fc.integer() })
  .map(({ shape, seed }) => ({ shape: shape.map((d) => (d === 0 && seed % 5 !== 0 ? 1 : d)), seed }));

test('view ops on a contiguous tensor: right shape and values, and they share memory with the base', () => {
  fc.assert(
    fc.property(viewArb, ({ shape, seed }) => {
      kiln.scope(() => {
        const c = viewCase(shape, seed);
        const base = kiln.tensor(arange(c.base), [...c.base]);
        const v = c.apply(base);
        const what = `${c.label} of ${fmt(c.base)}`;
        // index map: which base element each view element is
        const idx = c.ref(R.nd(c.base, Array.from({ length: R.numel(c.base) }, (_, i) => i)));
        const gatherFrom = (vals: ArrayLike<number>) => R.nd(idx.shape, Array.from(idx.data, (i) => vals[i]!));
        assertValues(v, gatherFrom(arange(c.base)), what);

        // a write to the base through copy_ is seen by the view
        const fresh = Float32Array.from({ length: R.numel(c.base) }, (_, i) => -(i + 1) * 3);
        kiln.noGrad(() => base.copy_(kiln.tensor(fresh, [...c.base])));
        assertValues(v, gatherFrom(fresh), `${what}, after base.copy_`);

        // a write through the view lands in the base
        if (c.writable) {
          const w = Float32Array.from({ length: v.size }, (_, i) => 1000 + i);
          kiln.noGrad(() => v.copy_(kiln.tensor(w, [...v.shape])));
          const expected = Float64Array.from(fresh);
          idx.data.forEach((bi, j) => (expected[bi] = w[j]!));
          assertValues(base, R.nd(c.base, expected), `${what}, base after view.copy_`);
        }

        // contiguous() of the view: same values, contiguous layout
        const cv = kiln.contiguous(v);
        assert.ok(cv.isContiguous, `${what}: contiguous() is not contiguous`);
        assert.equal(mismatch(cv.dataSync(), toND(v), 'exact'), null);
      });
    }),
    { numRuns: 400 },
  );
});

test('reshape copies when a view is impossible (and then does not share); view throws ShapeError', () => {
  fc.assert(
    fc.property(fc.integer({ min: 2, max: 5 }), fc.integer({ min: 2, max: 5 }), (a, b) => {
      kiln.scope(() => {
        const base = kiln.tensor(arange([a, b]), [a, b]);
        const t = base.transpose(0, 1); // [b, a], not contiguous
        assert.equal(t.isContiguous, false);
        const flat = t.reshape([-1]); // needs a copy
        const same = t.reshape([b, a]); // same shape: a view
        const expectedFlat = R.reshape(R.transpose(toND(base)), [-1]);
        assertValues(flat, expectedFlat, 'reshape of transposed');
        assert.throws(() => t.view([-1]), (e: unknown) => e instanceof kiln.ShapeError && /view/.test(e.message) && e.message.includes(fmt([b, a])));
        kiln.noGrad(() => base.fill_(7));
        assertValues(flat, expectedFlat, 'reshape copy after writing the base (must not change)');
        assertValues(same, R.nd([b, a], new Array(a * b).fill(7)), 'same-shape reshape after writing the base (a view)');
      });
    }),
    { numRuns: 30 },
  );
});

test('shape-changing ops reject bad arguments with typed errors', () => {
  fc.assert(
    fc.property(fc.array(fc.integer({ min: 1, max: 4 }), { minLength: 1, maxLength: 4 }), fc.integer({ min: 1, max: 6 }), (shape, extra) => {
      kiln.scope(() => {
        const x = kiln.zeros(shape);
        const n = R.numel(shape);
        // reshape to a different element count
        assert.throws(() => x.reshape([n + extra]), (e: unknown) => e instanceof kiln.ShapeError && /^reshape: /.test(e.message) && e.message.includes(fmt(shape)));
        // out-of-range dims
        assert.throws(() => kiln.transpose(x, shape.length, 0), kiln.IndexError);
        assert.throws(() => kiln.unsqueeze(x, shape.length + 2), kiln.IndexError);
        assert.throws(() => kiln.narrow(x, 0, 0, shape[0]! + extra), kiln.IndexError);
      });
    }),
    { numRuns: 100 },
  );
});

test('chains of view ops (views of views, incl. reshape of non-contiguous views): values, and writes seen iff memory is shared', () => {
  fc.assert(
    fc.property(viewArb, fc.array(fc.integer(), { minLength: 1, maxLength: 3 }), ({ shape, seed }, seeds) => {
      kiln.scope(() => {
        const first = viewCase(shape, seed);
        const base = kiln.tensor(arange(first.base), [...first.base]);
        let t = first.apply(base);
        let idx = first.ref(R.nd(first.base, Array.from({ length: R.numel(first.base) }, (_, i) => i)));
        const labels = [first.label];
        for (const s of seeds) {
          // an op defined on the current shape (expand / squeeze cases pick their own base shape: retry)
          let c = viewCase(t.shape, s);
          for (let k = 1; k < 20 && (c.base.length !== t.shape.length || c.base.some((d, i) => d !== t.shape[i])); k++) c = viewCase(t.shape, s + k);
          if (c.base.length !== t.shape.length || c.base.some((d, i) => d !== t.shape[i])) continue;
          labels.push(c.label);
          let next: Tensor;
          try {
            next = c.apply(t);
          } catch (e) {
            // view of a non-viewable layout: must be a ShapeError, and reshape must then work
            assert.ok(e instanceof kiln.ShapeError && c.label.startsWith('view'), `${labels.join(' -> ')}: ${String(e)}`);
            next = kiln.reshape(t, R.reshape(R.nd(t.shape), c.label.slice(5, -1) === '' ? [] : (JSON.parse(c.label.slice(5, -1)) as number[])).shape);
          }
          idx = c.ref(idx);
          t = next;
        }
        const what = `${labels.join(' -> ')} of ${fmt(first.base)}`;
        const gatherFrom = (vals: ArrayLike<number>) => R.nd(idx.shape, Array.from(idx.data, (i) => vals[i]!));
        assertValues(t, gatherFrom(arange(first.base)), what);
        const shares = t.size > 0 && t.storage === base.storage;
        const fresh = Float32Array.from({ length: R.numel(first.base) }, (_, i) => -(i + 1));
        kiln.noGrad(() => base.copy_(kiln.tensor(fresh, [...first.base])));
        assertValues(t, gatherFrom(shares ? fresh : arange(first.base)), `${what} after base.copy_ (shares memory: ${shares})`);
      });
    }),
    { numRuns: 400 },
  );
});
