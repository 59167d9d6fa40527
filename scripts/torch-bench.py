#!/usr/bin/env python3
"""PyTorch eager baseline for lossgen's benchmark table (repo issue 22).

For each workload it computes the same formulas as the generated kernel (docs/SEMANTICS.md:
TorchRL v0.11's ClipPPOLoss, GAE's loop form, IQLLoss) in torch eager float32 on one thread
(torch.set_num_threads(1)):

  forward           the loss outputs under torch.no_grad(), as the kernel's Forward;
  forward+backward  the outputs with autograd on, then backward() of the sum of the loss_*
                    outputs w.r.t. the inputs in the package's Grads, as ForwardBackward.

Before timing a workload it checks its formulas: it draws a small instance of the same spec,
writes it as .npz, runs `lossgen eval -backend ref -grad -dims ...` (lossgen's float64
reference interpreter) and requires every output and gradient to agree within --tol
(max |torch − ref| over max(|ref|), per array). Then it times --rounds rounds of each call at
the workload's size (forward and forward+backward alternating, each at least --round-time
seconds of calls a round) and prints the median ns per batch element.

Usage (from the repository root; python3-torch 1.13 and numpy):
  scripts/torch-bench.py                          every workload at the table's size
  scripts/torch-bench.py -w clipppo-64k,gae-1k    some workloads
  scripts/torch-bench.py -w clipppo-16m --dims clipppo-16m=B=1048576
                                                  a workload at other dims
  scripts/torch-bench.py --quick                  every workload at a smaller stand-in size
  scripts/torch-bench.py --list                   the workloads, as JSON
  scripts/torch-bench.py --json                   results as JSON (scripts/bench-table)
The large workloads (clipppo-16m, clipppogae-4k) take several GB of memory.
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

# The workloads of the issue-22 table: the spec (relative to the repository root), the dims
# it runs at (quick_dims: --quick's smaller stand-in, a few hundred MB at most), the formulas
# (kind) and the small dims of the correctness check.
WORKLOADS = [
    {"name": "clipppo-64k", "label": "ClipPPO flat", "kind": "clipppo",
     "spec": "spec/examples/clip_ppo.yaml", "dims": "B=65536", "quick_dims": "B=65536", "check_dims": "B=1000"},
    {"name": "clipppo-16m", "label": "ClipPPO flat", "kind": "clipppo",
     "spec": "spec/examples/clip_ppo.yaml", "dims": "B=16777216", "quick_dims": "B=1048576", "check_dims": "B=1000"},
    {"name": "gae-1k", "label": "GAE", "kind": "gae",
     "spec": "bench/specs/gae_f32.yaml", "dims": "N=1024,T=1024", "quick_dims": "N=256,T=1024", "check_dims": "N=8,T=50"},
    {"name": "clipppogae-4k", "label": "ClipPPO+GAE", "kind": "clipppogae",
     "spec": "spec/examples/clip_ppo_gae.yaml", "dims": "N=4096,T=4096", "quick_dims": "N=1024,T=1024", "check_dims": "N=8,T=50"},
    {"name": "clipppocat-1m", "label": "ClipPPO categorical", "kind": "clipppocat",
     "spec": "bench/specs/clip_ppo_categorical_flat.yaml", "dims": "B=1048576,A=16", "quick_dims": "B=131072,A=16", "check_dims": "B=1000,A=16"},
    {"name": "iql-1m", "label": "IQL", "kind": "iql",
     "spec": "spec/examples/iql.yaml", "dims": "Q=2,B=1048576", "quick_dims": "Q=2,B=131072", "check_dims": "Q=2,B=1000"},
]

# Hyper-parameters, as the specs above set them.
CLIP_EPS = 0.2
ENTROPY_COEFF = 0.01
GAMMA, LMBDA = 0.99, 0.95
IQL_TEMPERATURE, IQL_EXPECTILE = 3.0, 0.5


def parse_dims(s):
    """"N=16,T=256" -> {"N": 16, "T": 256}."""
    out = {}
    for part in s.split(","):
        name, _, size = part.partition("=")
        out[name.strip()] = int(size)
    return out


# ---------------------------------------------------------------------------------------
# Inputs: random data of each workload's shapes (float32; flags with P(true) = 0.05).

def draw_inputs(torch, kind, dims, seed):
    g = torch.Generator().manual_seed(seed)

    def u(*shape, lo=-1.0, hi=1.0):
        return torch.rand(*shape, generator=g) * (hi - lo) + lo

    def flag(*shape):
        return torch.rand(*shape, generator=g) < 0.05

    if kind == "clipppo":
        b = dims["B"]
        lp = u(b, lo=-2.0, hi=-0.5)
        return {"advantage": u(b), "log_prob": lp, "sample_log_prob": lp + u(b, lo=-0.3, hi=0.3),
                "entropy": u(b, lo=0.5, hi=1.5), "value_target": u(b), "state_value": u(b),
                "old_state_value": u(b)}
    if kind in ("gae", "clipppogae"):
        n, t = dims["N"], dims["T"]
        ins = {"next.reward": u(n, t), "state_value": u(n, t), "next.state_value": u(n, t),
               "next.terminated": flag(n, t), "next.done": flag(n, t)}
        ins["next.done"] |= ins["next.terminated"]  # terminated implies done
        if kind == "clipppogae":
            lp = u(n, t, lo=-2.0, hi=-0.5)
            ins.update({"log_prob": lp, "sample_log_prob": lp + u(n, t, lo=-0.3, hi=0.3),
                        "entropy": u(n, t, lo=0.5, hi=1.5)})
        return ins
    if kind == "clipppocat":
        b, a = dims["B"], dims["A"]
        logits = u(b, a, lo=-2.0, hi=2.0)
        action = torch.randint(0, a, (b,), generator=g)
        lp = torch.log_softmax(logits, -1).gather(-1, action[:, None]).squeeze(-1)
        return {"advantage": u(b), "logits": logits, "action": action,
                "sample_log_prob": lp + u(b, lo=-0.3, hi=0.3), "value_target": u(b), "state_value": u(b)}
    if kind == "iql":
        q, b = dims["Q"], dims["B"]
        return {"next.reward": u(b), "next.terminated": flag(b), "state_value": u(b),
                "next.state_value": u(b), "state_action_value": u(q, b),
                "target_state_action_value": u(q, b), "log_prob": u(b, lo=-2.0, hi=0.0)}
    raise ValueError(kind)


# Inputs that get gradients (the package's Grads), per kind.
GRADS = {
    "clipppo": ["log_prob", "entropy", "state_value"],
    "gae": [],
    "clipppogae": ["state_value", "log_prob", "entropy"],
    "clipppocat": ["state_value", "logits"],
    "iql": ["state_value", "state_action_value", "log_prob"],
}


# ---------------------------------------------------------------------------------------
# The formulas (docs/SEMANTICS.md section numbers in the comments).

def clip_objective(torch, lp, lp_old, adv):
    """ClipPPOLoss's objective and its logs (§2.3): per-element loss, clip_fraction, the
    log weight."""
    lw = lp - lp_old
    lwc = lw.clamp(torch.log1p(torch.tensor(-CLIP_EPS)).item(), torch.log1p(torch.tensor(CLIP_EPS)).item())
    gain1 = lw.exp() * adv
    gain2 = lwc.exp() * adv
    # TorchRL stacks the gains and takes the min: a tie sends the gradient to gain1.
    gain = torch.stack([gain1, gain2], -1).min(dim=-1).values
    clip_fraction = (lwc != lw).float().mean()
    return -gain, clip_fraction, lw


def ess(torch, lw):
    """ESS (§2.3.6): (Σw)²/Σw² along dim 0, reduced by mean, over the first batch extent."""
    e = (2 * torch.logsumexp(lw, 0) - torch.logsumexp(2 * lw, 0)).exp()
    return e.mean() / lw.shape[0]


def explained_variance(torch, y, v):
    """1 − Var₀(y − V)/(Var₀(y) + eps) along dim 0, biased variances (§1.5)."""
    eps = torch.finfo(y.dtype).eps
    return 1 - (y - v).var(0, unbiased=False) / (y.var(0, unbiased=False) + eps)


def smooth_l1(torch, a, b):
    return torch.nn.functional.smooth_l1_loss(a, b, reduction="none")


def gae_loop(torch, r, v, v_next, terminated, done):
    """GAE's loop form (§3.5), time last: A_t = δ_t + γλ(1 − d_t)·A_{t+1}, as TorchRL's
    generalized_advantage_estimate; value_target = A + V. v and v_next carry no gradient.
    The loop runs on time-major copies, so that each step reads contiguous memory: TorchRL
    indexes [..., t, :] of [N, T, 1], a stride-T gather per step, which at [4096, 4096]
    makes the loop many times slower than the copies cost (the copies are timed too)."""
    r, v_t, v_next = r.t().contiguous(), v.t().contiguous(), v_next.t().contiguous()
    not_term = (~terminated).t().to(r.dtype).contiguous()
    not_done = (~done).t().to(r.dtype).contiguous()
    adv = torch.empty_like(r)
    prev = torch.zeros_like(r[0])
    for t in reversed(range(r.shape[0])):
        delta = r[t] + GAMMA * v_next[t] * not_term[t] - v_t[t]
        prev = delta + GAMMA * LMBDA * prev * not_done[t]
        adv[t] = prev
    adv = adv.t().contiguous()
    return adv, adv + v


def standardize(torch, x, eps):
    """(x − mean)/max(std, eps), unbiased std over every element (§1.3)."""
    return (x - x.mean()) / x.std().clamp_min(eps)


def forward(torch, kind, x):
    """The kernel's outputs, by name; the loss_* among them are what backward sums."""
    if kind == "clipppo":
        # ClipPPOLoss(normalize_advantage=True, clip_value=True (δ = ε), loss_critic_type="l2").
        adv = standardize(torch, x["advantage"], 1e-6)
        obj, clip_fraction, lw = clip_objective(torch, x["log_prob"], x["sample_log_prob"], adv)
        h = x["entropy"]
        v, v_old, y = x["state_value"], x["old_state_value"], x["value_target"]
        d = v - v_old
        dc = d.clamp(-CLIP_EPS, CLIP_EPS)
        lc = (y - (v_old + dc)) ** 2
        lu = (y - v) ** 2
        return {
            "loss_objective": obj.mean(),
            "clip_fraction": clip_fraction,
            "kl_approx": (x["sample_log_prob"] - x["log_prob"]).mean().detach(),
            "entropy": h.mean().detach(),
            "loss_entropy": (-ENTROPY_COEFF * h).mean(),
            "value_clip_fraction": (dc != d).float().mean(),
            "loss_critic": torch.maximum(lu, lc).mean(),  # maximum: a tie splits the gradient
            "explained_variance": explained_variance(torch, y, v.detach()),
            "ESS": ess(torch, lw.detach()),
        }
    if kind == "gae":
        # GAE(gamma=0.99, lmbda=0.95, average_gae=True): the standardisation floors std at 1e-4.
        adv, target = gae_loop(torch, x["next.reward"], x["state_value"], x["next.state_value"],
                               x["next.terminated"], x["next.done"])
        return {"advantage": standardize(torch, adv, 1e-4), "value_target": target}
    if kind == "clipppogae":
        # ClipPPOLoss(entropy_coeff=0.01, loss_critic_type="smooth_l1") with GAE computed in
        # forward from the detached critic output.
        v = x["state_value"]
        adv, y = gae_loop(torch, x["next.reward"], v.detach(), x["next.state_value"],
                          x["next.terminated"], x["next.done"])
        obj, clip_fraction, lw = clip_objective(torch, x["log_prob"], x["sample_log_prob"], adv)
        h = x["entropy"]
        return {
            "advantage": adv, "value_target": y,
            "loss_objective": obj.mean(),
            "clip_fraction": clip_fraction,
            "kl_approx": (x["sample_log_prob"] - x["log_prob"]).mean().detach(),
            "entropy": h.mean().detach(),
            "loss_entropy": (-ENTROPY_COEFF * h).mean(),
            "loss_critic": smooth_l1(torch, y, v).mean(),
            "explained_variance": explained_variance(torch, y, v.detach()),
            "ESS": ess(torch, lw.detach()),
        }
    if kind == "clipppocat":
        # ClipPPOLoss(entropy_coeff=0.01) with a Categorical actor over the logits (§1.8):
        # TorchRL's defaults otherwise (smooth_l1 critic, no normalisation, no value clip).
        dist = torch.distributions.Categorical(logits=x["logits"], validate_args=False)
        lp = dist.log_prob(x["action"])
        h = dist.entropy()
        obj, clip_fraction, lw = clip_objective(torch, lp, x["sample_log_prob"], x["advantage"])
        v, y = x["state_value"], x["value_target"]
        return {
            "loss_objective": obj.mean(),
            "clip_fraction": clip_fraction,
            "kl_approx": (x["sample_log_prob"] - lp).mean().detach(),
            "entropy": h.mean().detach(),
            "loss_entropy": (-ENTROPY_COEFF * h).mean(),
            "loss_critic": smooth_l1(torch, y, v).mean(),
            "explained_variance": explained_variance(torch, y, v.detach()),
            "ESS": ess(torch, lw.detach()),
        }
    if kind == "iql":
        # IQLLoss(num_qvalue_nets=2, temperature=3.0, expectile=0.5, loss_function="smooth_l1")
        # with its TD(0) target, γ = 0.99 (§4.2).
        q, qt, v, lp = x["state_action_value"], x["target_state_action_value"], x["state_value"], x["log_prob"]
        y = x["next.reward"] + GAMMA * (~x["next.terminated"]).to(q.dtype) * x["next.state_value"]
        m = qt.min(0).values
        w = (IQL_TEMPERATURE * (m - v.detach())).exp().clamp_max(100.0)
        u = m - v
        weight = (IQL_EXPECTILE - (u <= 0).to(u.dtype)).abs()
        return {
            "advantage": (y - v).detach(), "value_target": y,
            "loss_actor": (-w * lp).mean(),
            "loss_qvalue": smooth_l1(torch, q, y.expand_as(q)).sum(0).mean(),
            "loss_value": (weight * u ** 2).mean(),
            "entropy": (-lp).mean().detach(),
            "td_error": ((q - y) ** 2).max(0).values.detach(),
        }
    raise ValueError(kind)


