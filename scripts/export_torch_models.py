#!/usr/bin/python3
"""Exports small PyTorch models to ONNX with torch.onnx.export, as inputs for experiments.

    /usr/bin/python3 scripts/export_torch_models.py [--out-dir runs/torch-onnx] [--opset 17]
        [--seed 0] [--models resnet18 gpt2 transformer] [--check build/cli/rewire]

Writes OUT_DIR/NAME.onnx for each model and prints the paths. Every model has random weights
(no download), is in eval mode, has one input of a fixed shape with batch 1, and is built right
after torch.manual_seed(SEED), so the same arguments write the same files. Models:

  resnet18     torchvision's resnet18 (weights=None): input [1, 3, 224, 224] -> [1, 1000].
  gpt2         a GPT-2-like decoder in plain torch: token ids [1, 32] (int64, vocabulary 1024),
               token + position embeddings, 2 pre-LN blocks (hidden 256, 4 heads, packed QKV
               projection, additive causal mask, tanh-GELU MLP 1024), final LayerNorm, a language
               model head tied to the token embeddings -> logits [1, 32, 1024].
  transformer  torch.nn.TransformerEncoder: 2 post-LN layers, d_model 256, 4 heads, feed-forward
               1024, ReLU, batch_first: input [1, 32, 256] -> [1, 32, 256].

Each file is checked with onnx.checker; --check REWIRE also runs `REWIRE show --model FILE` on it
(the ONNX import) and fails when that fails. All three import into rewire at opset 17 (torch 1.13:
the shape arithmetic of the reshapes, the position ids and the mask slice fold into constants).
Needs torch, torchvision and onnx: run it with /usr/bin/python3 (Debian's packages).
"""
import argparse
import math
import os
import subprocess
import sys

try:
    import onnx
    import torch
    import torchvision
except ImportError as e:
    sys.exit(f"missing python module: {e} (run with /usr/bin/python3)")


# The GPT-2-like decoder's shapes.
VOCAB, SEQ, HIDDEN, HEADS, LAYERS = 1024, 32, 256, 4, 2


class CausalSelfAttention(torch.nn.Module):
    """GPT-2's attention: one packed projection to Q, K and V, split on the last axis."""

    def __init__(self):
        super().__init__()
        self.c_attn = torch.nn.Linear(HIDDEN, 3 * HIDDEN)
        self.c_proj = torch.nn.Linear(HIDDEN, HIDDEN)
        self.head_size = HIDDEN // HEADS
        # Additive mask: 0 where the key is at or before the query, -1e4 after it.
        mask = torch.triu(torch.full((SEQ, SEQ), -1e4), diagonal=1)
        self.register_buffer("mask", mask)

    def forward(self, x):
        b, t, c = x.size()
        d = self.head_size  # a Python int: the scale stays a constant of the trace
        q, k, v = self.c_attn(x).split(c, dim=2)
        q = q.view(b, t, HEADS, d).transpose(1, 2)  # [B, h, T, d]
        k = k.view(b, t, HEADS, d).transpose(1, 2)
        v = v.view(b, t, HEADS, d).transpose(1, 2)
        scores = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(d)) + self.mask[:t, :t]
        y = torch.softmax(scores, dim=-1) @ v  # [B, h, T, d]
        return self.c_proj(y.transpose(1, 2).contiguous().view(b, t, c))


class Block(torch.nn.Module):
    """Pre-LN block: x + Attn(LN(x)), then x + MLP(LN(x)), the MLP with GELU's tanh form."""

    def __init__(self):
        super().__init__()
        self.ln_1 = torch.nn.LayerNorm(HIDDEN)
        self.attn = CausalSelfAttention()
        self.ln_2 = torch.nn.LayerNorm(HIDDEN)
        self.mlp = torch.nn.Sequential(torch.nn.Linear(HIDDEN, 4 * HIDDEN),
                                       torch.nn.GELU(approximate="tanh"),
                                       torch.nn.Linear(4 * HIDDEN, HIDDEN))

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class Gpt2(torch.nn.Module):
    """A GPT-2-like decoder on token ids [B, T], T <= SEQ; returns the logits [B, T, VOCAB]."""

    def __init__(self):
        super().__init__()
        self.wte = torch.nn.Embedding(VOCAB, HIDDEN)
        self.wpe = torch.nn.Embedding(SEQ, HIDDEN)
        self.blocks = torch.nn.ModuleList(Block() for _ in range(LAYERS))
        self.ln_f = torch.nn.LayerNorm(HIDDEN)
        self.lm_head = torch.nn.Linear(HIDDEN, VOCAB, bias=False)
        self.lm_head.weight = self.wte.weight  # tied, as in GPT-2

    def forward(self, ids):
        positions = torch.arange(ids.size(1), dtype=torch.long)
        x = self.wte(ids) + self.wpe(positions)
        for block in self.blocks:
            x = block(x)
        return self.lm_head(self.ln_f(x))


def build(name):
    """Returns (model, example input, input name, output name) for one of MODELS."""
    if name == "resnet18":
        return torchvision.models.resnet18(weights=None), torch.randn(1, 3, 224, 224), "input", \
            "output"
    if name == "gpt2":
        return Gpt2(), torch.randint(0, VOCAB, (1, SEQ)), "input_ids", "logits"
    if name == "transformer":
        layer = torch.nn.TransformerEncoderLayer(d_model=256, nhead=4, dim_feedforward=1024,
                                                 batch_first=True)
        return torch.nn.TransformerEncoder(layer, num_layers=2), torch.randn(1, 32, 256), "src", \
            "output"
    raise ValueError(name)


MODELS = ["resnet18", "gpt2", "transformer"]


def export(name, path, opset, seed):
    torch.manual_seed(seed)  # per model, so that one model's weights do not depend on the others
    model, example, input_name, output_name = build(name)
    model.eval()
    # Gradients stay enabled while exporting: with them off, TransformerEncoderLayer takes its
    # fused fast path (_transformer_encoder_layer_fwd), which has no ONNX export.
    torch.onnx.export(model, (example,), path, opset_version=opset, input_names=[input_name],
                      output_names=[output_name], do_constant_folding=True)
    onnx.checker.check_model(onnx.load(path))


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out-dir", default=os.path.join("runs", "torch-onnx"),
                        help="directory the .onnx files are written to (default: %(default)s)")
    parser.add_argument("--opset", type=int, default=17,
                        help="ONNX opset (default: %(default)s, what docs/onnx_coverage.md covers)")
    parser.add_argument("--seed", type=int, default=0,
                        help="torch.manual_seed before each model is built (default: %(default)s)")
    parser.add_argument("--models", nargs="+", choices=MODELS, default=MODELS,
                        help="models to export (default: all)")
    parser.add_argument("--check", metavar="REWIRE",
                        help="also import each file with `REWIRE show --model FILE`, e.g. "
                        "build/cli/rewire; fails when an import fails")
    args = parser.parse_args()

    os.makedirs(args.out_dir, exist_ok=True)
    failed = []
    for name in args.models:
        path = os.path.join(args.out_dir, name + ".onnx")
        export(name, path, args.opset, args.seed)
        print(path, flush=True)
        if args.check:
            p = subprocess.run([args.check, "show", "--model", path], stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True)
            if p.returncode != 0:
                print(f"rewire cannot import {path}:\n{p.stdout}", file=sys.stderr)
                failed.append(name)
    if failed:
        sys.exit("not imported: " + " ".join(failed))


if __name__ == "__main__":
    main()
