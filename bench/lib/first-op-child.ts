// One fresh process's first eager ops (bench/eager.ts spawns it): import kilnjs, make two
// 256x256 inputs, then time the first op of one kernel family (`pointwise`, `matmul`,
// `reduce`) or all three in a row (`all`), and the same op again (warm). Prints one JSON line.

const family = process.argv[2] ?? 'all';
const t0 = performance.now();
const kiln = await import('kilnjs');
const importMs = performance.now() - t0;
const a: import("kilnjs").Tensor = kiln.randn([256, 256]), b: import("kilnjs").Tensor = kiln.randn([256, 256]);
const ops: Record<string, () => unknown> = { pointwise: () => a.add(b), matmul: () => kiln.matmul(a, b), reduce: () => a.sum(-1) };
const which = family === 'all' ? Object.keys(ops) : [family];
const time = (f: () => unknown): number => {
  const t = performance.now();
  f();
  return performance.now() - t;
};
const firstMs = time(() => which.forEach((k) => ops[k]!()));
const warmMs = time(() => which.forEach((k) => ops[k]!()));
console.log(JSON.stringify({ family, importMs, firstMs, warmMs, eager: kiln.eagerStats() }));
process.exit(0);
