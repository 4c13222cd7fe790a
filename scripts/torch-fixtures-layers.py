"""PyTorch reference fixtures for kiln's layers, optimizers, schedulers, gradient clipping and
safetensors dtypes (issue 22). Runs on CPU with torch 1.13 (Debian's python3-torch:
/usr/bin/python3); writes the safetensors format directly (no safetensors package needed).

usage: /usr/bin/python3 scripts/torch-fixtures-layers.py test/fixtures/torch-layers 0

Files (NAME.safetensors + NAME.json):
  layers       one case per layer or function: <case>.param.<state_dict key>, <case>.input.<name>,
               <case>.output.y, <case>.input.w (weights of the loss sum(y * w)), <case>.grad.<name>
  rnn          LSTM / GRU / RNN cases: outputs, final states, gradients of a weighted sum of all three
  transformer  encoder / decoder layers and stacks (dropout 0, training mode: torch's reference path)
  optim        RMSprop and Adagrad trajectories (params after each step), clip_grad_norm_/value_
  dtypes       a state dict in F16 / BF16 / I64 / U8 / BOOL / I8 / I16 / F64 and the values it holds
The .json files hold each case's description, its scalar settings, schedules (learning rates as
JSON numbers) and tolerances.
"""
import json, math, os, struct, sys
import torch
import torch.nn as nn
import torch.nn.functional as F

CODES = {torch.float32: 'F32', torch.float64: 'F64', torch.int32: 'I32', torch.int64: 'I64', torch.uint8: 'U8',
         torch.int8: 'I8', torch.int16: 'I16', torch.bool: 'BOOL', torch.float16: 'F16', torch.bfloat16: 'BF16'}


def save_file(tensors, path):
    header, blobs, off = {}, [], 0
    for k in sorted(tensors):
        t = tensors[k].detach().cpu().contiguous()
        b = t.view(torch.int16).numpy().tobytes() if t.dtype == torch.bfloat16 else t.numpy().tobytes()
        header[k] = {'dtype': CODES[t.dtype], 'shape': list(t.shape), 'data_offsets': [off, off + len(b)]}
        blobs.append(b); off += len(b)
    h = json.dumps(header, separators=(',', ':')).encode()
    h += b' ' * ((8 - len(h) % 8) % 8)
    with open(path, 'wb') as f:
        f.write(struct.pack('<Q', len(h))); f.write(h)
        for b in blobs: f.write(b)


def f32(t):
    t = t.detach().cpu().contiguous()
    if t.dtype == torch.int64: return t.to(torch.int32)
    return t.float() if t.is_floating_point() else t


out = sys.argv[1]; seed = int(sys.argv[2])
os.makedirs(out, exist_ok=True)
torch.manual_seed(seed)
torch.use_deterministic_algorithms(True)


class Writer:
    def __init__(self, name):
        self.name, self.tensors, self.meta = name, {}, {}

    def case(self, key, module, inputs, run, desc, grad_inputs=(), extra=None):
        """module: an nn.Module (or None); inputs: name -> tensor; run(**inputs) -> tensor or tuple;
        the loss is sum_k sum(out_k * w_k) with random w_k; grads of params and grad_inputs."""
        for n in grad_inputs: inputs[n].requires_grad_(True)
        outs = run(**inputs)
        outs = outs if isinstance(outs, (tuple, list)) else (outs,)
        ws = [torch.randn_like(o) for o in outs]
        loss = sum((o * w).sum() for o, w in zip(outs, ws))
        loss.backward()
        T = self.tensors
        if module is not None:
            for k, v in module.state_dict().items(): T[f'{key}.param.{k}'] = f32(v)
            for k, p in module.named_parameters():
                if p.grad is not None: T[f'{key}.grad.{k}'] = f32(p.grad)
        for k, v in inputs.items():
            T[f'{key}.input.{k}'] = f32(v)
            if k in grad_inputs: T[f'{key}.grad.{k}'] = f32(v.grad)
        for i, (o, w) in enumerate(zip(outs, ws)):
            T[f'{key}.output.{i}'] = f32(o); T[f'{key}.input.w{i}'] = f32(w)
        self.meta[key] = dict(extra or {}, description=desc, outputs=len(outs))

    def write(self, **meta):
        save_file(self.tensors, os.path.join(out, self.name + '.safetensors'))
        with open(os.path.join(out, self.name + '.json'), 'w') as fh:
            json.dump(dict(meta, cases=self.meta, tensors={k: list(v.shape) for k, v in self.tensors.items()}), fh, indent=1)


