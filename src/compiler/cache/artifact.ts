// Ahead-of-time artifacts (Node): kiln.export(fn, exampleInputs, path) compiles fn for the
// example inputs on each requested backend and writes one self-contained file (container.ts):
// the optimized graph with its inputs named, the result's shape, per backend the lowered
// program and its generated code (JS sources; native: the shared libraries' bytes), the build
// environment, and optionally the captured weights. kiln.load(path) returns a callable that
// runs it with no tracing and, when the backend and toolchain match, no code generation
// (native libraries are put into this machine's native cache under their own keys); without
// weights, load(path, { params: module or stateDict }) binds them by state-dict name.
// An artifact from another kiln version fails with an ArtifactError saying what differs.
//
// An artifact holds code (JS kernel sources, wasm modules, native libraries), so it is sealed
// (seal.ts): export signs it with { sign: privateKey } (Ed25519), else seals it with this user's
// HMAC; load runs it only if it verifies: signed by a key in { trust }, sealed by this user on
// this machine, or { unsafeUnsigned: true } (warned). Everything decoded from it is then checked
// against the schema (validate.ts) and its library names against the native cache's names,
// and libraries are written only inside this machine's native cache folder, sealed there.

import { basename, join } from 'node:path';
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { DTYPES, TYPED_ARRAY } from '../../core/dtype.js';
import type { DType, TypedArray } from '../../core/dtype.js';
import { ArgumentError, KilnError } from '../../core/errors.js';
import { readContiguous, runtime } from '../../ops/dispatch.js';
import { tensor } from '../../ops/creation.js';
import { contiguousStrides } from '../../core/shape.js';
import { Tensor } from '../../tensor/tensor.js';
import { keep } from '../../core/scope.js';
import { compile } from '../index.js';
import type { CompileOptions } from '../compile.js';
import { compiledFunctionOf } from '../compiled-info.js';
import { kernelBackendCodeFiles, resolveKernelBackend } from '../../backend/registry.js';
import { placeWeights } from './placement.js';
import { FusedProgram } from '../run/fused-program.js';
import { interpret } from '../run/program.js';
import { argLeaves } from '../capture/guards.js';
import { rowAxes, type RowVerdict } from '../dynamic/bucket.js';
import type { Graph } from '../capture/graph.js';
import { log } from '../../core/logs.js';
import { ContainerError, decodeContainer, encodeContainer, readHeader } from './container.js';
import { buildEnvironment, describeEnvironment, type BuildEnvironment } from './environment.js';
import { ArtifactError } from './errors.js';
import { readRegularFile } from '../../trust/safe-fs.js';
import { checkShipped, macSealer, signSealer, type KeyInput, type TrustOptions } from './seal.js';
import { loopSpecs } from './program-cache.js';
import { Blobs, decodeGraph, decodeLowered, decodeValue, encodeGraph, encodeLowered, encodeValue, NotStorable, type StoredGraph, type StoredLowered } from './serialize.js';

interface ModuleLike {
  forward(...args: unknown[]): unknown;
  namedParameters?(): [string, Tensor][];
  namedBuffers?(): [string, Tensor][];
  stateDict?(): Record<string, Tensor>;
}

export interface ExportOptions {
  /** store the captured tensors' values (default true); false: load(path, { params }) supplies them */
  weights?: boolean;
  /** backends to build for (default ['js']); each compiles and runs fn once on the inputs */
  backends?: string[];
  /** captured tensors by name, for functions (modules use their state-dict names) */
  captures?: Record<string, Tensor>;
  /** compile options for every backend (mode, ...) */
  compile?: Omit<CompileOptions, 'backend'>;
  /** an Ed25519 private key (PEM or KeyObject): sign the artifact for other machines (load it there with { trust: publicKey }) */
  sign?: KeyInput;
}

