"""The Python package's API (python/rewire): every function, its errors as exceptions, and a cost
model written in Python, counted and cached. ctest runs it (tests/CMakeLists.txt) with Debian's
/usr/bin/python3 and build/python on PYTHONPATH.
"""
import json
import os
import re
import sys
import tempfile
import unittest

import numpy as np

import rewire

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def tiny_torch_export(path, dynamic=False):
    """A PyTorch MLP block exported with torch.onnx.export (batch axis dynamic if asked)."""
    import torch

    class Block(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.a = torch.nn.Linear(16, 32)
            self.b = torch.nn.Linear(16, 32)

        def forward(self, x):
            return torch.relu(self.a(x)) + torch.tanh(self.b(x))

    torch.manual_seed(0)
    kwargs = {"dynamic_axes": {"x": {0: "batch"}, "y": {0: "batch"}}} if dynamic else {}
    torch.onnx.export(Block().eval(), torch.randn(4, 16), path, input_names=["x"],
                      output_names=["y"], opset_version=17, **kwargs)


def rel_error(want_model, got_model, feed):
    """The largest difference between two models' one output on `feed`, relative to the first's
    largest value."""
    (name, want), = want_model.run(feed).items()
    got = got_model.run(feed)[name]
    return np.abs(got - want).max() / np.abs(want).max()


class Models(unittest.TestCase):
    def test_a_zoo_model_with_shape_parameters(self):
        m = rewire.load("bert", layers=1, seq_len=16)
        s = m.summary()
        self.assertEqual(s["label"], "bert")
        self.assertGreater(s["operators"], 5)
        self.assertGreater(s["parameters"], 1000000)
        self.assertTrue(s["hash"].startswith("0x"))
        self.assertEqual(s["inputs"][0]["shape"][1], 16)
        self.assertIn("MatMul", s["op_counts"])
        self.assertEqual(m.hash(), s["hash"])
        self.assertIn("bert", [z["name"] for z in rewire.zoo_models()])

    def test_path_bytes_and_model_proto_load_the_same_graph(self):
        import onnx
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "block.onnx")
            tiny_torch_export(path)
            from_path = rewire.load(path)
            with open(path, "rb") as f:
                from_bytes = rewire.load(f.read())
            from_proto = rewire.load(onnx.load(path))
            self.assertEqual(from_path.hash(), from_bytes.hash())
            self.assertEqual(from_path.hash(), from_proto.hash())
            # Written and read back: the same graph, and onnx's checker takes the file.
            out = os.path.join(d, "again.onnx")
            from_path.save(out)
            onnx.checker.check_model(out)
            self.assertEqual(rewire.load(out).hash(), from_path.hash())
            self.assertEqual(rewire.load(from_path.to_bytes()).hash(), from_path.hash())
            self.assertIsInstance(from_path.to_onnx(), onnx.ModelProto)
            # With external data the weights go beside the file.
            ext = os.path.join(d, "ext.onnx")
            from_path.save(ext, external_data=True)
            self.assertTrue(os.path.exists(ext + ".data"))
            self.assertEqual(rewire.load(ext).hash(), from_path.hash())

    def test_dynamic_axes_are_fixed_by_input_shape(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "dyn.onnx")
            tiny_torch_export(path, dynamic=True)
            with self.assertRaises(rewire.InvalidArgumentError) as e:
                rewire.load(path)
            self.assertIn("'batch'", str(e.exception))
            m = rewire.load(path, input_shape={"batch": 3})
            self.assertEqual(m.summary()["inputs"][0]["shape"], [3, 16])
            self.assertEqual(rewire.load(path, input_shape=["x=5x16"]).summary()["inputs"][0]
                             ["shape"], [5, 16])

    def test_run_gives_numpy_outputs_on_given_or_seeded_inputs(self):
        m = rewire.load("squeezenet", image=64)
        x = np.random.default_rng(0).standard_normal((1, 3, 64, 64)).astype(np.float32)
        a = m.run({"input": x})
        b = m.run({"input": x})
        (name,) = a.keys()
        self.assertEqual(a[name].dtype, np.float32)
        np.testing.assert_array_equal(a[name], b[name])
        self.assertEqual(m.run({}, seed=3)[name].shape, a[name].shape)
        with self.assertRaises(rewire.InvalidArgumentError):
            m.run({"input": x.astype(np.float64)})

    def test_load_errors_are_exceptions_that_say_what_to_fix(self):
        with self.assertRaises(rewire.NotFoundError) as e:
            rewire.load("bertt")
        self.assertIn("unknown model 'bertt'; the zoo has:", str(e.exception))
        self.assertIn("squeezenet", str(e.exception))
        with self.assertRaises(FileNotFoundError):
            rewire.load("/nonexistent/model.onnx")
        with self.assertRaises(ValueError) as e:
            rewire.load("bert", seq_lenn=3)
        self.assertIn("did you mean 'seq_len'", str(e.exception))
        with self.assertRaises(rewire.InvalidArgumentError):
            rewire.load(b"not a model")
        with self.assertRaises(rewire.InvalidArgumentError):
            rewire.load(12)
        with self.assertRaises(rewire.InvalidArgumentError):
            rewire.load("bert", input_shape={"batch": 1})


