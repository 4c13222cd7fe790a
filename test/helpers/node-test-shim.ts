// `node:test` and `node:assert/strict` for test files bundled into a browser page
// (test/browser-bundle.test.ts): `test()` records each test for the page to run in order;
// the assertions are the strict ones those files use, with node's semantics (Object.is for
// primitives, structural equality for arrays, typed arrays and plain objects).

export interface RecordedTest {
  readonly name: string;
  readonly skip: boolean;
  readonly fn: (ctx: { after(f: () => void): void; skip(why?: string): void }) => unknown;
}

export const recorded: RecordedTest[] = [];

type Fn = RecordedTest['fn'];
export function test(name: string, a?: Fn | { skip?: unknown; timeout?: number }, b?: Fn): void {
  const fn = (typeof a === 'function' ? a : b)!;
  const skip = typeof a === 'object' && a !== null && !!a.skip;
  recorded.push({ name, skip, fn });
}

export class AssertionError extends Error {
  override name = 'AssertionError';
}

function deepEqualValues(a: unknown, b: unknown): boolean {
  if (Object.is(a, b)) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Object.getPrototypeOf(a) !== Object.getPrototypeOf(b)) return false;
  if (ArrayBuffer.isView(a) || Array.isArray(a)) {
    const x = a as ArrayLike<unknown>, y = b as ArrayLike<unknown>;
    if (x.length !== y.length) return false;
    for (let i = 0; i < x.length; i++) if (!deepEqualValues(x[i], y[i])) return false;
    return true;
  }
  const ka = Object.keys(a), kb = Object.keys(b);
  return ka.length === kb.length && ka.every((k) => deepEqualValues((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k]));
}

const fail = (message?: string | Error): never => {
  throw message instanceof Error ? message : new AssertionError(message ?? 'failed');
};

function throws(fn: () => unknown, expected?: unknown, message?: string): void {
  try {
    fn();
  } catch (e) {
    if (expected instanceof RegExp && !expected.test(String((e as Error)?.message ?? e))) fail(message ?? `the error ${String(e)} does not match ${String(expected)}`);
    if (typeof expected === 'function') {
      // a class (Error or a subclass): instanceof; any other function validates
      if (expected.prototype !== undefined && e instanceof (expected as new () => unknown)) return;
      if (expected === Error || Error.isPrototypeOf(expected) || (expected as (e: unknown) => unknown)(e) !== true) fail(message ?? `the error ${String(e)} is not the expected one`);
    }
    return;
  }
  fail(message ?? 'Missing expected exception.');
}

const assert = {
  ok: (v: unknown, message?: string): void => void (v || fail(message ?? `expected a truthy value, got ${String(v)}`)),
  equal: (a: unknown, b: unknown, message?: string): void => void (Object.is(a, b) || fail(message ?? `${String(a)} !== ${String(b)}`)),
  notEqual: (a: unknown, b: unknown, message?: string): void => void (!Object.is(a, b) || fail(message ?? `${String(a)} === ${String(b)}`)),
  deepEqual: (a: unknown, b: unknown, message?: string): void => void (deepEqualValues(a, b) || fail(message ?? `${JSON.stringify(a)} is not deeply equal to ${JSON.stringify(b)}`)),
  match: (s: string, re: RegExp, message?: string): void => void (re.test(s) || fail(message ?? `${s} does not match ${String(re)}`)),
  fail,
  throws,
};
export default assert;
