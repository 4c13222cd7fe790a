// kiln.nn: modules (torch.nn) on top of the tensor ops and autograd.

export { Parameter, isParameter } from './parameter.js';
export { Module, RemovableHandle, type AnyModule, type ForwardHook, type ForwardPreHook, type LoadStateDictOptions, type LoadStateDictResult } from './module.js';
export { Linear, type LinearOptions } from './linear.js';
export { Conv1d, Conv2d, ConvTranspose2d, type Conv1dOptions, type Conv2dOptions, type ConvTranspose2dOptions } from './conv.js';
export { MaxPool2d, AvgPool2d, AdaptiveAvgPool1d, AdaptiveAvgPool2d, AdaptiveMaxPool2d, type MaxPool2dOptions, type AvgPool2dOptions } from './pooling.js';
export { GroupNorm, RMSNorm, type GroupNormOptions, type RMSNormOptions } from './normalization.js';
export { Upsample } from './upsample.js';
export { RNN, LSTM, GRU, type RNNBaseOptions, type RNNOptions, type LSTMOptions } from './rnn.js';
export { TransformerEncoderLayer, TransformerDecoderLayer, TransformerEncoder, TransformerDecoder, type TransformerLayerOptions, type TransformerActivation } from './transformer.js';
export { Embedding, type EmbeddingOptions } from './embedding.js';
export { EmbeddingBag, type EmbeddingBagMode, type EmbeddingBagOptions } from './embedding-bag.js';
export { LayerNorm, type LayerNormOptions } from './layer-norm.js';
export { BatchNorm1d, BatchNorm2d, type BatchNormOptions } from './batch-norm.js';
export { Dropout } from './dropout.js';
export {
  Identity, ReLU, GELU, SiLU, Sigmoid, Tanh, Softplus, LeakyReLU, Softmax, LogSoftmax,
  ELU, SELU, CELU, Hardtanh, ReLU6, Hardsigmoid, Hardswish, Mish, LogSigmoid, PReLU, GLU,
} from './activation.js';
export { Flatten, Unflatten } from './flatten.js';
export { L1Loss, MSELoss, SmoothL1Loss, HuberLoss, KLDivLoss, NLLLoss, CrossEntropyLoss, BCELoss, BCEWithLogitsLoss } from './loss.js';
export { Sequential, ModuleList, ModuleDict } from './container.js';
export { MultiheadAttention, type MultiheadAttentionOptions, type AttentionCallOptions } from './attention.js';
export * as init from './init.js';
export * as functional from './functional.js';
export * as utils from './utils/index.js';