/** `trust`: public keys whose signatures are accepted; `unsafeUnsigned`: run an unsigned or untrusted artifact anyway. */
export interface LoadOptions extends TrustOptions {
  /** weights for an artifact exported without them: a module or a { name: Tensor } state dict */
  params?: ModuleLike | Record<string, Tensor>;
  /** which stored backend to run (default: the first stored one that can run here) */
  backend?: string;
}

interface StoredCapture {
  name: string;
  dtype: DType;
  shape: number[];
  /** blob index of the data (weights: true) */
  data?: number;
}

interface StoredArtifact {
  name: string;
  argNames: string[];
  graph: StoredGraph;
  resultTemplate: unknown;
  autogradOutputs: boolean;
  captures: StoredCapture[];
  programs: { backend: string; lowered: StoredLowered; code: unknown; libs: { name: string; blob: number }[] }[];
}

export interface LoadedArtifact {
  (...args: unknown[]): unknown;
  /** runs the same graph node by node with eager kernels: the reference its generated code is checked against */
  eager(...args: unknown[]): unknown;
  /** which backend runs, where the artifact was built, whether it carried weights, its tensor arguments */
  readonly artifact: { readonly backend: string; readonly builtBy: string; readonly weights: boolean; readonly codegen: boolean; readonly inputs: readonly ArtifactInput[] };
}

/** A tensor argument of an artifact: its path in the arguments ('x', 'arg1', 'batch.ids') and its meta. */
export interface ArtifactInput {
  readonly path: string;
  readonly dtype: DType;
  readonly shape: readonly number[];
}

const graphs = new WeakMap<LoadedArtifact, { graph: Graph; leaves: number[] }>();

/** Whether rows along `dim` of the given arguments stay separate in a loaded artifact (bucket.ts rowAxes). */
export function artifactRows(a: LoadedArtifact, paths: ReadonlySet<string>, dim: number): RowVerdict {
  const g = graphs.get(a);
  if (!g) throw new ArgumentError('not an artifact loaded by kiln.load', 'artifactRows');
  return rowAxes(g.graph, g.leaves, paths, dim);
}

/** The output indices of a result template's tensors, in the order fill() visits them. */
function templateLeaves(t: unknown, out: number[] = []): number[] {
  const tp = t as Template;
  if ('t' in tp) out.push(tp.t);
  else if ('a' in tp) tp.a.forEach((x) => templateLeaves(x, out));
  else if ('o' in tp) tp.o.forEach(([, x]) => templateLeaves(x, out));
  return out;
}

function captureNames(target: unknown, opts: ExportOptions): Map<Tensor, string> {
  const names = new Map<Tensor, string>();
  const m = target as ModuleLike;
  const add = (n: string, t: Tensor) => {
    if (!names.has(t)) names.set(t, n);
  };
  if (typeof m === 'object' && m.namedParameters) for (const [n, t] of [...m.namedParameters(), ...(m.namedBuffers?.() ?? [])]) add(n, t);
  for (const [n, t] of Object.entries(opts.captures ?? {})) add(n, t);
  return names;
}

