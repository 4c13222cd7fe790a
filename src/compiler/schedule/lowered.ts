// The lowered program as this compiler makes it: src/ir/lowered.ts with the graph IR's node
// (capture/graph.ts) in each opaque step, so programs can run its eager kernel.

import type { GraphNode } from '../capture/graph.js';
import type { Lowered as LoweredOver, Step as StepOver } from '../../ir/lowered.js';

export type Lowered = LoweredOver<GraphNode>;
export type Step = StepOver<GraphNode>;
