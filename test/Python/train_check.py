#!/usr/bin/env python3
"""Trains a model with spmd.compile on the ranks of an mpirun job and,
in the same process, eagerly on one device over the global batch; checks
that losses, parameters and optimizer state agree after every step.

    mpirun -np 2 python3 train_check.py CASE [--steps 5]
"""

import argparse
import contextlib
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

import spmd

GLOBAL_BATCH = 8


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(6, 16)
        self.fc2 = nn.Linear(16, 4)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


class DropoutMLP(MLP):
    """torch.nn.Dropout between the layers: random masks (Philox), so this
    case is compared with its own runs (gpu-emulated-steps.test: GPU path vs
    CPU path), not with eager."""

    def __init__(self):
        super().__init__()
        self.drop = nn.Dropout(0.25)

    def forward(self, x):
        return self.fc2(self.drop(torch.relu(self.fc1(x))))


class BatchNormMLP(nn.Module):
    """torch.nn.BatchNorm1d, or BatchNorm2d over (N, 2, 4, 4) maps, in
    training mode: statistics over the global batch, running statistics
    updated (what SyncBatchNorm computes)."""

    def __init__(self, two_d=False):
        super().__init__()
        self.two_d = two_d
        self.fc1 = nn.Linear(6, 32)
        self.bn = nn.BatchNorm2d(2) if two_d else nn.BatchNorm1d(32)
        self.fc2 = nn.Linear(32, 4)

    def forward(self, x):
        h = self.fc1(x)
        if self.two_d:
            h = self.bn(h.reshape(-1, 2, 4, 4)).reshape(-1, 32)
        else:
            h = self.bn(h)
        return self.fc2(torch.relu(h))


class SmallCNN(nn.Module):
    """torch.nn's image layers as a ResNet stem and head use them: Conv2d,
    BatchNorm2d, ReLU, MaxPool2d (non-overlapping, and 3x3 stride 2 padded:
    overlapping windows), a strided Conv2d, AdaptiveAvgPool2d, Linear."""

    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(),
            nn.MaxPool2d(2), nn.Conv2d(8, 8, 3, stride=2, padding=1),
            nn.ReLU(), nn.MaxPool2d(3, stride=2, padding=1))
        self.head = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                                  nn.Linear(8, 5))

    def forward(self, x):
        return self.head(self.features(x))


