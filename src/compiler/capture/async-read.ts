// Asynchronous graph breaks: a compiled generator function reads tensor values with
// `const v = yield* kiln.read(t)`. A read on a GPU must wait (`await t.data()`), and a trace
// cannot follow user code across an `await`: JavaScript has no portable way to know when an
// async function resumes, so a tracer left installed would record whatever else runs in
// between. A generator hands that control to kiln: every `yield` stops the user's code, kiln
// runs the graph traced so far, awaits the read, and resumes the generator itself with the
// tracer installed only while the user's code runs (compile.ts `driveTrace`). The compiled
// function returns a Promise of the generator's return value.

import { ArgumentError } from '../../core/errors.js';
import type { TypedArray } from '../../core/dtype.js';
import { Tensor, isTensor } from '../../tensor/tensor.js';
import { SteppedScope } from '../../core/scope.js';
import { runtime } from '../../ops/dispatch.js';
import type { Backend } from '../../backend/backend.js';
import { isGradEnabled, setGradEnabled } from '../../autograd/grad-mode.js';
import { userLocation } from './location.js';

/** What a compiled generator yields to have tensors read: kiln.read makes them. */
export class ReadRequest {
  constructor(
    readonly tensors: readonly Tensor[],
    /** where the user's code asked for the read ('' when it yielded a tensor directly) */
    readonly location: string,
    /** the generator gets one array back (kiln.read(t)) rather than a list */
    readonly single: boolean,
  ) {}

  /** The values, after the graph that computes them has run (they are real tensors now). */
  async values(): Promise<TypedArray | TypedArray[]> {
    const data = await Promise.all(this.tensors.map((t) => t.data()));
    return this.single ? data[0]! : data;
  }
}

/**
 * Reads tensors inside a compiled generator function, at an explicit graph break:
 * `const [loss] = yield* kiln.read(lossTensor)`, `const [a, b] = yield* kiln.read(x, y)`.
 * The graph traced before the read runs, its values are read back (asynchronously on
 * webgpu), and tracing goes on after it in a new graph.
 */
export function read(t: Tensor): Generator<ReadRequest, TypedArray, unknown>;
export function read(...ts: Tensor[]): Generator<ReadRequest, TypedArray[], unknown>;
export function* read(...ts: Tensor[]): Generator<ReadRequest, TypedArray | TypedArray[], unknown> {
  ts.forEach((t, i) => {
    if (!(t instanceof Tensor)) throw new ArgumentError(`kiln.read: argument ${i} is ${describe(t)}, not a Tensor`, 'read', 'pass the tensors whose values the function needs');
  });
  const values = yield new ReadRequest(ts, userLocation(), ts.length === 1);
  return values as TypedArray | TypedArray[];
}

/** What the user's generator yielded, as a read request (a Tensor or Tensor[] yielded directly is one too). */
function readRequestOf(value: unknown, fn: string): ReadRequest {
  if (value instanceof ReadRequest) return value;
  if (value instanceof Tensor) return new ReadRequest([value], '', true);
  if (Array.isArray(value) && value.length > 0 && value.every((v) => v instanceof Tensor)) return new ReadRequest(value, '', false);
  throw new ArgumentError(`compiled generator ${fn} yielded ${describe(value)}`, 'compile', 'a compiled generator yields only reads: `const v = yield* kiln.read(t)` (or `yield t` / `yield [a, b]`); await other work outside the compiled function');
}

const GeneratorFunction = Object.getPrototypeOf(function* () {}).constructor as FunctionConstructor;

/** A `function*` (known before the first call, so no probe trace calls it as a plain function). */
export function isGeneratorFunction(fn: unknown): boolean {
  return fn instanceof GeneratorFunction;
}

/** A generator object (a `function*`'s result; also a module's forward written as one). */
export function isGenerator(x: unknown): x is Generator<unknown, unknown, unknown> {
  return typeof x === 'object' && x !== null && typeof (x as Generator).next === 'function' && typeof (x as Generator).throw === 'function' && typeof (x as Generator)[Symbol.iterator] === 'function';
}

/**
 * What a call's code saw when it started (the default backend, grad mode): each later stretch
 * of a generator runs with it again, whatever the caller switched meanwhile (after
 * `await`, a `kiln.noGrad(() => f(x))` or an `onGpu(...)` wrapper has long returned).
 */
export class Ambient {
  private readonly backend: Backend = runtime.backend;
  private readonly grad = isGradEnabled();

  /** Enters the call's context; returns what puts the caller's back. */
  enter(): () => void {
    const backend = runtime.backend, grad = isGradEnabled();
    runtime.backend = this.backend;
    setGradEnabled(this.grad);
    return () => {
      runtime.backend = backend;
      setGradEnabled(grad);
    };
  }
}

/**
 * Drives a generator whose stretches between reads run through `h.run` (the caller's backend and
 * grad mode in place, see Ambient): at each yield `h.atRead` sees the request before its values
 * are awaited and sent back (a failed read is thrown where the generator yielded, as an awaited
 * one would be); `h.done` gets the return value, still inside the caller's context. On an error
 * the generator is closed, so its finally blocks run.
 */
export async function driveGenerator<R>(gen: Generator<unknown, unknown, unknown>, fn: string, h: { run<T>(f: () => T): T; atRead(req: ReadRequest): void; done(value: unknown): R }): Promise<R> {
  const ambient = new Ambient(); // made before the first await: the call's own context
  let resume: { value: unknown } | { error: unknown } = { value: undefined };
  try {
    for (;;) {
      const leave = ambient.enter();
      let req: ReadRequest;
      try {
        const step = h.run(() => ('error' in resume ? gen.throw(resume.error) : gen.next(resume.value)));
        if (step.done) return h.done(step.value);
        req = readRequestOf(step.value, fn);
        h.atRead(req);
      } finally {
        leave();
      }
      try {
        resume = { value: await req.values() };
      } catch (e) {
        resume = { error: e };
      }
    }
  } catch (e) {
    closeQuietly(gen);
    throw e;
  }
}

/** Lets a generator run its finally blocks after kiln stopped it (an error at a read or a break). */
export function closeQuietly(gen: Generator<unknown, unknown, unknown>): void {
  try {
    gen.return(undefined);
  } catch {
    // the generator's own cleanup failed: the error that stopped it is the one to report
  }
}

/**
 * Runs a generator function's body without compiling (stances, disable, recompile limit):
 * reads are plain awaits; the call is a scope, as when compiled.
 */
export async function runEagerly(gen: Generator<unknown, unknown, unknown>, fn: string): Promise<unknown> {
  const scope = new SteppedScope();
  try {
    return await driveGenerator(gen, fn, {
      run: (f) => {
        scope.enter();
        try {
          return f();
        } finally {
          scope.exit();
        }
      },
      atRead: () => undefined,
      done: (value) => scope.close(value, isTensor),
    });
  } catch (e) {
    scope.abort();
    throw e;
  }
}

function describe(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return `an array of ${v.length}${v.length ? ` (first: ${describe(v[0])})` : ''}`;
  if (v instanceof Promise) return 'a Promise';
  return typeof v === 'object' ? `an object (${(v as object).constructor?.name ?? 'Object'})` : `${typeof v} ${String(v)}`;
}
