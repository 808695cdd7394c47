#!/usr/bin/env python3
"""Peer benchmark: replayssm's decode against the public kernels, in one process on one GPU.

    python bench/peers.py --out DIR [--batch 1,8,64,512] [--models qwen3-next,kimi-linear]

Kernels (each skipped, with the reason printed, when its package is missing):
  rs-packed, rs-replay   replayssm through its Python binding (replayssm.ops), V-first state
                         [slots, HV, V, K], ring bf16 of L = 16 entries (replay)
  fla                    fla-core's fused_recurrent_gated_delta_rule (GDN) and fused_recurrent_kda
                         (KDA), state K-first [.., K, V] and V-first (state_v_first=True)
  sgl-packed             SGLang's packed decode (fused qkv row, V-first state pool, in place)
  sgl-replay             SGLang's ReplaySSM decode (checkpoint + d/k/g ring caches, write position)

Method (as the project's CLI bench): Qwen3-Next GDN (H=16, HV=32) and Kimi-Linear KDA (H=HV=32),
K=V=128, f32 state, bf16 q/k/v and raw gate inputs a, b (every kernel evaluates the gates and
beta itself, as the engines' fused decode does), q/k L2-normalised inside. One step
is one call per layer over NL distinct layers whose states total at least --working-set-mib (so
no state stays in L2), captured once in a CUDA graph (replay: plus the one cursor move per step
that the layers share), replayed a multiple of L times (whole ring cycles; rows start at staggered
cursors, row i at i mod L). Times are per layer call, best of --repeat.
Slot order: "seq" rows use slots 0..B-1 of a pool of 2B slots; "rnd" a random sample of B slots in
random order (as a serving pool has). FLA's GDN entry takes no slot indices (its states are the
rows' own contiguous [B, ...] tensors): "contig". FLA's KDA entry takes ssm_state_indices (the
in-place form engines call): seq and rnd.
err: the largest |o - o_ref| over max |o_ref| of 2L + 5 decode steps at B = 4 from the same random
state and inputs, against the float64 recurrence of replayssm.reference; these runs take float32
q, k, v and o (of bf16 values), so that the error is the kernel's and not o's bf16 rounding.

Writes peers.csv, peers.txt (the tables) and peers.png (us against B, one line per kernel) in
--out. The peers' code is imported from their installed packages at run time.
"""
from __future__ import annotations

import argparse
import csv
import datetime
import math
import os
import subprocess
import sys
import time

import numpy as np
import torch

import replayssm as rs
from replayssm import ops
from replayssm import reference as ref

MODELS = {"qwen3-next": ("gdn", 16, 32), "kimi-linear": ("kda", 32, 32)}
K = V = 128
L = 16
ERR_B, ERR_T = 4, 2 * L + 5
DEV = "cuda"  # the error runs also work on "cpu" (replayssm's CPU back end), for a check without a GPU


# ---- inputs ------------------------------------------------------------------------------------


def make_inputs(gate, B, H, HV, T, gen, io=torch.bfloat16):
    """Token inputs on the GPU as the models' projections give them, in dtype io (bf16 values
    either way): q, k [B, T, H, K], v [B, T, HV, V], the raw gate inputs a (GDN [B, T, HV], KDA
    [B, T, HV, K]; N(0, 1) clipped to [-3, 3]) and b [B, T, HV] (N(0, 1)); and float32 A_log [HV]
    and dt_bias (GDN [HV], KDA [HV, K]) as Qwen3-Next and Kimi-Linear initialise them: A =
    exp(A_log) in [1, 16], softplus(dt_bias) log-uniform in [1e-3, 0.1]. Every kernel evaluates
    g = -exp(A_log) softplus(a + dt_bias) and beta = sigmoid(b) itself."""
    dev = DEV
    gk = (HV, K) if gate == "kda" else (HV,)

    def bf(*shape):
        return torch.randn(*shape, generator=gen, device=dev).bfloat16().to(io)

    x = dict(q=bf(B, T, H, K), k=bf(B, T, H, K), v=bf(B, T, HV, V),
             a=torch.randn(B, T, *gk, generator=gen, device=dev).clamp(-3, 3).bfloat16().to(io), b=bf(B, T, HV))
    x["A_log"] = torch.log(1 + 15 * torch.rand(HV, generator=gen, device=dev, dtype=torch.float64)).float()
    dt0 = torch.exp(math.log(1e-3) + torch.rand(gk, generator=gen, device=dev, dtype=torch.float64) *
                    (math.log(1e-1) - math.log(1e-3)))
    x["dt_bias"] = torch.log(torch.expm1(dt0)).float()
    return x