class TinyUNet(nn.Module):
    """Down and up again, as segmentation and diffusion models do: a
    depthwise (grouped) Conv2d, AvgPool2d, a transposed Conv2d, nearest
    Upsample, a skip connection by concatenation."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(3, 6, 3, padding=1)
        self.depthwise = nn.Conv2d(6, 6, 3, padding=1, groups=6)
        self.down = nn.AvgPool2d(2)
        self.up = nn.ConvTranspose2d(6, 4, 2, stride=2)
        self.resize = nn.Upsample(scale_factor=2, mode="nearest")
        self.head = nn.Conv2d(10, 5, 1)

    def forward(self, x):
        skip = torch.relu(self.stem(x))
        h = self.up(self.down(torch.relu(self.depthwise(skip))))
        h = torch.cat([h, skip], 1)
        return self.head(self.resize(h)).mean((2, 3))


class Recurrent(nn.Module):
    """A 2-layer nn.LSTM over a sequence, then a linear head on the last
    step (traced as its math: oneDNN's fused CPU kernel is off while
    tracing)."""

    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(6, 8, num_layers=2, batch_first=True)
        self.head = nn.Linear(8, 3)

    def forward(self, x):
        return self.head(self.lstm(x)[0][:, -1])


class Tagger(nn.Module):
    """Per-position classification over a sequence: Conv1d, GroupNorm, SiLU,
    a 1x1 Conv1d; cross-entropy over (N, C, L) logits with (N, L) targets,
    some positions ignored (-100): torch traces it as nll_loss2d."""

    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Conv1d(4, 8, 5, padding=2),
                                 nn.GroupNorm(2, 8), nn.SiLU(),
                                 nn.Conv1d(8, 5, 1))

    def forward(self, x):
        return self.net(x)


class NormMLP(nn.Module):
    def __init__(self, classes=5):
        super().__init__()
        self.fc1 = nn.Linear(6, 16)
        self.norm = nn.LayerNorm(16)
        self.fc2 = nn.Linear(16, classes)

    def forward(self, x):
        return self.fc2(nn.functional.gelu(self.norm(self.fc1(x))))


class Bag(nn.Module):
    def __init__(self, padding_idx=None):
        super().__init__()
        self.emb = nn.Embedding(20, 8, padding_idx=padding_idx)
        self.fc = nn.Linear(8, 3)

    def forward(self, tokens):
        return self.fc(self.emb(tokens).mean(1))


class TinyTransformer(nn.Module):
    """One pre-norm block: token + position embeddings, single-head causal
    self-attention, GELU MLP, mean-pooled classifier."""

    def __init__(self, vocab=16, dim=8, seq=6, classes=3):
        super().__init__()
        self.tok = nn.Embedding(vocab, dim)
        self.pos = nn.Parameter(torch.randn(seq, dim) * 0.1)
        self.ln1 = nn.LayerNorm(dim)
        # No qkv bias: the key bias's gradient is exactly zero in exact
        # arithmetic (softmax ignores a per-row constant), so both runs
        # compute rounding noise (~1e-9) for it, and Adam's normalization
        # turns any two different noises into lr-sized different updates.
        self.qkv = nn.Linear(dim, 3 * dim, bias=False)
        self.proj = nn.Linear(dim, dim)
        self.ln2 = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 2 * dim), nn.GELU(),
                                 nn.Linear(2 * dim, dim))
        self.head = nn.Linear(dim, classes)
        self.register_buffer("mask", torch.tril(torch.ones(seq, seq)))

    def forward(self, tokens):
        h = self.tok(tokens) + self.pos
        q, k, v = self.qkv(self.ln1(h)).chunk(3, dim=-1)
        att = (q @ k.transpose(1, 2)) / (q.shape[-1] ** 0.5)
        att = att.masked_fill(self.mask == 0, float("-inf")).softmax(-1)
        h = h + self.proj(att @ v)
        h = h + self.mlp(self.ln2(h))
        return self.head(h.mean(1))


class Encoder(nn.Module):
    """torch.nn.TransformerEncoderLayer, post- or pre-norm: its
    MultiheadAttention calls F.scaled_dot_product_attention."""

    def __init__(self, norm_first, vocab=16, dim=8, classes=3):
        super().__init__()
        self.tok = nn.Embedding(vocab, dim)
        self.layer = nn.TransformerEncoderLayer(
            dim, 2, 16, dropout=0.0, batch_first=True, norm_first=norm_first)
        self.head = nn.Linear(dim, classes)

    def forward(self, tokens):
        return self.head(self.layer(self.tok(tokens)).mean(1))


class Decoder(nn.Module):
    """torch.nn.TransformerDecoderLayer (causal self-attention, then
    cross-attention to a memory of another length, 4 positions, from the
    same tokens)."""

    def __init__(self, vocab=16, dim=8, classes=3):
        super().__init__()
        self.tok = nn.Embedding(vocab, dim)
        self.mem = nn.Linear(dim, dim)
        self.layer = nn.TransformerDecoderLayer(
            dim, 2, 16, dropout=0.0, batch_first=True)
        self.head = nn.Linear(dim, classes)

    def forward(self, tokens):
        h = self.tok(tokens)
        memory = self.mem(h[:, :4])
        mask = nn.Transformer.generate_square_subsequent_mask(tokens.shape[1])
        out = self.layer(h, memory, tgt_mask=mask, tgt_is_causal=True)
        return self.head(out.mean(1))


class PaddedMHA(nn.Module):
    """nn.MultiheadAttention(need_weights=False) with a key padding mask
    (token 0 is padding): SDPA with an additive float mask."""

    def __init__(self, vocab=16, dim=8, classes=3):
        super().__init__()
        self.tok = nn.Embedding(vocab, dim)
        self.attn = nn.MultiheadAttention(dim, 2, batch_first=True)
        self.head = nn.Linear(dim, classes)

    def forward(self, tokens):
        h = self.tok(tokens)
        out, _ = self.attn(h, h, h, key_padding_mask=tokens == 0,
                           need_weights=False)
        return self.head(out.mean(1))


class WeightsMHA(PaddedMHA):
    """nn.MultiheadAttention called with its defaults (need_weights=True:
    PyTorch's explicit bmm/softmax form, the averaged weights returned) and
    a causal float mask; the weights feed the output too."""

    def forward(self, tokens):
        h = self.tok(tokens)
        mask = nn.Transformer.generate_square_subsequent_mask(tokens.shape[1])
        out, weights = self.attn(h, h, h, attn_mask=mask)
        return self.head(out.mean(1)) + weights[:, -1, :3]


class CausalGQA(nn.Module):
    """A causal decoder block calling F.scaled_dot_product_attention
    itself: 4 query heads over 2 key/value heads (enable_gqa), is_causal,
    an explicit scale."""

    def __init__(self, vocab=16, dim=8, classes=3):
        super().__init__()
        self.tok = nn.Embedding(vocab, dim)
        self.q = nn.Linear(dim, dim)
        self.kv = nn.Linear(dim, dim)
        self.proj = nn.Linear(dim, dim)
        self.head = nn.Linear(dim, classes)

    def forward(self, tokens):
        h = self.tok(tokens)
        B, T, C = h.shape
        q = self.q(h).view(B, T, 4, 2).transpose(1, 2)
        k, v = self.kv(h).view(B, T, 2, 2, 2).unbind(2)
        k, v = k.transpose(1, 2), v.transpose(1, 2)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True,
                                           scale=0.6, enable_gqa=True)
        h = h + self.proj(y.transpose(1, 2).reshape(B, T, C))
        return self.head(h.mean(1))


class MiniGPT(nn.Module):
    """bench/gpt.py's nanoGPT at toy size: token and position embeddings, 2
    pre-norm blocks (causal SDPA over 2 heads, GELU MLP), a final LayerNorm
    and a head tied to the token embedding; next-token cross-entropy over
    every position. No qkv bias (see TinyTransformer: AdamW would amplify
    the key bias's zero-gradient noise)."""

    def __init__(self, vocab=16, dim=8, block=6, layers=2, heads=2):
        super().__init__()
        self.heads = heads
        self.wte = nn.Embedding(vocab, dim)
        self.wpe = nn.Embedding(block, dim)
        self.blocks = nn.ModuleList()
        for _ in range(layers):
            self.blocks.append(nn.ModuleDict(dict(
                ln1=nn.LayerNorm(dim), attn=nn.Linear(dim, 3 * dim, bias=False),
                proj=nn.Linear(dim, dim), ln2=nn.LayerNorm(dim),
                fc=nn.Linear(dim, 4 * dim), fc2=nn.Linear(4 * dim, dim))))
        self.lnf = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, vocab, bias=False)
        self.head.weight = self.wte.weight

    def forward(self, idx):
        B, T = idx.shape
        x = self.wte(idx) + self.wpe(torch.arange(T))
        for b in self.blocks:
            q, k, v = b["attn"](b["ln1"](x)).split(x.shape[-1], dim=2)
            q, k, v = (t.view(B, T, self.heads, -1).transpose(1, 2)
                       for t in (q, k, v))
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + b["proj"](y.transpose(1, 2).reshape(B, T, -1))
            x = x + b["fc2"](F.gelu(b["fc"](b["ln2"](x))))
        return self.head(self.lnf(x))


def next_token_loss(logits, targets):
    return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))


