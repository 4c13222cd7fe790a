// kiln.optim: optimizers (torch.optim) whose step() is in-place tensor work only, so a
// compiled training step can replay it.

export { Optimizer, type Group, type ParamGroupInit, type ParamsArg, type OptimizerStateDict } from './optimizer.js';
export { ParamGroup } from './param-group.js';
export { SGD, type SGDHyper, type SGDOptions } from './sgd.js';
export { Adam, AdamW, type AdamHyper, type AdamOptions } from './adam.js';
export { RMSprop, type RMSpropHyper, type RMSpropOptions } from './rmsprop.js';
export { Adagrad, type AdagradHyper, type AdagradOptions } from './adagrad.js';
export {
  LRScheduler, StepLR, MultiStepLR, ConstantLR, LinearLR, ExponentialLR, PolynomialLR, CosineAnnealingLR, LambdaLR, MultiplicativeLR,
  type Scheduler, type SchedulerStateDict, type CompositeStateDict, type LrLambda,
} from './lr-scheduler.js';
export { OneCycleLR, type OneCycleLROptions } from './one-cycle.js';
export { SequentialLR, ChainedScheduler } from './scheduler-chains.js';
export * as lrScheduler from './schedulers.js';