def module_case(w, key, module, x_shape, desc, train=True, **extra):
    module.train(train)
    w.case(key, module, {'x': torch.randn(*x_shape)}, lambda x: module(x), desc, grad_inputs=('x',), extra=extra)


# ---- layers ---------------------------------------------------------------------------------
L = Writer('layers')
module_case(L, 'conv1d', nn.Conv1d(4, 6, 3, stride=2, padding=1, groups=2), (2, 4, 11), 'Conv1d(4, 6, 3, stride=2, padding=1, groups=2)')
module_case(L, 'conv1d_same_even', nn.Conv1d(3, 5, 4, padding='same', dilation=1), (2, 3, 9), "Conv1d(3, 5, 4, padding='same')")
module_case(L, 'conv2d_same_even', nn.Conv2d(3, 4, (2, 4), padding='same', dilation=(1, 2)), (2, 3, 7, 8), "Conv2d(3, 4, (2, 4), padding='same', dilation=(1, 2))")
module_case(L, 'conv_transpose2d', nn.ConvTranspose2d(4, 6, 3, stride=2, padding=1, output_padding=1, groups=2), (2, 4, 5, 6), 'ConvTranspose2d(4, 6, 3, stride=2, padding=1, output_padding=1, groups=2)')
module_case(L, 'conv_transpose2d_dilated', nn.ConvTranspose2d(3, 2, (2, 3), stride=(2, 1), padding=(0, 1), dilation=(1, 2), bias=False), (1, 3, 4, 5), 'ConvTranspose2d(3, 2, (2, 3), stride=(2, 1), padding=(0, 1), dilation=(1, 2), bias=False)')
module_case(L, 'maxpool2d_ceil', nn.MaxPool2d(3, stride=2, padding=1, ceil_mode=True), (2, 3, 8, 9), 'MaxPool2d(3, stride=2, padding=1, ceil_mode=True)')
module_case(L, 'maxpool2d_dilated', nn.MaxPool2d(2, stride=1, dilation=2), (1, 2, 6, 7), 'MaxPool2d(2, stride=1, dilation=2)')
module_case(L, 'avgpool2d_ceil_exclude_pad', nn.AvgPool2d(3, stride=2, padding=1, ceil_mode=True, count_include_pad=False), (2, 3, 8, 9), 'AvgPool2d(3, stride=2, padding=1, ceil_mode=True, count_include_pad=False)')
module_case(L, 'avgpool2d_ceil', nn.AvgPool2d(3, stride=2, padding=1, ceil_mode=True), (2, 3, 8, 9), 'AvgPool2d(3, stride=2, padding=1, ceil_mode=True)')
module_case(L, 'avgpool2d_divisor', nn.AvgPool2d(2, divisor_override=3), (1, 2, 6, 5), 'AvgPool2d(2, divisor_override=3)')
module_case(L, 'adaptive_avg2d', nn.AdaptiveAvgPool2d((3, 5)), (2, 3, 7, 11), 'AdaptiveAvgPool2d((3, 5))')
module_case(L, 'adaptive_avg2d_none', nn.AdaptiveAvgPool2d((None, 2)), (1, 2, 5, 6), 'AdaptiveAvgPool2d((None, 2))')
module_case(L, 'adaptive_avg1d', nn.AdaptiveAvgPool1d(4), (2, 3, 10), 'AdaptiveAvgPool1d(4)')
module_case(L, 'adaptive_max2d', nn.AdaptiveMaxPool2d((3, 4)), (2, 2, 7, 9), 'AdaptiveMaxPool2d((3, 4))')
gn = nn.GroupNorm(3, 6)
with torch.no_grad(): gn.weight.uniform_(0.5, 1.5); gn.bias.uniform_(-0.5, 0.5)
module_case(L, 'group_norm', gn, (2, 6, 4, 5), 'GroupNorm(3, 6), random affine')
rms_w = torch.rand(5) + 0.5
L.case('rms_norm', None, {'x': torch.randn(2, 3, 5), 'weight': rms_w},
       lambda x, weight: x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + torch.finfo(torch.float32).eps) * weight,
       'RMSNorm(5), eps=None (finfo(float32).eps), as torch 2.4 computes it', grad_inputs=('x', 'weight'))