class TiedLM(nn.Module):
    """Input embedding and output projection share one weight."""

    def __init__(self, vocab=12, dim=8):
        super().__init__()
        self.tok = nn.Embedding(vocab, dim)
        self.mix = nn.Linear(dim, dim)
        self.out = nn.Linear(dim, vocab, bias=False)
        self.out.weight = self.tok.weight

    def forward(self, tokens):
        return self.out(torch.tanh(self.mix(self.tok(tokens)))).mean(1)


def data(case, gen):
    if case == "tied":
        return (torch.randint(0, 12, (GLOBAL_BATCH, 4), generator=gen),
                torch.randint(0, 12, (GLOBAL_BATCH,), generator=gen))
    if case == "gpt":
        tokens = torch.randint(0, 16, (GLOBAL_BATCH, 7), generator=gen)
        return tokens[:, :-1].contiguous(), tokens[:, 1:].contiguous()
    if case == "gpt_vocab":
        tokens = torch.randint(0, 1001, (GLOBAL_BATCH, 7), generator=gen)
        return tokens[:, :-1].contiguous(), tokens[:, 1:].contiguous()
    if case in ("transformer",) + ATTENTION:
        return (torch.randint(0, 16, (GLOBAL_BATCH, 6), generator=gen),
                torch.randint(0, 3, (GLOBAL_BATCH,), generator=gen))
    if case in ("mlp_sgd", "groups", "sgd_options", "adam_options",
                "adamw_amsgrad", "resume", "dropout", "batchnorm1d",
                "batchnorm2d") or case in SCHEDULED:
        return (torch.randn(GLOBAL_BATCH, 6, generator=gen),
                torch.randn(GLOBAL_BATCH, 4, generator=gen))
    if case == "cnn":
        return (torch.randn(GLOBAL_BATCH, 3, 16, 16, generator=gen),
                torch.randint(0, 5, (GLOBAL_BATCH,), generator=gen))
    if case == "unet":
        return (torch.randn(GLOBAL_BATCH, 3, 8, 8, generator=gen),
                torch.randint(0, 5, (GLOBAL_BATCH,), generator=gen))
    if case == "lstm":
        return (torch.randn(GLOBAL_BATCH, 5, 6, generator=gen),
                torch.randint(0, 3, (GLOBAL_BATCH,), generator=gen))
    if case == "tagger":
        tags = torch.randint(0, 5, (GLOBAL_BATCH, 12), generator=gen)
        tags[:, -2:] = -100
        return torch.randn(GLOBAL_BATCH, 4, 12, generator=gen), tags
    if case == "norm_adam":
        return (torch.randn(GLOBAL_BATCH, 6, generator=gen),
                torch.randint(0, 5, (GLOBAL_BATCH,), generator=gen))
    if case == "embed_adamw":
        return (torch.randint(0, 20, (GLOBAL_BATCH, 5), generator=gen),
                torch.randn(GLOBAL_BATCH, 3, generator=gen))
    if case == "embed_padding":
        # Every row padded at its end (id 0), repeated ids elsewhere.
        tokens = torch.randint(1, 6, (GLOBAL_BATCH, 5), generator=gen)
        tokens[:, 3:] = 0
        return tokens, torch.randn(GLOBAL_BATCH, 3, generator=gen)
    raise SystemExit(f"unknown case {case}")