class Optimize(unittest.TestCase):
    def test_greedy_verified_with_its_report(self):
        m = rewire.load("squeezenet", image=64)
        r = rewire.optimize(m, search="greedy", cost="analytic", runtime=None, budget=20)
        self.assertTrue(r.verified)
        self.assertIsNotNone(r.model)
        self.assertGreaterEqual(r.predicted_speedup, 1.0)
        self.assertIsNone(r.measured_speedup)
        self.assertIsNone(r.decision)
        self.assertEqual(r.report["search"], "greedy")
        self.assertEqual(len(r.rewrites), len(r.report["steps"]))
        self.assertGreater(len(r.rewrites), 0)
        self.assertIn("greedy", repr(r))
        # The optimised model computes what the input does.
        x = np.random.default_rng(1).standard_normal((1, 3, 64, 64)).astype(np.float32)
        self.assertLess(rel_error(m, r.model, {"input": x}), 1e-3)

    def test_eqsat_judged_in_onnx_runtime(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "block.onnx")
            tiny_torch_export(path)
            r = rewire.optimize(path, search="eqsat", runtime="ort")
            self.assertTrue(r.verified)
            self.assertTrue(r.report["runtime"].startswith("ort"), r.report["runtime"])
            # The judge keeps the result only when it measures faster; either way it decides.
            self.assertIn(r.decision, ("optimised", "input"))
            self.assertGreater(r.measured_speedup, 0)
            # The saved file is plain ONNX: an activation fused into a Gemm is written as the
            # Gemm and its activation, so it reloads as a different graph that computes the same.
            out = os.path.join(d, "opt.onnx")
            r.model.save(out)
            x = np.random.default_rng(2).standard_normal((4, 16)).astype(np.float32)
            self.assertLess(rel_error(r.model, rewire.load(out), {"x": x}), 1e-5)

    def test_a_fused_result_saves_as_plain_onnx_that_computes_the_same(self):
        import onnx
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "block.onnx")
            tiny_torch_export(path)
            r = rewire.optimize(path, search="eqsat", cost="analytic", runtime=None)
            self.assertTrue(r.verified)
            counts = r.model.summary()["op_counts"]
            # eqsat fuses both activations into their Gemms under the analytic cost.
            self.assertNotIn("Relu", counts)
            self.assertNotIn("Tanh", counts)
            out = os.path.join(d, "opt.onnx")
            r.model.save(out)
            onnx.checker.check_model(onnx.load(out), full_check=True)
            ops = [n.op_type for n in onnx.load(out).graph.node]
            self.assertIn("Relu", ops)
            self.assertIn("Tanh", ops)
            x = np.random.default_rng(3).standard_normal((4, 16)).astype(np.float32)
            self.assertLess(rel_error(r.model, rewire.load(out), {"x": x}), 1e-5)

    def test_search_options_by_keyword(self):
        r = rewire.optimize("nasrnn", search="backtrack", cost="analytic", runtime=None,
                            budget=5, alpha=1.05)
        self.assertTrue(r.verified)
        self.assertEqual(r.report["search"], "backtrack")

    def test_errors_name_what_to_fix(self):
        m = rewire.load("nasrnn")
        with self.assertRaises(rewire.Error) as e:
            rewire.optimize(m, search="greedyy", cost="analytic", runtime=None)
        self.assertIn("greedy", str(e.exception))
        with self.assertRaises(ValueError) as e:
            rewire.optimize(m, search="greedy", cost="analytic", runtime=None, no_such_option=1)
        self.assertIn("no-such-option", str(e.exception))
        with self.assertRaises(rewire.Error):
            rewire.optimize(m, search="greedy", cost="no-such-cost", runtime=None)
        with self.assertRaises(rewire.InvalidArgumentError):
            rewire.optimize(m, search="greedy", cost=3, runtime=None)


