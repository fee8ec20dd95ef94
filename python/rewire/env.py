"""rewire's RL environment with Gymnasium's API (reset, step, terminated / truncated, info, action
masks), the way CompilerGym offers compiler optimisation.

    env = rewire.Env("xrlflow-bert", cost="analytic", horizon=20)
    obs, info = env.reset(seed=0)
    while True:
        action = env.action_space.sample(obs["action_mask"])
        obs, reward, terminated, truncated, info = env.step(action)
        if terminated or truncated:
            break
    print(info["verified"], env.current_model())

The state is the current graph; the actions are its candidate rewrites (every rule at every match,
deduplicated, at most ``max_candidates``) and a final No-Op, always the last action and always
allowed. Rewards (``reward``): "dense", the cost model's 100 * (RT_{t-1} - RT_t) / RT_0 every
step (any cost model of ``rewire.cost_models()``: analytic, learned, ort, e2e:ort, ...), or
"measured", 0 until the last step, which gets 100 * (M_0 - M_T) / M_0 from the end-to-end times
of the input and the final graph measured in ``runtime`` (ONNX Runtime by default). An episode
terminates on No-Op or when no rewrite is left, and is truncated at the horizon; its final graph
is then checked numerically against the input (``info["verified"]``).

Observations are dicts of numpy arrays:

    node_features      float32 [N, NODE_FEATURES]  op one-hot, fused activation, weight-only and
                       output flags, cost as % of the episode's initial cost (and its log)
    edge_index         int64 [2, E]   producer -> consumer, node indices
    edge_features      float32 [E, SHAPE_FEATURES]  the tensor's scale-free shape features
    edge_operand       int64 [E]      the consumer's operand position (4 for 4 and above)
    candidate_rule     int64 [C]      the rule of each candidate (index into rule_names())
    candidate_reward   float32 [C]    the reward taking it gives under the cost model
    candidate_added, candidate_removed   int64 [C]   nodes the rewrite adds and removes
    action_mask        int8 [C + 1]   1 where the action is allowed (the No-Op last)
    step_fraction      float          steps taken / horizon

Gymnasium itself is not a dependency (Debian does not package it); this class follows its API.
"""

import os

import numpy as np

from rewire import _core
from rewire.errors import InvalidArgumentError

NODE_FEATURES = _core.NODE_FEATURES
SHAPE_FEATURES = _core.SHAPE_FEATURES


class ActionSpace:
    """The current state's actions, as Gymnasium's Discrete(n) with a mask."""

    def __init__(self, n, seed=None):
        self.n = n
        self._rng = np.random.default_rng(seed)

    def seed(self, seed):
        self._rng = np.random.default_rng(seed)

    def contains(self, action):
        return 0 <= int(action) < self.n

    def sample(self, mask=None):
        """An allowed action drawn uniformly (all actions when no mask is given)."""
        if mask is None:
            return int(self._rng.integers(self.n))
        allowed = np.flatnonzero(np.asarray(mask))
        return int(self._rng.choice(allowed))

    def __repr__(self):
        return "ActionSpace({})".format(self.n)


class Env:
    """rewire's environment over one or several benchmarks (see the module's text).

    benchmarks      a model or a list: zoo names, .onnx paths, rewire.Model objects
    cost            the cost model of the dense reward and of the candidates' rewards
    reward          "dense" or "measured"
    horizon         steps per episode at most
    max_candidates  candidates per state at most
    rules           a rules file or folder (default: the rules rewire ships)
    runtime         where "measured" measures: "ort" or "reference"
    threads         threads of the cost model and the measuring runtime
    rtol            the final graph's tolerance against the input
    """

    metadata = {"render_modes": []}

    def __init__(self, benchmarks="xrlflow-bert", cost="analytic", reward="dense", horizon=20,
                 max_candidates=200, rules=None, runtime="ort", threads=1, rtol=1e-3):
        from rewire import Model, load
        if isinstance(benchmarks, (str, os.PathLike, Model)):
            benchmarks = [benchmarks]
        models = [b if isinstance(b, Model) else load(b) for b in benchmarks]
        config = _core.EnvConfig()
        config.rules = os.fspath(rules) if rules else ""
        config.cost = cost
        config.reward = reward
        config.runtime = runtime
        config.threads = threads
        config.horizon = horizon
        config.max_candidates = max_candidates
        config.rtol = rtol
        self._core_config = config
        self._core = _core.EnvCore(models, config)
        self._names = self._core.benchmark_names()
        self.action_space = ActionSpace(1)
        self.reward_range = (-float("inf"), float("inf"))

    @property
    def benchmarks(self):
        return list(self._names)

    @property
    def cost_model(self):
        return self._core.cost_name()

    def rule_names(self):
        """The rules, in the order candidate_rule indexes them."""
        return self._core.rule_names()

    def reset(self, seed=None, options=None):
        """Starts an episode; options={"benchmark": name or index} picks the benchmark (else one
        is drawn at random, seeded by ``seed``). Returns (observation, info)."""
        index = -1
        benchmark = (options or {}).get("benchmark")
        if benchmark is not None:
            if isinstance(benchmark, int):
                index = benchmark
            elif benchmark in self._names:
                index = self._names.index(benchmark)
            else:
                raise InvalidArgumentError("benchmark {!r} is not one of this environment's: {}"
                                           .format(benchmark, ", ".join(self._names)))
        obs = self._core.reset(index, seed)
        if seed is not None:
            self.action_space.seed(seed)
        self.action_space.n = len(obs["action_mask"])
        info = {"action_mask": obs["action_mask"], "initial_cost_ms": self._core.initial_cost_ms(),
                "benchmark": self._core.benchmark()}
        return obs, info

    def step(self, action):
        """Takes ``action`` (an index below action_space.n whose mask is 1). Returns
        (observation, reward, terminated, truncated, info); info has the rule taken, the costs,
        the step count, the next action mask and, at the episode's end, whether the final graph
        verified against the input."""
        obs, reward, terminated, truncated, info = self._core.step(int(action))
        self.action_space.n = len(obs["action_mask"])
        info["action_mask"] = obs["action_mask"]
        return obs, float(reward), bool(terminated), bool(truncated), info

    def action_names(self):
        """The current actions' names (rules; "no-op" last)."""
        return self._core.action_names()

    def current_model(self):
        """The current graph as a rewire.Model (save it, run it, summarise it)."""
        return self._core.current()

    def close(self):
        self._core = None


def make(id="rewire-v0", **kwargs):
    """Gymnasium's make for rewire's environment: make("rewire-v0", benchmarks=..., ...)."""
    if id != "rewire-v0":
        raise InvalidArgumentError("unknown environment {!r}: rewire offers 'rewire-v0'".format(id))
    return Env(**kwargs)
