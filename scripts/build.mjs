// `npm run build` (and `prepack`, so `npm pack` / `npm publish` / a git install always build):
// dist/ from src/: ESM JavaScript and .d.ts by tsc (tsconfig.build.json), then the files of
// src/ that are not TypeScript (the CommonJS require() entries, the char-gpt example's names),
// copied to the same place. dist/ is rebuilt from scratch so nothing stale ships.
import { spawnSync } from 'node:child_process';
import { cpSync, readdirSync, rmSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const src = join(root, 'src'), dist = join(root, 'dist');
/** READMEs beside the code are for the repository, not the package. */
const isAsset = (name) => !name.endsWith('.ts') && !name.endsWith('.md');

rmSync(dist, { recursive: true, force: true });
const tsc = join(dirname(createRequire(import.meta.url).resolve('typescript/package.json')), 'bin', 'tsc');
const r = spawnSync(process.execPath, [tsc, '-p', join(root, 'tsconfig.build.json')], { stdio: 'inherit' });
if (r.status !== 0) process.exit(r.status ?? 1);

let assets = 0;
const walk = (dir) => {
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) walk(p);
    else if (isAsset(name)) {
      cpSync(p, join(dist, relative(src, p)));
      assets++;
    }
  }
};
walk(src);
console.log(`built ${relative(process.cwd(), dist) || dist}/ (tsc, ${assets} assets copied)`);
