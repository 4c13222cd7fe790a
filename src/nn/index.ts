// kiln.nn: modules (torch.nn) on top of the tensor ops and autograd.

export { Parameter, isParameter } from './parameter.js';
export { Module, type AnyModule, type LoadStateDictOptions, type LoadStateDictResult } from './module.js';
export { Linear, type LinearOptions } from './linear.js';
export { Conv2d, type Conv2dOptions } from './conv.js';
export { Embedding, type EmbeddingOptions } from './embedding.js';
export { EmbeddingBag, type EmbeddingBagMode, type EmbeddingBagOptions } from './embedding-bag.js';
export { LayerNorm, type LayerNormOptions } from './layer-norm.js';
export { BatchNorm1d, BatchNorm2d, type BatchNormOptions } from './batch-norm.js';
export { Dropout } from './dropout.js';
export {
  Identity, ReLU, GELU, SiLU, Sigmoid, Tanh, Softplus, LeakyReLU, Softmax, LogSoftmax,
  ELU, SELU, CELU, Hardtanh, ReLU6, Hardsigmoid, Hardswish, Mish, LogSigmoid, PReLU, GLU,
} from './activation.js';
export { Flatten } from './flatten.js';
export { L1Loss, MSELoss, SmoothL1Loss, HuberLoss, KLDivLoss, NLLLoss, CrossEntropyLoss, BCELoss, BCEWithLogitsLoss } from './loss.js';
export { Sequential, ModuleList } from './container.js';
export { MultiheadAttention, type MultiheadAttentionOptions, type AttentionCallOptions } from './attention.js';
export * as init from './init.js';
export * as functional from './functional.js';
