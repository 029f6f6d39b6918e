"""Hugging Face `transformers` models nobody here wrote, at tiny sizes with
random weights and dropout 0, with their default attention
(`attn_implementation="sdpa"`): GPT-2 (causal LM, a bool causal-mask
buffer), Llama (grouped-query attention, rotary embeddings, RMSNorm) and
BERT (masked LM, a padding mask). spmd.compile vs eager single-process
training over the global batch, AdamW, a few steps; prints the largest
deviation, and how many attention ops the compiled program holds.

    mpirun -np N python3 hf_models_check.py gpt2|llama|bert [--steps S]
"""

import argparse
import glob
import os
import tempfile

import torch
import transformers

import spmd

VOCAB, ROWS, LENGTH = 64, 8, 12


def build(kind):
    if kind == "gpt2":
        cfg = transformers.GPT2Config(
            n_layer=2, n_head=4, n_embd=32, vocab_size=VOCAB, n_positions=16,
            resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0)
        return transformers.GPT2LMHeadModel(cfg)
    if kind == "llama":
        cfg = transformers.LlamaConfig(
            num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
            hidden_size=32, intermediate_size=64, vocab_size=VOCAB,
            max_position_embeddings=16)
        return transformers.LlamaForCausalLM(cfg)
    cfg = transformers.BertConfig(
        num_hidden_layers=2, num_attention_heads=4, hidden_size=32,
        intermediate_size=64, vocab_size=VOCAB, max_position_embeddings=16,
        hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    return transformers.BertForMaskedLM(cfg)


def step(model, opt, ids, mask):
    out = model(input_ids=ids, attention_mask=mask, labels=ids)
    out.loss.backward()
    opt.step()
    opt.zero_grad()
    return out.loss


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("kind", choices=["gpt2", "llama", "bert"])
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--tol", type=float, default=1e-5)
    args = ap.parse_args()
    torch.manual_seed(0)
    model = build(args.kind)
    torch.manual_seed(0)
    ref = build(args.kind)
    impl = model.config._attn_implementation
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    ref_opt = torch.optim.AdamW(ref.parameters(), lr=1e-3)
    gen = torch.Generator().manual_seed(1)
    ids = torch.randint(0, VOCAB, (ROWS, LENGTH), generator=gen)
    mask = torch.ones(ROWS, LENGTH, dtype=torch.long)
    if args.kind == "bert":
        mask[::2, 9:] = 0  # padded rows

    rank, world = spmd.rank(), spmd.world_size()
    local = slice(rank * ROWS // world, (rank + 1) * ROWS // world)
    dump = tempfile.mkdtemp(prefix="hf-dump-")
    os.environ["SPMD_DUMP"] = dump
    compiled = spmd.compile()(step)
    worst = 0.0
    for _ in range(args.steps):
        loss = compiled(model, opt, ids[local], mask[local])
        want = step(ref, ref_opt, ids, mask)
        worst = max(worst, abs(loss.item() - want.item()))
        for p, r in zip(model.parameters(), ref.parameters()):
            worst = max(worst, (p.detach() - r.detach()).abs().max().item())
    ops = sum(open(f).read().count('"spmd.attention')
              for f in glob.glob(f"{dump}/*/global.mlir"))
    if rank == 0:
        ok = worst < args.tol
        print(f"{args.kind}: {'OK' if ok else 'BAD'} max deviation "
              f"{worst:.1e} over {args.steps} steps on {world} ranks; "
              f"attention {impl}, {ops} attention ops")


if __name__ == "__main__":
    main()
