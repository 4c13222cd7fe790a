// The `kilnjs` command line (see src/advisor/cli.ts):
//   npx tsx bin/kiln.ts advise [workload-module] [--example NAME] [options]   (kiln advise --help)
//   npx tsx bin/kiln.ts cache save <file> | cache load <file> | cache dir  (src/compiler/cache/bundle.ts)
//   npx tsx bin/kiln.ts serve <artifact or module file> [options]        (kilnjs serve --help; src/serve/cli.ts)

import { main } from '../src/advisor/cli.js';

const argv = process.argv.slice(2);
if (argv[0] === 'cache') {
  const { cacheCli } = await import('../src/compiler/cache/bundle.js');
  process.exitCode = cacheCli(argv.slice(1));
} else if (argv[0] === 'serve') {
  const { serveCli } = await import('../src/serve/cli.js');
  process.exit(await serveCli(argv.slice(1)));
} else process.exitCode = await main(argv);
