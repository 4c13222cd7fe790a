// kiln.optim: optimizers (torch.optim) whose step() is in-place tensor work only, so a
// compiled training step can replay it.

export { Optimizer, type Group, type ParamGroupInit, type ParamsArg, type OptimizerStateDict } from './optimizer.js';
export { ParamGroup } from './param-group.js';
export { SGD, type SGDHyper, type SGDOptions } from './sgd.js';
export { Adam, AdamW, type AdamHyper, type AdamOptions } from './adam.js';