def token(x, t):
    """Token t of every per-token input ([B, 1, ...]); the per-layer parameters as they are."""
    return {n: (v[:, t:t + 1].contiguous() if v.dim() >= 3 else v) for n, v in x.items()}


def slot_rows(B, order, gen):
    """The rows' slots in a pool of 2B: the first B in order, or B of them in random order."""
    if order == "rnd":
        idx = torch.randperm(2 * B, generator=gen, device=DEV)[:B]
    else:
        idx = torch.arange(B, device=DEV)
    return idx.to(torch.int32)


# ---- kernels -----------------------------------------------------------------------------------


class Kernel:
    """One kernel under test. make(gate, H, HV, B, nl, order, gen) returns (step, cycle): step()
    enqueues one decode step of all nl layers on the current stream; cycle: steps per timing unit.
    run_steps(gate, H, HV, S0, inputs) runs T steps of one layer from S0 [B, HV, V, K] (float64
    numpy) and returns the outputs [B, T, HV, V] as float64 numpy."""

    name = ""
    orders = ("seq", "rnd")
    layout = "vfirst"


class ReplaySSM(Kernel):
    def __init__(self, replay, switches=None):
        self.replay = replay
        self.name = "rs-replay" if replay else "rs-packed"
        self.ctx = rs.Context(DEV, **(switches or {}))

    def layer(self, gate, H, HV, io="bf16"):
        return rs.Layer(gate=gate, H=H, HV=HV, K=K, V=V, ring_len=L, state_dtype="f32", ring_dtype="bf16",
                        io_dtype=io)

    def make(self, gate, H, HV, B, nl, order, gen):
        ly = self.layer(gate, H, HV)
        slot = slot_rows(B, order, gen)
        states, cursor = [], None
        for _ in range(nl):
            st = rs.State.allocate(ly, 2 * B, self.ctx, ring=self.replay, cursor=cursor)
            cursor = st.cursor if self.replay else None
            states.append(st)
        if self.replay:  # staggered rows: row i at cursor i mod L
            cursor[slot.long()] = (torch.arange(B, device=DEV) % L).to(torch.int32)
        ins = [make_inputs(gate, B, H, HV, 1, gen) for _ in range(nl)]
        outs = [torch.empty(B, 1, HV, V, dtype=torch.bfloat16, device=DEV) for _ in range(nl)]
        fn = ops.decode_replay if self.replay else ops.decode_packed

        def step():
            for st, x, o in zip(states, ins, outs):
                fn(self.ctx, ly, st, x["q"], x["k"], x["v"], x["a"], x["b"], x["A_log"], x["dt_bias"], slot=slot, out=o)
            if self.replay:
                ops.advance(self.ctx, ly, states[0], slot)

        return step, L if self.replay else 1

    def run_steps(self, gate, H, HV, S0, x):
        ly = self.layer(gate, H, HV, "f32")
        B, T = x["q"].shape[:2]
        st = rs.State.allocate(ly, B, self.ctx, ring=self.replay)
        if isinstance(st.checkpoint, torch.Tensor):
            st.checkpoint.copy_(torch.from_numpy(S0).float())
        else:  # a host context's numpy state
            st.checkpoint[...] = S0
        slot = torch.arange(B, device=DEV, dtype=torch.int32)
        out = []
        for t in range(T):
            xt = token(x, t)
            fn = ops.decode_replay if self.replay else ops.decode_packed
            out.append(fn(self.ctx, ly, st, xt["q"], xt["k"], xt["v"], xt["a"], xt["b"], xt["A_log"], xt["dt_bias"],
                          slot=slot))
            if self.replay:
                ops.advance(self.ctx, ly, st, slot)
        return torch.cat(out, 1).double().cpu().numpy()


