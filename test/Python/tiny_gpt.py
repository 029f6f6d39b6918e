"""The small GPT the Python checkers share: token embedding, blocks of
causal SDPA attention + GELU MLP (pre-norm, residual), a final LayerNorm
and a head tied to the embedding; its cross-entropy train step.

    from tiny_gpt import TinyGPT, lm_step
    model = TinyGPT(vocab=128, dim=64, heads=4, layers=4)
"""

import torch.nn as nn
import torch.nn.functional as F
import torch.utils.checkpoint as torch_checkpoint


class Block(nn.Module):
    def __init__(self, dim, heads, dropout=0.0):
        super().__init__()
        self.heads = heads
        self.norm1, self.norm2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.qkv, self.proj = nn.Linear(dim, 3 * dim), nn.Linear(dim, dim)
        self.up, self.down = nn.Linear(dim, 4 * dim), nn.Linear(4 * dim, dim)
        self.drop = nn.Dropout(dropout)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(self.norm1(x)).split(C, dim=2)
        q, k, v = (t.view(B, T, self.heads, C // self.heads).transpose(1, 2)
                   for t in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(y.transpose(1, 2).reshape(B, T, C))
        return x + self.drop(self.down(F.gelu(self.up(self.norm2(x)))))


class TinyGPT(nn.Module):
    """`manual`: each block under torch.utils.checkpoint (non-reentrant);
    `init_std`: the embedding drawn from N(0, init_std) (else PyTorch's
    default)."""

    def __init__(self, vocab, dim, heads, layers, dropout=0.0, manual=False,
                 init_std=None):
        super().__init__()
        self.vocab, self.manual = vocab, manual
        self.wte = nn.Embedding(vocab, dim)
        if init_std is not None:
            nn.init.normal_(self.wte.weight, std=init_std)
        self.blocks = nn.ModuleList([Block(dim, heads, dropout)
                                     for _ in range(layers)])
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, vocab, bias=False)
        self.head.weight = self.wte.weight

    def forward(self, idx):
        x = self.wte(idx)
        for block in self.blocks:
            x = (torch_checkpoint.checkpoint(block, x, use_reentrant=False)
                 if self.manual else block(x))
        return self.head(self.norm(x))


def lm_step(model, opt, x, y):
    """One training step: next-token cross-entropy, backward, optimizer."""
    loss = F.cross_entropy(model(x).view(-1, model.vocab), y.view(-1))
    loss.backward()
    opt.step()
    opt.zero_grad()
    return loss