def warmup_cosine(warmup=2, total=8):
    """LambdaLR factor: linear warmup, then cosine decay (nanoGPT's)."""
    import math

    def factor(step):
        if step < warmup:
            return (step + 1) / warmup
        progress = min(1.0, (step - warmup) / max(1, total - warmup))
        return 0.5 * (1.0 + math.cos(math.pi * progress))
    return factor


def manual_lr(opt, step, case="manual"):
    """What a hand-written loop does between steps: set the options."""
    if case == "structural":
        if step == 2:
            opt.param_groups[0]["momentum"] = 0.9
        return
    for g in opt.param_groups:
        g["lr"] = 0.1 / (step + 1)
        g["weight_decay"] = 0.01 * (step + 1)
        g["momentum"] = 0.9 - 0.1 * (step % 3)


# Cases whose float options change between steps: the model, optimizer and
# what runs after every step (a scheduler, or manual changes).
SCHEDULED = {
    "steplr": lambda m: (
        torch.optim.SGD(m.parameters(), lr=0.1, momentum=0.9, foreach=True),
        lambda opt: torch.optim.lr_scheduler.StepLR(opt, step_size=2,
                                                    gamma=0.5)),
    "warmup_cosine": lambda m: (
        torch.optim.AdamW(m.parameters(), lr=1e-2, weight_decay=0.05,
                          foreach=True),
        lambda opt: torch.optim.lr_scheduler.LambdaLR(opt, warmup_cosine())),
    "onecycle_sgd": lambda m: (
        torch.optim.SGD(m.parameters(), lr=0.05, momentum=0.9, dampening=0.1,
                        foreach=True),
        lambda opt: torch.optim.lr_scheduler.OneCycleLR(
            opt, max_lr=0.2, total_steps=8, cycle_momentum=True)),
    "onecycle_adam": lambda m: (
        torch.optim.Adam(m.parameters(), lr=1e-2, weight_decay=0.01,
                         foreach=True),
        lambda opt: torch.optim.lr_scheduler.OneCycleLR(
            opt, max_lr=5e-2, total_steps=8, cycle_momentum=True)),
    "manual": lambda m: (
        torch.optim.SGD(m.parameters(), lr=0.1, momentum=0.9,
                        weight_decay=0.01, foreach=True),
        None),
    # Momentum switched on after step 2: a structural change, so a second
    # program (with momentum buffers) is compiled.
    "structural": lambda m: (
        torch.optim.SGD(m.parameters(), lr=0.1, foreach=True), None),
}