class FLA(Kernel):
    """fla-core's fused_recurrent kernels; layout "kfirst" (FLA's default) or "vfirst"."""

    def __init__(self, layout):
        from fla.ops.gated_delta_rule import fused_recurrent_gated_delta_rule
        from fla.ops.kda.fused_recurrent import fused_recurrent_kda_fwd

        self.gdn, self.kda = fused_recurrent_gated_delta_rule, fused_recurrent_kda_fwd
        self.layout, self.vf = layout, layout == "vfirst"
        self.name = "fla-" + layout

    def orders_for(self, gate):
        return ("contig",) if gate == "gdn" else ("seq", "rnd")

    def _shape(self, n, HV):
        return (n, HV, V, K) if self.vf else (n, HV, K, V)

    def make(self, gate, H, HV, B, nl, order, gen):
        ins = [make_inputs(gate, B, H, HV, 1, gen) for _ in range(nl)]
        if gate == "gdn":
            h0 = [torch.zeros(self._shape(B, HV), device="cuda") for _ in range(nl)]

            def step():
                for h, x in zip(h0, ins):
                    self.gdn_step(x, h)
        else:
            slot = slot_rows(B, order, gen)
            pools = [torch.zeros(self._shape(2 * B, HV), device="cuda") for _ in range(nl)]

            def step():
                for h, x in zip(pools, ins):
                    self.kda_step(x, h, slot)
        return step, 1

    def gdn_step(self, x, h):
        return self.gdn(x["q"], x["k"], x["v"], g=x["a"], beta=x["b"], scale=K ** -0.5, initial_state=h,
                        output_final_state=True, use_qk_l2norm_in_kernel=True, use_gate_in_kernel=True,
                        A_log=x["A_log"], dt_bias=x["dt_bias"], use_beta_sigmoid_in_kernel=True,
                        state_v_first=self.vf)

    def kda_step(self, x, h, slot):
        return self.kda(x["q"], x["k"], x["v"], x["a"], x["b"], A_log=x["A_log"], dt_bias=x["dt_bias"],
                        initial_state=h, scale=K ** -0.5, inplace_final_state=True, ssm_state_indices=slot,
                        use_qk_l2norm_in_kernel=True, use_gate_in_kernel=True, use_beta_sigmoid_in_kernel=True,
                        state_v_first=self.vf)

    def run_steps(self, gate, H, HV, S0, x):
        B, T = x["q"].shape[:2]
        S = torch.from_numpy(S0).float().cuda()  # [B, HV, V, K]
        h = (S if self.vf else S.transpose(-1, -2)).contiguous()
        slot = torch.arange(B, device="cuda", dtype=torch.int32)
        out = []
        for t in range(T):
            xt = token(x, t)
            if gate == "gdn":
                o, h = self.gdn_step(xt, h)
            else:
                o, _ = self.kda_step(xt, h, slot)
            out.append(o)
        return torch.cat(out, 1).double().cpu().numpy()


class SGLangPacked(Kernel):
    """SGLang's packed decode (fused_recurrent_{gated_delta_rule,kda}_packed_decode: the fused qkv
    row, raw gates, a V-first state pool with indices, in place)."""

    name = "sgl-packed"

    def __init__(self):
        from sglang.kernels.ops.attention.fla.fused_recurrent import (
            fused_recurrent_gated_delta_rule_packed_decode, fused_recurrent_kda_packed_decode)

        self.fns = {"gdn": fused_recurrent_gated_delta_rule_packed_decode, "kda": fused_recurrent_kda_packed_decode}

    @staticmethod
    def rows(x):
        """One token's inputs as SGLang's decode takes them: the fused [B, q | k | v] row, a and b
        as [B, HV(*K)], dt_bias flat."""
        B = x["q"].shape[0]
        qkv = torch.cat([x["q"].reshape(B, -1), x["k"].reshape(B, -1), x["v"].reshape(B, -1)], -1)
        return dict(qkv=qkv, a=x["a"].reshape(B, -1).contiguous(), b=x["b"].reshape(B, -1).contiguous(),
                    A_log=x["A_log"], dt_bias=x["dt_bias"].reshape(-1), HV=x["v"].shape[2])

    def step1(self, gate, r, h, slot, out):
        self.fns[gate](r["qkv"], r["a"], r["b"], r["A_log"], r["dt_bias"], K ** -0.5, h, out, slot,
                       use_qk_l2norm_in_kernel=True)

    def make(self, gate, H, HV, B, nl, order, gen):
        slot = slot_rows(B, order, gen)
        rows_ = [self.rows(make_inputs(gate, B, H, HV, 1, gen)) for _ in range(nl)]
        pools = [torch.zeros(2 * B, HV, V, K, device="cuda") for _ in range(nl)]
        outs = [torch.empty(B, 1, HV, V, dtype=torch.bfloat16, device="cuda") for _ in range(nl)]

        def step():
            for r, h, o in zip(rows_, pools, outs):
                self.step1(gate, r, h, slot, o)

        return step, 1

    def run_steps(self, gate, H, HV, S0, x):
        B, T = x["q"].shape[:2]
        h = torch.from_numpy(S0).float().cuda().contiguous()
        slot = torch.arange(B, device="cuda", dtype=torch.int32)
        out = []
        for t in range(T):
            o = torch.empty(B, 1, HV, V, dtype=x["v"].dtype, device="cuda")
            self.step1(gate, self.rows(token(x, t)), h, slot, o)
            out.append(o)
        return torch.cat(out, 1).double().cpu().numpy()