def forward_backward(torch, kind, x):
    """forward with autograd, then backward of the sum of the loss_* outputs; the gradients
    land in the inputs' .grad."""
    out = forward(torch, kind, x)
    sum(v for k, v in out.items() if k.startswith("loss_")).backward()
    return out


def leaves(torch, kind, inputs):
    """inputs with the Grads inputs as fresh leaves that require grad."""
    x = dict(inputs)
    for k in GRADS[kind]:
        x[k] = inputs[k].detach().clone().requires_grad_(True)
    return x


# ---------------------------------------------------------------------------------------
# The check against lossgen's reference interpreter.

def check(torch, np, w, lossgen, tol):
    """Runs w's formulas and `lossgen eval -backend ref -grad` on a small instance; returns
    the largest relative error and the array it was in. Raises when one exceeds tol."""
    kind, dims = w["kind"], parse_dims(w["check_dims"])
    inputs = draw_inputs(torch, kind, dims, seed=1)
    grad = bool(GRADS[kind])
    with tempfile.TemporaryDirectory(prefix="torch-bench-") as d:
        inp, outp = os.path.join(d, "in.npz"), os.path.join(d, "out.npz")
        np.savez(inp, **{k: v.numpy() for k, v in inputs.items()})
        cmd = lossgen + ["eval", "-backend", "ref", "-spec", w["spec"], "-dims", w["check_dims"], "-in", inp, "-out", outp]
        if grad:
            cmd.append("-grad")
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)}: exit {r.returncode}\n{r.stdout}{r.stderr}")
        ref = dict(np.load(outp))
    x = leaves(torch, kind, inputs)
    if grad:
        out = forward_backward(torch, kind, x)
        for k in GRADS[kind]:
            out["grad." + k] = x[k].grad
    else:
        with torch.no_grad():
            out = forward(torch, kind, x)
    worst, where = 0.0, ""
    for name, want in sorted(ref.items()):
        if name not in out:
            raise RuntimeError(f"{w['name']}: lossgen eval wrote {name}, which torch-bench does not compute")
        got = out[name].detach().double().numpy().reshape(want.shape)
        scale = float(np.abs(want).max()) if want.size else 0.0
        err = float(np.abs(got - want).max()) / (scale if scale > 0 else 1.0) if want.size else 0.0
        if not err <= tol:  # NaN fails too
            raise RuntimeError(f"{w['name']}: {name} differs from lossgen's reference by {err:.3g} of its largest element (tolerance {tol:g})")
        if err >= worst:
            worst, where = err, name
    missing = set(out) - set(ref)
    if missing:
        raise RuntimeError(f"{w['name']}: lossgen eval did not write {sorted(missing)}")
    return worst, where


