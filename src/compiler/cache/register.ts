// Registers the disk store of the compile cache (imported by 'kiln/node').

import { DiskStore } from './disk-store.js';
import { registerCacheStore } from './store.js';

registerCacheStore(() => new DiskStore());