class PythonCost(unittest.TestCase):
    def test_a_python_cost_model_is_called_once_per_graph_and_counted(self):
        calls = []

        def operators(model):
            calls.append(model.hash())
            return float(model.num_operators())

        m = rewire.load("squeezenet", image=32)
        r = rewire.optimize(m, search="greedy", cost=operators, runtime=None, budget=10)
        self.assertTrue(r.verified)
        self.assertTrue(r.report["cost_model"].startswith("python:"))
        self.assertGreater(len(calls), 1)
        # Each distinct graph once: no hash is costed twice.
        self.assertEqual(len(calls), len(set(calls)))
        self.assertEqual(r.report["measurements"]["measured"], len(calls))
        self.assertLessEqual(r.report["final_cost_ms"], r.report["initial_cost_ms"])

    def test_the_cost_cache_keeps_its_measurements_for_the_next_run(self):
        calls = []

        def timed(model):
            calls.append(1)
            return 1.0 + model.num_operators()

        with tempfile.TemporaryDirectory() as d:
            cache = os.path.join(d, "costs.sqlite")
            m = rewire.load("squeezenet", image=32)
            first = rewire.optimize(m, search="greedy", cost=timed, cost_name="ops+1",
                                    cost_cache=cache, runtime=None, budget=5)
            n = len(calls)
            self.assertGreater(n, 0)
            second = rewire.optimize(m, search="greedy", cost=timed, cost_name="ops+1",
                                     cost_cache=cache, runtime=None, budget=5)
            self.assertEqual(len(calls), n)  # nothing measured again
            self.assertEqual(second.report["measurements"]["measured"], 0)
            self.assertEqual(second.report["measurements"]["cache_hits"],
                             first.report["measurements"]["measured"])
            self.assertEqual(second.rewrites, first.rewrites)

    def test_the_budget_and_what_the_callable_raises(self):
        def failing(model):
            raise KeyError("the user's runtime is down")

        with self.assertRaises(KeyError) as e:
            rewire.optimize("nasrnn", search="greedy", cost=failing, runtime=None)
        self.assertIn("the user's runtime is down", str(e.exception))
        with self.assertRaises(rewire.InvalidArgumentError) as e:
            rewire.optimize("nasrnn", search="greedy", cost=lambda m: -1.0, runtime=None)
        self.assertIn("must return a cost of 0 or more", str(e.exception))
        calls = []
        r = rewire.optimize("nasrnn", search="greedy",
                            cost=lambda m: calls.append(1) or float(m.num_operators()),
                            measure_budget=2, runtime=None, budget=50)
        self.assertEqual(len(calls), 2)
        self.assertEqual(r.report["stop_reason"], "measurement budget")

    def test_searches_that_cost_operators_refuse_a_whole_graph_cost(self):
        with self.assertRaises(rewire.Error) as e:
            rewire.optimize("nasrnn", search="eqsat", cost=lambda m: 1.0, runtime=None)
        self.assertIn("python:", str(e.exception))