# ---------------------------------------------------------------------------------------
# Timing.

def time_calls(fns, rounds, round_time):
    """Median over rounds of the mean seconds per call of each of fns (name -> function),
    after one untimed warm-up call each. Each round runs every function in turn for at least
    round_time seconds (and at least once), so that a change in the machine's load between
    rounds falls on all of them alike."""
    for fn in fns.values():
        fn()
    per_call = {name: [] for name in fns}
    for _ in range(rounds):
        for name, fn in fns.items():
            n, start = 0, time.perf_counter()
            while True:
                fn()
                n += 1
                el = time.perf_counter() - start
                if el >= round_time:
                    break
            per_call[name].append(el / n)
    return {name: statistics.median(ts) for name, ts in per_call.items()}


def bench(torch, w, dims_s, rounds, round_time):
    """Median ns per batch element of w's forward and, with gradients, forward+backward."""
    kind, dims = w["kind"], parse_dims(dims_s)
    inputs = draw_inputs(torch, kind, dims, seed=3)
    elements = dims["B"] if "B" in dims else dims["N"] * dims["T"]

    def fwd():
        with torch.no_grad():
            forward(torch, kind, inputs)

    fns = {"forward_ns_per_element": fwd}
    if GRADS[kind]:
        x = leaves(torch, kind, inputs)

        def fb():
            for k in GRADS[kind]:
                x[k].grad = None
            forward_backward(torch, kind, x)

        fns["forward_backward_ns_per_element"] = fb
    return {name: sec * 1e9 / elements for name, sec in time_calls(fns, rounds, round_time).items()}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], epilog=__doc__.split("\n\n", 1)[1],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-w", "--workloads", default="", help="comma-separated workload names (default: all; see --list)")
    ap.add_argument("--dims", action="append", default=[], metavar="NAME=DIMS",
                    help="run workload NAME at DIMS instead of its own, e.g. clipppo-16m=B=1048576 (repeatable)")
    ap.add_argument("--quick", action="store_true", help="run each workload at its quick_dims (see --list), a smaller stand-in")
    ap.add_argument("--rounds", type=int, default=6, help="timed rounds per call; the median is reported (default 6)")
    ap.add_argument("--round-time", type=float, default=0.5, help="seconds of calls per round, at least (default 0.5)")
    ap.add_argument("--tol", type=float, default=1e-5, help="largest error against lossgen's reference, relative to each array's largest element (default 1e-5)")
    ap.add_argument("--lossgen", default="", help="lossgen command (default: build ./cmd/lossgen into a temporary directory)")
    ap.add_argument("--no-check", action="store_true", help="skip the check against lossgen eval")
    ap.add_argument("--threads", type=int, default=1, help="torch.set_num_threads (default 1)")
    ap.add_argument("--json", action="store_true", help="print the results as a JSON array")
    ap.add_argument("--list", action="store_true", help="print the workloads as JSON and exit")
    a = ap.parse_args()

    if a.list:
        json.dump(WORKLOADS, sys.stdout, indent=2)
        print()
        return 0
    by_name = {w["name"]: w for w in WORKLOADS}
    names = [n for n in a.workloads.split(",") if n] or [w["name"] for w in WORKLOADS]
    for n in names:
        if n not in by_name:
            ap.error(f"unknown workload {n!r} (known: {', '.join(by_name)})")
    sizes = {}
    for d in a.dims:
        n, _, dims = d.partition("=")
        if n not in by_name or not dims:
            ap.error(f"--dims {d!r}: want NAME=DIMS with NAME one of {', '.join(by_name)}")
        sizes[n] = dims

    import numpy as np
    import torch
    torch.set_num_threads(a.threads)

    tmp = None
    lossgen = a.lossgen.split() if a.lossgen else None
    if lossgen is None and not a.no_check:
        tmp = tempfile.mkdtemp(prefix="torch-bench-lossgen-")
        subprocess.run(["go", "build", "-o", os.path.join(tmp, "lossgen"), "./cmd/lossgen"], check=True)
        lossgen = [os.path.join(tmp, "lossgen")]
    results = []
    try:
        for n in names:
            w = by_name[n]
            r = {"name": n, "label": w["label"], "spec": w["spec"],
                 "dims": sizes.get(n, w["quick_dims"] if a.quick else w["dims"]),
                 "torch": torch.__version__, "threads": a.threads}
            if not a.no_check:
                r["check_error"], r["check_worst"] = check(torch, np, w, lossgen, a.tol)
                what = "outputs and gradients" if GRADS[w["kind"]] else "outputs"
                print(f"torch-bench: {n}: {what} equal lossgen eval's reference at {w['check_dims']} "
                      f"within {r['check_error']:.2g} ({r['check_worst']})", file=sys.stderr)
            r.update(bench(torch, w, r["dims"], a.rounds, a.round_time))
            results.append(r)
            if not a.json:
                fb = r.get("forward_backward_ns_per_element")
                print(f"{w['label']:<20} {r['dims']:<16} F {r['forward_ns_per_element']:9.2f} ns/element"
                      + (f"   FB {fb:9.2f} ns/element" if fb else "   FB –"), flush=True)
    finally:
        if tmp:
            shutil.rmtree(tmp)
    if a.json:
        json.dump(results, sys.stdout, indent=2)
        print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
