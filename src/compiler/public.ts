// kiln.compiler.*: escape hatches and switches.
export { disable, graphBreak, reset, setStance, getStance, setLogs, setDebugDir, customOp, printGraph } from './index.js';
export { LOG_CHANNELS } from '../core/logs.js';
