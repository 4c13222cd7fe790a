// nn.functional: torch.nn.functional's names for kiln's functional ops (one definition
// each, in src/ops), so code ported from torch finds them where it expects.

export { linear, dropout, layerNorm, batchNorm, embedding, scaledDotProductAttention, type BatchNormOptions } from '../ops/functional.js';
export {
  nllLoss, crossEntropy, mseLoss, l1Loss, smoothL1Loss, huberLoss, klDiv, binaryCrossEntropy, binaryCrossEntropyWithLogits,
  type Reduction, type KlDivReduction, type CrossEntropyOptions,
} from '../ops/losses.js';
export { relu, gelu, silu, sigmoid, tanh, softplus } from '../ops/math.js';
export { elu, selu, celu, hardtanh, relu6, hardsigmoid, hardswish, mish, logsigmoid, leakyRelu, prelu, glu } from '../ops/activations.js';
export { softmax, logSoftmax } from '../ops/reduce.js';
export { conv1d, conv2d, convTranspose2d, maxPool2d, avgPool2d } from '../ops/window.js';
export { interpolate, adaptiveAvgPool1d, adaptiveAvgPool2d, adaptiveMaxPool2d } from '../ops/resize.js';
export { groupNorm, rmsNorm } from '../ops/normalization.js';
export { oneHot } from '../ops/indexing.js';
export { pad } from '../ops/movement.js';
export { normalize, cosineSimilarity } from '../ops/norms.js';
