// Deterministic memory release: kiln.scope(fn) disposes every tensor made inside fn
// except those it returns or keep()s.

export interface Disposable {
  dispose(): void;
  readonly isDisposed: boolean;
}

const stack: Set<Disposable>[] = [];

export function track(t: Disposable): void {
  stack[stack.length - 1]?.add(t);
}

export function untrack(t: Disposable): void {
  for (let i = stack.length - 1; i >= 0; i--) if (stack[i]!.delete(t)) return;
}

/** Excludes a tensor from disposal by the enclosing scopes. */
export function keep<T extends Disposable>(t: T): T {
  for (const s of stack) s.delete(t);
  if ('kept' in t) (t as { kept: boolean }).kept = true;
  return t;
}

export function scope<T>(fn: () => T, isTensor: (x: unknown) => x is Disposable): T {
  const tracked = new Set<Disposable>();
  stack.push(tracked);
  let result: T;
  try {
    result = fn();
  } catch (e) {
    stack.pop();
    for (const t of tracked) t.dispose();
    throw e;
  }
  stack.pop();
  if (result instanceof Promise) {
    throw new TypeError('kiln.scope: the function returned a Promise; scopes are synchronous (await outside, or dispose by hand)');
  }
  const returned = new Set<Disposable>();
  collect(result, isTensor, returned, 0);
  for (const t of tracked) {
    if (returned.has(t)) track(t);
    else t.dispose();
  }
  return result;
}

function collect(x: unknown, isTensor: (x: unknown) => x is Disposable, into: Set<Disposable>, depth: number): void {
  if (depth > 8 || x === null || typeof x !== 'object') return;
  if (isTensor(x)) {
    into.add(x);
    return;
  }
  if (Array.isArray(x)) for (const v of x) collect(v, isTensor, into, depth + 1);
  else if (x instanceof Map) for (const v of x.values()) collect(v, isTensor, into, depth + 1);
  else if (Object.getPrototypeOf(x) === Object.prototype) for (const v of Object.values(x)) collect(v, isTensor, into, depth + 1);
}
