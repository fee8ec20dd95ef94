"""A CleanRL-style PPO agent trained in Python on rewire's environment (rewire.Env).

    .venv/bin/python examples/ppo_env.py [--benchmark xrlflow-bert] [--updates 20] [--seed 1]

The policy scores each candidate rewrite from what the observation says of it (its rule, its
reward under the cost model, the nodes it adds and removes) and the No-Op from the step
fraction; the value reads the graph's mean node features. Actions are sampled from the masked
softmax. Each update plays `--episodes` episodes, then runs `--epochs` epochs of PPO's clipped
objective with GAE. Prints the mean episode return per update and, at the end, the first and the
last updates' returns beside a uniformly random policy's and greedy's (the largest immediate
reward each step).
"""
import argparse
import time

import numpy as np
import torch

import rewire


class Agent(torch.nn.Module):
    def __init__(self, num_rules, node_features, hidden=64):
        super().__init__()
        self.rule = torch.nn.Embedding(num_rules + 1, 16)  # + 1: actions that are no rule
        self.score = torch.nn.Sequential(torch.nn.Linear(16 + 4, hidden), torch.nn.Tanh(),
                                         torch.nn.Linear(hidden, 1))
        self.noop = torch.nn.Linear(1, 1)
        self.value = torch.nn.Sequential(torch.nn.Linear(node_features + 1, hidden),
                                         torch.nn.Tanh(), torch.nn.Linear(hidden, 1))

    def logits(self, obs):
        step = torch.tensor([[float(obs["step_fraction"])]])
        rules = torch.as_tensor(obs["candidate_rule"]) + 1
        feats = torch.stack([torch.as_tensor(obs["candidate_reward"]) / 10.0,
                             torch.as_tensor(obs["candidate_added"]).float() / 10.0,
                             torch.as_tensor(obs["candidate_removed"]).float() / 10.0,
                             step.expand(len(rules), 1)[:, 0]], dim=1)
        scores = self.score(torch.cat([self.rule(rules), feats], dim=1))[:, 0]
        logits = torch.cat([scores, self.noop(step)[0]])
        mask = torch.as_tensor(obs["action_mask"]).bool()
        return logits.masked_fill(~mask, -1e9)

    def state_value(self, obs):
        pooled = torch.as_tensor(obs["node_features"]).mean(dim=0)
        x = torch.cat([pooled, torch.tensor([float(obs["step_fraction"])])])
        return self.value(x)[0]


def play(env, choose, seed):
    """One episode; `choose(obs)` gives (action, log-prob, value). Returns its steps and return."""
    obs, _ = env.reset(seed=seed)
    steps, total = [], 0.0
    while True:
        action, logp, value = choose(obs)
        next_obs, reward, terminated, truncated, info = env.step(action)
        steps.append((obs, action, logp, value, reward, terminated))
        total += reward
        obs = next_obs
        if terminated or truncated:
            return steps, total, info


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--benchmark", default="xrlflow-bert")
    ap.add_argument("--cost", default="analytic")
    ap.add_argument("--horizon", type=int, default=10)
    ap.add_argument("--updates", type=int, default=20)
    ap.add_argument("--episodes", type=int, default=4)
    ap.add_argument("--epochs", type=int, default=4)
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--gamma", type=float, default=0.99)
    ap.add_argument("--gae-lambda", type=float, default=0.95)
    ap.add_argument("--clip", type=float, default=0.2)
    ap.add_argument("--entropy", type=float, default=0.01)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    torch.manual_seed(args.seed)
    torch.set_num_threads(1)
    env = rewire.Env(args.benchmark, cost=args.cost, horizon=args.horizon)
    agent = Agent(len(env.rule_names()), rewire.env.NODE_FEATURES)
    opt = torch.optim.Adam(agent.parameters(), lr=args.lr)
    start = time.time()

    rng = np.random.default_rng(args.seed)
    baseline = np.mean([play(env, lambda o: (int(rng.choice(np.flatnonzero(o["action_mask"]))),
                                             0.0, 0.0), args.seed + i)[1] for i in range(4)])
    greedy = play(env, lambda o: (int(np.argmax(np.append(o["candidate_reward"], 0.0))), 0.0, 0.0),
                  args.seed)[1]

    def sample(obs):
        with torch.no_grad():
            dist = torch.distributions.Categorical(logits=agent.logits(obs))
            a = dist.sample()
            return int(a), float(dist.log_prob(a)), float(agent.state_value(obs))

    returns = []
    for update in range(args.updates):
        batch, episode_returns = [], []
        for e in range(args.episodes):
            steps, total, info = play(env, sample, args.seed * 1000 + update * args.episodes + e)
            assert info["verified"], info
            episode_returns.append(total)
            # GAE over the episode (the value after its last step is 0: the episode is over or
            # truncated at a horizon the value's step fraction sees).
            adv, last = [0.0] * len(steps), 0.0
            for t in reversed(range(len(steps))):
                next_value = steps[t + 1][3] if t + 1 < len(steps) else 0.0
                delta = steps[t][4] + args.gamma * next_value - steps[t][3]
                last = delta + args.gamma * args.gae_lambda * last
                adv[t] = last
            for (obs, action, logp, value, _, _), a in zip(steps, adv):
                batch.append((obs, action, logp, a, a + value))
        advs = torch.tensor([b[3] for b in batch])
        advs = (advs - advs.mean()) / (advs.std() + 1e-8)
        for _ in range(args.epochs):
            for i in torch.randperm(len(batch)).split(16):
                loss = 0.0
                for j in i.tolist():
                    obs, action, old_logp, _, ret = batch[j]
                    dist = torch.distributions.Categorical(logits=agent.logits(obs))
                    ratio = torch.exp(dist.log_prob(torch.tensor(action)) - old_logp)
                    pg = -torch.min(ratio * advs[j],
                                    torch.clamp(ratio, 1 - args.clip, 1 + args.clip) * advs[j])
                    v = 0.5 * (agent.state_value(obs) - ret) ** 2 / 100.0
                    loss = loss + pg + v - args.entropy * dist.entropy()
                opt.zero_grad()
                (loss / len(i)).backward()
                torch.nn.utils.clip_grad_norm_(agent.parameters(), 0.5)
                opt.step()
        returns.append(float(np.mean(episode_returns)))
        print(f"update {update + 1:3d}  mean return {returns[-1]:7.2f}  "
              f"({time.time() - start:5.1f} s)", flush=True)
    k = max(1, min(3, len(returns) // 3))
    print(f"mean return: first {k} updates {np.mean(returns[:k]):.2f}, last {k} "
          f"{np.mean(returns[-k:]):.2f}; uniform random {baseline:.2f}, greedy {greedy:.2f}; "
          f"{time.time() - start:.0f} s")


if __name__ == "__main__":
    main()