for key, kw, shape in [
    ('nearest_size', dict(size=(7, 5), mode='nearest'), (2, 3, 4, 6)),
    ('nearest_scale2', dict(scale_factor=2.0, mode='nearest'), (1, 2, 3, 4)),
    ('nearest_scale17', dict(scale_factor=1.7, mode='nearest'), (1, 2, 5, 4)),
    ('nearest_exact', dict(size=(7, 3), mode='nearest-exact'), (1, 2, 5, 4)),
    ('bilinear', dict(size=(7, 9), mode='bilinear', align_corners=False), (2, 3, 4, 6)),
    ('bilinear_align', dict(size=(7, 9), mode='bilinear', align_corners=True), (2, 3, 4, 6)),
    ('bilinear_down', dict(scale_factor=0.6, mode='bilinear', align_corners=False), (1, 2, 9, 7)),
    ('linear', dict(size=13, mode='linear', align_corners=False), (2, 3, 6)),
    ('area', dict(size=(3, 4), mode='area'), (1, 2, 7, 9)),
]:
    L.case('interpolate_' + key, None, {'x': torch.randn(*shape)}, lambda x, kw=kw: F.interpolate(x, **kw),
           f'F.interpolate(x, {kw})', grad_inputs=('x',), extra={'options': kw})
L.write(rtol=1e-5)

# ---- recurrent ------------------------------------------------------------------------------
R = Writer('rnn')
lstm = nn.LSTM(5, 7, num_layers=2, bidirectional=True)
R.case('lstm_bi2', lstm, {'x': torch.randn(6, 3, 5), 'h0': torch.randn(4, 3, 7), 'c0': torch.randn(4, 3, 7)},
       lambda x, h0, c0: (lambda o: (o[0], o[1][0], o[1][1]))(lstm(x, (h0, c0))),
       'LSTM(5, 7, num_layers=2, bidirectional=True), x [L=6, N=3, 5], (h0, c0) given; outputs output, h_n, c_n', grad_inputs=('x', 'h0', 'c0'))
lstmp = nn.LSTM(4, 6, proj_size=3, batch_first=True)
R.case('lstm_proj', lstmp, {'x': torch.randn(2, 4, 4)}, lambda x: (lambda o: (o[0], o[1][0], o[1][1]))(lstmp(x)),
       'LSTM(4, 6, proj_size=3, batch_first=True), zero state', grad_inputs=('x',))
gru = nn.GRU(4, 6, num_layers=2, batch_first=True, bidirectional=True)
R.case('gru_bi2', gru, {'x': torch.randn(3, 5, 4), 'h0': torch.randn(4, 3, 6)}, lambda x, h0: gru(x, h0),
       'GRU(4, 6, num_layers=2, batch_first=True, bidirectional=True), h0 given; outputs output, h_n', grad_inputs=('x', 'h0'))