class Environment(unittest.TestCase):
    def test_an_episode_gives_the_cpp_environments_rewards_and_masks(self):
        model = rewire.load("xrlflow-bert")
        env = rewire.Env(model, cost="analytic", horizon=6)
        obs, info = env.reset(seed=0)
        self.assertEqual(info["benchmark"], "xrlflow-bert")
        actions, rewards, masks = [], [], []
        while True:
            n = len(obs["candidate_reward"])
            self.assertEqual(len(obs["action_mask"]), n + 1)
            self.assertEqual(obs["action_mask"][-1], 1)  # the No-Op, always allowed
            self.assertEqual(obs["node_features"].shape[1], rewire.env.NODE_FEATURES)
            self.assertLess(obs["edge_index"].max(), obs["node_features"].shape[0])
            self.assertEqual(obs["edge_features"].shape, (obs["edge_index"].shape[1],
                                                          rewire.env.SHAPE_FEATURES))
            self.assertEqual(len(env.action_names()), n + 1)
            # The second-best candidate by its immediate reward: not what greedy would take.
            order = np.argsort(-obs["candidate_reward"], kind="stable")
            action = int(order[1] if n > 1 else n)
            masks.append(obs["action_mask"].tolist())
            obs, reward, terminated, truncated, info = env.step(action)
            actions.append(action)
            rewards.append(reward)
            if terminated or truncated:
                break
        self.assertTrue(truncated)  # six rewrites: the horizon
        self.assertFalse(terminated)
        self.assertTrue(info["verified"])
        self.assertEqual(info["steps"], 6)
        played = rewire._core.play_episode(model, env._core_config, actions)
        self.assertEqual([p[0] for p in played], rewards)
        self.assertEqual([list(p[1]) for p in played], masks)
        self.assertEqual([p[2] for p in played], [False] * 5 + [True])
        self.assertAlmostEqual(sum(rewards), 100 * (info["initial_cost_ms"] - info["cost_ms"]) /
                               info["initial_cost_ms"], places=6)
        with self.assertRaises(rewire.InvalidArgumentError):
            env.step(0)  # the episode is over

    def test_no_op_terminates_and_bad_actions_are_refused(self):
        env = rewire.make("rewire-v0", benchmarks=["nasrnn", "squeezenet"], horizon=5)
        obs, info = env.reset(options={"benchmark": "squeezenet"})
        self.assertEqual(info["benchmark"], "squeezenet")
        with self.assertRaises(rewire.InvalidArgumentError):
            env.step(len(obs["action_mask"]))  # past the last action
        with self.assertRaises(rewire.InvalidArgumentError):
            env.step(-1)
        obs, reward, terminated, truncated, info = env.step(len(obs["action_mask"]) - 1)
        self.assertEqual((reward, terminated, truncated), (0.0, True, False))
        self.assertTrue(info["verified"])
        self.assertEqual(env.current_model().hash(), rewire.load("squeezenet").hash())
        with self.assertRaises(rewire.InvalidArgumentError):
            env.reset(options={"benchmark": "vgg19"})
        with self.assertRaises(rewire.InvalidArgumentError):
            rewire.make("llvm-v0")
        with self.assertRaises(rewire.InvalidArgumentError):
            rewire.Env("nasrnn", reward="sparse")
        # Random benchmarks, seeded: the same seed draws the same one.
        drawn = [env.reset(seed=s)[1]["benchmark"] for s in [3] + list(range(3, 20))]
        self.assertEqual(drawn[0], drawn[1])
        self.assertEqual(set(drawn), {"nasrnn", "squeezenet"})

    def test_the_measured_reward_comes_at_the_end(self):
        env = rewire.Env(rewire.load("squeezenet", image=32), reward="measured",
                         runtime="reference", horizon=3)
        obs, _ = env.reset(seed=0)
        rewards = []
        while True:
            action = int(np.argmax(obs["candidate_reward"]))
            obs, reward, terminated, truncated, info = env.step(action)
            rewards.append(reward)
            if terminated or truncated:
                break
        self.assertEqual(rewards[:-1], [0.0] * (len(rewards) - 1))
        m0, mt = info["measured_initial_ms"], info["measured_final_ms"]
        self.assertGreater(m0, 0)
        self.assertGreater(mt, 0)
        self.assertAlmostEqual(rewards[-1], 100 * (m0 - mt) / m0, places=6)


