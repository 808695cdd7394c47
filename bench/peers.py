#!/usr/bin/env python3
"""Peer benchmark: replayssm's decode against the public kernels, in one process on one GPU.

    python bench/peers.py --out DIR [--batch 1,8,64,512] [--models qwen3-next,kimi-linear] [--verify T]

Kernels (each skipped, with the reason printed, when its package is missing):
  rs-packed, rs-replay   replayssm through its Python binding (replayssm.ops), V-first state
                         [slots, HV, V, K], ring bf16 of L = 16 entries (replay); with --kfirst also
                         rs-packed-kf, rs-replay-kf on K-first states [slots, HV, K, V] (FLA's order)
  fla                    fla-core's fused_recurrent_gated_delta_rule (GDN) and fused_recurrent_kda
                         (KDA), state K-first [.., K, V] and V-first (state_v_first=True)
  sgl-packed             SGLang's packed decode (fused qkv row, V-first state pool, in place)
  sgl-replay             SGLang's ReplaySSM decode (checkpoint + d/k/g ring caches, write position)
  fi                     FlashInfer's decode: GDN gated_delta_rule_decode_pretranspose (V-first state
                         pool with indices, in place: its f32 T = 1 kernel, or its bf16-state kernel),
                         KDA recurrent_kda (its state is bf16 only: --state bf16)
With --state bf16 (a bf16 state; f32 arithmetic) only the kernels that keep one run: rs-packed,
rs-replay and fi (FLA's and SGLang's entries here keep an f32 state).
With --verify T (speculative verify of T tokens per row, then the commit of the accepted ones, each
row keeping T - 1 or T, fixed per row; 3.5 of 4 on average):
  rs-verify              replayssm's verify + commit (one cursor move per step for all layers)
  sgl-spec               SGLang's GDN ReplaySSM spec verify (gdn_replayssm_spec_decode, its circular
                         d/k/g caches in bf16 / bf16 / f32, d and k with their bf16 low parts) + its
                         commits after the last layer
                         (commit_gdn_replayssm_spec: the cursors; commit_gdn_replayssm_circular: the
                         rows whose ring is full fold every layer in one launch), as its engine calls
                         them for an f32 checkpoint
                         KDA: its fold-every-commit spec path (the recurrent verify kernel writing
                         the window's raw inputs to a ring, then commit_kda_replayssm_spec_all_layers
                         replaying each row's accepted prefix into its checkpoint)
  sgl-packed-verify      SGLang's recurrent verify writing every row's T intermediate states, then
                         the scatter of each row's last accepted state into the pool (all layers)
  fi-mtp-verify          FlashInfer's GDN gated_delta_rule_mtp writing each token's state straight
                         into a pool slot of its own (ssm_state_indices: the commit is then the
                         engine's choice of slot, no copy), f32 state

Method (as the project's CLI bench): Qwen3-Next GDN (H=16, HV=32) and Kimi-Linear KDA (H=HV=32),
K=V=128, f32 state, bf16 q/k/v and raw gate inputs a, b (every kernel evaluates the gates and
beta itself, as the engines' fused decode does), q/k L2-normalised inside. One step
is one call per layer over NL distinct layers whose states total at least --working-set-mib (so
no state stays in L2), captured once in a CUDA graph (replay: plus the one cursor move per step
that the layers share), replayed a multiple of L times (whole ring cycles; rows start at staggered
cursors, row i at i mod L). Times are per layer call, best of --repeat.
Slot order: "seq" rows use slots 0..B-1 of a pool of 2B slots; "rnd" a random sample of B slots in
random order (as a serving pool has). FLA's GDN entry takes no slot indices (its states are the
rows' own contiguous [B, ...] tensors) and writes the final state into a tensor it allocates:
"contig" keeps each layer's (every layer writes its own buffer: a copy, read one buffer, write
another); "inplace" launches the entry's kernel with the final state over the initial one (as
engines' in-place updates call it: the same DRAM traffic as every other kernel here); "reuse" drops
it, so in the graph every layer writes one recycled buffer, which stays in L2 while B x 2 MiB fits
(small B: fewer DRAM writes than any engine's step; earlier runs of this benchmark timed this).
FLA's KDA entry takes ssm_state_indices (the in-place form engines call): seq and rnd.
err: the largest |o - o_ref| over max |o_ref| of 2L + 5 decode steps (verify: the whole windows of T
in them, every token accepted) at B = 4 from the same random state and inputs, against the float64
recurrence of replayssm.reference; these runs take float32 q, k, v and o (of bf16 values), so that
the error is the kernel's and not o's bf16 rounding.

Writes peers.csv, peers.txt (the tables) and peers.png (us against B, one line per kernel) in
--out. Each table ends with the comparison the issue asks for, random slots: "rs best" (replayssm's
fastest kernel, rnd), "peer best" (the fastest peer as engines call it: rnd, or FLA's GDN contig /
inplace; not "reuse", whose writes stay in L2) and "peer / rs" (above 1: replayssm is faster).
The peers' code is imported from their installed packages at run time.
"""
from __future__ import annotations

import argparse
import csv
import datetime
import math
import os
import signal
import subprocess
import sys
import time