/** kiln.export: writes a self-contained artifact for fn (or a module) on these example inputs. */
export function exportArtifact(target: ((...a: never[]) => unknown) | ModuleLike, exampleInputs: readonly unknown[], path: string, opts: ExportOptions = {}): { path: string; bytes: number; backends: string[] } {
  const backends = opts.backends ?? ['js'];
  const weights = opts.weights ?? true;
  const names = captureNames(target, opts);
  const blobs = new Blobs();
  let stored: Omit<StoredArtifact, 'programs'> | null = null;
  const programs: StoredArtifact['programs'] = [];
  for (const backend of backends) {
    const c = compile(target as never, { ...opts.compile, backend, cache: opts.compile?.cache }) as unknown as (...a: unknown[]) => unknown;
    const result = c(...exampleInputs);
    disposeResult(result);
    const cf = compiledFunctionOf(c);
    const e = cf.compiledEntries.at(-1);
    if (!e) throw new ArgumentError(`${cf.name} did not produce a replayable entry on ${backend} (see KILN_LOGS=recompiles)`, 'kiln.export', 'export functions that do not create state on their first call');
    if (e.retrace) throw new ArgumentError(`${cf.name} has graph breaks`, 'kiln.export', 'an artifact holds one graph: remove the breaks (fullgraph: true shows where)');
    if (e.gradLeaves.length > 0 || e.graph.gradEffects.length > 0) throw new ArgumentError(`${cf.name} writes gradients (a training step)`, 'kiln.export', 'export inference functions; train, then export the model');
    if (!(e.program instanceof FusedProgram)) throw new ArgumentError(`${cf.name} did not compile to a fused program on ${backend}`, 'kiln.export', 'see KILN_LOGS=fusion');
    if (!stored) {
      const captures: StoredCapture[] = [];
      const seen = new Set<string>();
      const nameOf = (t: Tensor): string | null => {
        const n = names.get(t) ?? t.name ?? null;
        if (n === null) return null;
        if (!seen.has(n)) {
          seen.add(n);
          const node = e.graph.inputNodes.find((x) => x.source?.kind === 'ref' && x.source.tensor === t)!;
          const contiguous = node.meta.offset === 0 && node.meta.strides.every((s, i) => s === contiguousStrides(node.meta.shape)[i] || node.meta.shape[i] === 1);
          if (!contiguous) throw new NotStorable(`captured ${n} is a strided view; capture a contiguous tensor`);
          const data = weights ? readContiguous(t) : null;
          captures.push({ name: n, dtype: t.dtype, shape: [...t.shape], ...(data ? { data: blobs.add(bytesOf(data)) } : {}) });
        }
        return n;
      };
      try {
        stored = {
          name: cf.name, argNames: argNamesOf(target), graph: encodeGraph(e.graph, blobs, nameOf),
          resultTemplate: encodeValue(e.resultTemplate, blobs), autogradOutputs: e.interpreted !== null, captures,
        };
      } catch (err) {
        if (err instanceof NotStorable) throw new ArgumentError(err.message, 'kiln.export', 'export a module, or pass { captures: model.stateDict() } (or { weights: true } with named tensors)');
        throw err;
      }
    }
    const p = e.program;
    const code = p.kernelBackend.exportCode?.(loopSpecs(p.lowered)) ?? null;
    const libs: { name: string; blob: number }[] = [];
    // a backend whose code is in files (native) exports their paths: the files are shipped
    const files = kernelBackendCodeFiles(p.kernelBackend.name);
    if (files && code && typeof code === 'object' && Array.isArray((code as { libs?: unknown }).libs)) {
      for (const lib of (code as { libs: string[] }).libs) {
        // only libraries that verify here are shipped (a tampered one must not be signed)
        const why = files.distrust(lib);
        if (why) throw new ArtifactError(`native library ${lib} does not verify (${why})`, 'kiln.export', 'export again: kiln rebuilds the library');
        libs.push({ name: basename(lib), blob: blobs.add(readFileSync(lib)) });
      }
    }
    programs.push({ backend: p.kernelBackend === p.backend ? 'js' : p.kernelBackend.name, lowered: encodeLowered(p.lowered, blobs), code: files ? null : code, libs });
  }
  const env = buildEnvironment(backends.includes('native'));
  const meta: StoredArtifact = { ...stored!, programs };
  const seal = opts.sign !== undefined ? signSealer(opts.sign, 'kiln.export') : macSealer;
  const buf = encodeContainer({ kind: 'artifact', kiln: env.kiln, key: `${stored!.name} for ${backends.join(', ')}`, env, backends, weights }, { meta, blobs: blobs.list }, seal);
  const tmp = `${path}.${process.pid}.tmp`;
  writeFileSync(tmp, buf);
  renameSync(tmp, path);
  log('cache', `exported ${stored!.name} to ${path} (${buf.length} bytes; backends ${backends.join(', ')}; ${weights ? 'with' : 'without'} weights; ${opts.sign !== undefined ? 'signed' : 'sealed for this user on this machine'})`);
  return { path, bytes: buf.length, backends };
}

