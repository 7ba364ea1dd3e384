"""Models built on the GPU for the GPU suite's Python tests (test_python_cuda.py, test_capture_cuda.py,
test_aoti_cuda.py) and bench/gpu_batch.py: a small bf16 decoder (RMSNorm, causal SDPA, a gated MLP) and a conv net
under fp16 autocast. Only torch: importing it needs no pt2diff."""
import torch
import torch.nn.functional as F


class RMSNorm(torch.nn.Module):
    def __init__(self, d):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.ones(d))

    def forward(self, x):
        return x * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + 1e-6).to(x.dtype) * self.weight


class Block(torch.nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.heads = heads
        self.norm1, self.norm2 = RMSNorm(d), RMSNorm(d)
        self.qkv, self.proj = torch.nn.Linear(d, 3 * d, bias=False), torch.nn.Linear(d, d, bias=False)
        self.gate, self.up, self.down = (torch.nn.Linear(d, 2 * d, bias=False), torch.nn.Linear(d, 2 * d, bias=False),
                                         torch.nn.Linear(2 * d, d, bias=False))

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(self.norm1(x)).split(d, dim=-1)
        q, k, v = (z.view(b, t, self.heads, d // self.heads).transpose(1, 2) for z in (q, k, v))
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(b, t, d)
        x = x + self.proj(a)
        h = self.norm2(x)
        return x + self.down(F.silu(self.gate(h)) * self.up(h))


class TinyDecoder(torch.nn.Module):
    def __init__(self, vocab=512, d=128, heads=4, layers=2):
        super().__init__()
        self.embed = torch.nn.Embedding(vocab, d)
        self.blocks = torch.nn.ModuleList(Block(d, heads) for _ in range(layers))
        self.norm, self.head = RMSNorm(d), torch.nn.Linear(d, vocab, bias=False)

    def forward(self, ids):
        x = self.embed(ids)
        for blk in self.blocks:
            x = blk(x)
        return self.head(self.norm(x))


def seeded_decoder(device="cuda"):
    """The suite's bf16 TinyDecoder on `device` (seed 0) and its token ids, shape [2, 32]."""
    torch.manual_seed(0)
    model = TinyDecoder().to(device, torch.bfloat16).eval()
    return model, torch.randint(0, 512, (2, 32), device=device)


class AutocastConvNet(torch.nn.Module):
    """fp32 weights, the body under fp16 autocast: a batch-normed stem, two residual 3x3 blocks, a head."""

    def __init__(self):
        super().__init__()
        self.stem = torch.nn.Sequential(torch.nn.Conv2d(3, 16, 3, padding=1), torch.nn.BatchNorm2d(16), torch.nn.ReLU())
        self.blocks = torch.nn.ModuleList(torch.nn.Sequential(torch.nn.Conv2d(16, 16, 3, padding=1), torch.nn.GroupNorm(4, 16),
                                                              torch.nn.ReLU()) for _ in range(2))
        self.head = torch.nn.Linear(16, 10)

    def forward(self, x):
        with torch.autocast("cuda", dtype=torch.float16):
            h = self.stem(x)
            for blk in self.blocks:
                h = h + blk(h)
            return self.head(h.mean((2, 3)))
