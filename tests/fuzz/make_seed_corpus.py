#!/usr/bin/python3
"""Writes a seed corpus of small ONNX models for onnx_import_fuzzer.

    /usr/bin/python3 tests/fuzz/make_seed_corpus.py REWIRE_BINARY OUT_DIR

Seeds: hand-written models (shape arithmetic to fold, opset 11 and 17 operand forms, auto_pad,
opaque ops), tiny torch.onnx.export models (CNN, TransformerEncoder; skipped without torch) and
small zoo models written by `rewire export` (ai.rewire ops, Constant nodes, aliasing outputs).
"""
import os
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def save(out_dir, name, model):
    with open(os.path.join(out_dir, name + ".onnx"), "wb") as f:
        f.write(model.SerializeToString())


def model(nodes, inputs, outputs, inits=(), opset=17):
    g = helper.make_graph(nodes, "seed", inputs, outputs, initializer=list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8 if opset >= 15 else 6
    return m


def f32(name, shape):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


def ints(name, values):
    return numpy_helper.from_array(np.array(values, dtype=np.int64), name)


def handwritten(out_dir):
    # torch.flatten's shape chain
    save(out_dir, "shape_chain", model(
        [helper.make_node("Shape", ["x"], ["s"]),
         helper.make_node("Constant", [], ["i0"], value=ints("", [0])),
         helper.make_node("Gather", ["s", "i0"], ["n"], axis=0),
         helper.make_node("Constant", [], ["m1"], value=ints("", [-1])),
         helper.make_node("Concat", ["n", "m1"], ["shape"], axis=0),
         helper.make_node("Reshape", ["x", "shape"], ["y"])],
        [f32("x", [2, 3, 4])], [f32("y", [2, 12])]))
    # masks from Range / Where / Expand / ConstantOfShape
    save(out_dir, "mask", model(
        [helper.make_node("Constant", [], ["a"], value=numpy_helper.from_array(np.array(0, np.int64))),
         helper.make_node("Constant", [], ["b"], value=numpy_helper.from_array(np.array(4, np.int64))),
         helper.make_node("Constant", [], ["c"], value=numpy_helper.from_array(np.array(1, np.int64))),
         helper.make_node("Range", ["a", "b", "c"], ["r"]),
         helper.make_node("Less", ["r", "c"], ["lt"]),
         helper.make_node("Constant", [], ["sh"], value=ints("", [4])),
         helper.make_node("ConstantOfShape", ["sh"], ["ones"],
                          value=numpy_helper.from_array(np.array([1.0], np.float32))),
         helper.make_node("Where", ["lt", "ones", "x"], ["y"])],
        [f32("x", [3, 4])], [f32("y", [3, 4])]))
    # opset 11 operand forms and an opaque op
    save(out_dir, "opset11", model(
        [helper.make_node("Squeeze", ["x"], ["sq"], axes=[1]),
         helper.make_node("Softmax", ["sq"], ["sm"], axis=1),
         helper.make_node("Unsqueeze", ["sm"], ["un"], axes=[0]),
         helper.make_node("ReduceSum", ["un"], ["rs"], axes=[-1], keepdims=0),
         helper.make_node("Clip", ["rs", "lo", "hi"], ["cl"]),
         helper.make_node("HardSigmoid", ["cl"], ["y"])],
        [f32("x", [2, 1, 3, 4])], [f32("y", [1, 2, 3])],
        [numpy_helper.from_array(np.array(0.1, np.float32), "lo"),
         numpy_helper.from_array(np.array(0.9, np.float32), "hi")], opset=11))
    # convolution and pooling with auto_pad, Pad, Slice, Split, Gather
    w = numpy_helper.from_array(np.random.RandomState(0).randn(4, 3, 3, 3).astype(np.float32), "w")
    save(out_dir, "conv", model(
        [helper.make_node("Conv", ["x", "w"], ["c"], auto_pad="SAME_UPPER", strides=[2, 2]),
         helper.make_node("MaxPool", ["c"], ["p"], kernel_shape=[2, 2], ceil_mode=1),
         helper.make_node("Pad", ["p", "pads"], ["pd"]),
         helper.make_node("Slice", ["pd", "st", "en", "ax"], ["sl"]),
         helper.make_node("Split", ["sl", "sp"], ["s0", "s1"], axis=1),
         helper.make_node("Gather", ["s1", "idx"], ["y"], axis=1)],
        [f32("x", [1, 3, 8, 8])], [f32("y", [1, 2, 4, 4])],
        [w, ints("pads", [0, 0, 0, 0, 0, 0, 1, 1]), ints("st", [0]), ints("en", [3]),
         ints("ax", [1]), ints("sp", [1, 2]), ints("idx", [1, 0])]))
    # rewire's own domain: a convolution with a fused activation, and Gelu
    g = helper.make_graph(
        [helper.make_node("Conv2D", ["x", "w"], ["c"], domain="ai.rewire", activation="relu",
                          pads=[1, 1, 1, 1], strides=[1, 1], dilations=[1, 1], group=1),
         helper.make_node("Gelu", ["c"], ["y"], domain="ai.rewire")],
        "seed", [f32("x", [1, 3, 8, 8])], [f32("y", [1, 4, 8, 8])], initializer=[w])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17),
                                            helper.make_opsetid("ai.rewire", 1)])
    m.ir_version = 8
    save(out_dir, "rewire_domain", m)


