// optim.lrScheduler: the schedulers under torch's module name (torch.optim.lr_scheduler), for
// code ported from torch; the same classes as optim.StepLR, ...

export {
  LRScheduler, StepLR, MultiStepLR, ConstantLR, LinearLR, ExponentialLR, PolynomialLR, CosineAnnealingLR, LambdaLR, MultiplicativeLR,
} from './lr-scheduler.js';
export { OneCycleLR } from './one-cycle.js';
export { SequentialLR, ChainedScheduler } from './scheduler-chains.js';