gru1 = nn.GRU(4, 5)
R.case('gru_unbatched', gru1, {'x': torch.randn(5, 4)}, lambda x: gru1(x), 'GRU(4, 5), unbatched x [5, 4]', grad_inputs=('x',))
rnn = nn.RNN(3, 4, num_layers=2, nonlinearity='relu', bias=False)
R.case('rnn_relu', rnn, {'x': torch.randn(4, 2, 3)}, lambda x: rnn(x), "RNN(3, 4, num_layers=2, nonlinearity='relu', bias=False)", grad_inputs=('x',))
R.write(rtol=1e-5)

# ---- transformer ----------------------------------------------------------------------------
T = Writer('transformer')
enc = nn.TransformerEncoderLayer(16, 4, dim_feedforward=32, dropout=0.0, activation='gelu', batch_first=True)
kpm = torch.zeros(2, 5, dtype=torch.bool); kpm[0, 3:] = True; kpm[1, 4] = True
T.case('encoder_post_gelu', enc, {'x': torch.randn(2, 5, 16), 'kpm': kpm}, lambda x, kpm: enc(x, src_key_padding_mask=kpm),
       "TransformerEncoderLayer(16, 4, 32, dropout=0, activation='gelu', batch_first=True), src_key_padding_mask", grad_inputs=('x',))
enc2 = nn.TransformerEncoderLayer(16, 2, dim_feedforward=24, dropout=0.0, norm_first=True)
fmask = torch.randn(5, 5) * 0.5
T.case('encoder_pre_relu', enc2, {'x': torch.randn(5, 3, 16), 'mask': fmask}, lambda x, mask: enc2(x, src_mask=mask),
       'TransformerEncoderLayer(16, 2, 24, dropout=0, norm_first=True), [L, N, E], float src_mask', grad_inputs=('x',))
dec = nn.TransformerDecoderLayer(16, 4, dim_feedforward=32, dropout=0.0, batch_first=True)
causal = torch.ones(4, 4, dtype=torch.bool).triu(1)
mkpm = torch.zeros(2, 6, dtype=torch.bool); mkpm[1, 4:] = True
T.case('decoder_post', dec, {'x': torch.randn(2, 4, 16), 'memory': torch.randn(2, 6, 16), 'mask': causal, 'mkpm': mkpm},
       lambda x, memory, mask, mkpm: dec(x, memory, tgt_mask=mask, memory_key_padding_mask=mkpm),
       'TransformerDecoderLayer(16, 4, 32, dropout=0, batch_first=True), causal bool tgt_mask, memory_key_padding_mask', grad_inputs=('x', 'memory'))
stack = nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.0, batch_first=True), 2, norm=nn.LayerNorm(8), enable_nested_tensor=False)
T.case('encoder_stack', stack, {'x': torch.randn(2, 3, 8)}, lambda x: stack(x), 'TransformerEncoder(layer(8, 2, 16, dropout=0, batch_first), 2, norm=LayerNorm(8))', grad_inputs=('x',))
T.write(rtol=1e-5)

# ---- optimizers, clipping -------------------------------------------------------------------
O = Writer('optim')
X, Y = torch.randn(16, 6), torch.randn(16, 4)
base = nn.Linear(6, 4)
start = {k: v.clone() for k, v in base.state_dict().items()}
for k, v in start.items(): O.tensors[f'start.{k}'] = f32(v)
O.tensors['data.x'] = X; O.tensors['data.y'] = Y
trajectories = {
    'rmsprop': (torch.optim.RMSprop, dict(lr=1e-2)),
    'rmsprop_full': (torch.optim.RMSprop, dict(lr=5e-3, alpha=0.9, eps=1e-6, weight_decay=0.1, momentum=0.8, centered=True)),
    'adagrad': (torch.optim.Adagrad, dict(lr=0.1)),
    'adagrad_full': (torch.optim.Adagrad, dict(lr=0.1, lr_decay=0.05, weight_decay=0.01, initial_accumulator_value=0.3, eps=1e-8)),
}
opt_meta = {}
for key, (cls, kw) in trajectories.items():
    mdl = nn.Linear(6, 4); mdl.load_state_dict(start)
    opt = cls(mdl.parameters(), **kw)
    losses = []
    for step in range(6):
        opt.zero_grad(); l = F.mse_loss(mdl(X), Y); l.backward(); opt.step(); losses.append(l.item())
    for k, v in mdl.state_dict().items(): O.tensors[f'{key}.after.{k}'] = f32(v)
    opt_meta[key] = dict(options=kw, losses=losses, steps=6)

