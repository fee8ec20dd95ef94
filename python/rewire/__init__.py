"""rewire: a tensor-graph superoptimiser, from Python.

rewire rewrites a neural network's computation graph, with verified substitution rules, into an
equivalent graph that runs faster. This package is its C++ library (the one the ``rewire``
command runs) for Python::

    import rewire
    model = rewire.load("model.onnx", input_shape={"batch": 1})
    result = rewire.optimize(model, search="eqsat", runtime="ort")
    print(result.predicted_speedup, result.measured_speedup)
    result.model.save("model.opt.onnx")

Models load from a path, bytes, an ``onnx.ModelProto`` or a zoo name (``rewire.zoo_models()``).
``optimize`` takes every search and cost model of ``rewire.searches()`` and
``rewire.cost_models()``, or a Python callable as the cost model. Errors are ``rewire.Error``
(see ``rewire.errors``).
"""

import json
import os

from rewire import _core
from rewire.env import Env, make
from rewire.errors import (DataLossError, DeadlineExceededError, Error, InvalidArgumentError,
                           NotFoundError, ResourceExhaustedError, UnavailableError,
                           UnimplementedError)

__all__ = [
    "Model", "Result", "Env", "make", "load", "zoo_models", "optimize", "searches", "cost_models", "agents",
    "rules", "verify_rules", "import_taso_rules", "train", "evaluate", "train_builder", "Policy", "Run", "Error", "InvalidArgumentError",
    "NotFoundError", "UnimplementedError", "ResourceExhaustedError", "DeadlineExceededError",
    "UnavailableError", "DataLossError",
]

Model = _core.Model
Model.__doc__ = """A model's computation graph as rewire holds it.

    summary()          operators, parameters, structural hash, op counts, inputs and outputs
    to_bytes()         the model as ONNX bytes (``onnx.load_from_string`` reads them)
    to_onnx()          the model as an ``onnx.ModelProto`` (needs the onnx package)
    save(path, external_data=False)   write an ONNX file (weights to PATH.data with external_data)
    run(inputs, seed=1, threads=0)    outputs of rewire's reference executor, as numpy arrays, on
                       ``inputs`` (a dict of numpy arrays; random seeded inputs for the rest)
    num_operators(), hash(), label
"""


def _to_onnx(self):
    import onnx  # only for this conversion: the package itself does not need onnx
    return onnx.load_from_string(self.to_bytes())


Model.to_onnx = _to_onnx
Model.__repr__ = lambda self: "<rewire.Model {} ({} operators, hash {})>".format(
    self.label, self.num_operators(), self.hash())


def _input_shapes(input_shape):
    """{'x': (1, 3, 224, 224), 'batch': 1} or ['x=1x3x224x224'] -> ['NAME=DIMS', ...]."""
    if input_shape is None:
        return []
    if isinstance(input_shape, str):
        return [input_shape]
    if isinstance(input_shape, dict):
        out = []
        for name, dims in input_shape.items():
            if isinstance(dims, int):
                out.append("{}={}".format(name, dims))
            else:
                out.append("{}={}".format(name, "x".join(str(int(d)) for d in dims)))
        return out
    return [str(s) for s in input_shape]


def load(source, input_shape=None, **shape):
    """Loads a model.

    source       a path to an .onnx file (str or os.PathLike), the file's bytes, an
                 ``onnx.ModelProto``, or a zoo model's name (``rewire.zoo_models()``)
    input_shape  an ONNX model's dynamic axes fixed: {"x": (1, 3, 224, 224)} by graph input,
                 {"batch": 1} by symbolic dimension, or ["x=1x3x224x224", ...] as the CLI's
                 --input-shape takes them
    **shape      a zoo model's shape parameters: batch, image, seq_len, hidden, layers, heads, seed

    Raises rewire.Error (NotFoundError for a missing file or unknown model, InvalidArgumentError
    for a file or shape rewire cannot take).
    """
    shapes = _input_shapes(input_shape)
    label = "<bytes>"
    if hasattr(source, "SerializeToString") and hasattr(source, "graph"):
        source, label = source.SerializeToString(), "<onnx.ModelProto>"
    if isinstance(source, (bytes, bytearray, memoryview)):
        if shape:
            raise InvalidArgumentError("shape parameters apply to zoo models only")
        return _core.load_bytes(bytes(source), label, shapes)
    if isinstance(source, os.PathLike):
        source = os.fspath(source)
    if not isinstance(source, str):
        raise InvalidArgumentError(
            "rewire.load takes a path, bytes, an onnx.ModelProto or a zoo model's name, not " +
            type(source).__name__)
    if source.endswith(".onnx") or os.sep in source:
        if shape:
            raise InvalidArgumentError(
                "shape parameters ({}) apply to zoo models only; fix an ONNX file's dynamic axes "
                "with input_shape".format(", ".join(sorted(shape))))
        return _core.load_file(source, shapes)
    if shapes:
        raise InvalidArgumentError(
            "input_shape fixes an ONNX file's dynamic axes; zoo model '{}' takes shape "
            "parameters (batch=, seq_len=, ...)".format(source))
    return _core.zoo(source, shape)