def torch_seeds(out_dir):
    try:
        import torch
    except ImportError:
        print("torch missing: no torch seeds", file=sys.stderr)
        return
    torch.manual_seed(0)
    cnn = torch.nn.Sequential(
        torch.nn.Conv2d(3, 4, 3, padding=1), torch.nn.BatchNorm2d(4), torch.nn.ReLU(),
        torch.nn.MaxPool2d(2), torch.nn.Conv2d(4, 4, 3, groups=2), torch.nn.Hardswish(),
        torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(4, 3)).eval()
    layer = torch.nn.TransformerEncoderLayer(d_model=8, nhead=2, dim_feedforward=16)
    encoder = torch.nn.TransformerEncoder(layer, num_layers=1).eval()
    for opset in (11, 17):
        torch.onnx.export(cnn, torch.randn(1, 3, 8, 8), os.path.join(out_dir, f"torch_cnn_{opset}.onnx"),
                          opset_version=opset)
        torch.onnx.export(encoder, torch.randn(4, 1, 8),
                          os.path.join(out_dir, f"torch_encoder_{opset}.onnx"), opset_version=opset)


def zoo_seeds(rewire, out_dir):
    tiny = ["--hidden", "16", "--heads", "2", "--layers", "1", "--seq-len", "4"]
    small = {"bert": tiny, "vit": tiny, "dalle": tiny, "tt": tiny, "nasrnn": ["--hidden", "8"]}
    for name, args in small.items():
        path = os.path.join(out_dir, f"zoo_{name}.onnx")
        r = subprocess.run([rewire, "export", "--model", name, "--out", path] + args,
                           capture_output=True, text=True)
        if r.returncode != 0 or os.path.getsize(path) > 200_000:
            print(f"skipping zoo seed {name}: {r.stderr.strip()}", file=sys.stderr)
            if os.path.exists(path):
                os.remove(path)


def main():
    if len(sys.argv) != 3:
        raise SystemExit(__doc__)
    rewire, out_dir = sys.argv[1], sys.argv[2]
    os.makedirs(out_dir, exist_ok=True)
    handwritten(out_dir)
    torch_seeds(out_dir)
    zoo_seeds(rewire, out_dir)
    for f in sorted(os.listdir(out_dir)):
        onnx.checker.check_model(os.path.join(out_dir, f))
        print(f, os.path.getsize(os.path.join(out_dir, f)))


if __name__ == "__main__":
    main()
