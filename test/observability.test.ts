// KILN_LOGS channels, KILN_DEBUG_DIR files, and kiln.stats() counters.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawnSync } from 'node:child_process';
import * as kiln from 'kilnjs';

const script = `
import * as kiln from 'kilnjs';
const w = kiln.randn([4, 4]);
const f = kiln.compile((x) => { const h = x.matmul(w).relu(); if (h.sum().item() > 1e9) return h; return h.softmax(-1); }, { backend: 'js' });
f(kiln.randn([3, 4]));
f(kiln.randn([5, 4]));
`;

test('KILN_LOGS prints graph breaks with locations, recompiles, guards, graphs, fusion and generated code', () => {
  const dir = mkdtempSync(join(tmpdir(), 'kiln-logs-'));
  try {
    const file = join(process.cwd(), `.kiln-logs-${process.pid}.ts`);
    require_write(file, script);
    const r = spawnSync(process.execPath, ['--import', 'tsx', file], {
      env: { ...process.env, KILN_LOGS: 'graph_breaks,recompiles,guards,graph,fusion,output_code,perf', KILN_DEBUG_DIR: dir },
      encoding: 'utf8',
    });
    rmSync(file);
    assert.equal(r.status, 0, r.stderr);
    const err = r.stderr;
    assert.match(err, /\[kiln:graph_breaks\] graph break in .* at \.kiln-logs-\d+\.ts:\d+:\d+: item\(\) needs the value of a tensor/);
    assert.match(err, /\[kiln:recompiles\] recompiling .*arg x dim 0 changed: expected 3, got 5/);
    assert.match(err, /\[kiln:graph\] graph /);
    assert.match(err, /\[kiln:fusion\] .* ops -> \d+ kernels/);
    assert.match(err, /\[kiln:output_code\][\s\S]*function k\d+_/);
    assert.match(err, /\[kiln:perf\] .* traced and compiled in/);
    // every stage's text for every compiled graph
    const fnDirs = readdirSync(dir);
    assert.ok(fnDirs.length >= 1);
    const graphs = readdirSync(join(dir, fnDirs[0]!));
    assert.ok(graphs.length >= 2, `graphs dumped: ${graphs.join(', ')}`);
    const files = readdirSync(join(dir, fnDirs[0]!, graphs[0]!));
    for (const f of ['graph.txt', 'program.txt', 'loop_ir.txt', 'fusion.txt', 'output_code.js']) assert.ok(files.includes(f), `${f} in ${files.join(', ')}`);
    assert.match(readFileSync(join(dir, fnDirs[0]!, graphs[0]!, 'output_code.js'), 'utf8'), /function k\d+_/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

function require_write(file: string, text: string): void {
  // written next to the package so that 'kilnjs' resolves by self-reference
  const { writeFileSync } = process.getBuiltinModule('node:fs') as typeof import('node:fs');
  writeFileSync(file, text);
}

test('kiln.stats() counts compiles, hits, misses and compile time', () => {
  kiln.compiler.reset();
  const f = kiln.compile((x: kiln.Tensor) => x.add(1).mul(2));
  for (let i = 0; i < 4; i++) f(kiln.randn([3]));
  const s = kiln.stats();
  assert.equal(s.compiles, 1);
  assert.equal(s.cacheMisses, 1);
  assert.equal(s.cacheHits, 3);
  assert.equal(s.graphsCompiled, 1);
  assert.ok(s.compileTimeMs > 0);
  assert.equal(s.fusionFallbacks, 0);
});

test('compile timings add up: trace + passes + lowering (or the cached program) + codegen = compile time, none negative', () => {
  kiln.compiler.reset();
  const w = kiln.keep(kiln.randn([16, 16]));
  for (const run of [0, 1]) {
    const f = kiln.compile((x: kiln.Tensor) => kiln.gelu(x.matmul(w)).sum(-1), { name: `timed${run}` });
    kiln.scope(() => { f(kiln.randn([8, 16])); });
    const t = f.compiled.report!.timings;
    // trace is what remains of total - firstRun after codegen and the passes, so the parts add up
    // by construction; a stage counted twice shows as a negative remainder
    assert.ok(t.trace >= 0 && t.codegen >= 0 && t.firstRun >= 0 && t.firstRun <= t.total, JSON.stringify(t));
    assert.ok('lower' in t.passes || 'cached_program' in t.passes, JSON.stringify(t.passes));
  }
});
