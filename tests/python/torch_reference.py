#!/usr/bin/python3
"""Exports a PyTorch model to ONNX together with a random input and PyTorch's output.

Used by tests/cli/torch_reference_test.cc (and by hand for docs/onnx_coverage.md):

    /usr/bin/python3 tests/python/torch_reference.py --model resnet50 --out-dir DIR

writes DIR/model.onnx, DIR/input.npy, DIR/expected/<output name>.npy and DIR/meta.txt with one
line "input <name>" and one line "output <name>" per graph output. Models: any torchvision
classification model by its constructor name (random init, weights=None), or "transformer"
(a 2-layer torch.nn.TransformerEncoder). Weights are random, the model is in eval mode, the seed
is fixed. Exit status 3 when torch, torchvision or onnx is missing.
"""
import argparse
import os
import sys

try:
    import numpy as np
    import onnx
    import torch
    import torchvision
except ImportError as e:  # the caller skips the test
    print(f"missing python module: {e}", file=sys.stderr)
    sys.exit(3)


def randomize_batchnorm(model: torch.nn.Module) -> None:
    """torchvision's init leaves BatchNorm at mean 0 / var 1 / scale 1 / shift 0, which hides
    folding mistakes. Give every BatchNorm non-trivial statistics and affine parameters."""
    for m in model.modules():
        if isinstance(m, torch.nn.modules.batchnorm._BatchNorm):
            with torch.no_grad():
                m.running_mean.uniform_(-0.5, 0.5)
                m.running_var.uniform_(0.5, 1.5)
                if m.affine:
                    m.weight.uniform_(0.5, 1.5)
                    m.bias.uniform_(-0.5, 0.5)


def build(name: str):
    """Returns (model, example input, input name)."""
    if name == "transformer":
        layer = torch.nn.TransformerEncoderLayer(d_model=64, nhead=4, dim_feedforward=128,
                                                 dropout=0.1)
        model = torch.nn.TransformerEncoder(layer, num_layers=2)
        # The encoder deep-copies one layer, and biases start at zero and norm scales at one;
        # make every parameter distinct and non-trivial.
        with torch.no_grad():
            for pname, p in model.named_parameters():
                if "norm" in pname and pname.endswith("weight"):
                    p.uniform_(0.5, 1.5)
                else:
                    p.uniform_(-0.3, 0.3)
        # (sequence, batch, features), batch_first=False
        return model, torch.randn(16, 2, 64), "src"
    ctor = getattr(torchvision.models, name, None)
    if ctor is None:
        raise SystemExit(f"unknown model {name!r}")
    kwargs = {"weights": None}
    if name in ("inception_v3", "googlenet"):
        kwargs["aux_logits"] = False
        kwargs["init_weights"] = True
    size = 299 if name == "inception_v3" else 224
    model = ctor(**kwargs)
    randomize_batchnorm(model)
    # Some heads start at zero (ViT's classifier), which would make every output zero.
    with torch.no_grad():
        for p in model.parameters():
            if p.dim() >= 2 and not p.any():
                p.normal_(0.0, 0.02)
    return model, torch.randn(1, 3, size, size), "input"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True)
    parser.add_argument("--out-dir", required=True)
    parser.add_argument("--opset", type=int, default=17)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    torch.manual_seed(args.seed)
    np.random.seed(args.seed)
    model, example, input_name = build(args.model)
    model.eval()

    os.makedirs(os.path.join(args.out_dir, "expected"), exist_ok=True)
    path = os.path.join(args.out_dir, "model.onnx")
    # Gradients stay enabled while exporting: with them off, TransformerEncoderLayer takes its
    # fused fast path (_transformer_encoder_layer_fwd), which has no ONNX export.
    torch.onnx.export(model, (example,), path, opset_version=args.opset,
                      input_names=[input_name], do_constant_folding=True)
    exported = onnx.load(path)
    onnx.checker.check_model(exported)
    output_names = [o.name for o in exported.graph.output]

    with torch.no_grad():
        result = model(example)
    results = result if isinstance(result, (tuple, list)) else [result]
    if len(results) != len(output_names):
        raise SystemExit(f"{len(results)} torch outputs but {len(output_names)} ONNX outputs")

    np.save(os.path.join(args.out_dir, "input.npy"), example.numpy().astype(np.float32))
    with open(os.path.join(args.out_dir, "meta.txt"), "w") as meta:
        meta.write(f"input {input_name}\n")
        for name, value in zip(output_names, results):
            np.save(os.path.join(args.out_dir, "expected", name + ".npy"),
                    value.detach().numpy().astype(np.float32))
            meta.write(f"output {name}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