# clip_grad_norm_ / clip_grad_value_ on gradients of two tensors
g1, g2 = torch.randn(5, 3) * 2, torch.randn(7) * 3
O.tensors['clip.grad.a'] = g1; O.tensors['clip.grad.b'] = g2
clip_meta = {}
for p_norm in [2.0, 1.0, float('inf'), 3.0]:
    a, b = nn.Parameter(torch.zeros(5, 3)), nn.Parameter(torch.zeros(7))
    a.grad, b.grad = g1.clone(), g2.clone()
    total = torch.nn.utils.clip_grad_norm_([a, b], max_norm=1.5, norm_type=p_norm)
    name = 'inf' if p_norm == float('inf') else str(int(p_norm))
    O.tensors[f'clip.norm{name}.a'] = a.grad.clone(); O.tensors[f'clip.norm{name}.b'] = b.grad.clone()
    clip_meta[name] = total.item()
a, b = nn.Parameter(torch.zeros(5, 3)), nn.Parameter(torch.zeros(7))
a.grad, b.grad = g1.clone(), g2.clone()
torch.nn.utils.clip_grad_value_([a, b], 0.8)
O.tensors['clip.value.a'] = a.grad.clone(); O.tensors['clip.value.b'] = b.grad.clone()


# ---- schedulers: learning rates (and momentum) per step, as JSON numbers ----------------------
def schedule(make_opt, make_sched, steps):
    p1, p2 = nn.Parameter(torch.zeros(2)), nn.Parameter(torch.zeros(3))
    opt = make_opt([{'params': [p1]}, {'params': [p2], 'lr': 0.05}])
    sched = make_sched(opt)
    lrs, moms = [], []
    for _ in range(steps):
        lrs.append([g['lr'] for g in opt.param_groups])
        moms.append([g['betas'][0] if 'betas' in g else g.get('momentum') for g in opt.param_groups])
        opt.step(); sched.step()
    lrs.append([g['lr'] for g in opt.param_groups])
    return dict(lrs=lrs, momentum=moms)


sgd = lambda groups: torch.optim.SGD(groups, lr=0.1, momentum=0.9)
adam = lambda groups: torch.optim.Adam(groups, lr=0.1)
S = torch.optim.lr_scheduler
schedules = {
    'StepLR': schedule(sgd, lambda o: S.StepLR(o, step_size=3, gamma=0.5), 10),
    'MultiStepLR': schedule(sgd, lambda o: S.MultiStepLR(o, milestones=[2, 5, 5], gamma=0.3), 8),
    'ExponentialLR': schedule(sgd, lambda o: S.ExponentialLR(o, gamma=0.9), 40),
    'CosineAnnealingLR': schedule(sgd, lambda o: S.CosineAnnealingLR(o, T_max=5, eta_min=0.01), 23),
    'LinearLR': schedule(sgd, lambda o: S.LinearLR(o, start_factor=0.25, end_factor=0.9, total_iters=4), 8),
    'ConstantLR': schedule(sgd, lambda o: S.ConstantLR(o, factor=0.5, total_iters=3), 6),
    'LambdaLR': schedule(sgd, lambda o: S.LambdaLR(o, lambda e: 0.95 ** e), 8),
    'MultiplicativeLR': schedule(sgd, lambda o: S.MultiplicativeLR(o, lambda e: 0.9), 6),
    'PolynomialLR': schedule(sgd, lambda o: S.PolynomialLR(o, total_iters=5, power=2.0), 8),
    'OneCycleLR_sgd': schedule(sgd, lambda o: S.OneCycleLR(o, max_lr=[0.5, 0.2], total_steps=12), 12),
    'OneCycleLR_adam_linear3': schedule(adam, lambda o: S.OneCycleLR(o, max_lr=0.3, total_steps=15, anneal_strategy='linear', three_phase=True, pct_start=0.25), 15),
    'SequentialLR_warmup_cosine': schedule(sgd, lambda o: S.SequentialLR(o, [S.LinearLR(o, start_factor=0.1, total_iters=3), S.CosineAnnealingLR(o, T_max=6)], milestones=[3]), 12),
    'SequentialLR_three': schedule(sgd, lambda o: S.SequentialLR(o, [S.ConstantLR(o, factor=0.1, total_iters=2), S.ExponentialLR(o, gamma=0.9), S.StepLR(o, 2, 0.5)], milestones=[2, 5]), 10),
    'ChainedScheduler': schedule(sgd, lambda o: S.ChainedScheduler([S.ConstantLR(o, factor=0.1, total_iters=2), S.ExponentialLR(o, gamma=0.9)]), 6),
}
O.write(trajectories=opt_meta, clip=clip_meta, schedules=schedules, rtol=1e-5)