function argNamesOf(target: unknown): string[] {
  const f = typeof target === 'function' ? target : (target as ModuleLike).forward;
  const src = Function.prototype.toString.call(f);
  const m = /^\s*(?:async\s+)?([A-Za-z_$][\w$]*)\s*=>/.exec(src) ?? /^[^(]*\(([^)]*)\)/.exec(src);
  if (!m) return [];
  return m[1]!.split(',').map((p) => p.trim().replace(/[=:].*$/, '').replace(/^\.\.\./, '').trim()).filter((p) => /^[A-Za-z_$][\w$]*$/.test(p));
}

function bytesOf(a: TypedArray): Uint8Array {
  return new Uint8Array(a.buffer, a.byteOffset, a.byteLength).slice();
}

function disposeResult(r: unknown, depth = 0): void {
  if (r instanceof Tensor) r.dispose();
  else if (depth < 6 && Array.isArray(r)) r.forEach((x) => disposeResult(x, depth + 1));
  else if (depth < 6 && r && typeof r === 'object') Object.values(r).forEach((x) => disposeResult(x, depth + 1));
}

/** kiln.load: a callable running an exported artifact (see the file comment). */
export function loadArtifact(path: string, opts: LoadOptions = {}): LoadedArtifact {
  const file = readRegularFile(path);
  if (!('bytes' in file)) throw new ArtifactError(`cannot read ${path}: ${file.error}`, 'kiln.load');
  const buf = file.bytes;
  let env: BuildEnvironment;
  try {
    env = readHeader(buf).header.env as BuildEnvironment;
  } catch (e) {
    throw new ArtifactError(`${path} is not a kiln artifact (${(e as Error).message})`, 'kiln.load', 'export it again with kiln.export');
  }
  const here = buildEnvironment(!!env?.native);
  if (!env || env.kiln !== here.kiln) {
    throw new ArtifactError(`artifact built by ${env ? describeEnvironment(env) : 'an unknown kiln'}, this is ${describeEnvironment(here)}`, 'kiln.load', `export it again with kiln ${here.kiln}, or run it with kiln ${env?.kiln ?? '?'}`);
  }
  let decoded: ReturnType<typeof decodeContainer>;
  try {
    decoded = decodeContainer(buf);
  } catch (e) {
    throw new ArtifactError(`${path} is corrupt (${(e as ContainerError).message})`, 'kiln.load', 'copy or export it again');
  }
  // the artifact holds code: nothing of its payload is used before its seal verifies
  const vouched = checkShipped(decoded.header, path, 'kiln.load', opts, ARTIFACT_HOW);
  const a = checkArtifactMeta(decoded.payload.meta, decoded.payload.blobs, path);
  const blobs = decoded.payload.blobs;
  // the backend: asked for, or the first stored one that can run here
  let chosen = opts.backend ? a.programs.find((p) => p.backend === opts.backend) : undefined;
  if (opts.backend && !chosen) throw new ArtifactError(`artifact has no program for backend '${opts.backend}' (it has ${a.programs.map((p) => p.backend).join(', ')})`, 'kiln.load', `export with { backends: ['${opts.backend}'] }`);
  let resolved: ReturnType<typeof resolveKernelBackend>['backend'] | undefined;
  const failures: string[] = [];
  for (const p of chosen ? [chosen] : a.programs) {
    try {
      resolved = resolveKernelBackend(p.backend, runtime.backend).backend;
      chosen = p;
      break;
    } catch (e) {
      if (!(e instanceof KilnError)) throw e;
      failures.push(`${p.backend}: ${e.detail}`);
      if (opts.backend) throw new ArtifactError(`backend ${p.backend} cannot run here (${e.detail}); artifact built by ${describeEnvironment(env)}, this is ${describeEnvironment(here)}`, 'kiln.load');
    }
  }
  if (!chosen || !resolved || failures.length === a.programs.length) throw new ArtifactError(`no stored backend can run here (${failures.join('; ')})`, 'kiln.load');
  const prog = chosen, kb = resolved;
  // native: the stored libraries go into this machine's native cache when the toolchain matches
  let codegen = false;
  const files = kernelBackendCodeFiles(prog.backend);
  if (files) {
    if (env.native === here.native) {
      // names were checked (checkArtifactMeta: <40 hex>.so); written only inside the native cache folder, sealed
      const dir = files.dir();
      mkdirSync(dir, { recursive: true, mode: 0o700 });
      for (const lib of prog.libs) {
        const dst = join(dir, lib.name);
        if (existsSync(dst) && !files.distrust(dst)) continue;
        const bytes = blobs[lib.blob]!;
        const tmp = `${dst}.${process.pid}.tmp`;
        writeFileSync(tmp, bytes, { mode: 0o600 });
        files.seal(dst, bytes);
        renameSync(tmp, dst);
      }
    } else {
      codegen = true;
      log('cache', `${path}: built with native toolchain ${env.native ?? 'none'}, this machine has ${here.native ?? 'none'}: compiling the stored loop IR here`);
    }
  }
  // captures: stored weights, or the caller's params by name
  const params = opts.params ? paramTable(opts.params) : null;
  const bound = new Map<string, Tensor>();
  for (const c of a.captures) {
    let t: Tensor | undefined;
    if (c.data !== undefined) {
      const T = { float32: Float32Array, float64: Float64Array, int32: Int32Array, bool: Uint8Array }[c.dtype];
      t = keep(tensor(new T(blobs[c.data]!.slice().buffer), c.shape, { dtype: c.dtype }));
      t.name = c.name;
    } else {
      t = params?.get(c.name);
      if (!t) throw new ArtifactError(`artifact was exported without weights and ${params ? `the params given have no '${c.name}'` : 'no params were given'}`, 'kiln.load', "pass { params: model } or { params: model.stateDict() } (or export with { weights: true })");
      if (t.dtype !== c.dtype || t.shape.length !== c.shape.length || t.shape.some((d, i) => d !== c.shape[i])) throw new ArtifactError(`param '${c.name}' is ${t.dtype}[${t.shape.join(', ')}], the artifact expects ${c.dtype}[${c.shape.join(', ')}]`, 'kiln.load', 'load the weights of the model the artifact was exported from');
      if (!t.isContiguous) t = keep(t.contiguous());
    }
    bound.set(c.name, t);
  }
  const { graph, lowered } = decodeArtifactParts(path, () => ({
    graph: decodeGraph(a.graph, blobs, (s) => {
      const t = bound.get(s.name);
      if (!t || s.kind !== 'capture') throw new ArtifactError(`the artifact's graph reads ${s.kind} '${s.name}', which it does not store`, 'kiln.load');
      return t;
    }),
    lowered: decodeLowered(prog.lowered, blobs, `${a.name} (artifact)`),
  }));
  if (prog.code != null) kb.importCode?.(loopSpecs(lowered), prog.code);
  const program = a.autogradOutputs ? null : new FusedProgram(lowered, runtime.backend, { kernelBackend: kb });
  // load() is the program's build: its own weights go where the kernels read them now
  // (placement.ts); the caller's tensors (load with `params`) are left where they are
  if (program) placeWeights(kb, a.captures.flatMap((c) => (c.data !== undefined ? [bound.get(c.name)!] : [])));
  const template = decodeArtifactParts(path, () => checkTemplate(decodeValue(a.resultTemplate, blobs), graph.outputs.length));
  const argInputs = graph.inputNodes.map((n) => (n.source?.kind === 'arg' ? n : null));
  const bind = (args: unknown[]): Tensor[] => {
    const leaves = new Map(argLeaves(args, a.argNames).map((l) => [l.path, l.value]));
    const inputs = graph.inputNodes.map((n, i) => {
      const src = n.source!;
      if (src.kind === 'ref') return src.tensor;
      const node = argInputs[i]!;
      const path = (src as { path: string }).path;
      const v = leaves.get(path);
      if (!(v instanceof Tensor)) throw new ArgumentError(`argument ${path} must be a tensor ${node.meta.dtype}[${node.meta.shape.join(', ')}]`, a.name);
      checkArg(a.name, path, v, node.meta);
      return v.strides.every((s, d) => s === node.meta.strides[d] || v.shape[d] === 1) && v.offset === node.meta.offset ? v : v.contiguous();
    });
    return inputs;
  };
  const run = (...args: unknown[]): unknown => {
    const inputs = bind(args);
    return fill(template, program ? program.run(inputs) : interpret(graph, inputs));
  };
  const eager = (...args: unknown[]): unknown => fill(template, interpret(graph, bind(args)));
  const inputs: ArtifactInput[] = graph.inputNodes.flatMap((n) => (n.source?.kind === 'arg' ? [{ path: n.source.path, dtype: n.meta.dtype, shape: [...n.meta.shape] }] : []));
  log('cache', `loaded ${path}: ${a.name} on ${prog.backend} (${vouched}; built by ${describeEnvironment(env)}; ${codegen ? 'code generated here' : 'no tracing, no code generation'})`);
  const loaded: LoadedArtifact = Object.assign(run, { eager, artifact: { backend: prog.backend, builtBy: describeEnvironment(env), weights: a.captures.every((c) => c.data !== undefined), codegen, inputs } });
  graphs.set(loaded, { graph, leaves: templateLeaves(template) });
  return loaded;
}

