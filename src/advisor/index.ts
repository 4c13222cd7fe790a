// The advisor (`kilnjs advise`): measure a workload eager vs compiled and decide whether
// compiling pays off. Node-only (files, dynamic imports); not part of the browser entry.

export type { Workload, WorkloadInstance, WorkloadKind, WorkloadSetupOptions, LoadedWorkload } from './workload.js';
export { asWorkload, checkInstance, loadExample, loadWorkloadModule, exampleNames, DEFAULT_EXAMPLE, WorkloadError } from './workload.js';
export { measure, pickPrimary, relErr, summarizeMs, speedupInterval, DEFAULT_MEASURE, KNOWN_BACKENDS } from './measure.js';
export type { Measurement, MeasureOptions, BackendMeasurement, AccuracyResult, CompilerFacts, LatencySummary } from './measure.js';
export * from './verdict.js';
export { buildReport, formatSummary, compiledIsFaster, verdictInput, REPORT_SCHEMA_VERSION, type AdvisorReport } from './report.js';
export { renderHtml, latencyChart, cumulativeChart, speedupChart, costChart } from './html.js';
export { cacheConfig, checkCache, loaderArgs, type CacheCheck, type CacheConfig, type FirstCallRun } from './cache-check.js';
export { measureShapePolicies, planShapeList, recommendPolicy, type DynamicShapes, type PolicyRun, type ShapePolicy } from './shape-policies.js';
export { parseSignature, planShapes, ShapeListError } from './shapes.js';
export { validate as validateJsonSchema, type JsonSchema } from './json-schema.js';
export { advise, main, HELP, type AdviseResult, type Io } from './cli.js';
