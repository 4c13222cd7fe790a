// KILN_LOGS=graph_breaks,recompiles,guards,graph,output_code,perf,fusion,cache,aot (or kiln.compiler.setLogs).

export const LOG_CHANNELS = ['graph_breaks', 'recompiles', 'guards', 'graph', 'output_code', 'perf', 'fusion', 'cache', 'aot'] as const;
export type LogChannel = (typeof LOG_CHANNELS)[number];

const env = typeof process !== 'undefined' ? process.env?.KILN_LOGS : undefined;
let enabled = new Set<string>(parseLogs(env));

function parseLogs(s: string | undefined): string[] {
  if (!s) return [];
  const parts = s.split(',').map((p) => p.trim()).filter(Boolean);
  return parts.includes('all') ? [...LOG_CHANNELS] : parts;
}

/** Turns log channels on (replacing the current set); 'all' enables every channel. */
export function setLogs(channels: readonly string[] | string): void {
  enabled = new Set(parseLogs(typeof channels === 'string' ? channels : channels.join(',')));
}

export function logEnabled(channel: LogChannel): boolean {
  return enabled.has(channel) || listeners.size > 0;
}

type Listener = (channel: LogChannel, text: string) => void;
const listeners = new Set<Listener>();

/** Collects log records (used by explain). */
export function addLogListener(l: Listener): () => void {
  listeners.add(l);
  return () => listeners.delete(l);
}

export function log(channel: LogChannel, text: string | (() => string)): void {
  if (!enabled.has(channel) && listeners.size === 0) return;
  const msg = typeof text === 'function' ? text() : text;
  for (const l of listeners) l(channel, msg);
  if (enabled.has(channel)) console.error(`[kiln:${channel}] ${msg}`);
}

/** Always printed once: fallbacks are never silent. */
export function warnOnce(key: string, text: string): void {
  if (warned.has(key)) return;
  warned.add(key);
  console.warn(`[kiln] ${text}`);
}
const warned = new Set<string>();
