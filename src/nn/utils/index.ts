// kiln.nn.utils (torch.nn.utils): gradient clipping.

export { clipGradNorm_, clipGradValue_ } from './clip-grad.js';
