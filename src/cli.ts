#!/usr/bin/env node
// The `kilnjs` command line (package.json "bin": the built dist/cli.js; `npm start` runs this
// source with tsx):
//   kilnjs advise [workload-module] [--example NAME] [options]   (src/advisor/cli.ts; kilnjs advise --help)
//   kilnjs cache save <file> | cache load <file> | cache dir      (src/compiler/cache/bundle.ts)
//   kilnjs serve <artifact or module file> [options]             (src/serve/cli.ts; kilnjs serve --help)

import { main } from './advisor/cli.js';

const argv = process.argv.slice(2);
if (argv[0] === 'cache') {
  const { cacheCli } = await import('./compiler/cache/bundle.js');
  process.exitCode = cacheCli(argv.slice(1));
} else if (argv[0] === 'serve') {
  const { serveCli } = await import('./serve/cli.js');
  process.exit(await serveCli(argv.slice(1)));
} else process.exitCode = await main(argv);