import numpy as np
import torch

import replayssm as rs
from replayssm import ops
from replayssm import reference as ref
from replayssm.bf16 import to_bf16

MODELS = {"qwen3-next": ("gdn", 16, 32), "kimi-linear": ("kda", 32, 32)}
K = V = 128
L = 16
ERR_B, ERR_T = 4, 2 * L + 5
DEV = "cuda"  # the error runs also work on "cpu" (replayssm's CPU back end), for a check without a GPU
STATE = torch.float32  # the state's dtype (--state)


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


def token(x, t, n=1):
    """Tokens t .. t+n-1 of every per-token input ([B, n, ...]); the per-layer parameters as they are."""
    return {name: (v[:, t:t + n].contiguous() if v.dim() >= 3 else v) for name, v in x.items()}


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


def state_of(S0, dtype=None):
    """S0 (float64 numpy) as a CUDA tensor of the state dtype, rounded through float32."""
    return torch.from_numpy(S0).float().to(device="cuda", dtype=dtype or STATE).contiguous()


class ReplaySSM(Kernel):
    """layout "vfirst" (the default; [.., V, K]) or "kfirst" (FLA's [.., K, V]: rs-packed-kf, rs-replay-kf)."""

    def __init__(self, replay, switches=None, layout="vfirst"):
        self.replay, self.layout = replay, layout
        self.name = ("rs-replay" if replay else "rs-packed") + ("-kf" if layout == "kfirst" else "")
        self.ctx = rs.Context(DEV, **(switches or {}))

    def layer(self, gate, H, HV, io="bf16"):
        return rs.Layer(gate=gate, H=H, HV=HV, K=K, V=V, ring_len=L,
                        state_dtype="bf16" if STATE == torch.bfloat16 else "f32", ring_dtype="bf16", io_dtype=io,
                        state_layout="kv" if self.layout == "kfirst" else "vk")

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
        if self.layout == "kfirst":
            S0 = np.ascontiguousarray(S0.transpose(0, 1, 3, 2))
        if isinstance(st.checkpoint, torch.Tensor):
            st.checkpoint.copy_(state_of(S0, st.checkpoint.dtype))
        else:  # a host context's numpy state (bf16: uint16 bits)
            st.checkpoint[...] = to_bf16(S0.astype(np.float32)) if st.checkpoint.dtype == np.uint16 else S0
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
        return ("contig", "inplace", "reuse") if gate == "gdn" else ("seq", "rnd")

    def _shape(self, n, HV):
        return (n, HV, V, K) if self.vf else (n, HV, K, V)

    def make(self, gate, H, HV, B, nl, order, gen):
        ins = [make_inputs(gate, B, H, HV, 1, gen) for _ in range(nl)]
        if gate == "gdn":
            h0 = [torch.zeros(self._shape(B, HV), device="cuda") for _ in range(nl)]
            if order == "inplace":
                self._check_inplace(ins[0], h0[0])
            kept = []

            def step():
                kept.clear()
                for h, x in zip(h0, ins):
                    if order == "inplace":
                        self.gdn_inplace(x, h)
                    elif order == "contig":
                        kept.append(self.gdn_step(x, h)[1])
                    else:
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

    def gdn_inplace(self, x, h):
        """The GDN entry's kernel with its final state written over its initial state h (each
        program reads its rows before it writes them), as engines' in-place updates call it; the
        launch is the entry's (fused_recurrent_gated_delta_rule_fwd in fla-core 0.6.0)."""
        from fla.ops.gated_delta_rule.fused_recurrent import fused_recurrent_gated_delta_rule_fwd_kernel as kernel

        q, k, v = x["q"], x["k"], x["v"]
        B, T, H, HV = q.shape[0], q.shape[1], q.shape[2], v.shape[2]
        o = torch.empty_like(v)
        BV = 8
        kernel[(V // BV * B * HV,)](
            q=q, k=k, v=v, g=x["a"], gk=None, gv=None, beta=x["b"], A_log=x["A_log"], dt_bias=x["dt_bias"], o=o,
            h0=h, ht=h, cu_seqlens=None, scale=K ** -0.5, T=T, H=H, HV=HV, K=K, V=V, BK=K, BV=BV,
            IS_BETA_HEADWISE=x["b"].ndim != v.ndim, USE_QK_L2NORM_IN_KERNEL=True, APPLY_BETA_SIGMOID=True,
            ALLOW_NEG_EIGVAL=False, STATE_V_FIRST=self.vf, num_warps=1, num_stages=3)
        return o

    def _check_inplace(self, x, h0):
        """gdn_inplace gives the entry's output and final state bit for bit (from a nonzero state)."""
        h = torch.randn(h0.shape, device="cuda") * 0.1
        o_ref, ht_ref = self.gdn_step(x, h)
        o = self.gdn_inplace(x, h)
        if not (torch.equal(o, o_ref) and torch.equal(h, ht_ref)):
            raise RuntimeError("in-place launch differs from fla's entry")

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


def bf16_activations(x):
    """x with q, k, v, a, b in bf16, as FlashInfer's entries take them (the error runs' float32
    inputs hold bf16 values, so nothing is rounded)."""
    return {n: (v.bfloat16() if n in ("q", "k", "v", "a", "b") else v) for n, v in x.items()}


class FlashInfer(Kernel):
    """FlashInfer's decode through its public entries, as an engine calls them: a V-first state
    pool [slots, HV, V, K] read and written in place at the rows' indices, raw gate inputs, q and k
    L2-normalised inside. GDN: gated_delta_rule_decode_pretranspose (an f32 pool runs its T = 1
    kernel, a bf16 pool its bf16-state kernel); KDA: recurrent_kda, whose state is bf16 only."""

    name = "fi"

    def __init__(self):
        from flashinfer.gdn_decode import gated_delta_rule_decode_pretranspose
        from flashinfer.kda_decode import recurrent_kda

        self.gdn, self.kda = gated_delta_rule_decode_pretranspose, recurrent_kda

    def orders_for(self, gate):
        return ("seq", "rnd") if gate == "gdn" or STATE == torch.bfloat16 else ()

    def step1(self, gate, x, pool, slot, out):
        if gate == "gdn":
            self.gdn(x["q"], x["k"], x["v"], None, x["A_log"], x["a"], x["dt_bias"], x["b"], scale=K ** -0.5,
                     output=out, use_qk_l2norm=True, initial_state=pool, initial_state_indices=slot)
        else:
            self.kda(x["q"], x["k"], x["v"], x["a"], x["b"], A_log=x["A_log"], dt_bias=x["dt_bias"].reshape(-1),
                     scale=K ** -0.5, initial_state=pool, use_qk_l2norm_in_kernel=True, use_gate_in_kernel=True,
                     ssm_state_indices=slot, output=out, beta_is_logit=True)

    def make(self, gate, H, HV, B, nl, order, gen):
        slot = slot_rows(B, order, gen)
        ins = [make_inputs(gate, B, H, HV, 1, gen) for _ in range(nl)]
        pools = [torch.zeros(2 * B, HV, V, K, device="cuda", dtype=STATE) for _ in range(nl)]
        outs = [torch.empty(B, 1, HV, V, dtype=torch.bfloat16, device="cuda") for _ in range(nl)]

        def step():
            for x, h, o in zip(ins, pools, outs):
                self.step1(gate, x, h, slot, o)

        return step, 1

    def run_steps(self, gate, H, HV, S0, x):
        B, T = x["q"].shape[:2]
        pool = state_of(S0)
        slot = torch.arange(B, device="cuda", dtype=torch.int32)
        out = []
        for t in range(T):
            xt = bf16_activations(token(x, t))
            o = torch.empty(B, 1, HV, V, dtype=torch.bfloat16, device="cuda")
            self.step1(gate, xt, pool, slot, o)
            out.append(o)
        return torch.cat(out, 1).double().cpu().numpy()


def accepted_rows(B, T, gen):
    """Tokens each row keeps of a verify window: T - 1 or T, drawn once per row (3.5 of 4 on
    average), as a draft model's acceptance is."""
    return (T - torch.randint(0, 2, (B,), generator=gen, device=DEV)).to(torch.int32)


def varlen_window(x, T):
    """A window of T tokens per row as SGLang's varlen entries take it: q, k, v [B T, heads, dim],
    b [B T, HV], a [B T, HV] (GDN) or [B T, HV K] (KDA), dt_bias flat, cu: the rows' token starts."""
    B = x["q"].shape[0]
    f = {n: x[n].reshape(B * T, *x[n].shape[2:]).contiguous() for n in ("q", "k", "v", "b")}
    f.update(a=x["a"].reshape(B * T, -1).contiguous(), A_log=x["A_log"], dt_bias=x["dt_bias"].reshape(-1),
             cu=torch.arange(0, B * T + 1, T, device=x["q"].device, dtype=torch.int32))
    return f


def request_rows(B, order, gen):
    """Request rows 0 .. B-1 of a per-request cursor table: in order, or shuffled ("rnd"), as a
    serving engine's request slots are."""
    idx = torch.randperm(B, generator=gen, device=DEV) if order == "rnd" else torch.arange(B, device=DEV)
    return idx.to(torch.int32)


class ReplaySSMVerify(ReplaySSM):
    """replayssm's speculative verify of T tokens per row and the commit of the accepted ones
    (ops.verify per layer, ops.commit once after the last: the layers share the cursor)."""

    def __init__(self, T, switches=None):
        super().__init__(True, switches)
        self.T, self.name = T, "rs-verify"

    def make(self, gate, H, HV, B, nl, order, gen):
        ly, T = self.layer(gate, H, HV), self.T
        slot = slot_rows(B, order, gen)
        states, cursor = [], None
        for _ in range(nl):
            st = rs.State.allocate(ly, 2 * B, self.ctx, ring=True, cursor=cursor)
            cursor = st.cursor
            states.append(st)
        cursor[slot.long()] = (torch.arange(B, device=DEV) % L).to(torch.int32)  # staggered rows
        ins = [make_inputs(gate, B, H, HV, T, gen) for _ in range(nl)]
        outs = [torch.empty(B, T, HV, V, dtype=torch.bfloat16, device=DEV) for _ in range(nl)]
        acc = accepted_rows(B, T, gen)

        def step():
            for st, x, o in zip(states, ins, outs):
                ops.verify(self.ctx, ly, st, x["q"], x["k"], x["v"], x["a"], x["b"], x["A_log"], x["dt_bias"],
                           slot=slot, out=o)
            ops.commit(self.ctx, ly, states[0], T, slot, None, acc)

        return step, L

    def run_steps(self, gate, H, HV, S0, x):
        ly, T = self.layer(gate, H, HV, "f32"), self.T
        B, n = x["q"].shape[0], x["q"].shape[1] // T * T
        st = rs.State.allocate(ly, B, self.ctx, ring=True)
        if isinstance(st.checkpoint, torch.Tensor):
            st.checkpoint.copy_(state_of(S0, st.checkpoint.dtype))
        else:  # a host context's numpy state (bf16: uint16 bits)
            st.checkpoint[...] = to_bf16(S0.astype(np.float32)) if st.checkpoint.dtype == np.uint16 else S0
        slot = torch.arange(B, device=DEV, dtype=torch.int32)
        every = torch.full((B,), T, device=DEV, dtype=torch.int32)
        out = []
        for t0 in range(0, n, T):
            xw = token(x, t0, T)
            out.append(ops.verify(self.ctx, ly, st, xw["q"], xw["k"], xw["v"], xw["a"], xw["b"], xw["A_log"],
                                  xw["dt_bias"], slot=slot))
            ops.commit(self.ctx, ly, st, T, slot, None, every)
        return torch.cat(out, 1).double().cpu().numpy()


class SGLangSpecVerify(Kernel):
    """SGLang's GDN ReplaySSM speculative verify (Part B of its RFC #28511), called as its GDN
    backend and its verify commit call it for an f32 checkpoint: per layer gdn_replayssm_spec_decode
    (launch_mode "verify": the window's outputs from the checkpoint and the circular d/k/g history,
    the window's records appended); after the last layer commit_gdn_replayssm_spec (the cursors:
    write position, base, flush flag) and commit_gdn_replayssm_circular (rows whose ring reached
    its capacity fold it into the checkpoint, every layer in one launch). Its rings in the
    activations' dtype (bf16), with the low parts its pool keeps then (rawv, rawk: d and the
    normalised k rounded in two parts, which its fold adds back). Rows start at staggered write
    positions i mod (L - 2T + 1) (its ring keeps at most L - 2T + 1 committed entries before it
    flushes); request rows in order, or shuffled with "rnd". GDN only."""

    name = "sgl-spec"

    def __init__(self, T):
        from sglang.kernels.ops.attention.linear.gdn_replayssm_spec_decode import (
            commit_gdn_replayssm_circular, commit_gdn_replayssm_spec, gdn_replayssm_spec_decode)

        self.T = T
        self.decode, self.commit_cursors, self.commit_rings = (gdn_replayssm_spec_decode, commit_gdn_replayssm_spec,
                                                               commit_gdn_replayssm_circular)

    def orders_for(self, gate):
        return ("seq", "rnd") if gate == "gdn" else ()

    def buffers(self, nl, n, B, H, HV):
        """Checkpoints and bf16 rings (high and low parts) of nl layers over n slots, cursors of B
        request rows (+ 1, as its pool)."""
        z = lambda *shape, dt=torch.float32: torch.zeros(*shape, dtype=dt, device="cuda")  # noqa: E731
        bf = torch.bfloat16
        return dict(S=z(nl, n, HV, V, K), d=z(nl, n, HV, L, V, dt=bf), k=z(nl, n, H, L, K, dt=bf),
                    d_lo=z(nl, n, HV, L, V, dt=bf), k_lo=z(nl, n, H, L, K, dt=bf), g=z(nl, n, HV, L),
                    wp=z(B + 1, dt=torch.int32), base=z(B + 1, dt=torch.int32), flush=z(B + 1, dt=torch.int8))

    def layer_call(self, f, buf, l, out, slot, rows):
        self.decode(f["q"], f["k"], f["v"], f["a"], f["b"], f["A_log"], f["dt_bias"], buf["S"][l], buf["d"][l],
                    buf["k"][l], buf["g"][l], buf["d_lo"][l], buf["k_lo"][l], None, out, f["cu"], slot, rows, buf["wp"],
                    buf["base"], buf["flush"], L, self.T, scale=K ** -0.5, use_qk_l2norm_in_kernel=True,
                    null_block_id=-1, launch_mode="verify")

    def commit(self, buf, slot, rows, acc):
        self.commit_cursors(buf["wp"], buf["base"], buf["flush"], acc, rows, L, self.T, fold_every_commit=False,
                            null_block_id=-1)
        self.commit_rings(checkpoint_state=buf["S"], d_cache=buf["d"], k_cache=buf["k"], g_cache=buf["g"],
                          d_residual_cache=buf["d_lo"], k_residual_cache=buf["k_lo"], state_batch_indices=slot,
                          replay_indices=rows, write_pos=buf["wp"], cache_base=buf["base"], is_flush=buf["flush"],
                          accept_lens=acc, null_block_id=-1)

    def make(self, gate, H, HV, B, nl, order, gen):
        T = self.T
        slot = slot_rows(B, order, gen)
        rows = request_rows(B, order, gen)
        buf = self.buffers(nl, 2 * B, B, H, HV)
        buf["wp"][:B] = (torch.arange(B, device="cuda") % (L - 2 * T + 1)).to(torch.int32)
        ins = [varlen_window(make_inputs(gate, B, H, HV, T, gen), T) for _ in range(nl)]
        outs = [torch.empty(B * T, HV, V, dtype=torch.bfloat16, device="cuda") for _ in range(nl)]
        acc = accepted_rows(B, T, gen)

        def step():
            for l, (f, o) in enumerate(zip(ins, outs)):
                self.layer_call(f, buf, l, o, slot, rows)
            self.commit(buf, slot, rows, acc)

        return step, L

    def run_steps(self, gate, H, HV, S0, x):
        T = self.T
        B, n = x["q"].shape[0], x["q"].shape[1] // T * T
        buf = self.buffers(1, B, B, H, HV)
        buf["S"][0].copy_(torch.from_numpy(S0).float())
        slot = torch.arange(B, device="cuda", dtype=torch.int32)
        every = torch.full((B,), T, device="cuda", dtype=torch.int32)
        out = []
        for t0 in range(0, n, T):
            o = torch.empty(B * T, HV, V, dtype=x["v"].dtype, device="cuda")
            self.layer_call(varlen_window(token(x, t0, T), T), buf, 0, o, slot, slot)
            self.commit(buf, slot, slot, every)
            out.append(o.reshape(B, T, HV, V))
        return torch.cat(out, 1).double().cpu().numpy()


class SGLangPackedVerify(Kernel):
    """SGLang's recurrent verify, its GDN backend's target_verify without ReplaySSM: per layer
    fused_sigmoid_gating_delta_rule_update (the rows' states read from the pool, the T intermediate
    states of every row written to a [rows, T, HV, V, K] buffer, the pool left as it was); after the
    last layer fused_mamba_state_scatter_with_mask copies each row's last accepted state into the
    pool, every layer in one launch. KDA: the same entry with is_kda, its verify kernel for the
    Triton decode backends."""

    name = "sgl-packed-verify"

    def __init__(self, T):
        from sglang.kernels.ops.attention.linear.fused_sigmoid_gating_recurrent import (
            fused_sigmoid_gating_delta_rule_update)
        from sglang.kernels.ops.mamba.mamba_state_scatter_triton import fused_mamba_state_scatter_with_mask

        self.T = T
        self.update, self.scatter = fused_sigmoid_gating_delta_rule_update, fused_mamba_state_scatter_with_mask

    def orders_for(self, gate):
        return ("seq", "rnd")

    def verify_call(self, gate, f, pool, slot, rows, **extra):
        """One layer's window through SGLang's recurrent verify kernel (extra: its buffers); returns
        its output [1, B T, HV, V], which it allocates (the engine takes it as it is)."""
        return self.update(A_log=f["A_log"], a=f["a"], dt_bias=f["dt_bias"], softplus_beta=1.0, softplus_threshold=20.0,
                        q=f["q"][None], k=f["k"][None], v=f["v"][None], b=f["b"], initial_state_source=pool,
                        initial_state_indices=slot, scale=K ** -0.5, use_qk_l2norm_in_kernel=True, cu_seqlens=f["cu"],
                        is_kda=gate == "kda", disable_state_update=True, intermediate_state_indices=rows,
                        cache_steps=self.T, **extra)

    def layer_call(self, gate, f, pool, inter, slot, rows):
        return self.verify_call(gate, f, pool, slot, rows, intermediate_states_buffer=inter)

    def make(self, gate, H, HV, B, nl, order, gen):
        T = self.T
        slot = slot_rows(B, order, gen)
        rows = torch.arange(B, device="cuda", dtype=torch.int32)  # the verify buffer's rows
        pool = torch.zeros(nl, 2 * B, HV, V, K, device="cuda")
        inter = torch.zeros(nl, B, T, HV, V, K, device="cuda")
        ins = [varlen_window(make_inputs(gate, B, H, HV, T, gen), T) for _ in range(nl)]
        last = accepted_rows(B, T, gen) - 1  # the step whose state each row keeps

        def step():
            for l, f in enumerate(ins):
                self.layer_call(gate, f, pool[l], inter[l], slot, rows)
            self.scatter(pool, inter, slot, last)

        return step, 1

    def run_steps(self, gate, H, HV, S0, x):
        T = self.T
        B, n = x["q"].shape[0], x["q"].shape[1] // T * T
        pool = torch.from_numpy(S0).float().cuda()[None].contiguous()
        inter = torch.zeros(1, B, T, HV, V, K, device="cuda")
        slot = torch.arange(B, device="cuda", dtype=torch.int32)
        last = torch.full((B,), T - 1, device="cuda", dtype=torch.int32)
        out = []
        for t0 in range(0, n, T):
            o = self.layer_call(gate, varlen_window(token(x, t0, T), T), pool[0], inter[0], slot, slot)
            self.scatter(pool, inter, slot, last)
            out.append(o.reshape(B, T, HV, V))
        return torch.cat(out, 1).double().cpu().numpy()


class SGLangKDASpecVerify(SGLangPackedVerify):
    """SGLang's KDA ReplaySSM speculative verify (fold every commit): per layer its recurrent
    verify kernel with the ring write fused in (cache_ring: each row's window of raw v, raw k, the
    per-channel gate and beta into ring positions 0 .. T-1, no intermediate states, the pool left
    as it was); after the last layer commit_kda_replayssm_spec_all_layers replays each row's
    accepted prefix into its checkpoint, every layer in one launch. KDA only."""

    name = "sgl-spec"

    def __init__(self, T):
        super().__init__(T)
        from sglang.kernels.ops.attention.linear.kda_replayssm_spec_decode import commit_kda_replayssm_spec_all_layers

        self.fold = commit_kda_replayssm_spec_all_layers

    def orders_for(self, gate):
        return ("seq", "rnd") if gate == "kda" else ()

    @staticmethod
    def rings(nl, n, H, HV):
        """Its per-slot rings of nl layers: raw v and k in the activations' dtype (bf16), the gates and
        beta in f32."""
        z = lambda *shape, dt=torch.float32: torch.zeros(*shape, dtype=dt, device="cuda")  # noqa: E731
        bf = torch.bfloat16
        return dict(v=z(nl, n, HV, L, V, dt=bf), k=z(nl, n, H, L, K, dt=bf), g=z(nl, n, HV, L, K), beta=z(nl, n, HV, L))

    def spec_call(self, f, pool, ring, l, slot, rows):
        return self.verify_call("kda", f, pool, slot, rows, intermediate_states_buffer=None, cache_ring=True,
                         replayssm_rawv=ring["v"][l], replayssm_rawk=ring["k"][l], replayssm_g=ring["g"][l],
                         replayssm_beta=ring["beta"][l])

    def commit(self, pool, ring, slot, acc, H):
        self.fold(checkpoint_state=pool, rawv_cache=ring["v"], rawk_cache=ring["k"], gk_cache=ring["g"],
                  beta_cache=ring["beta"], ssm_state_indices=slot, accept_lens=acc, max_cache_len=L, num_k_heads=H,
                  null_block_id=-1)

    def make(self, gate, H, HV, B, nl, order, gen):
        T = self.T
        slot = slot_rows(B, order, gen)
        rows = torch.arange(B, device="cuda", dtype=torch.int32)
        pool = torch.zeros(nl, 2 * B, HV, V, K, device="cuda")
        ring = self.rings(nl, 2 * B, H, HV)
        ins = [varlen_window(make_inputs(gate, B, H, HV, T, gen), T) for _ in range(nl)]
        acc = accepted_rows(B, T, gen)

        def step():
            for l, f in enumerate(ins):
                self.spec_call(f, pool[l], ring, l, slot, rows)
            self.commit(pool, ring, slot, acc, H)

        return step, 1

    def run_steps(self, gate, H, HV, S0, x):
        T = self.T
        B, n = x["q"].shape[0], x["q"].shape[1] // T * T
        pool = torch.from_numpy(S0).float().cuda()[None].contiguous()
        ring = self.rings(1, B, H, HV)
        slot = torch.arange(B, device="cuda", dtype=torch.int32)
        every = torch.full((B,), T, device="cuda", dtype=torch.int32)
        out = []
        for t0 in range(0, n, T):
            o = self.spec_call(varlen_window(token(x, t0, T), T), pool[0], ring, 0, slot, slot)
            self.commit(pool, ring, slot, every, H)
            out.append(o.reshape(B, T, HV, V))
        return torch.cat(out, 1).double().cpu().numpy()


class FlashInferMTPVerify(Kernel):
    """FlashInfer's GDN verify, gated_delta_rule_mtp: per layer the window's outputs, and each
    token's state written straight into a pool slot of its own (ssm_state_indices [B, T]), from
    which the engine continues the row at its accepted token: the commit is a choice of slot, no
    copy. The rows read their states from slots of a pool of 2B (seq / rnd) and write the T states
    to B T further slots. f32 state (the entry's only one). GDN only."""

    name = "fi-mtp-verify"

    def __init__(self, T):
        from flashinfer.gdn_decode import gated_delta_rule_mtp

        self.T, self.mtp = T, gated_delta_rule_mtp

    def orders_for(self, gate):
        return ("seq", "rnd") if gate == "gdn" else ()

    def layer_call(self, x, pool, slot, writes, out):
        self.mtp(x["q"], x["k"], x["v"], pool, slot, x["A_log"], x["a"], x["dt_bias"], x["b"], scale=K ** -0.5,
                 output=out, ssm_state_indices=writes, disable_state_update=False, use_qk_l2norm=True)

    def make(self, gate, H, HV, B, nl, order, gen):
        T = self.T
        slot = slot_rows(B, order, gen)
        writes = (2 * B + torch.arange(B * T, device="cuda", dtype=torch.int32)).reshape(B, T)
        pools = [torch.zeros(2 * B + B * T, HV, V, K, device="cuda") for _ in range(nl)]
        ins = [make_inputs(gate, B, H, HV, T, gen) for _ in range(nl)]
        outs = [torch.empty(B, T, HV, V, dtype=torch.bfloat16, device="cuda") for _ in range(nl)]

        def step():
            for x, h, o in zip(ins, pools, outs):
                self.layer_call(x, h, slot, writes, o)

        return step, 1

    def run_steps(self, gate, H, HV, S0, x):
        T = self.T
        B, n = x["q"].shape[0], x["q"].shape[1] // T * T
        pool = torch.cat([state_of(S0, torch.float32), torch.zeros(B * T, HV, V, K, device="cuda")])
        slot = torch.arange(B, device="cuda", dtype=torch.int32)
        writes = (B + torch.arange(B * T, device="cuda", dtype=torch.int32)).reshape(B, T)
        out = []
        for t0 in range(0, n, T):
            xw = bf16_activations(token(x, t0, T))
            o = torch.empty(B, T, HV, V, dtype=torch.bfloat16, device="cuda")
            self.layer_call(xw, pool, slot, writes, o)
            pool[:B] = pool[writes[:, -1].long()]  # every token accepted: the row goes on from its last state
            out.append(o)
        return torch.cat(out, 1).double().cpu().numpy()


def load_verify_kernels(T, switches=None):
    """The verify kernels (--verify T)."""
    ks, notes = [ReplaySSMVerify(T, switches)], []
    fi = flashinfer_kernel(FlashInferMTPVerify, notes, T)
    ks += fi
    try:
        import sglang

        notes.append(f"sglang {getattr(sglang, '__version__', '?')}")
    except Exception as e:  # noqa: BLE001 - any import failure means the peer is not there
        notes.append(f"sglang: skipped ({type(e).__name__}: {e})")
        return ks, notes
    for cls in (SGLangSpecVerify, SGLangKDASpecVerify, SGLangPackedVerify):
        try:
            ks.append(cls(T))
        except Exception as e:  # noqa: BLE001
            notes.append(f"{cls.name}: skipped ({type(e).__name__}: {e})")
    return ks, notes


def sglang_kda_packed_path():
    """Which kernel SGLang's KDA packed decode runs: from B >= 8 a CUDA kernel it compiles at run
    time (through apache-tvm-ffi and nvcc), where that builds; otherwise its Triton kernel."""
    try:
        import tvm_ffi
        from sglang.kernels.ops.attention import kda_packed_decode as cuda_kda

        cuda_kda._jit_kda_packed_decode_module()
        return (f"sgl-packed KDA: its CUDA kernel from B >= {cuda_kda._MIN_BATCH} "
                f"(apache-tvm-ffi {getattr(tvm_ffi, '__version__', '?')}), Triton below")
    except Exception as e:  # noqa: BLE001 - any failure means SGLang itself falls back to Triton
        return f"sgl-packed KDA: Triton only (its CUDA kernel: {type(e).__name__}: {str(e)[:200]})"


def flashinfer_kernel(cls, notes, *args):
    """[cls(*args)] where FlashInfer imports and runs on this GPU (its note added), else [] (why)."""
    try:
        import flashinfer

        k = cls(*args)
        notes.append(f"flashinfer {getattr(flashinfer, '__version__', '?')}")
        return [k]
    except Exception as e:  # noqa: BLE001 - any import failure means the peer is not there
        notes.append(f"{cls.name}: skipped ({type(e).__name__}: {str(e)[:300]})")
        return []


def load_kernels(switches=None, kfirst=False):
    """The kernels to time; switches: replayssm's context switches (rssm_context_params); kfirst:
    replayssm's kernels on K-first states too. With a bf16 state only those that keep one."""
    ks, notes = [ReplaySSM(False, switches), ReplaySSM(True, switches)], []
    if kfirst:
        ks += [ReplaySSM(False, switches, "kfirst"), ReplaySSM(True, switches, "kfirst")]
    if STATE == torch.bfloat16:
        notes.append("fla, sglang: not run (their entries here keep an f32 state)")
        return ks + flashinfer_kernel(FlashInfer, notes), notes
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
        notes.append(sglang_kda_packed_path())
        try:
            ks.append(SGLangReplay())
        except Exception as e:  # noqa: BLE001
            notes.append(f"sgl-replay: skipped ({type(e).__name__}: {e})")
    except Exception as e:  # noqa: BLE001
        notes.append(f"sglang: skipped ({type(e).__name__}: {e})")
    return ks + flashinfer_kernel(FlashInfer, notes), notes


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
    o_ref = o_ref[:, :o.shape[1]]  # verify: the whole windows
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
    ap.add_argument("--cuda-pdl", type=int, choices=(-1, 0, 1, 2, 3), default=None,
                    help="replayssm's programmatic dependent launch (cuda_pdl; default: the library's rule)")
    ap.add_argument("--state", choices=("f32", "bf16"), default="f32",
                    help="the state's dtype (bf16: replayssm's and FlashInfer's kernels only; decode only)")
    ap.add_argument("--kfirst", action="store_true",
                    help="also time replayssm's decode on K-first states (FLA's order: rs-packed-kf, rs-replay-kf)")
    ap.add_argument("--verify", type=int, default=0, metavar="T",
                    help="time speculative verify of T tokens + commit instead of decode (2 <= T <= L / 2)")
    a = ap.parse_args(argv)
    batches = [int(b) for b in a.batch.split(",")]
    os.makedirs(a.out, exist_ok=True)
    if a.verify and not 2 <= a.verify <= L // 2:
        ap.error(f"--verify {a.verify}: T from 2 to L / 2 = {L // 2} (SGLang's ring needs L >= 2 T)")
    if a.verify and a.state != "f32":
        ap.error("--verify: f32 state only")
    if a.verify and a.kfirst:
        ap.error("--kfirst: decode only")
    global STATE
    STATE = torch.bfloat16 if a.state == "bf16" else torch.float32
    switches = {} if a.cuda_pdl is None else {"cuda_pdl": a.cuda_pdl}
    kernels, notes = load_verify_kernels(a.verify, switches) if a.verify else load_kernels(switches, a.kfirst)
    bw = copy_bandwidth()
    gpu = torch.cuda.get_device_name()
    commit = a.commit or subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                                        cwd=os.path.dirname(os.path.abspath(__file__))).stdout.strip() or "?"
    date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    head = [f"# replayssm {rs.version()} ({commit}), torch {torch.__version__}, {gpu}, {date}",
            f"# peers: {'; '.join(notes)}",
            f"# copy bandwidth {bw / 1e12:.2f} TB/s (read + write); floor = " +
            ("state bytes / that (the checkpoint read alone)" if a.verify else "2 x state bytes / that (packed)"),
            f"# command: python bench/peers.py {' '.join(sys.argv[1:] if argv is None else argv)}"]
    print("\n".join(head), flush=True)
    rows = []
    # a run stopped by `timeout` (SIGTERM) still writes the rows it measured, marked partial
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(128 + signal.SIGTERM))
    complete = False
    try:
        measure(a, kernels, batches, bw, gpu, commit, date, rows)
        complete = True
    finally:
        if rows:
            write_outputs(a.out, head + ([] if complete else ["# partial: the run stopped before its last row"]), rows)


