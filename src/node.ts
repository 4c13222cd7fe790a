// kilnjs/node: the Node-only entry point (files, the native backend): the API of src/api/node.ts,
// the server, and the advisor's types. Everything browser-safe is in 'kilnjs'. Importing it
// registers kiln.compile's backend 'native'.
/// <reference path="./core/ambient-types.ts" preserve="true" />

export * from './api/node.js';

// serving (src/serve): Fastify and prom-client load only when a server starts
export type { ServeOptions, KilnServer } from './serve/server.js';
export type { Engine, EngineOutput, Mode as ServeMode, WarmupEntry } from './serve/engine.js';
export type { ServableModule } from './serve/model-file.js';

/** Starts `kilnjs serve` in this process (src/serve/server.ts); resolves once it listens (await `.ready` for warm-up). */
export async function serve(opts: import('./serve/server.js').ServeOptions): Promise<import('./serve/server.js').KilnServer> {
  return (await import('./serve/server.js')).serve(opts);
}

// the advisor (`kilnjs advise`): what a workload module exports, and the report --json writes
export type { Workload, WorkloadInstance, WorkloadKind, WorkloadSetupOptions } from './advisor/workload.js';
export type { AdvisorReport } from './advisor/report.js';
export type { BreakEven, CheckItem, Projection, Verdict, VerdictResult } from './advisor/verdict.js';
