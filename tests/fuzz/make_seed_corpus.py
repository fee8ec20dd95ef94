#!/usr/bin/python3
"""Writes the seed corpora of the fuzz targets (tests/fuzz/CMakeLists.txt, docs/fuzzing.md).

    /usr/bin/python3 tests/fuzz/make_seed_corpus.py BUILD_DIR OUT_DIR

BUILD_DIR is a normal build with tests (its `rewire` and make_message_seeds are used). Writes
one folder per target under OUT_DIR, and a libFuzzer dictionary for the text formats:

- onnx_import/: hand-written models (shape arithmetic to fold, opset 11 and 17 operand forms,
  auto_pad, opaque ops), tiny torch.onnx.export models (CNN, TransformerEncoder; skipped without
  torch) and small zoo models written by `rewire export` (ai.rewire ops, Constant nodes, aliasing
  outputs).
- config/ (+ config.dict): the shipped TOML files (training configs and device profiles,
  configs/**/*.toml), and some of them with --set overrides after NUL bytes (the config
  fuzzer's input format).
- rules/ (+ rules.dict): every rule (or foreach block) of the shipped hand-written rule files,
  one per seed, and every tenth generated rule.
- message/: encoded messages of every type, from make_message_seeds (real observations).
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


SOURCE_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

CONFIG_OVERRIDES = {
    "quickstart.toml": ["run.seed=3", 'env.models=[{name="bert", seq_len=64}, "vit:layers=2"]',
                        'eval.baselines=["greedy"]', "run.dir=/tmp/fuzz run", "ppo.gamma=1"],
    "distributed-local.toml": ["distributed.learners=1", "distributed.actors=0",
                               "distributed.bind=*", "run.device=cuda:1", "env.models=m.onnx"],
}


def write(path, data):
    with open(path, "wb") as f:
        f.write(data)


def onnx_seeds(rewire, out_dir):
    handwritten(out_dir)
    torch_seeds(out_dir)
    zoo_seeds(rewire, out_dir)
    for f in sorted(os.listdir(out_dir)):
        onnx.checker.check_model(os.path.join(out_dir, f))


def config_seeds(out_dir):
    configs = os.path.join(SOURCE_DIR, "configs")
    keys = set()
    for root, dirs, files in os.walk(configs):
        dirs[:] = sorted(d for d in dirs if d != "rules")
        for name in sorted(files):
            if not name.endswith(".toml"):
                continue
            with open(os.path.join(root, name), "rb") as f:
                text = f.read()
            label = os.path.relpath(os.path.join(root, name), configs).replace("/", "_")
            write(os.path.join(out_dir, label), text)
            overrides = CONFIG_OVERRIDES.get(label, [])
            if overrides:
                write(os.path.join(out_dir, label + ".set"),
                      text + b"".join(b"\0" + o.encode() for o in overrides))
            for line in text.decode().splitlines():
                line = line.strip()
                if line.startswith("["):
                    keys.add(line)
                elif "=" in line and not line.startswith("#"):
                    keys.add(line.split("=")[0].strip() + " = ")
    write(os.path.join(out_dir, "overrides_only"), b"\0gnn.hidden=32\0gnn.heads=4\0ppo.target_kl=-1")
    return sorted(keys) + ["\0", "run.", "env.", "gnn.", "ppo.", "eval.", "distributed.", "true",
                           "false", "inf", "nan", "1e-4", "[]", "{}", ".onnx", ":seq_len="]


def split_rules(text):
    """Top-level blocks of a rules file: each `rule ... end` and `foreach ... endforeach`."""
    blocks, current, depth = [], [], 0
    for line in text.splitlines(keepends=True):
        word = line.split()[0] if line.split() else ""
        if depth == 0 and word not in ("rule", "foreach"):
            continue
        current.append(line)
        if word in ("rule", "foreach") and not (word == "rule" and depth > 0):
            depth += 1
        elif word in ("end", "endforeach") and not (word == "end" and depth > 1):
            depth -= 1
            if depth == 0:
                blocks.append("".join(current))
                current = []
    return blocks


def rules_seeds(out_dir):
    rules_dir = os.path.join(SOURCE_DIR, "configs", "rules")
    words = set()
    for sub, every in (("", 1), ("taso", 1), ("generated", 10)):
        folder = os.path.join(rules_dir, sub)
        for name in sorted(os.listdir(folder)):
            if not name.endswith(".rules"):
                continue
            with open(os.path.join(folder, name)) as f:
                blocks = split_rules(f.read())
            for i, block in enumerate(blocks[::every]):
                write(os.path.join(out_dir, f"{sub or 'hand'}_{name[:-6]}_{i:03d}"), block.encode())
                for line in block.splitlines():
                    for token in line.replace("(", " ( ").replace(")", " ) ").replace(",", " ").split():
                        if token[:1].isalpha() and len(token) < 24:
                            words.add(token)
    with open(os.path.join(SOURCE_DIR, "graph", "ops.def")) as f:
        words.update(line[3:].split(",")[0] for line in f if line.startswith("OP("))
    return sorted(words) + ["->", "=[", "=+[", "*", ";", "==", "!=", "&&", "||"]


def message_seeds(build_dir, out_dir):
    tool = os.path.join(build_dir, "tests", "make_message_seeds")
    subprocess.run([tool, SOURCE_DIR, out_dir], check=True, stdout=subprocess.DEVNULL)


def write_dict(path, tokens):
    with open(path, "w") as f:
        for t in tokens:
            f.write('"' + "".join(c if c.isprintable() and c not in '"\\' else f"\\x{ord(c):02x}"
                                  for c in t) + '"\n')


def main():
    if len(sys.argv) != 3:
        raise SystemExit(__doc__)
    build_dir, out_dir = sys.argv[1], sys.argv[2]
    dirs = {name: os.path.join(out_dir, name)
            for name in ("onnx_import", "config", "rules", "message")}
    for d in dirs.values():
        os.makedirs(d, exist_ok=True)
    onnx_seeds(os.path.join(build_dir, "cli", "rewire"), dirs["onnx_import"])
    write_dict(os.path.join(out_dir, "config.dict"), config_seeds(dirs["config"]))
    write_dict(os.path.join(out_dir, "rules.dict"), rules_seeds(dirs["rules"]))
    message_seeds(build_dir, dirs["message"])
    for name, d in dirs.items():
        files = os.listdir(d)
        print(f"{name}: {len(files)} seeds, {sum(os.path.getsize(os.path.join(d, f)) for f in files)} bytes")


if __name__ == "__main__":
    main()