class Training(unittest.TestCase):
    def test_train_evaluate_and_the_policy_in_optimize(self):
        quickstart = os.path.join(ROOT, "configs", "quickstart.toml")
        with tempfile.TemporaryDirectory() as d:
            small = {"run.dir": d, "run.max_updates": 2, "env.horizon": 6,
                     "ppo.episodes_per_update": 2}
            run = rewire.train(quickstart, small)
            self.assertEqual(run.dir, d)
            self.assertEqual(len(run.metrics), 2)
            self.assertIn("update", run.metrics[-1])
            policy = run.policy
            self.assertEqual(policy.agent, "ppo-gnn")
            self.assertEqual(os.fspath(policy), os.path.join(d, "checkpoints", "latest.pt"))
            r = rewire.optimize("xrlflow-bert", search="rl", policy=policy, cost="analytic",
                                runtime=None)
            self.assertTrue(r.verified)
            self.assertEqual(r.report["search"], "rl")
            ev = rewire.evaluate(quickstart, dict(small, **{"eval.budget": 5, "eval.samples": 1,
                                                            "eval.baselines": ["greedy"]}))
            (row,) = ev["results"]
            self.assertEqual(row["model"], "xrlflow-bert")
            self.assertTrue(row["verified"])
            self.assertIn("greedy", row["baselines"])
            # Resumed from its checkpoint, the run goes on to its new max_updates.
            more = rewire.train(quickstart, dict(small, **{"run.max_updates": 3}), resume=True)
            self.assertEqual(len(more.metrics), 3)
            # A config as a dict: its errors name the key.
            with self.assertRaises(rewire.InvalidArgumentError) as e:
                rewire.train({"run": {"dir": d, "max_updates": 0}})
            self.assertIn("run.max_updates", str(e.exception))
            with self.assertRaises(rewire.InvalidArgumentError):
                rewire.train({"run": 3})
            with self.assertRaises(rewire.Error):
                rewire.Policy(quickstart)  # no checkpoint


class Builder(unittest.TestCase):
    def test_train_builder_and_learned_eqsat_with_its_checkpoint(self):
        with tempfile.TemporaryDirectory() as d:
            out = os.path.join(d, "builder.json")
            r = rewire.train_builder([rewire.load("nasrnn", hidden=64)], out, cost="analytic",
                                     egraph_nodes=1500, epochs=2, episodes=2, seed=3)
            self.assertEqual(r["path"], out)
            self.assertEqual([e["epoch"] for e in r["epochs"]], [1, 2])
            self.assertIn(r["best_epoch"], (1, 2))
            self.assertEqual(r["best_saving"],
                             max(e["deterministic_saving"] for e in r["epochs"]))
            self.assertEqual(len(r["models"]), 1)
            with open(out) as f:
                self.assertEqual(json.load(f)["best_epoch"], r["best_epoch"])
            res = rewire.optimize("nasrnn", search="learned-eqsat", builder=out, cost="analytic",
                                  runtime=None, egraph_nodes=1500)
            self.assertTrue(res.verified)
            self.assertEqual(res.report["search_stats"]["builder_trained_on"], "1 graphs, 2 epochs")
            with self.assertRaises(rewire.InvalidArgumentError):
                rewire.train_builder([], out)
            with self.assertRaises(rewire.Error):
                rewire.train_builder("nasrnn", out, init=os.path.join(d, "none.json"))