# Models whose attention is F.scaled_dot_product_attention.
ATTENTION = ("encoder_post", "encoder_pre", "padded_mha", "causal_gqa",
             "decoder", "mha_weights")


def setup(case):
    torch.manual_seed(0)
    if case in ATTENTION:
        # SGD, not Adam: attention's key bias has an exactly zero gradient
        # (softmax ignores a per-row constant), whose rounding noise Adam
        # would normalize into lr-sized updates on either side.
        model = {"encoder_post": lambda: Encoder(norm_first=False),
                 "encoder_pre": lambda: Encoder(norm_first=True),
                 "padded_mha": PaddedMHA, "causal_gqa": CausalGQA,
                 "decoder": Decoder, "mha_weights": WeightsMHA}[case]()
        opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9,
                              foreach=True)
        return model, opt, nn.CrossEntropyLoss()
    if case in SCHEDULED:
        model = MLP()
        opt, _ = SCHEDULED[case](model)
        return model, opt, nn.MSELoss()
    if case == "dropout":
        model = DropoutMLP()
        opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9,
                              foreach=True)
        return model, opt, nn.MSELoss()
    if case in ("unet", "lstm"):
        model = TinyUNet() if case == "unet" else Recurrent()
        opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9,
                              foreach=True)
        return model, opt, nn.CrossEntropyLoss()
    if case == "tagger":
        model = Tagger()
        opt = torch.optim.AdamW(model.parameters(), lr=1e-2, foreach=True)
        return model, opt, nn.CrossEntropyLoss()
    if case == "cnn":
        model = SmallCNN()
        opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9,
                              foreach=True)
        return model, opt, nn.CrossEntropyLoss()
    if case in ("batchnorm1d", "batchnorm2d"):
        model = BatchNormMLP(two_d=case == "batchnorm2d")
        opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9,
                              foreach=True)
        return model, opt, nn.MSELoss()
    if case == "mlp_sgd":
        model = MLP()
        opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9,
                              weight_decay=0.01, foreach=True)
        loss_fn = nn.MSELoss()
    elif case == "norm_adam":
        model = NormMLP()
        opt = torch.optim.Adam(model.parameters(), lr=1e-2, foreach=True)
        loss_fn = nn.CrossEntropyLoss()
    elif case == "embed_adamw":
        model = Bag()
        opt = torch.optim.AdamW(model.parameters(), lr=1e-2,
                                weight_decay=0.05, foreach=True)
        loss_fn = nn.MSELoss()
    elif case == "embed_padding":
        model = Bag(padding_idx=0)
        opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9,
                              foreach=True)
        loss_fn = nn.MSELoss()
    elif case == "groups":
        model = MLP()
        opt = torch.optim.SGD(
            [{"params": model.fc1.parameters(), "lr": 0.1, "momentum": 0.5},
             {"params": model.fc2.parameters(), "nesterov": True,
              "momentum": 0.9, "dampening": 0.0}],
            lr=0.02, foreach=True)
        loss_fn = nn.MSELoss()
    elif case == "tied":
        model = TiedLM()
        opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9,
                              foreach=True)
        loss_fn = nn.CrossEntropyLoss()
    elif case == "gpt":
        model = MiniGPT()
        opt = torch.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=0.1,
                                foreach=True)
        loss_fn = next_token_loss
    elif case == "gpt_vocab":
        # A vocabulary large next to the batch's tokens (1001 rows, uneven
        # on 2 and 4 ranks): under fully_shard the tied head, its loss and
        # the embedding's gradient stay sharded by rows
        # (spmd-vocab-parallel).
        model = MiniGPT(vocab=1001, dim=16)
        opt = torch.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=0.1,
                                foreach=True)
        loss_fn = next_token_loss
    elif case == "transformer":
        model = TinyTransformer()
        opt = torch.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=0.01,
                                foreach=True)
        loss_fn = nn.CrossEntropyLoss()
    elif case == "sgd_options":
        model = MLP()
        opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.8,
                              dampening=0.3, weight_decay=0.01,
                              maximize=True, foreach=True)
        loss_fn = nn.MSELoss()
    elif case == "adam_options":
        model = MLP()
        opt = torch.optim.Adam(model.parameters(), lr=1e-2, betas=(0.8, 0.95),
                               eps=1e-6, weight_decay=0.01, amsgrad=True,
                               maximize=True, foreach=True)
        loss_fn = nn.MSELoss()
    elif case in ("adamw_amsgrad", "resume"):
        model = MLP()
        opt = torch.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=0.1,
                                amsgrad=True, foreach=True)
        loss_fn = nn.MSELoss()
    else:
        raise SystemExit(f"unknown case {case}")
    return model, opt, loss_fn


