"""PyTorch reference fixtures for the torch API surface of docs/torch-api.md (math, activations,
tensor ops, losses): test/torch-api-parity.test.ts checks kiln against them, eagerly and compiled.
Extends ../shared/tools/torch_fixtures.py's single-op part with gradients: for each case, the
outputs and the gradient of loss = sum_j <output_j, weight_j> over the float outputs with respect
to each float input (weights stored), on inputs that include the kinks of the activations.

usage: python3 scripts/torch-fixtures-api.py OUTDIR SEED      (committed: test/fixtures/torch-api, seed 0)
Writes OUTDIR/api.safetensors (float32; int64 stored as int32) with tensors
  CASE.input.K, CASE.output.J, CASE.weight.J (float outputs), CASE.grad.K (float inputs)
and OUTDIR/api.json: the cases with their input and output names, and rtol.
"""
import json, os, struct, sys
import torch
import torch.nn.functional as F


def save_file(tensors, path):
    # the safetensors format, written directly (Debian's python3-torch has no safetensors package)
    codes = {torch.float32: 'F32', torch.int32: 'I32'}
    header, blobs, off = {}, [], 0
    for k in sorted(tensors):
        t = tensors[k].detach().cpu().contiguous()
        b = t.numpy().tobytes()
        header[k] = {'dtype': codes[t.dtype], 'shape': list(t.shape), 'data_offsets': [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    h = json.dumps(header, separators=(',', ':')).encode()
    h += b' ' * ((8 - len(h) % 8) % 8)
    with open(path, 'wb') as f:
        f.write(struct.pack('<Q', len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)


out_dir = sys.argv[1]
seed = int(sys.argv[2])
os.makedirs(out_dir, exist_ok=True)
torch.manual_seed(seed)
torch.use_deterministic_algorithms(True)

cases = {}


def case(name, inputs, fn, grad=True):
    """fn(**inputs) -> tuple of outputs; float inputs get gradients (grad: False for ops torch cannot differentiate)."""
    ins = {k: (v.clone().requires_grad_() if grad and v.is_floating_point() else v) for k, v in inputs.items()}
    outs = fn(**ins)
    outs = outs if isinstance(outs, (tuple, list)) else (outs,)
    weights = {}
    loss = None
    for j, o in enumerate(outs):
        if o.is_floating_point():
            w = torch.randn(o.shape)
            weights[j] = w
            term = (o * w).sum()
            loss = term if loss is None else loss + term
    grads = {}
    diff = [k for k, v in ins.items() if v.requires_grad]
    if loss is not None and loss.requires_grad and diff:
        gs = torch.autograd.grad(loss, [ins[k] for k in diff], allow_unused=True)
        grads = {k: g for k, g in zip(diff, gs) if g is not None}
    cases[name] = (inputs, outs, weights, grads)


def r(*s):
    return torch.randn(*s)


# ---- math ----
u = torch.rand(3, 5) * 1.8 - 0.9
case('math_unary', {'x': u, 'p': torch.rand(3, 5) * 2 + 0.5, 'z': r(3, 5) * 3},
     lambda x, p, z: (x.tan(), x.atan(), x.asin(), x.acos(), x.sinh(), x.cosh(), p.log2(), p.log10(), z.trunc()))
b = r(3, 5)
b = b + b.sign() * 0.5
case('math_binary', {'a': r(3, 5) * 3, 'b': b, 'w': torch.rand(5)},
     lambda a, b, w: (torch.atan2(a, b), torch.fmod(a, b), torch.remainder(a, b), torch.hypot(a, b),
                      torch.lerp(a, b, 0.3), torch.lerp(a, b, 0.8), torch.lerp(a, b, w)))
case('math_sign_special', {'x': torch.tensor([float('nan'), -0.0, 0.0, -2.5, 3.0, float('inf'), float('-inf')])},
     lambda x: (x.sign(),))

# ---- activations: random values and every kink ----
kinks = torch.tensor([0.0, -3.0, 3.0, 6.0, -1.0, 1.0, -0.5, 2.0, -4.0, 7.0, 0.25, -0.25])
xa = torch.cat([r(20) * 3, kinks]).reshape(4, 8)
case('activations', {'x': xa},
     lambda x: (F.elu(x), F.elu(x, 0.5), F.selu(x), F.celu(x, 0.7), F.hardtanh(x), F.hardtanh(x, -0.5, 2.0), F.relu6(x),
                F.hardsigmoid(x), F.hardswish(x), F.mish(x), F.logsigmoid(x), F.leaky_relu(x, 0.2), F.glu(x, 1), F.glu(x, 0)))
case('prelu', {'x': torch.cat([r(22), torch.tensor([0.0, -1.0])]).reshape(2, 3, 4), 'w': torch.rand(3)},
     lambda x, w: (F.prelu(x, w),))

# ---- tensor ops ----
t = r(3, 4, 5)
case('reorder', {'x': t},
     lambda x: (x.flip(0, 2), x.roll(2, 1), x.roll((1, -2), (0, 2)), x.roll(7), x.repeat(2, 1, 1, 2), x.tile((2,)),
                x.repeat_interleave(2, 1), x.repeat_interleave(torch.tensor([1, 0, 2]), 0), x.repeat_interleave(2)))
s = torch.randperm(24).float().reshape(4, 6) / 4 - 3  # distinct values: no ties
case('sorting', {'x': s},
     lambda x: (x.sort(1).values, x.sort(1).indices.int(), x.sort(0, descending=True).values, x.sort(0, descending=True).indices.int(),
                x.argsort(1).int(), x.topk(3, 1).values, x.topk(3, 1).indices.int(), x.topk(2, 0, largest=False).values,
                x.kthvalue(2, 1).values, x.kthvalue(2, 1).indices.int(), x.max(1).values, x.max(1).indices.int(),
                x.min(0, keepdim=True).values, x.min(0, keepdim=True).indices.int()))
z = torch.rand(3, 6) + 0.5
z[0, 2] = 0
z[1, 0] = 0
z[1, 4] = 0
case('scans', {'x': z, 's': s},
     lambda x, s: (x.cumprod(1), x.cumprod(0), s.cummax(1).values, s.cummax(1).indices.int(), s.cummin(0).values, s.cummin(0).indices.int()))
n = r(3, 4, 2)
tiny = torch.tensor([[1e-5, 0.0], [1.0, 2.0]])
case('norms', {'x': n, 'a': r(4, 5), 'b': r(4, 5), 'c': r(5, 3), 'd': r(4, 3), 'ta': tiny, 'tb': torch.tensor([[1e-5, 0.0], [0.5, -2.0]])},
     lambda x, a, b, c, d, ta, tb: (x.norm(), x.norm(2, 1), x.norm(1, (0, 2)), x.norm(3, 2, keepdim=True), x.norm(float('inf'), 1),
                                    F.normalize(x), F.normalize(x, 1, 0), F.cosine_similarity(a, b), F.cosine_similarity(a, b[0], -1),
                                    F.cosine_similarity(ta, tb, 1, 1e-4), torch.cdist(c, d), torch.cdist(c, d, 1)))
m3 = r(4, 4)
case('einsum_diag', {'a': r(2, 3, 4), 'b': r(2, 4, 5), 'm': m3, 'v': r(3), 'p': r(3), 'q': r(4)},
     lambda a, b, m, v, p, q: (torch.einsum('bij,bjk->bik', a, b), torch.einsum('ii->i', m), torch.einsum('ii', m),
                               torch.einsum('i,j->ij', p, q), torch.einsum('bij->j', a), torch.diag(v), torch.diag(v, 1), torch.diag(m),
                               torch.diag(m, -1), torch.trace(m), *torch.meshgrid(p, q, indexing='ij'), *torch.meshgrid(p, q, indexing='xy')))
case('searching', {'x': torch.tensor([[-2.0, -1.0, 0.0, 0.3], [0.5, 1.0, 2.0, float('nan')]]), 'bnd': torch.tensor([-1.0, 0.0, 0.5, 1.0]),
                   'u': torch.tensor([3.0, 1.0, 2.0, 1.0, 3.0, 3.0, -1.0])},
     lambda x, bnd, u: (torch.bucketize(x, bnd).int(), torch.bucketize(x, bnd, right=True).int(),
                        torch.unique(u), torch.unique(u, return_inverse=True)[1].int(), torch.unique(u, return_counts=True)[1].int()), grad=False)

# ---- losses ----
pr = torch.softmax(r(5, 4), 1)
case('losses', {'x': r(5, 4), 'y': r(5, 4), 'lp': torch.log_softmax(r(5, 4), 1), 'pt': pr, 'q': torch.rand(5, 4) * 0.9 + 0.05,
                't': torch.rand(5, 4), 'w': torch.rand(4) + 0.5, 'pw': torch.rand(4) + 0.5, 'lt': torch.log_softmax(r(5, 4), 1),
                'cls': torch.randint(0, 4, (5,))},
     lambda x, y, lp, pt, q, t, w, pw, lt, cls: (
         F.l1_loss(x, y), F.l1_loss(x, y, reduction='none'), F.smooth_l1_loss(x, y, beta=0.5), F.huber_loss(x * 2, y, delta=2.0),
         F.mse_loss(x, y, reduction='sum'), F.kl_div(lp, pt, reduction='batchmean'), F.kl_div(lp, lt, reduction='sum', log_target=True),
         F.binary_cross_entropy(q, t), F.binary_cross_entropy(q, t, weight=w.detach(), reduction='sum'),
         F.binary_cross_entropy_with_logits(x, t, weight=w.detach(), pos_weight=pw.detach()), F.cross_entropy(x, pt), F.cross_entropy(x, pt, weight=w.detach(), label_smoothing=0.2),
         F.cross_entropy(x, pt, reduction='none'), F.cross_entropy(x, cls, label_smoothing=0.1)))


def f32(v):
    v = v.detach()
    return v.int() if v.dtype in (torch.int64, torch.int32, torch.bool) else v.float()


d, meta = {}, {}
for name, (ins, outs, weights, grads) in cases.items():
    for k, v in ins.items():
        d[f'{name}.input.{k}'] = f32(v)
    for j, o in enumerate(outs):
        d[f'{name}.output.{j}'] = f32(o)
    for j, w in weights.items():
        d[f'{name}.weight.{j}'] = f32(w)
    for k, g in grads.items():
        d[f'{name}.grad.{k}'] = f32(g)
    meta[name] = {'inputs': list(ins), 'outputs': len(outs), 'grads': list(grads)}
save_file(d, os.path.join(out_dir, 'api.safetensors'))
with open(os.path.join(out_dir, 'api.json'), 'w') as fh:
    json.dump({'cases': meta, 'rtol': 1e-4, 'seed': seed, 'torch': torch.__version__}, fh, indent=1)
print('wrote', len(d), 'tensors for', len(cases), 'cases to', out_dir)