def zoo_models():
    """The zoo's models: [{'name', 'description'}, ...]."""
    return _core.zoo_models()


class Result:
    """What ``optimize`` found.

    model              the optimised model (what the CLI would write; None when not verified)
    verified           the result matched the input numerically
    predicted_speedup  the cost model's initial / final cost
    measured_speedup   the runtime judge's paired speedup (None without a judge)
    decision           the judge's choice: "optimised" (the result is written) or "input"
                       (the input is written unchanged); None without a judge
    rewrites           the rules applied, in order
    report             the whole report as a dict (what `rewire optimize --report` writes)
    """

    def __init__(self, optimized):
        self.report = json.loads(optimized.report)
        self.verified = optimized.verified
        self.model = optimized.model if optimized.verified else None
        self.predicted_speedup = self.report.get("speedup")
        self.measured_speedup = self.report.get("runtime_speedup")
        self.decision = optimized.decision or None
        self.rewrites = [s["rule"] for s in self.report.get("steps", [])]

    def __repr__(self):
        measured = ("measured {:.3f}x in {}, kept: {}".format(
            self.measured_speedup, self.report["runtime"], self.decision)
                    if self.measured_speedup else "not measured")
        return "<rewire.Result {} {}: predicted {:.3f}x, {}, {} rewrites, verified {}>".format(
            self.report["model"], self.report["search"], self.predicted_speedup or 0, measured,
            len(self.rewrites), self.verified)


def optimize(model, search="greedy", cost="learned", runtime="ort", policy=None, rules=None,
             budget=100, time_limit=0.0, seed=0, inputs=None, rtol=1e-3, runtime_threads=1,
             cost_cache=None, measure_budget=-1, cost_name=None, **search_options):
    """Optimises ``model`` (a Model, or anything ``load`` takes) and verifies the result.

    search           a name of ``rewire.searches()`` (greedy, backtrack, eqsat, mcts-eqsat, rl,
                     guided, ...)
    cost             a name of ``rewire.cost_models()`` (learned, analytic, ort, e2e:ort, ...),
                     KIND:PROFILE, or a callable ``cost(model) -> milliseconds`` (a whole-graph
                     cost: each distinct graph costed once, memoised and, with ``cost_cache``,
                     kept in that SQLite cost cache under "python:<cost_name>")
    runtime          "ort" (ONNX Runtime judges the result: written only if it measures faster
                     there), "reference", or None / "none" (no judge)
    policy           a trained checkpoint for the searches that run the agent (rl, guided)
    rules            a rules file or folder (default: the rules rewire ships)
    budget, time_limit, seed   the limits every search shares
    inputs           verification (and judge) inputs by name, numpy arrays; random otherwise
    **search_options the search's own options by name (beam_width=4 for --beam-width 4); see
                     ``rewire.searches()``

    Returns a Result. Raises rewire.Error for what the CLI refuses (an unknown search or option,
    a cost model a search cannot take, a runtime that cannot start); an exception the cost
    callable raises is raised again as it was.
    """
    if not isinstance(model, Model):
        model = load(model)
    options = []
    if policy is not None:
        options.append(("policy", os.fspath(policy)))
    for name, value in search_options.items():
        if isinstance(value, bool):
            value = "true" if value else "false"
        options.append((name.replace("_", "-"), str(value)))
    cost_fn = None
    if callable(cost):
        cost_fn = cost
        cost_name = cost_name or getattr(cost, "__qualname__", None) or type(cost).__name__
        cost = ""
    elif not isinstance(cost, str):
        raise InvalidArgumentError("cost must be a cost model's name or a callable, not " +
                                   type(cost).__name__)
    return Result(_core.optimize(
        model=model, search=search, cost=cost, cost_fn=cost_fn, cost_name=cost_name or "",
        cost_cache=os.fspath(cost_cache) if cost_cache else "", measure_budget=measure_budget,
        runtime=runtime or "none", runtime_threads=runtime_threads,
        rules=os.fspath(rules) if rules else "", budget=budget, time_limit_s=time_limit,
        seed=seed, options=options, inputs=dict(inputs or {}), rtol=rtol))


