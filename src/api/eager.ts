// What kiln's API does first on import: attach the Tensor methods and make the wasm eager backend
// (src/backend/wasm/eager) the default backend of eager ops. The choice of backend is made here,
// at the top, so ops/ knows only the Backend interface.

import '../ops/tensor-methods.js';
import { setDefaultBackend } from '../ops/dispatch.js';
import { defaultEagerBackend } from '../backend/wasm/eager/index.js';

setDefaultBackend(defaultEagerBackend());
