"""PyTorch eager and torch.compile on the same workloads as bench/gpu.ts (../../../shared/WORKLOADS.md),
at the same sizes, for the same GPU in the same run. Prints one JSON object on stdout (progress on stderr).

    python3 bench/gpu/torch_bench.py [--size gpu|cpu|tiny] [--quick] [--smoke] [--only W1,W6]
                                     [--iters 20] [--warmup 5] [--device cuda]

--size gpu (the default): the GPU column of WORKLOADS.md (W4 64M elements, W6 100,000-row tables and
batch 2048, W7 12 layers, batch 8, sequence 256; W1, W2, W3 as on the CPU). --size cpu: the CPU column.
--size tiny: small shapes of the same structure, to check the script on a CPU in seconds.
--quick: W3 on 1024 rows (kiln's `quick`). --smoke: 2 timed calls, 1 warm-up, copy over 1M floats,
matmul 256^3, and --size tiny unless --size is given. bench/gpu.ts passes its own choice (--size,
--quick with --smoke) so both sides run the same shapes; every result carries its shapes.

Workloads mirror bench/workloads/w*.ts in structure (PyTorch's default initializations; the weights are
not kiln's). Needs python3 and torch only. Where torch.compile does not exist (torch < 2.0) the compiled
results say so instead of timing anything.
"""
import json, sys, time


def arg(name, default=None):
    if name in sys.argv:
        return sys.argv[sys.argv.index(name) + 1]
    for a in sys.argv:
        if a.startswith(name + '='):
            return a[len(name) + 1:]
    return default


def log(msg):
    print(msg, file=sys.stderr, flush=True)


# Shapes per size (bench/workloads: w1.ts, w3.ts, w4.ts, w6.ts, w7.ts)
SIZES = {
    'tiny': {'W1': (8, [64, 128, 128, 10]), 'W3': (64, 32), 'W4': 1 << 16, 'W6': (64, 1000), 'W7': (1, 1, 16, 64, 4)},
    'cpu': {'W1': (128, [784, 1024, 1024, 10]), 'W3': (8192, 768), 'W4': 4 << 20, 'W6': (512, 10_000), 'W7': (2, 1, 128, 768, 12)},
    'gpu': {'W1': (128, [784, 1024, 1024, 10]), 'W3': (8192, 768), 'W4': 64 << 20, 'W6': (2048, 100_000), 'W7': (12, 8, 256, 768, 12)},
}
W3_ROWS_QUICK = 1024
W6_TABLES, W6_EMB, W6_DENSE = 26, 16, 13
W6_BOTTOM = [W6_DENSE, 512, 256, W6_EMB]
W6_VECTORS = W6_TABLES + 1
W6_PAIRS = W6_VECTORS * (W6_VECTORS - 1) // 2  # 351
W6_TOP = [W6_EMB + W6_PAIRS, 512, 256, 1]
LR = 0.01


def mm(m, n, k):
    return 2 * m * n * k


def mlp_fwd_flops(b, dims):
    return sum(mm(b, dims[i + 1], dims[i]) for i in range(len(dims) - 1))


def mlp_train_flops(b, dims, input_grad=False):
    return 3 * mlp_fwd_flops(b, dims) - (0 if input_grad else mm(b, dims[0], dims[1]))