def autocast(kind):
    """torch.autocast on the CPU in `kind` ("bf16", "f16"), or nothing."""
    if kind is None:
        return contextlib.nullcontext()
    dtype = {"bf16": torch.bfloat16, "f16": torch.float16}[kind]
    return torch.autocast(device_type="cpu", dtype=dtype)


def clip(model, max_norm):
    """nanoGPT's gradient clipping between backward and the optimizer step
    (torch.nn.utils.clip_grad_norm_), when `max_norm` is set."""
    if max_norm is not None:
        torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)


def make_step(loss_fn, kind=None, max_norm=None):
    """The plain eager train step of every case (forward and loss under
    autocast when `kind` is set; gradients clipped to `max_norm`)."""
    def train_step(model, opt, x, y):
        with autocast(kind):
            loss = loss_fn(model(x), y)
        loss.backward()
        clip(model, max_norm)
        opt.step()
        opt.zero_grad()
        return loss
    return train_step


def full_state_diffs(model, opt, ref_model, ref_opt):
    """Max |difference| per tensor between a fully sharded model's and
    optimizer's whole state (spmd.full_state_dict) and eager's."""
    full, ofull = spmd.full_state_dict(model, opt)
    diffs = {}
    for k, v in ref_model.state_dict().items():
        if tuple(full[k].shape) != tuple(v.shape):
            raise SystemExit(f"full_state_dict: {k} has shape "
                             f"{list(full[k].shape)}, eager {list(v.shape)}")
        diffs[k] = (full[k].double() - v.double()).abs().max().item()
    for i, st in ref_opt.state_dict()["state"].items():
        for k, v in st.items():
            if isinstance(v, torch.Tensor):
                diffs[f"optimizer.{i}.{k}"] = (
                    ofull["state"][i][k].double() - v.double()
                ).abs().max().item()
    return diffs


