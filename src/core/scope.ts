// Deterministic memory release: kiln.scope(fn) disposes every tensor made inside fn
// except those it returns or keep()s. It knows only Disposables (tensors register themselves
// through track), so it sits in core/, below the backends that run user code in a scope.

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
  const s = new SteppedScope();
  s.enter();
  let result: T;
  try {
    result = fn();
  } catch (e) {
    s.exit();
    s.abort();
    throw e;
  }
  s.exit();
  if (result instanceof Promise) {
    throw new TypeError('kiln.scope: the function returned a Promise; scopes are synchronous (await outside, or dispose by hand)');
  }
  return s.close(result, isTensor);
}

/**
 * A scope over several synchronous stretches of code: a compiled generator's call, entered
 * while its code runs between reads. What was made inside is disposed at close, except what
 * the result holds or keep() marked.
 */
export class SteppedScope {
  private readonly tracked = new Set<Disposable>();

  enter(): void {
    stack.push(this.tracked);
  }

  exit(): void {
    if (stack[stack.length - 1] !== this.tracked) throw new Error('kiln internal: scopes closed out of order');
    stack.pop();
  }

  /** Moves a tensor made outside (before the scope was entered) into this scope. */
  adopt(t: Disposable): void {
    untrack(t);
    this.tracked.add(t);
  }

  /** Disposes what was made inside except what `result` holds; the result joins the enclosing scope. */
  close<T>(result: T, isTensor: (x: unknown) => x is Disposable): T {
    const returned = new Set<Disposable>();
    collect(result, isTensor, returned, 0);
    for (const t of this.tracked) {
      if (returned.has(t)) track(t);
      else t.dispose();
    }
    this.tracked.clear();
    return result;
  }

  /** Disposes everything made inside (the code threw). */
  abort(): void {
    for (const t of this.tracked) t.dispose();
    this.tracked.clear();
  }
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