class SGLangReplay(SGLangPacked):
    """SGLang's ReplaySSM decode (fused_recurrent_linear_replayssm_decode: the checkpoint read every
    step and written on the flush step, ring caches d / k / g of L entries in bf16 / bf16 / f32 as
    replayssm's, a per-row write position the caller moves, (p + 1) mod L, after every step)."""

    name = "sgl-replay"

    def __init__(self):
        super().__init__()
        from sglang.kernels.ops.attention.linear.fused_recurrent_linear_replayssm import (
            fused_recurrent_linear_replayssm_decode)

        self.decode = fused_recurrent_linear_replayssm_decode

    def caches(self, gate, n, H, HV):
        gshape = (n, HV, L, K) if gate == "kda" else (n, HV, L)
        return (torch.zeros(n, HV, L, V, dtype=torch.bfloat16, device="cuda"),
                torch.zeros(n, H, L, K, dtype=torch.bfloat16, device="cuda"),
                torch.zeros(gshape, device="cuda"))

    def step1(self, gate, r, h, slot, out, cache=None, pos=None):
        kda = gate == "kda"
        B = r["qkv"].shape[0]
        a = r["a"].reshape(B, r["HV"], K) if kda else r["a"]
        dt = r["dt_bias"].reshape(r["HV"], K) if kda else r["dt_bias"]
        self.decode(r["qkv"], a, r["b"], r["A_log"], dt, K ** -0.5, h, *cache, out, slot, pos,
                    use_qk_l2norm_in_kernel=True, is_kda=kda)

    def make(self, gate, H, HV, B, nl, order, gen):
        slot = slot_rows(B, order, gen)
        rows_ = [self.rows(make_inputs(gate, B, H, HV, 1, gen)) for _ in range(nl)]
        pools = [torch.zeros(2 * B, HV, V, K, device="cuda") for _ in range(nl)]
        caches = [self.caches(gate, 2 * B, H, HV) for _ in range(nl)]
        outs = [torch.empty(B, 1, HV, V, dtype=torch.bfloat16, device="cuda") for _ in range(nl)]
        pos = (torch.arange(B, device="cuda") % L).to(torch.int32)  # staggered rows

        def step():
            for r, h, c, o in zip(rows_, pools, caches, outs):
                self.step1(gate, r, h, slot, o, c, pos)
            torch.remainder(pos + 1, L, out=pos)

        return step, L

    def run_steps(self, gate, H, HV, S0, x):
        B, T = x["q"].shape[:2]
        h = torch.from_numpy(S0).float().cuda().contiguous()
        cache = self.caches(gate, B, H, HV)
        slot = torch.arange(B, device="cuda", dtype=torch.int32)
        pos = torch.zeros(B, dtype=torch.int32, device="cuda")
        out = []
        for t in range(T):
            o = torch.empty(B, 1, HV, V, dtype=x["v"].dtype, device="cuda")
            self.step1(gate, self.rows(token(x, t)), h, slot, o, cache, pos)
            torch.remainder(pos + 1, L, out=pos)
            out.append(o)
        return torch.cat(out, 1).double().cpu().numpy()