def measure(a, kernels, batches, bw, gpu, commit, date, rows):
    """Times every (model, B, kernel, order) of the run into rows, printing each as it lands."""
    for model in a.models.split(","):
        gate, H, HV = MODELS[model]
        errs = {}
        for kn in kernels:
            if hasattr(kn, "orders_for") and not kn.orders_for(gate):
                print(f"# {model} {kn.name}: not for this gate", flush=True)
                continue
            try:
                errs[kn.name] = f64_error(kn, gate, H, HV, a.seed)
            except Exception as e:  # noqa: BLE001 - a peer that cannot run this shape is reported, not fatal
                errs[kn.name] = float("nan")
                print(f"# {model} {kn.name}: error run failed: {type(e).__name__}: {e}", flush=True)
        for B in batches:
            state_bytes = B * HV * K * V * (2 if STATE == torch.bfloat16 else 4)
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
                    floor = (1 if a.verify else 2) * state_bytes / bw * 1e6
                    rows.append(dict(model=model, gate=gate, B=B, T=a.verify or 1, kernel=kn.name, order=order,
                                     layout=kn.layout, state=a.state,
                                     us=round(us, 3), floor_packed_us=round(floor, 3), layers=nl,
                                     err_f64=f"{errs[kn.name]:.2e}", gpu=gpu, commit=commit, date=date))
                    print(f"{model:12s} B={B:4d} {kn.name:10s} {order:6s} {us:9.2f} us  (floor {floor:.2f},"
                          f" err {errs[kn.name]:.1e}, {nl} layers)", flush=True)


