"""PyTorch eager and torch.compile on the same workloads as bench/gpu.ts (../../../shared/WORKLOADS.md),
for the same GPU in the same run. Prints one JSON object on stdout.

    python3 bench/gpu/torch_bench.py [--smoke] [--device cuda]

Written: W1, W2, W3, W4, W7, copy bandwidth, matmul rate. W6 (DLRM) is not written yet (listed as
such in the JSON). Sizes follow the GPU column of WORKLOADS.md (W4 64M elements, W7 12 layers,
batch 8, sequence 256); --smoke shrinks everything to prove the harness on a CPU.
"""
import json, math, sys, time

def main():
    smoke = '--smoke' in sys.argv
    out = {'tool': 'torch', 'smoke': smoke, 'results': {}, 'notes': []}
    try:
        import torch
        import torch.nn as nn
        import torch.nn.functional as F
    except Exception as e:  # no torch here: say so, do not fake numbers
        out['error'] = f'torch unavailable: {e}'
        print(json.dumps(out))
        return
    dev = sys.argv[sys.argv.index('--device') + 1] if '--device' in sys.argv else ('cuda' if torch.cuda.is_available() else 'cpu')
    out['device'] = dev
    out['torch'] = torch.__version__
    torch.manual_seed(20261130)

    def sync():
        if dev == 'cuda':
            torch.cuda.synchronize()

    def timeit(fn, iters, warm):
        for _ in range(warm):
            fn()
        sync()
        t0 = time.perf_counter()
        for _ in range(iters):
            fn()
        sync()
        return (time.perf_counter() - t0) * 1000 / iters

    iters, warm = (2, 1) if smoke else (20, 5)

    def both(name, make, inference=True):
        res = {}
        for mode in ('eager', 'compiled'):
            try:
                fn = make()
                if mode == 'compiled':
                    fn = torch.compile(fn)
                ctx = torch.no_grad() if inference else torch.enable_grad()
                with ctx:
                    res[mode] = {'ms': timeit(fn, iters, warm + (2 if mode == 'compiled' else 0))}
            except Exception as e:
                res[mode] = {'error': str(e).split('\n')[0]}
        out['results'][name] = res

    B, D = (8, [64, 128, 128, 10]) if smoke else (128, [784, 1024, 1024, 10])
    def mlp():
        return nn.Sequential(nn.Linear(D[0], D[1]), nn.ReLU(), nn.Linear(D[1], D[2]), nn.ReLU(), nn.Linear(D[2], D[3])).to(dev)
    def w1():
        m, x = mlp(), torch.randn(B, D[0], device=dev)
        return lambda: m(x)
    both('W1', w1)
    def w2():
        m, x, y = mlp(), torch.randn(B, D[0], device=dev), torch.randint(0, D[3], (B,), device=dev)
        opt = torch.optim.SGD(m.parameters(), lr=0.01)
        def step():
            opt.zero_grad()
            loss = F.cross_entropy(m(x), y)
            loss.backward()
            opt.step()
            return loss
        return step
    both('W2', w2, inference=False)
    R, H = (64, 32) if smoke else (8192, 768)
    def w3():
        ln, a, b = nn.LayerNorm(H).to(dev), nn.Linear(H, 4 * H).to(dev), nn.Linear(4 * H, H).to(dev)
        x = torch.randn(R, H, device=dev)
        return lambda: x + b(F.gelu(a(ln(x)), approximate='tanh'))
    both('W3', w3)
    N = (1 << 20) if smoke else (64 << 20)
    def w4():
        x = torch.randn(N, device=dev)
        return lambda: torch.tanh(x * 1.5 + 0.3) * torch.sigmoid(x) - 0.1 * x
    both('W4', w4)
    out['results']['W6'] = {'eager': {'error': 'not written yet in torch_bench.py'}, 'compiled': {'error': 'not written yet in torch_bench.py'}}
    L, Bt, T, E, NH = (1, 1, 16, 64, 4) if smoke else (12, 8, 256, 768, 12)
    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln1, self.ln2 = nn.LayerNorm(E), nn.LayerNorm(E)
            self.qkv, self.proj = nn.Linear(E, 3 * E), nn.Linear(E, E)
            self.fc, self.out = nn.Linear(E, 4 * E), nn.Linear(4 * E, E)
        def forward(self, x):
            q, k, v = self.qkv(self.ln1(x)).split(E, dim=-1)
            sh = lambda t: t.view(Bt, T, NH, E // NH).transpose(1, 2)
            a = F.scaled_dot_product_attention(sh(q), sh(k), sh(v), is_causal=True).transpose(1, 2).reshape(Bt, T, E)
            x = x + self.proj(a)
            return x + self.out(F.gelu(self.fc(self.ln2(x)), approximate='tanh'))
    def w7():
        m = nn.Sequential(*[Block() for _ in range(L)], nn.LayerNorm(E)).to(dev).eval()
        x = torch.randn(Bt, T, E, device=dev)
        return lambda: m(x)
    both('W7', w7)
    # copy bandwidth (read + write) and a large matmul's rate
    x = torch.randn(N, device=dev)
    y = torch.empty_like(x)
    ms = timeit(lambda: y.copy_(x), iters, warm)
    out['results']['copy'] = {'ms': ms, 'GBps': 8 * N / ms / 1e6}
    M = 256 if smoke else 4096
    a, b = torch.randn(M, M, device=dev), torch.randn(M, M, device=dev)
    torch.backends.cuda.matmul.allow_tf32 = False  # float32 like kiln's WGSL matmul
    ms = timeit(lambda: a @ b, iters, warm)
    out['results']['matmul'] = {'n': M, 'ms': ms, 'TFLOPs': 2 * M ** 3 / ms / 1e9}
    print(json.dumps(out))

if __name__ == '__main__':
    main()