class Registries(unittest.TestCase):
    def test_every_case_class_is_a_ctest_entry(self):
        # tests/CMakeLists.txt names the classes ctest runs: a class left out would never run.
        with open(os.path.join(ROOT, "tests", "CMakeLists.txt")) as f:
            listed = re.search(r"foreach\(case ([A-Za-z ]+)\)", f.read()).group(1).split()
        here = [name for name, c in vars(sys.modules[__name__]).items()
                if isinstance(c, type) and issubclass(c, unittest.TestCase)]
        self.assertEqual(sorted(listed), sorted(here))

    def test_searches_cost_models_and_agents_come_from_the_registries(self):
        names = {s["name"]: s for s in rewire.searches()}
        for name in ("greedy", "backtrack", "eqsat", "mcts-eqsat", "rl", "guided"):
            self.assertIn(name, names)
        self.assertIn("alpha", [o["name"] for o in names["backtrack"]["options"]])
        self.assertTrue(all(s["summary"] for s in names.values()))
        costs = [c["name"] for c in rewire.cost_models()]
        for name in ("analytic", "learned", "e2e"):
            self.assertTrue(any(c.startswith(name) for c in costs), (name, costs))
        self.assertIn("ppo-gnn", [a["name"] for a in rewire.agents()])

    def test_rules_listed_and_verified(self):
        rules = rewire.rules()
        self.assertGreater(len(rules), 100)
        self.assertIn("conv_add_same_input", [r["name"] for r in rules])
        conv = os.path.join(ROOT, "configs", "rules", "conv.rules")
        checked = rewire.verify_rules(conv)
        self.assertEqual(len(checked), len(rewire.rules(conv)))
        self.assertTrue(all(r["passed"] for r in checked))
        self.assertTrue(all(r["checks"] >= 1 for r in checked))
        # A rule whose sides differ fails, naming its check line.
        with tempfile.TemporaryDirectory() as d:
            bad = os.path.join(d, "bad.rules")
            with open(bad, "w") as f:
                f.write('rule relu_is_tanh\n  class algebraic\n  doc "wrong"\n  source\n'
                        '    y = Relu(x)\n  target\n    z = Tanh(x)\n  outputs y -> z\n'
                        '  check x=[4,4]\n  check x=[2,3,5]\nend\n')
            (r,) = rewire.verify_rules(bad)
            self.assertFalse(r["passed"])
            self.assertIn("bad.rules:", r["failures"][0])
            with self.assertRaises(rewire.NotFoundError):
                rewire.rules(os.path.join(d, "missing.rules"))
            # Not TASO's rule collection: refused, saying what it is not.
            with self.assertRaises(rewire.Error):
                rewire.import_taso_rules(bad)

    def test_tasos_rules_are_imported_and_verified(self):
        """TASO's matmul merge (x @ A, x @ B => split(x @ concat(A, B))) written as TASO's
        graph_subst.pb does (the classes protoc makes of graph/rules/taso_rules.proto)."""
        import subprocess
        import sys
        with tempfile.TemporaryDirectory() as d:
            proto_dir = os.path.join(ROOT, "graph", "rules")
            subprocess.run(["protoc", "-I", proto_dir, "--python_out", d,
                            os.path.join(proto_dir, "taso_rules.proto")], check=True)
            sys.path.insert(0, d)
            try:
                import taso_rules_pb2 as pb
            finally:
                sys.path.remove(d)
            matmul, concat, split = 18, 12, 13  # TASO's OpType numbers
            acti, num_inputs, num_outputs, num_dim, axis = 9, 1, 2, 10, 11  # its parameters
            collection = pb.TasoRuleCollection()
            rule = collection.rule.add()

            def op(ops, kind, inputs, params):
                o = ops.add(type=kind)
                for src, out in inputs:
                    o.input.add(op=src, output=out)
                for k, v in params:
                    o.param.add(key=k, value=v)

            op(rule.source, matmul, [(-1, 0), (-4, 0)], [(acti, 0)])
            op(rule.source, matmul, [(-1, 0), (-5, 0)], [(acti, 0)])
            op(rule.target, concat, [(-4, 0), (-5, 0)], [(num_inputs, 2), (axis, 1), (num_dim, 2)])
            op(rule.target, matmul, [(-1, 0), (0, 0)], [(acti, 0)])
            op(rule.target, split, [(1, 0)], [(num_outputs, 2), (axis, 1)])
            rule.output.add(source_op=0, source_output=0, target_op=2, target_output=0)
            rule.output.add(source_op=1, source_output=0, target_op=2, target_output=1)
            path = os.path.join(d, "graph_subst.pb")
            with open(path, "wb") as f:
                f.write(collection.SerializeToString())
            out = os.path.join(d, "taso.rules")
            r = rewire.import_taso_rules(path, out=out)
            self.assertEqual((r["total"], r["converted"], r["verified"]), (1, 1, 1), r)
            (imported,) = rewire.rules(out)
            self.assertTrue(rewire.verify_rules(out)[0]["passed"])
            self.assertEqual(imported["source_size"], 2)


if __name__ == "__main__":
    unittest.main()
