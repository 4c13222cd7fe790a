// The `kiln` command line (see src/advisor/cli.ts):
//   npx tsx bin/kiln.ts advise [workload-module] [--example NAME] [options]   (kiln advise --help)

import { main } from '../src/advisor/cli.js';

process.exitCode = await main(process.argv.slice(2));