def report_state_bytes(model, opt, ref_model, ref_opt, rank):
    """Parameters + optimizer state this rank holds, against one whole
    copy (what every rank holds when replicated)."""
    def size(m, o):
        total = sum(p.numel() * p.element_size() for p in m.parameters())
        for st in o.state.values():
            total += sum(v.numel() * v.element_size() for v in st.values()
                         if isinstance(v, torch.Tensor) and v.dim() >= 1)
        return total
    whole = size(ref_model, ref_opt)
    # The largest rank's share.
    most = spmd._runtime.all_ranks_max(size(model, opt))
    if rank == 0:
        print(f"state per rank: at most {most} of {whole} bytes "
              f"({most / whole:.3f} of replicated)")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("case")
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--tol", type=float, default=1e-5)
    parser.add_argument("--autocast", choices=["bf16", "f16"],
                        help="mixed precision: forward and loss under "
                        "torch.autocast, compiled and eager alike")
    parser.add_argument("--clip-grad-norm", type=float, default=None,
                        help="clip_grad_norm_(model.parameters(), MAX) "
                        "between backward and step, compiled and eager alike")
    parser.add_argument("--parallel-style", default="replicate",
                        choices=["replicate", "fully_shard"],
                        help="spmd.DataParallel(parallel_style=...); "
                        "fully_shard compares spmd.full_state_dict with "
                        "eager's state dicts")
    args = parser.parse_args()
    if args.case == "dropout":
        raise SystemExit("the dropout case draws its own masks; compare it "
                         "with random_check.py or on the GPU path")

    model, opt, loss_fn = setup(args.case)
    ref_model, ref_opt, _ = setup(args.case)  # same seed: same parameters

    mode = spmd.DataParallel(parallel_style=args.parallel_style)
    sharded = args.parallel_style == "fully_shard"
    train_step = spmd.compile(parallel_mode=mode)(
        make_step(loss_fn, args.autocast, args.clip_grad_norm))
    # After every step: the case's scheduler (or manual changes), on both
    # optimizers alike.
    after_step = []
    if args.case in SCHEDULED:
        make = SCHEDULED[args.case](model)[1]
        if make is None:
            after_step = [lambda step, o=o: manual_lr(o, step, args.case)
                          for o in (opt, ref_opt)]
        else:
            after_step = [lambda step, s=make(o): s.step()
                          for o in (opt, ref_opt)]

    def eager_step(x, y):
        with autocast(args.autocast):
            loss = loss_fn(ref_model(x), y)
        loss.backward()
        clip(ref_model, args.clip_grad_norm)
        ref_opt.step()
        ref_opt.zero_grad()
        return loss.detach()

    rank, world = spmd.rank(), spmd.world_size()
    gen = torch.Generator().manual_seed(1)
    if args.case == "resume":
        # Two eager steps first: the compiled step takes over parameters and
        # optimizer state (exp_avg, exp_avg_sq, max_exp_avg_sq, step) as
        # they are.
        for _ in range(2):
            x, y = data(args.case, gen)
            for m, o in ((model, opt), (ref_model, ref_opt)):
                loss_fn(m(x), y).backward()
                o.step()
                o.zero_grad()
    worst = 0.0
    for step in range(1, args.steps + 1):
        x, y = data(args.case, gen)
        local = GLOBAL_BATCH // world
        xs = x[rank * local:(rank + 1) * local]
        ys = y[rank * local:(rank + 1) * local]
        loss = train_step(model, opt, xs, ys)
        ref = eager_step(x, y)
        diffs = {"loss": (loss - ref).abs().max().item()}
        if sharded:
            diffs.update(full_state_diffs(model, opt, ref_model, ref_opt))
        for (n, p), rp in zip([] if sharded else model.named_parameters(),
                              ref_model.parameters()):
            diffs[n] = (p.detach() - rp.detach()).abs().max().item()
            st, rst = opt.state[p], ref_opt.state[rp]
            for k in rst:
                if isinstance(rst[k], torch.Tensor):
                    diffs[f"{n}.{k}"] = (st[k] - rst[k]).abs().max().item()
        for (n, b), rb in zip([] if sharded else model.named_buffers(),
                              ref_model.buffers()):
            diffs[n] = (b.double() - rb.double()).abs().max().item()
        name, diff = max(diffs.items(), key=lambda kv: kv[1])
        worst = max(worst, diff)
        if rank == 0:
            lr = opt.param_groups[0]["lr"]
            print(f"step {step}: loss {loss.item():.6f} eager "
                  f"{ref.item():.6f}; max |diff| {diff:.1e} ({name}, "
                  f"{len(diffs)} tensors); lr {lr:.4g}")
        for hook in after_step:
            hook(step)
    if any(True for _ in model.buffers()):
        # Evaluation with the running statistics, as a compiled step of its
        # own (eval() keys another program).
        model.eval()
        ref_model.eval()
        evaluate = spmd.compile(parallel_mode=mode)(
            lambda model, x: model(x))
        x, _ = data(args.case, gen)
        local = GLOBAL_BATCH // world
        got = evaluate(model, x[rank * local:(rank + 1) * local])
        diff = (got - ref_model(x).detach()).abs().max().item()
        worst = max(worst, diff)
        if rank == 0:
            print(f"eval: max |diff| {diff:.1e}")
    ok = worst <= args.tol
    # A process whose programs were all cached never loads torch-mlir's
    # importer (python/spmd/_import_cache.py). On a first run one rank may
    # find the import the other just cached: any rank's counts.
    loaded = not spmd._runtime.all_ranks_min_each(
        [int('torch_mlir.extras.fx_importer' not in sys.modules)])[0]
    if rank == 0:
        print(f"torch-mlir importer loaded: {loaded}")
        if after_step:
            # Changing float options never recompiles.
            print(f"programs compiled: {len(train_step.cache)}")
        if args.autocast:
            print(f"autocast {args.autocast}")
    if sharded:
        report_state_bytes(model, opt, ref_model, ref_opt, rank)
    if rank == 0:
        print(f"{args.case}: {'OK' if ok else 'MISMATCH'} max deviation "
              f"{worst:.1e} over {args.steps} steps on {world} ranks")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