function checkArg(fn: string, path: string, v: Tensor, meta: Graph['nodes'][number]['meta']): void {
  const ok = v.dtype === meta.dtype && v.shape.length === meta.shape.length && v.shape.every((d, i) => d === meta.shape[i]);
  if (!ok) throw new ArgumentError(`argument ${path} is ${v.dtype}[${v.shape.join(', ')}], the artifact was exported for ${meta.dtype}[${meta.shape.join(', ')}]`, fn, 'export one artifact per input shape (or warm up a compiled function for several)');
}

function paramTable(p: ModuleLike | Record<string, Tensor>): Map<string, Tensor> {
  const m = p as ModuleLike;
  if (typeof m.namedParameters === 'function') return new Map([...m.namedParameters(), ...(m.namedBuffers?.() ?? [])]);
  return new Map(Object.entries(p as Record<string, Tensor>).filter(([, t]) => t instanceof Tensor));
}

type Template = { t: number } | { a: Template[] } | { o: [string, Template][] } | { v: unknown };

const ARTIFACT_HOW = {
  sign: "export it with kilnNode.export(model, args, path, { sign: privateKey }) (a key pair: kilnjs cache keygen NAME, or openssl genpkey -algorithm ed25519)",
  trust: "pass the signer's public key: kilnNode.load(path, { trust: publicKey }) (PEM text or a KeyObject; several: an array)",
  unsafe: 'pass { unsafeUnsigned: true } (its code then runs with your permissions)',
};

