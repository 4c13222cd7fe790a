// Layers against PyTorch 1.13 (scripts/torch-fixtures-layers.py): conv1d, 'same' padding with
// even kernels, transposed conv, pooling (ceil mode, count_include_pad, divisor_override),
// adaptive pooling, GroupNorm, RMSNorm, interpolate, and the recurrent and transformer layers with
// torch's weights loaded by their state-dict keys; values and gradients, eager and compiled.

import { describe, test } from 'node:test';
import * as kiln from 'kilnjs';
import { checkCase, haveFixture, loadFixtureFile, NO_FIXTURES, type LayerCase } from './helpers/torch-cases.js';

const { nn } = kiln;
type Tensor = kiln.Tensor;

const mod = (build: () => kiln.nn.AnyModule): LayerCase => ({ build, run: (m, i) => [(m as kiln.nn.Module).call(i.x!)] });
const interp = (options: kiln.InterpolateOptions): LayerCase => ({ run: (_m, i) => [kiln.interpolate(i.x!, options)] });

const LAYERS: Record<string, LayerCase> = {
  conv1d: mod(() => new nn.Conv1d(4, 6, 3, { stride: 2, padding: 1, groups: 2 })),
  conv1d_same_even: mod(() => new nn.Conv1d(3, 5, 4, { padding: 'same' })),
  conv2d_same_even: mod(() => new nn.Conv2d(3, 4, [2, 4], { padding: 'same', dilation: [1, 2] })),
  conv_transpose2d: mod(() => new nn.ConvTranspose2d(4, 6, 3, { stride: 2, padding: 1, outputPadding: 1, groups: 2 })),
  conv_transpose2d_dilated: mod(() => new nn.ConvTranspose2d(3, 2, [2, 3], { stride: [2, 1], padding: [0, 1], dilation: [1, 2], bias: false })),
  maxpool2d_ceil: mod(() => new nn.MaxPool2d(3, { stride: 2, padding: 1, ceilMode: true })),
  maxpool2d_dilated: mod(() => new nn.MaxPool2d(2, { stride: 1, dilation: 2 })),
  avgpool2d_ceil_exclude_pad: mod(() => new nn.AvgPool2d(3, { stride: 2, padding: 1, ceilMode: true, countIncludePad: false })),
  avgpool2d_ceil: mod(() => new nn.AvgPool2d(3, { stride: 2, padding: 1, ceilMode: true })),
  avgpool2d_divisor: mod(() => new nn.AvgPool2d(2, { divisorOverride: 3 })),
  adaptive_avg2d: mod(() => new nn.AdaptiveAvgPool2d([3, 5])),
  adaptive_avg2d_none: mod(() => new nn.AdaptiveAvgPool2d([null, 2])),
  adaptive_avg1d: mod(() => new nn.AdaptiveAvgPool1d(4)),
  adaptive_max2d: mod(() => new nn.AdaptiveMaxPool2d([3, 4])),
  group_norm: mod(() => new nn.GroupNorm(3, 6)),
  rms_norm: { run: (_m, i) => [kiln.rmsNorm(i.x!, [5], i.weight)] },
  interpolate_nearest_size: interp({ size: [7, 5], mode: 'nearest' }),
  interpolate_nearest_scale2: interp({ scaleFactor: 2, mode: 'nearest' }),
  interpolate_nearest_scale17: interp({ scaleFactor: 1.7, mode: 'nearest' }),
  interpolate_nearest_exact: interp({ size: [7, 3], mode: 'nearest-exact' }),
  interpolate_bilinear: interp({ size: [7, 9], mode: 'bilinear', alignCorners: false }),
  interpolate_bilinear_align: interp({ size: [7, 9], mode: 'bilinear', alignCorners: true }),
  interpolate_bilinear_down: interp({ scaleFactor: 0.6, mode: 'bilinear', alignCorners: false }),
  interpolate_linear: interp({ size: 13, mode: 'linear', alignCorners: false }),
  interpolate_area: interp({ size: [3, 4], mode: 'area' }),
};

const RECURRENT: Record<string, LayerCase> = {
  lstm_bi2: {
    build: () => new nn.LSTM(5, 7, { numLayers: 2, bidirectional: true }),
    run(m, i) {
      const [out, [h, c]] = (m as kiln.nn.LSTM).call(i.x!, [i.h0!, i.c0!]) as [Tensor, [Tensor, Tensor]];
      return [out, h, c];
    },
  },
  lstm_proj: {
    build: () => new nn.LSTM(4, 6, { projSize: 3, batchFirst: true }),
    run(m, i) {
      const [out, [h, c]] = (m as kiln.nn.LSTM).call(i.x!) as [Tensor, [Tensor, Tensor]];
      return [out, h, c];
    },
  },
  gru_bi2: { build: () => new nn.GRU(4, 6, { numLayers: 2, batchFirst: true, bidirectional: true }), run: (m, i) => (m as kiln.nn.GRU).call(i.x!, i.h0) as Tensor[] },
  gru_unbatched: { build: () => new nn.GRU(4, 5), run: (m, i) => (m as kiln.nn.GRU).call(i.x!) as Tensor[] },
  rnn_relu: { build: () => new nn.RNN(3, 4, { numLayers: 2, nonlinearity: 'relu', bias: false }), run: (m, i) => (m as kiln.nn.RNN).call(i.x!) as Tensor[] },
};

const TRANSFORMER: Record<string, LayerCase> = {
  encoder_post_gelu: {
    build: () => new nn.TransformerEncoderLayer(16, 4, { dimFeedforward: 32, dropout: 0, activation: 'gelu', batchFirst: true }),
    run: (m, i) => [(m as kiln.nn.TransformerEncoderLayer).call(i.x!, null, i.kpm)],
  },
  encoder_pre_relu: {
    build: () => new nn.TransformerEncoderLayer(16, 2, { dimFeedforward: 24, dropout: 0, normFirst: true }),
    run: (m, i) => [(m as kiln.nn.TransformerEncoderLayer).call(i.x!, i.mask)],
  },
  decoder_post: {
    build: () => new nn.TransformerDecoderLayer(16, 4, { dimFeedforward: 32, dropout: 0, batchFirst: true }),
    run: (m, i) => [(m as kiln.nn.TransformerDecoderLayer).call(i.x!, i.memory!, i.mask, null, null, i.mkpm)],
  },
  encoder_stack: {
    build: () => new nn.TransformerEncoder(new nn.TransformerEncoderLayer(8, 2, { dimFeedforward: 16, dropout: 0, batchFirst: true }), 2, new nn.LayerNorm(8)),
    run: (m, i) => [(m as kiln.nn.TransformerEncoder).call(i.x!)],
  },
};

for (const [file, cases] of [['layers', LAYERS], ['rnn', RECURRENT], ['transformer', TRANSFORMER]] as const) {
  describe(`torch ${file} fixtures`, { skip: haveFixture(file) ? false : NO_FIXTURES }, async () => {
    const f = haveFixture(file) ? await loadFixtureFile(file) : null;
    test('every fixture case has a kiln case, and every kiln case a fixture', () => {
      const want = Object.keys(f!.meta.cases).sort(), have = Object.keys(cases).sort();
      if (want.join() !== have.join()) throw new Error(`fixture cases ${want.join(', ')} vs kiln cases ${have.join(', ')}`);
    });
    for (const [key, c] of Object.entries(cases)) {
      test(`${key}: ${f?.meta.cases[key]?.description ?? ''}`, () => checkCase(f!, key, c));
    }
  });
}
