// The executable forms of a compiled graph (each runs on input tensors and prints itself).

import type { DynamicProgram } from './dynamic-program.js';
import type { FusedProgram } from './fused-program.js';
import type { Program } from './program.js';

export type Runnable = Program | FusedProgram | DynamicProgram;