def best_of(val, ours):
    """The fastest time among replayssm's kernels with random slots (ours) or among the peers' engine
    forms (not ours): rnd, or FLA GDN's contig / inplace; nan where none ran."""
    pick = [us for (kernel, order), us in val.items() if kernel.startswith("rs-") == ours and us == us and
            order in (("rnd",) if ours else ("rnd", "contig", "inplace"))]
    return min(pick) if pick else float("nan")


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
        T = rs_[0].get("T", 1)
        what = f"verify of {T} tokens + commit" if T > 1 else f"decode, {rs_[0].get('state', 'f32')} state"
        floor_name = "read floor" if T > 1 else "packed floor"
        lines += ["", f"## {model}, {what} (us per layer call; err = max |o - o_f64| / max |o_f64| over {ERR_T} steps)",
                  "", "| B | " + " | ".join(f"{k} {o}" for k, o in cols) +
                  f" | {floor_name} | rs best | peer best | peer / rs |",
                  "|---:|" + "---:|" * (len(cols) + 4)]
        for B in dict.fromkeys(r["B"] for r in rs_):
            val = {(r["kernel"], r["order"]): r["us"] for r in rs_ if r["B"] == B}
            floor = next(r["floor_packed_us"] for r in rs_ if r["B"] == B)
            ours, peer = best_of(val, True), best_of(val, False)
            lines.append(f"| {B} | " + " | ".join(f"{val.get(c, float('nan')):.2f}" for c in cols) +
                         f" | {floor:.2f} | {ours:.2f} | {peer:.2f} | {peer / ours:.2f}x |")
        lines.append("| err | " + " | ".join(errs[c] for c in cols) + " | | | | |")
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