/** Decoding an artifact's graph, program or template: what fails is an ArtifactError (InvalidProgramError when the schema is broken). */
function decodeArtifactParts<T>(path: string, f: () => T): T {
  try {
    return f();
  } catch (e) {
    if (e instanceof KilnError) throw e;
    throw new ArtifactError(`${path} does not decode (${(e as Error).message})`, 'kiln.load', 'export it again with this kiln');
  }
}

const isIndex = (x: unknown, n: number) => Number.isSafeInteger(x) && (x as number) >= 0 && (x as number) < n;

/** The artifact's own fields (names, captures, programs, library names), before any is used. */
function checkArtifactMeta(meta: unknown, blobs: readonly Uint8Array[], path: string): StoredArtifact {
  const bad = (what: string): never => {
    throw new ArtifactError(`${path} is malformed: ${what}`, 'kiln.load', 'export it again with this kiln');
  };
  const a = meta as StoredArtifact;
  if (!a || typeof a !== 'object' || typeof a.name !== 'string' || typeof a.autogradOutputs !== 'boolean' || !a.graph) bad('no name, graph or flags');
  if (!Array.isArray(a.argNames) || !a.argNames.every((n) => typeof n === 'string' && /^[A-Za-z_$][\w$]*$/.test(n))) bad('argument names');
  if (!Array.isArray(a.captures)) bad('no captures list');
  for (const c of a.captures) {
    if (!c || typeof c.name !== 'string' || c.name.length > 1024 || !(DTYPES as readonly string[]).includes(c.dtype) || !Array.isArray(c.shape) || !c.shape.every((d) => Number.isSafeInteger(d) && d >= 0)) bad(`capture ${JSON.stringify(c?.name)?.slice(0, 60)}`);
    if (c.data !== undefined) {
      if (!isIndex(c.data, blobs.length)) bad(`capture ${c.name}: no data`);
      const want = c.shape.reduce((x, y) => x * y, 1) * TYPED_ARRAY[c.dtype].BYTES_PER_ELEMENT;
      if (blobs[c.data]!.byteLength !== want) bad(`capture ${c.name}: ${blobs[c.data]!.byteLength} bytes of data for ${c.dtype}[${c.shape.join(', ')}]`);
    }
  }
  if (!Array.isArray(a.programs) || a.programs.length === 0) bad('no programs');
  for (const p of a.programs) {
    if (!p || typeof p.backend !== 'string' || !/^[a-z0-9-]{1,32}$/.test(p.backend) || !p.lowered || !Array.isArray(p.libs)) bad('a program without backend, lowered program or libraries');
    const names = kernelBackendCodeFiles(p.backend)?.name;
    for (const lib of p.libs) {
      if (!lib || typeof lib.name !== 'string' || !names?.test(lib.name)) bad(`native library name ${JSON.stringify(lib?.name)?.slice(0, 80)} (kiln names its libraries <40 hex digits>.so; no folders)`);
      if (!isIndex(lib.blob, blobs.length)) bad(`native library ${lib.name} has no bytes`);
    }
  }
  return a;
}

