// Registers the disk store of the compile cache (imported by 'kilnjs/node').

import { diskStore } from './disk-store.js';
import { registerCacheStore } from './store.js';

registerCacheStore(() => diskStore());