# ---- safetensors dtypes: a checkpoint as Hugging Face files hold them ----------------------
D = Writer('dtypes')
half_model = nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.0, batch_first=True)
values = {}
for k, v in half_model.state_dict().items():
    D.tensors[f'f16.{k}'] = v.half()
    D.tensors[f'bf16.{k}'] = v.bfloat16()
x = torch.randn(2, 3, 8)
D.tensors['f16_input'] = x
with torch.no_grad():
    for tag, dt in (('f16', torch.float16), ('bf16', torch.bfloat16)):
        m2 = nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.0, batch_first=True)
        m2.load_state_dict({k: v.to(dt).float() for k, v in half_model.state_dict().items()})
        m2.train()
        D.tensors[f'{tag}_output'] = m2(x)
special = torch.tensor([0.0, -0.0, 1.0, -2.5, 65504.0, 6e-8, 1e-4, float('inf'), float('-inf'), float('nan'), 3.14159])
D.tensors['special_f16'] = special.half()
D.tensors['special_bf16'] = torch.tensor([0.0, -0.0, 1.0, -2.5, 3e38, 1e-38, float('inf'), float('nan'), 3.14159]).bfloat16()
D.tensors['ids_i64'] = torch.tensor([[0, 5, 2 ** 31 - 1], [-(2 ** 31), 7, -1]], dtype=torch.int64)
D.tensors['bytes_u8'] = torch.tensor([0, 1, 127, 128, 255], dtype=torch.uint8)
D.tensors['small_i8'] = torch.tensor([-128, -1, 0, 127], dtype=torch.int8)
D.tensors['small_i16'] = torch.tensor([-32768, -1, 0, 32767], dtype=torch.int16)
D.tensors['mask_bool'] = torch.tensor([[True, False], [False, True]])
D.tensors['wide_f64'] = torch.tensor([1 / 3, 1e300, -2.0], dtype=torch.float64)
D.tensors['bn.num_batches_tracked'] = torch.tensor(17, dtype=torch.int64)
expect = {k: (v.double().tolist() if v.is_floating_point() else v.to(torch.int64).tolist()) for k, v in D.tensors.items()
          if k.startswith(('special', 'ids', 'bytes', 'small', 'mask', 'wide', 'bn.'))}
expect = json.loads(json.dumps(expect).replace('NaN', '"nan"').replace('-Infinity', '"-inf"').replace('Infinity', '"inf"'))
D.write(expected=expect, model='TransformerEncoderLayer(8, 2, 16, dropout=0, batch_first=True) stored as f16.* and bf16.*; '
        '<tag>_output = that layer with the rounded weights (in float32) on f16_input (F32)', rtol=1e-5)
print('wrote', out)
