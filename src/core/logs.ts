// KILN_LOGS=graph_breaks,recompiles,guards,graph,output_code,perf,fusion,cache,aot or all (or
// kiln.compiler.setLogs); a name that is no channel is rejected with the list.

import { ArgumentError } from './errors.js';

export const LOG_CHANNELS = ['graph_breaks', 'recompiles', 'guards', 'graph', 'output_code', 'perf', 'fusion', 'cache', 'aot'] as const;
export type LogChannel = (typeof LOG_CHANNELS)[number];

const env = typeof process !== 'undefined' ? process.env?.KILN_LOGS : undefined;
let enabled = new Set<string>(parseLogs(env, 'KILN_LOGS'));

/** The channels named in a comma-separated list; a name that is no channel is an error (a typo would log nothing). */
function parseLogs(s: string | undefined, where: string): string[] {
  if (!s) return [];
  const parts = s.split(',').map((p) => p.trim()).filter(Boolean);
  const unknown = parts.filter((p) => p !== 'all' && !(LOG_CHANNELS as readonly string[]).includes(p));
  if (unknown.length) {
    throw new ArgumentError(`unknown log channel${unknown.length > 1 ? 's' : ''} ${unknown.map((u) => `'${u}'`).join(', ')}`, where, `the channels are ${LOG_CHANNELS.join(', ')}, or all`);
  }
  return parts.includes('all') ? [...LOG_CHANNELS] : parts;
}

/** Turns log channels on (replacing the current set); 'all' enables every channel. */
export function setLogs(channels: readonly string[] | string): void {
  if (typeof channels !== 'string' && !(Array.isArray(channels) && channels.every((c) => typeof c === 'string'))) {
    throw new ArgumentError(`expects a comma-separated string or an array of channel names, got ${typeof channels}`, 'setLogs', `the channels are ${LOG_CHANNELS.join(', ')}, or all`);
  }
  enabled = new Set(parseLogs(typeof channels === 'string' ? channels : channels.join(','), 'setLogs'));
}

/** Writes `text` to stderr when `channel` is on; a function is called only then (its text may be costly). */
export function log(channel: LogChannel, text: string | (() => string)): void {
  if (!enabled.has(channel)) return;
  console.error(`[kiln:${channel}] ${typeof text === 'function' ? text() : text}`);
}

/** Always printed once: fallbacks are never silent. */
export function warnOnce(key: string, text: string): void {
  if (warned.has(key)) return;
  warned.add(key);
  console.warn(`[kiln] ${text}`);
}
const warned = new Set<string>();
