#!/usr/bin/env node
// Launcher for `kilnjs` (package.json "bin"): registers tsx's loader (tsx is a devDependency
// today) and runs bin/kiln.ts, so the TypeScript sources run without a build step.
import { register } from 'tsx/esm/api';

register();
await import('./kiln.ts');