def load_kernels(switches=None):
    """The kernels to time; switches: replayssm's context switches (rssm_context_params)."""
    ks, notes = [ReplaySSM(False, switches), ReplaySSM(True, switches)], []
    try:
        import fla

        ks += [FLA("kfirst"), FLA("vfirst")]
        notes.append(f"fla-core {getattr(fla, '__version__', '?')}")
    except Exception as e:  # noqa: BLE001 - any import failure means the peer is not there
        notes.append(f"fla: skipped ({type(e).__name__}: {e})")
    try:
        import sglang

        ks.append(SGLangPacked())
        notes.append(f"sglang {getattr(sglang, '__version__', '?')}")
        try:
            ks.append(SGLangReplay())
        except Exception as e:  # noqa: BLE001
            notes.append(f"sgl-replay: skipped ({type(e).__name__}: {e})")
    except Exception as e:  # noqa: BLE001
        notes.append(f"sglang: skipped ({type(e).__name__}: {e})")
    return ks, notes


# ---- measurement -------------------------------------------------------------------------------


def time_step(step, cycle, min_time, repeat):
    """Seconds per step: warm up eagerly (Triton autotuning, first launches), capture one step in
    a CUDA graph, replay it in whole cycles until min_time has passed; best of `repeat`."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(2):
            step()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        step()
    for _ in range(cycle):
        graph.replay()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(cycle):
        graph.replay()
    torch.cuda.synchronize()
    once = max(time.perf_counter() - t0, 1e-6)
    units = max(1, int(min_time / once))
    best = float("inf")
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    for _ in range(repeat):
        e0.record()
        for _ in range(units * cycle):
            graph.replay()
        e1.record()
        e1.synchronize()
        best = min(best, e0.elapsed_time(e1) / 1e3 / (units * cycle))
    del graph
    return best


def copy_bandwidth():
    """Device copy bandwidth (read + write bytes per second) over 1 GiB."""
    a = torch.empty(1 << 28, device="cuda")
    b = torch.empty_like(a)
    for _ in range(3):
        b.copy_(a)
    torch.cuda.synchronize()
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    e0.record()
    for _ in range(20):
        b.copy_(a)
    e1.record()
    e1.synchronize()
    return 2 * a.numel() * 4 * 20 / (e0.elapsed_time(e1) / 1e3)


def f64_error(kernel, gate, H, HV, seed):
    gen = torch.Generator(device=DEV).manual_seed(seed)
    x = make_inputs(gate, ERR_B, H, HV, ERR_T, gen, io=torch.float32)
    S0 = np.random.default_rng(seed).normal(0, 0.1, (ERR_B, HV, V, K))
    o = kernel.run_steps(gate, H, HV, S0, x)
    xn = {n: t.double().cpu().numpy() for n, t in x.items()}
    o_ref, _ = ref.run_layer(gate, xn["q"], xn["k"], xn["v"], xn["a"], xn["b"], xn["A_log"], xn["dt_bias"],
                             initial_state=S0, scale=K ** -0.5)
    return float(np.abs(o - o_ref).max() / np.abs(o_ref).max())


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--batch", default="1,2,4,8,16,32,64,128,256,512")
    ap.add_argument("--models", default="qwen3-next,kimi-linear")
    ap.add_argument("--working-set-mib", type=int, default=1024)
    ap.add_argument("--min-time", type=float, default=0.2)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--commit", default=None, help="the tree's commit for the records (default: git's HEAD)")
    ap.add_argument("--cuda-pdl", type=int, choices=(-1, 0, 1), default=None,
                    help="replayssm's programmatic dependent launch (cuda_pdl; default: the library's rule)")
    a = ap.parse_args(argv)
    batches = [int(b) for b in a.batch.split(",")]
    os.makedirs(a.out, exist_ok=True)
    kernels, notes = load_kernels({} if a.cuda_pdl is None else {"cuda_pdl": a.cuda_pdl})
    bw = copy_bandwidth()
    gpu = torch.cuda.get_device_name()
    commit = a.commit or subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                                        cwd=os.path.dirname(os.path.abspath(__file__))).stdout.strip() or "?"
    date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    head = [f"# replayssm {rs.version()} ({commit}), torch {torch.__version__}, {gpu}, {date}",
            f"# peers: {'; '.join(notes)}",
            f"# copy bandwidth {bw / 1e12:.2f} TB/s (read + write); packed floor = 2 x state bytes / that",
            f"# command: python bench/peers.py {' '.join(sys.argv[1:] if argv is None else argv)}"]
    print("\n".join(head), flush=True)
    rows = []
    for model in a.models.split(","):
        gate, H, HV = MODELS[model]
        errs = {}
        for kn in kernels:
            try:
                errs[kn.name] = f64_error(kn, gate, H, HV, a.seed)
            except Exception as e:  # noqa: BLE001 - a peer that cannot run this shape is reported, not fatal
                errs[kn.name] = float("nan")
                print(f"# {model} {kn.name}: error run failed: {type(e).__name__}: {e}", flush=True)
        for B in batches:
            state_bytes = B * HV * K * V * 4
            nl = max(2, math.ceil(a.working_set_mib * 2**20 / state_bytes))
            for kn in kernels:
                orders = kn.orders_for(gate) if hasattr(kn, "orders_for") else kn.orders
                for order in orders:
                    gen = torch.Generator(device="cuda").manual_seed(a.seed + B)
                    try:
                        step, cycle = kn.make(gate, H, HV, B, nl, order, gen)
                        us = time_step(step, cycle, a.min_time, a.repeat) / nl * 1e6
                    except Exception as e:  # noqa: BLE001
                        print(f"# {model} B={B} {kn.name} {order}: failed: {type(e).__name__}: {e}", flush=True)
                        us = float("nan")
                    step = None
                    torch.cuda.empty_cache()
                    floor = 2 * state_bytes / bw * 1e6
                    rows.append(dict(model=model, gate=gate, B=B, kernel=kn.name, order=order, layout=kn.layout,
                                     us=round(us, 3), floor_packed_us=round(floor, 3), layers=nl,
                                     err_f64=f"{errs[kn.name]:.2e}", gpu=gpu, commit=commit, date=date))
                    print(f"{model:12s} B={B:4d} {kn.name:10s} {order:6s} {us:9.2f} us  (packed floor {floor:.2f},"
                          f" err {errs[kn.name]:.1e}, {nl} layers)", flush=True)
    write_outputs(a.out, head, rows)


def write_outputs(out, head, rows):
    with open(os.path.join(out, "peers.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    lines = list(head)
    for model in dict.fromkeys(r["model"] for r in rows):
        rs_ = [r for r in rows if r["model"] == model]
        cols = list(dict.fromkeys((r["kernel"], r["order"]) for r in rs_))
        errs = {(r["kernel"], r["order"]): r["err_f64"] for r in rs_}
        lines += ["", f"## {model} (us per layer call; err = max |o - o_f64| / max |o_f64| over {ERR_T} steps)", "",
                  "| B | " + " | ".join(f"{k} {o}" for k, o in cols) + " | packed floor |",
                  "|---:|" + "---:|" * (len(cols) + 1)]
        for B in dict.fromkeys(r["B"] for r in rs_):
            val = {(r["kernel"], r["order"]): r["us"] for r in rs_ if r["B"] == B}
            floor = next(r["floor_packed_us"] for r in rs_ if r["B"] == B)
            lines.append(f"| {B} | " + " | ".join(f"{val.get(c, float('nan')):.2f}" for c in cols) + f" | {floor:.2f} |")
        lines.append("| err | " + " | ".join(errs[c] for c in cols) + " | |")
    with open(os.path.join(out, "peers.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines[len(head):]))
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("# matplotlib missing: no plot")
        return
    models = list(dict.fromkeys(r["model"] for r in rows))
    fig, axes = plt.subplots(1, len(models), figsize=(7 * len(models), 5), squeeze=False)
    for ax, model in zip(axes[0], models):
        rs_ = [r for r in rows if r["model"] == model]
        kernels = list(dict.fromkeys(r["kernel"] for r in rows))  # one colour per kernel, dashed: random order
        for key in dict.fromkeys((r["kernel"], r["order"]) for r in rs_):
            pts = [(r["B"], r["us"]) for r in rs_ if (r["kernel"], r["order"]) == key and r["us"] == r["us"]]
            if pts:
                ax.plot(*zip(*pts), marker="o", markersize=3, color=f"C{kernels.index(key[0]) % 10}",
                        linestyle="--" if key[1] == "rnd" else "-", label=f"{key[0]} {key[1]}")
        ax.plot([r["B"] for r in rs_ if r["kernel"] == rs_[0]["kernel"] and r["order"] == rs_[0]["order"]],
                [r["floor_packed_us"] for r in rs_ if r["kernel"] == rs_[0]["kernel"] and r["order"] == rs_[0]["order"]],
                "k--", label="packed byte floor")
        ax.set(xscale="log", yscale="log", xlabel="batch B", ylabel="us per layer call", title=model)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(os.path.join(out, "peers.png"), dpi=110)


if __name__ == "__main__":
    main()
