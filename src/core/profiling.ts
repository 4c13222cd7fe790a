// The active profile's event sink (kiln.profile, src/compiler/observe/profile.ts): null unless a profile
// runs, so every hook is one property read when nothing profiles. It lives at the bottom layer
// because eager ops (src/ops/dispatch.ts), the compiler's stages and the programs' run loops
// all report to it.

/** What kind of work an event is (the Chrome trace's category). */
export type SpanCategory = 'compile' | 'eager' | 'program' | 'kernel';

export interface ProfileSink {
  /** an interval the caller timed itself (compile stages, a program's whole run), in performance.now() ms */
  span(cat: SpanCategory, name: string, t0: number, t1: number, args?: Record<string, unknown>): void;
  /**
   * Opens a unit of work (an eager op or one step of a program) and returns its start time; a
   * device-timed profile (webgpu) attributes the dispatches made until the unit closes to it.
   * Units nest (an eager op may run others); each is closed by endEager or endStep.
   */
  begin(): number;
  /** closes the innermost unit: an eager op */
  endEager(op: string, t0: number, args: Record<string, unknown>): void;
  /** closes the innermost unit: step `step` of a compiled program (`program`: the compiler knows its type) */
  endStep(program: object, step: number, t0: number): void;
}

export const profiling: { sink: ProfileSink | null } = { sink: null };

/** Records the span [t0, now] when a profile runs (no-op otherwise). */
export function profileSpan(cat: SpanCategory, name: string, t0: number, args?: Record<string, unknown>): void {
  const sink = profiling.sink;
  if (sink) sink.span(cat, name, t0, performance.now(), args);
}