/** A result template refers only to the program's outputs. */
function checkTemplate(t: unknown, nOutputs: number, depth = 0): unknown {
  const bad = (): never => {
    throw new ArtifactError('the artifact\'s result template is malformed', 'kiln.load', 'export it again with this kiln');
  };
  if (depth > 16 || !t || typeof t !== 'object') bad();
  const tp = t as Record<string, unknown>;
  if ('t' in tp) {
    if (!isIndex(tp.t, nOutputs)) bad();
  } else if ('a' in tp) {
    if (!Array.isArray(tp.a)) bad();
    (tp.a as unknown[]).forEach((x) => checkTemplate(x, nOutputs, depth + 1));
  } else if ('o' in tp) {
    if (!Array.isArray(tp.o)) bad();
    for (const e of tp.o as unknown[]) {
      if (!Array.isArray(e) || e.length !== 2 || typeof e[0] !== 'string') bad();
      checkTemplate((e as unknown[])[1], nOutputs, depth + 1);
    }
  } else if (!('v' in tp)) bad();
  return t;
}

function fill(t: unknown, outs: Tensor[]): unknown {
  const tp = t as Template;
  if ('t' in tp) return outs[tp.t];
  if ('a' in tp) return tp.a.map((x) => fill(x, outs));
  if ('o' in tp) return Object.fromEntries(tp.o.map(([k, x]) => [k, fill(x, outs)]));
  return tp.v;
}