def main():
    smoke = '--smoke' in sys.argv
    size = arg('--size', 'tiny' if smoke else 'gpu')
    if size not in SIZES:
        raise SystemExit(f'--size must be one of {", ".join(SIZES)}, got {size}')
    quick = '--quick' in sys.argv
    only = [s.strip().upper() for s in arg('--only').split(',')] if arg('--only') else None
    out = {'tool': 'torch', 'smoke': smoke, 'size': size, 'quick': quick, 'results': {}, 'notes': []}
    try:
        import torch
        import torch.nn as nn
        import torch.nn.functional as F
    except Exception as e:  # no torch here: say so, do not fake numbers
        out['error'] = f'torch unavailable: {e}'
        print(json.dumps(out))
        return
    dev = arg('--device') or ('cuda' if torch.cuda.is_available() else 'cpu')
    out['device'] = dev
    out['torch'] = torch.__version__
    if dev == 'cuda':
        out['gpu'] = torch.cuda.get_device_name()
    has_compile = hasattr(torch, 'compile')
    out['compile'] = has_compile
    if not has_compile:
        out['notes'].append(f'torch.compile does not exist in torch {torch.__version__}: compiled results skipped')
    # float32 everywhere, like kiln's WGSL (no TF32 tensor cores)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    sdpa = getattr(F, 'scaled_dot_product_attention', None)
    if sdpa is None:
        out['notes'].append('F.scaled_dot_product_attention missing (torch < 2.0): W7 uses an explicit causal softmax attention')

    S = SIZES[size]
    iters = int(arg('--iters', 2 if smoke else 20))
    warm = int(arg('--warmup', 1 if smoke else 5))
    out['iters'], out['warmup'] = iters, warm

    def sync():
        if dev == 'cuda':
            torch.cuda.synchronize()

    def timeit(fn, args):
        t0 = time.perf_counter()
        fn(*args)
        sync()
        first = (time.perf_counter() - t0) * 1000
        for _ in range(warm):
            fn(*args)
        sync()
        t0 = time.perf_counter()
        for _ in range(iters):
            fn(*args)
        sync()
        return (time.perf_counter() - t0) * 1000 / iters, first

    def both(name, make, inference=True):
        """make() -> (fn, inputs, shapes, flops, bytes); built once per mode from the same seed."""
        if only and name not in only:
            return
        res = {}
        for mode in ('eager', 'compiled'):
            if mode == 'compiled' and not has_compile:
                res[mode] = {'skipped': f'torch.compile not available in torch {torch.__version__}'}
                continue
            try:
                torch.manual_seed(20261130)
                fn, inputs, shapes, flops, nbytes = make()
                res['shapes'] = shapes
                if mode == 'compiled':
                    torch._dynamo.reset()
                    fn = torch.compile(fn)
                ctx = torch.no_grad() if inference else torch.enable_grad()
                with ctx:
                    ms, first = timeit(fn, inputs)
                r = {'ms': ms, 'firstMs': first}
                if flops:
                    r['TFLOPs'] = flops / ms / 1e9
                if nbytes:
                    r['GBps'] = nbytes / ms / 1e6
                res[mode] = r
            except Exception as e:
                res[mode] = {'error': f'{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ""}'}
            finally:
                fn = inputs = None
                if dev == 'cuda':
                    torch.cuda.empty_cache()
        out['results'][name] = res
        log(f"{name} [{res.get('shapes')}]: " + ', '.join(f"{m} {res[m].get('ms', res[m].get('error', res[m].get('skipped')))}" for m in ('eager', 'compiled')))

    def mlp(dims, relu_after_last=False):
        layers = []
        for i in range(len(dims) - 1):
            layers.append(nn.Linear(dims[i], dims[i + 1]))
            if i + 2 < len(dims) or relu_after_last:
                layers.append(nn.ReLU())
        return nn.Sequential(*layers).to(dev)

    def sgd_step(model, opt, loss_fn):
        def step(*args):
            opt.zero_grad()
            loss = loss_fn(*args)
            loss.backward()
            opt.step()
            return loss
        return step

    # W1: MLP inference
    B, D = S['W1']
    def w1():
        m = mlp(D).eval().requires_grad_(False)
        x = torch.randn(B, D[0], device=dev)
        return (lambda x: m(x)), [x], f'x[{B},{D[0]}]', mlp_fwd_flops(B, D), None
    both('W1', w1)

    # W2: W1's training step (cross-entropy, backward, SGD lr 0.01)
    def w2():
        m = mlp(D)
        opt = torch.optim.SGD(m.parameters(), lr=LR)
        x, y = torch.randn(B, D[0], device=dev), torch.randint(0, D[-1], (B,), device=dev)
        return sgd_step(m, opt, lambda x, y: F.cross_entropy(m(x), y)), [x, y], f'x[{B},{D[0]}] y[{B}] int64', mlp_train_flops(B, D), None
    both('W2', w2, inference=False)

    # W3: LayerNorm -> Linear -> GELU(tanh) -> Linear + residual
    R, H = S['W3']
    if quick and size != 'tiny':
        R = W3_ROWS_QUICK
    def w3():
        ln, a, b = nn.LayerNorm(H).to(dev), nn.Linear(H, 4 * H).to(dev), nn.Linear(4 * H, H).to(dev)
        for p in (*ln.parameters(), *a.parameters(), *b.parameters()):
            p.requires_grad_(False)
        x = torch.randn(R, H, device=dev)
        return (lambda x: x + b(F.gelu(a(ln(x)), approximate='tanh'))), [x], f'x[{R},{H}]', 2 * mm(R, 4 * H, H), None
    both('W3', w3)

    # W4: elementwise chain (memory-bound: 8 bytes an element)
    N = S['W4']
    def w4():
        x = torch.randn(N, device=dev)
        return (lambda x: torch.tanh(x * 1.5 + 0.3) * torch.sigmoid(x) - 0.1 * x), [x], f'x[{N}]', None, 8 * N
    both('W4', w4)

    # W6: DLRM-style training step (bench/workloads/w6.ts)
    B6, ROWS = S['W6']
    tri = [i * W6_VECTORS + j for i in range(W6_VECTORS) for j in range(i + 1, W6_VECTORS)]

    class Dlrm(nn.Module):
        def __init__(self, rows):
            super().__init__()
            self.bottom = mlp(W6_BOTTOM, relu_after_last=True)
            self.tables = nn.ModuleList([nn.EmbeddingBag(rows, W6_EMB, mode='sum') for _ in range(W6_TABLES)])
            self.top = mlp(W6_TOP)
            self.register_buffer('tri_index', torch.tensor(tri, dtype=torch.long), persistent=False)

        def forward(self, dense, *ids):
            b = self.bottom(dense)  # [B,16]
            embs = [t(i) for t, i in zip(self.tables, ids)]  # 26 x [B,16]
            z = torch.stack([b, *embs], 1)  # [B,27,16]
            zz = torch.bmm(z, z.transpose(1, 2))  # [B,27,27]
            pairs = torch.index_select(zz.reshape(zz.shape[0], W6_VECTORS * W6_VECTORS), 1, self.tri_index)  # [B,351]
            return self.top(torch.cat([b, pairs], 1))  # [B,1]

    def w6():
        m = Dlrm(ROWS).to(dev)
        opt = torch.optim.SGD(m.parameters(), lr=LR)
        dense = torch.randn(B6, W6_DENSE, device=dev)
        labels = torch.randint(0, 2, (B6, 1), device=dev).float()
        ids = [torch.randint(0, ROWS, (B6, 1), device=dev) for _ in range(W6_TABLES)]
        step = sgd_step(m, opt, lambda dense, labels, *ids: F.binary_cross_entropy_with_logits(m(dense, *ids), labels))
        flops = mlp_train_flops(B6, W6_BOTTOM) + mlp_train_flops(B6, W6_TOP, True) + 3 * B6 * mm(W6_VECTORS, W6_VECTORS, W6_EMB)
        shapes = f'dense[{B6},{W6_DENSE}] labels[{B6},1] {W6_TABLES}x ids[{B6},1] int64, tables {W6_TABLES}x[{ROWS},{W6_EMB}]'
        return step, [dense, labels, *ids], shapes, flops, None
    both('W6', w6, inference=False)

    # W7: GPT-style decoder inference (bench/workloads/w7.ts)
    L, Bt, T, E, NH = S['W7']

    def attention(q, k, v):
        if sdpa is not None:
            return sdpa(q, k, v, is_causal=True)
        s = (q @ k.transpose(-2, -1)) * (q.shape[-1] ** -0.5)
        mask = torch.ones(T, T, dtype=torch.bool, device=q.device).triu(1)
        return torch.softmax(s.masked_fill(mask, float('-inf')), -1) @ v

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln1, self.ln2 = nn.LayerNorm(E), nn.LayerNorm(E)
            self.qkv, self.proj = nn.Linear(E, 3 * E), nn.Linear(E, E)
            self.fc1, self.fc2 = nn.Linear(E, 4 * E), nn.Linear(4 * E, E)

        def forward(self, x):
            b, t, c = x.shape
            q, k, v = (u.view(b, t, NH, c // NH).transpose(1, 2) for u in self.qkv(self.ln1(x)).split(c, dim=-1))
            h = x + self.proj(attention(q, k, v).transpose(1, 2).reshape(b, t, c))
            return h + self.fc2(F.gelu(self.fc1(self.ln2(h)), approximate='tanh'))

    def w7():
        m = nn.Sequential(*[Block() for _ in range(L)], nn.LayerNorm(E)).to(dev).eval().requires_grad_(False)
        x = torch.randn(Bt, T, E, device=dev)
        hd = E // NH
        flops = L * (mm(Bt * T, 3 * E, E) + 2 * Bt * NH * mm(T, T, hd) + mm(Bt * T, E, E) + mm(Bt * T, 4 * E, E) + mm(Bt * T, E, 4 * E))
        shapes = f'x[{Bt},{T},{E}]' + ('' if L == 2 else f', {L} layers')
        return (lambda x: m(x)), [x], shapes, flops, None
    both('W7', w7)

    # copy bandwidth (read + write) and a large float32 matmul's rate (W5 at its GPU size)
    small = smoke or size == 'tiny'
    NC, M = (1 << 20, 256) if small else (64 << 20, 4096)
    try:
        x = torch.randn(NC, device=dev)
        y = torch.empty_like(x)
        ms, first = timeit(lambda: y.copy_(x), [])
        out['results']['copy'] = {'shapes': f'x[{NC}]', 'ms': ms, 'GBps': 8 * NC / ms / 1e6}
        del x, y
    except Exception as e:
        out['results']['copy'] = {'error': f'{type(e).__name__}: {e}'}
    try:
        a, b = torch.randn(M, M, device=dev), torch.randn(M, M, device=dev)
        ms, first = timeit(lambda: a @ b, [])
        out['results']['matmul'] = {'shapes': f'{M}x{M}x{M}', 'ms': ms, 'TFLOPs': 2 * M ** 3 / ms / 1e9}
    except Exception as e:
        out['results']['matmul'] = {'error': f'{type(e).__name__}: {e}'}
    print(json.dumps(out))


if __name__ == '__main__':
    main()
