// The public op a user called, while it runs. Composite ops decompose into primitives (zeros
// into full, crossEntropy into logSoftmax, gather, ...); an error raised anywhere below names
// the op the user called, with the primitive it came from in parentheses ("crossEntropy: index
// 5 is out of bounds ... (in gather)"). The public entry points are wrapped once, at their
// definition; inner public ops called by outer ones leave the outermost name in place. Cost
// on the eager path: one module variable test and write per call.

let current: string | null = null;

/** The outermost public op running now, or null. */
export function currentUserOp(): string | null {
  return current;
}

/**
 * Runs `f` with no public op in effect, so errors inside name their own op: a compiled
 * function's checks name the compiled function, whichever public op (backward) ran it.
 */
export function withOwnNaming<T>(f: () => T): T {
  const saved = current;
  current = null;
  try {
    return f();
  } finally {
    current = saved;
  }
}

/** Runs `f` as the public op `name` (for overloaded functions, whose overloads a wrapper would lose). */
export function asPublicOp<T>(name: string, f: () => T): T {
  if (current !== null) return f();
  current = name;
  try {
    return f();
  } finally {
    current = null;
  }
}

/** `f` as the public op `name`: while it runs (outermost call only), errors name it. */
export function publicOp<F extends (...args: never[]) => unknown>(name: string, f: F): F {
  const wrapped = function (this: unknown, ...args: Parameters<F>): ReturnType<F> {
    if (current !== null) return f.apply(this, args) as ReturnType<F>;
    current = name;
    try {
      return f.apply(this, args) as ReturnType<F>;
    } finally {
      current = null;
    }
  };
  Object.defineProperty(wrapped, 'name', { value: f.name || name });
  return wrapped as unknown as F;
}