def _toml(value):
    """A Python value as TOML text (what a --set override takes)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)  # a TOML basic string: JSON's escapes are TOML's
    if isinstance(value, os.PathLike):
        return json.dumps(os.fspath(value))
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join("{} = {}".format(k, _toml(v)) for k, v in value.items()) + "}"
    raise InvalidArgumentError("cannot write {!r} in a config".format(value))


def _config(config, overrides):
    """(path, ["section.key=value", ...]) from a config path or dict and overrides."""
    sets = []
    path = ""
    if isinstance(config, dict):
        for section, table in config.items():
            if not isinstance(table, dict):
                raise InvalidArgumentError(
                    "a config dict maps sections to tables ({{'run': {{'max_updates': 2}}}}); "
                    "'{}' is not a table".format(section))
            sets += ["{}.{}={}".format(section, k, _toml(v)) for k, v in table.items()]
    elif config is not None:
        path = os.fspath(config)
    if isinstance(overrides, dict):
        sets += ["{}={}".format(k, _toml(v)) for k, v in overrides.items()]
    elif overrides:
        sets += [str(o) for o in overrides]
    return path, sets


class Policy(os.PathLike):
    """A trained policy checkpoint, checked to be one a registered agent wrote; pass it as
    optimize(..., search="rl" or "guided", policy=it)."""

    def __init__(self, path):
        self.path = os.fspath(path)
        self.agent = _core.policy_agent(self.path)

    def __fspath__(self):
        return self.path

    def __repr__(self):
        return "<rewire.Policy {} ({})>".format(self.path, self.agent)


class Run:
    """A training run: its directory, its last checkpoint as a Policy and its metrics (the rows
    of metrics.jsonl, one per update)."""

    def __init__(self, run_dir):
        self.dir = run_dir
        self.checkpoint = os.path.join(run_dir, "checkpoints", "latest.pt")
        self.metrics = []
        path = os.path.join(run_dir, "metrics.jsonl")
        if os.path.exists(path):
            with open(path) as f:
                self.metrics = [json.loads(line) for line in f if line.strip()]

    @property
    def policy(self):
        return Policy(self.checkpoint)

    def __repr__(self):
        return "<rewire.Run {} ({} updates)>".format(self.dir, len(self.metrics))


def train(config=None, overrides=None, resume=False, quiet=True):
    """Trains an agent as a config says, in this process (`rewire train`): ``config`` is a TOML
    file's path or a dict of sections ({"run": {"dir": "runs/x", "max_updates": 5}, "env":
    {"models": ["xrlflow-bert"]}}), ``overrides`` a dict {"run.max_updates": 2} or a list of
    "section.key=value". Progress lines are printed unless ``quiet``. Returns a Run."""
    path, sets = _config(config, overrides)
    return Run(_core.train(path, sets, resume, quiet))


def evaluate(config=None, overrides=None, policy=None, quiet=True):
    """Evaluates a trained policy as the config's [eval] says (`rewire eval`): the policy's
    rollouts and guided search against the baselines, predicted and, with eval.runtime,
    measured. Returns the evaluation (RUN_DIR/eval.json) as a dict."""
    path, sets = _config(config, overrides)
    run_dir = _core.evaluate(path, sets, os.fspath(policy) if policy else "", quiet)
    with open(os.path.join(run_dir, "eval.json")) as f:
        return json.load(f)


def train_builder(models, out, cost="learned", rules=None, egraph_nodes=5000, epochs=12,
                  episodes=3, learning_rate=0.05, seed=0, init=None, quiet=True):
    """Trains the e-graph builder of ``search="learned-eqsat"`` (`rewire train-builder`) on
    ``models`` (Models, or anything ``load`` takes) under ``cost``, and writes its checkpoint to
    ``out``; ``init`` continues from a checkpoint. Progress lines are printed unless ``quiet``.
    Returns a dict: path, epochs (each epoch's sampled_saving, deterministic_saving, value_rms,
    seconds), best_epoch and best_saving (the epoch kept: its deterministic builds saved most),
    cost_model, models, seconds. Use it with ``optimize(model, search="learned-eqsat",
    builder=path)``."""
    if isinstance(models, (str, os.PathLike, Model)):
        models = [models]
    models = [m if isinstance(m, Model) else load(m) for m in models]
    return _core.train_builder(
        models=models, out=os.fspath(out), cost=cost, rules=os.fspath(rules) if rules else "",
        egraph_nodes=egraph_nodes, epochs=epochs, episodes=episodes,
        learning_rate=learning_rate, seed=seed, init=os.fspath(init) if init else "",
        quiet=quiet)


def searches():
    """Every registered search: [{'name', 'summary', 'options': [{'name', 'help', 'default',
    'choices', 'switch'}]}], from the registry the CLI uses."""
    return _core.searches()


def cost_models():
    """Every registered cost model: [{'name', 'summary'}]."""
    return _core.cost_models()


def agents():
    """Every registered agent (what `rewire train` trains): [{'name', 'summary'}]."""
    return _core.agents()


def rules(path=None):
    """The rules in a file or folder (default: those rewire ships), unverified:
    [{'name', 'rule_class', 'source_size', 'target_size', 'doc', 'file'}]."""
    return _core.rules(os.fspath(path) if path else "")


def verify_rules(path=None, rtol=1e-4, seed=1, trials=2):
    """Verifies every rule numerically: [{'name', 'passed', 'checks', 'max_rel_error',
    'failures'}]."""
    return _core.verify_rules(os.fspath(path) if path else "", rtol, seed, trials)


def import_taso_rules(path, out=None):
    """Converts TASO's substitutions (graph_subst.pb) into verified rewire rules; writes them to
    ``out`` when given. Returns {'total', 'converted', 'verified', 'refused_by_reason',
    'rules_text', 'rejected_text'}."""
    r = _core.import_taso_rules(os.fspath(path))
    if out:
        with open(out, "w") as f:
            f.write(r["rules_text"])
    return r
