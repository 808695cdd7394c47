"""FLA's op names, arguments and return values over replayssm: a call site switches by its import.

    from fla.ops.gated_delta_rule import fused_recurrent_gated_delta_rule   # before
    from replayssm.fla import fused_recurrent_gated_delta_rule              # after

    o, ht = fused_recurrent_gated_delta_rule(q, k, v, g=g, beta=beta, initial_state=h0,
                                             output_final_state=True, use_qk_l2norm_in_kernel=True)

Functions (forward only; numpy arrays or CPU torch tensors run on replayssm's CPU back end,
CUDA torch tensors on its CUDA back end, one cached Context per device):

  fused_recurrent_gated_delta_rule, chunk_gated_delta_rule   GDN: g [B, T, HV] log-gates
  fused_recurrent_kda, chunk_kda                             KDA: g [B, T, HV, K] log-gates
  fused_sigmoid_gating_delta_rule_update                     SGLang's decode entry: raw gates, a
                                                             state pool updated in place
  RingCache                                                  opt-in ReplaySSM decode / verify

Shapes are FLA's: q, k [B, T, H, K]; v [B, T, HV, V] (HV % H == 0); beta [B, T, HV]; o like v.
Ragged rows as FLA's varlen: B = 1, tokens packed as [1, total, ...], cu_seqlens [N + 1].
q, k, v (and o) are float32 or bfloat16 (numpy bf16: ml_dtypes.bfloat16 or uint16 bits);
g and beta are used as float32; states are float32 (pools float32 or bfloat16).

What each call runs:
  - the recurrence over tokens (both fused_recurrent_* and chunk_*: the results are the
    recurrence's, not a chunked approximation) is replayssm's prefill, ragged rows through
    cu_seqlens; one token per row is its packed decode;
  - with ssm_state_indices (vLLM's continuous batching) the rows read and write slots of the
    pool passed as initial_state; a V-first float32/bfloat16 pool with [N] indices is used in
    place (no copy); any other form goes through a float32 scratch of the rows' states;
  - with ring_cache=RingCache(...) one token per row is ReplaySSM decode (decode_replay +
    advance), several tokens a prefill or, for a speculative cache, a verify window that the
    next call's num_accepted_tokens (or RingCache.commit) commits.

State layout. FLA's states are K-first [N, HV, K, V]; vLLM's and SGLang's pools are V-first
[N, HV, V, K]. replayssm takes either as it is (the layer's state_layout): no transpose on the
way in or out. transpose_state_layout=True (FLA's flag; state_v_first is newer FLA's name for it)
says the caller's states are V-first. With ssm_state_indices and neither flag given, the pool is
taken as V-first, as vLLM's and SGLang's current pools are.

Not supported, each raising NotImplementedError (or ValueError / TypeError for a bad value)
that names the argument: gradients (an input that requires grad while grad is enabled),
head_first=True, reverse=True, gv, a per-value-channel beta [B, T, HV, V], cp_context,
return_intermediate_states=True, SGLang's retrieve_parent_token (tree verify) and its own
ring (cache_ring), dtypes other than float32 / bfloat16 for q, k, v. Arguments that only
choose kernels (chunk_size, chunk_indices, cu_seqlens_cpu, safe_gate, disable_recompute,
num_warps, cache_steps) are accepted and ignored. An unknown keyword is a TypeError.

Known differences: a padding row (slot -1) gets a zero output here (FLA/vLLM leave it
unwritten, SGLang computes it from a zero state); replayssm normalises q, k as
x / sqrt(sum x^2 + 1e-6) (current FLA; some older copies used x / (sqrt(sum x^2) + 1e-6)).
"""
from __future__ import annotations

import functools
import math
import threading
from typing import Any, Optional

import numpy as np

from . import _tensors as tz
from . import bf16 as _bf16
from . import ops as _ops
from .core import Context, Layer, State

__all__ = ["fused_recurrent_gated_delta_rule", "chunk_gated_delta_rule", "fused_recurrent_kda", "chunk_kda",
           "fused_sigmoid_gating_delta_rule_update", "RingCache"]

Tensor = Any  # a numpy array, or a torch tensor (CPU or CUDA)

# Keywords that only choose a kernel or a schedule in FLA / SGLang: accepted, no effect on results.
_IGNORED = frozenset({"chunk_size", "chunk_indices", "cu_seqlens_cpu", "safe_gate", "disable_recompute", "num_warps",
                      "cache_steps"})


# ---- tensors: numpy or torch ------------------------------------------------------------------


def _torch():
    import torch

    return torch


def _is_torch(x) -> bool:
    return tz.is_torch(x)


def _kind(x) -> str:
    """Library dtype name of an array or tensor ("f32", "bf16", "f64", ...or numpy's/torch's name)."""
    if _is_torch(x):
        return tz._torch_kind(x.dtype)
    return tz._np_kind(np.asarray(x).dtype)


def _where(x):
    """("host", 0) or ("cuda", ordinal)."""
    if _is_torch(x) and x.device.type == "cuda":
        return "cuda", x.device.index if x.device.index is not None else 0
    if _is_torch(x) and x.device.type != "cpu":
        raise ValueError(f"torch tensors on {x.device} are not supported (cpu or cuda)")
    return "host", 0


def _dense(x):
    """x contiguous and 16-byte aligned (the library's requirement), copied only when needed."""
    if _is_torch(x):
        x = x.contiguous()
        return x if x.data_ptr() % 16 == 0 else x.clone()
    return tz.aligned_copy(np.ascontiguousarray(x), 16)


def _f32(x):
    """x as a dense float32 array/tensor (numpy uint16 arrays are bf16 bits, as everywhere in replayssm)."""
    if _is_torch(x):
        return _dense(x.float())
    a = np.asarray(x)
    if a.dtype == np.uint16 or a.dtype.name == "bfloat16":
        a = _bf16.from_bf16(a)
    return tz.aligned_copy(np.ascontiguousarray(a, dtype=np.float32), 16)


def _zeros(shape, kind, like):
    """Zeros of a library dtype on the device (and in the framework) of `like`."""
    if _is_torch(like):
        return _torch().zeros(tuple(shape), dtype=tz.torch_dtype(kind), device=like.device)
    return tz.aligned_zeros(tuple(shape), tz.numpy_dtype(kind))


def _zeros_as(shape, like):
    """Zeros with `like`'s dtype (numpy bf16 stays uint16 bits or ml_dtypes)."""
    if _is_torch(like):
        return _torch().zeros(tuple(shape), dtype=like.dtype, device=like.device)
    return tz.aligned_zeros(tuple(shape), np.asarray(like).dtype)


def _swap(x):
    """The last two axes exchanged (a view), i.e. K-first <-> V-first."""
    return x.transpose(-1, -2) if _is_torch(x) else np.swapaxes(x, -1, -2)


def _host_ints(x, name) -> np.ndarray:
    if _is_torch(x):
        x = x.detach().cpu()
        if x.dtype.is_floating_point:
            raise TypeError(f"{name}: expected integers, got {x.dtype}")
        return x.numpy().astype(np.int64)
    a = np.asarray(x)
    if a.size and not np.issubdtype(a.dtype, np.integer):
        raise TypeError(f"{name}: expected integers, got {a.dtype}")
    return a.astype(np.int64)


def _ix(like, a):
    """An integer index usable on `like` (a torch index tensor on its device, or the numpy array)."""
    if _is_torch(like):
        return _torch().as_tensor(np.asarray(a, np.int64), device=like.device)
    return np.asarray(a, np.int64)


def _i32(a, like):
    """An int32 index array for the library, on the device of `like`."""
    a = np.ascontiguousarray(np.asarray(a, np.int32))
    if _is_torch(like) and like.device.type == "cuda":
        return _torch().as_tensor(a, device=like.device)
    return a


def _rows_get(pool, rows):
    """pool[rows] as float32 (a copy)."""
    return _f32(pool[_ix(pool, rows)])


def _cast_like(x, target):
    """float32 values x in the dtype of `target` (numpy bf16 bits rounded as the library rounds)."""
    if _is_torch(target):
        return x.to(target.dtype)
    t = np.asarray(target).dtype
    if t == np.uint16:
        return _bf16.to_bf16(x)
    return np.asarray(x).astype(t)


def _rows_put(pool, rows, x):
    """pool[rows] = x (float32, the pool's layout) in the pool's dtype."""
    if len(rows) == 0:
        return
    pool[_ix(pool, rows)] = _cast_like(x, pool)


def _as_framework(x, like):
    """x (numpy or torch) as the framework of `like` (CPU torch shares numpy's memory)."""
    if _is_torch(like) and not _is_torch(x):
        return _torch().from_numpy(np.ascontiguousarray(x))
    return x


def _reshape_tokens(x, B, T):
    """[1, B*T, ...] or [B, T, ...] -> [B, T, ...] (a view when contiguous)."""
    if x is None:
        return None
    return x.reshape((B, T) + tuple(x.shape[2:]))


# ---- contexts and layers ----------------------------------------------------------------------

_ctx_lock = threading.Lock()
_contexts = {}


def _context(memory: str, index: int) -> Context:
    """The cached Context of a device: "cpu" for host memory, "cuda" (ordinal) for CUDA tensors."""
    key = (memory, index)
    with _ctx_lock:
        ctx = _contexts.get(key)
        if ctx is None:
            ctx = _contexts[key] = Context("cuda", device_ordinal=index) if memory == "cuda" else Context("cpu")
    return ctx


@functools.lru_cache(maxsize=512)
def _layer(gate, H, HV, K, V, io, scale, l2norm, lower_bound=None, ring_len=1, state_dtype="f32", ring_dtype=None,
           state_layout="vk"):
    return Layer(gate=gate, H=H, HV=HV, K=K, V=V, ring_len=ring_len, state_dtype=state_dtype, ring_dtype=ring_dtype,
                 io_dtype=io, scale=scale, qk_l2norm=l2norm, lower_bound=lower_bound, state_layout=state_layout)


def _layout(v_first) -> str:
    return "vk" if v_first else "kv"


def _alloc_state(layer, n, like, ring):
    """Zeroed state tensors for n slots in the framework and on the device of `like`."""
    t = {name: _zeros(shape, kind, like) for name, (shape, kind) in layer.state_shapes(n).items()
         if ring or name == "checkpoint"}
    return State(layer, **t)


# ---- one call's inputs ------------------------------------------------------------------------


class _Call:
    """The checked shapes of one call: q, k [B, T, H, K], v [B, T, HV, V], the rows (N = B, or
    len(cu_seqlens) - 1 with B = 1) and each row's token count `lens` (host)."""

    def __init__(self, fn, q, k, v, cu_seqlens, extra=()):
        self.fn = fn
        for name, x in (("q", q), ("k", k), ("v", v)):
            if not (_is_torch(x) or isinstance(x, np.ndarray)):
                raise TypeError(f"{fn}: {name}: expected a numpy array or a torch tensor, got {type(x).__name__}")
            if len(x.shape) != 4:
                raise ValueError(f"{fn}: {name}: shape {tuple(x.shape)}, expected [B, T, heads, dim]")
        B, T, H, K = (int(d) for d in q.shape)
        HV, V = int(v.shape[2]), int(v.shape[3])
        if tuple(k.shape) != (B, T, H, K):
            raise ValueError(f"{fn}: k: shape {tuple(k.shape)}, expected q's {(B, T, H, K)}")
        if tuple(v.shape[:2]) != (B, T):
            raise ValueError(f"{fn}: v: shape {tuple(v.shape)}, expected [B={B}, T={T}, HV, V]")
        if HV % H:
            raise ValueError(f"{fn}: v: {HV} value heads is not a multiple of the {H} key heads of q")
        io = _kind(q)
        if io not in ("f32", "bf16"):
            raise TypeError(f"{fn}: q: dtype {io} is not supported (float32 or bfloat16)")
        for name, x in (("k", k), ("v", v)):
            if _kind(x) != io:
                raise TypeError(f"{fn}: {name}: dtype {_kind(x)}, expected q's {io}")
        self.where = _where(q)
        for name, x in (("k", k), ("v", v)) + tuple(extra):
            if x is not None and (_is_torch(x) or isinstance(x, np.ndarray)) and _where(x) != self.where:
                raise ValueError(f"{fn}: {name}: on a different device than q")
        _check_no_grad(fn, (("q", q), ("k", k), ("v", v)) + tuple(extra))
        self.q, self.k, self.v = q, k, v
        self.B, self.T, self.H, self.K, self.HV, self.V, self.io = B, T, H, K, HV, V, io
        self.cu = cu_seqlens
        if cu_seqlens is None:
            self.rows, self.lens = B, np.full(B, T, np.int64)
        else:
            if B != 1:
                raise ValueError(f"{fn}: cu_seqlens: the batch size is {B}; ragged rows are packed as "
                                 f"[1, total, ...] (flatten the batch first)")
            cu = _host_ints(cu_seqlens, "cu_seqlens")
            if cu.ndim != 1 or len(cu) < 2 or cu[0] != 0 or cu[-1] != T or np.any(np.diff(cu) < 0):
                raise ValueError(f"{fn}: cu_seqlens: {cu.tolist()[:8]}... must rise from 0 to the {T} packed tokens")
            self.rows, self.lens, self.cu_host = len(cu) - 1, np.diff(cu), cu
        self.ctx = _context(*self.where)

    @property
    def equal_lens(self) -> bool:
        return bool(np.all(self.lens == self.lens[0]))

    def token_index(self, t):
        """(batch index, token index) of each row's token t (clamped for rows that are shorter)."""
        N = self.rows
        if self.cu is None:
            return np.arange(N), np.full(N, min(t, self.T - 1))
        tt = self.cu_host[:-1] + np.minimum(t, np.maximum(self.lens - 1, 0))
        return np.zeros(N, np.int64), np.minimum(tt, max(self.T - 1, 0))


def _check_no_grad(fn, named):
    for name, x in named:
        if _is_torch(x) and x.requires_grad and _torch().is_grad_enabled():
            raise NotImplementedError(f"{fn}: gradients: {name} requires grad; replayssm.fla is forward only "
                                      f"(run under torch.no_grad() or torch.inference_mode())")


def _reject(fn, kwargs):
    """FLA keywords replayssm cannot honour (NotImplementedError), kernel choices (ignored),
    and unknown keywords (TypeError)."""
    for name, value in kwargs.items():
        if name in _IGNORED:
            continue
        if name == "head_first":
            if value:
                raise NotImplementedError(f"{fn}: head_first=True: replayssm takes FLA's [B, T, H, ...] layout only")
            continue
        if name == "reverse":
            if value:
                raise NotImplementedError(f"{fn}: reverse=True: replayssm runs the recurrence forwards only")
            continue
        if name == "cp_context":
            if value is not None:
                raise NotImplementedError(f"{fn}: cp_context: context parallelism is not supported")
            continue
        if name == "return_intermediate_states":
            if value:
                raise NotImplementedError(f"{fn}: return_intermediate_states=True: replayssm does not return the "
                                          f"per-chunk states")
            continue
        raise TypeError(f"{fn}: unexpected keyword argument {name!r}")


def _state_layout(fn, transpose_state_layout, state_v_first, pooled):
    """True when the caller's states are V-first [.., V, K]."""
    if transpose_state_layout is not None and state_v_first is not None and \
            bool(transpose_state_layout) != bool(state_v_first):
        raise ValueError(f"{fn}: transpose_state_layout={transpose_state_layout} and state_v_first={state_v_first} "
                         f"disagree (they are one flag)")
    flag = transpose_state_layout if transpose_state_layout is not None else state_v_first
    return bool(pooled) if flag is None else bool(flag)


def _scale(fn, scale, K):
    if scale is None:
        return float(K) ** -0.5
    scale = float(scale)
    if not scale > 0:
        raise ValueError(f"{fn}: scale: {scale} must be positive")
    return scale


# ---- gates ------------------------------------------------------------------------------------


def _precomputed_gates(c: _Call, gate, g, beta, use_exp2=False):
    """io kwargs of precomputed gates: g (GDN [B, T, HV], KDA [B, T, HV, K]) and beta [B, T, HV],
    as float32. g None = no decay; beta None = ones (FLA's defaults)."""
    fn = c.fn
    gshape = (c.B, c.T, c.HV, c.K) if gate == "kda" else (c.B, c.T, c.HV)
    if g is None:
        g = _zeros(gshape, "f32", c.q)
    if tuple(g.shape) != gshape:
        raise ValueError(f"{fn}: g: shape {tuple(g.shape)}, expected {gshape}" +
                         (" (KDA gates are per key channel)" if gate == "kda" else ""))
    g = _f32(g)
    if use_exp2:  # log2-space gates (FLA's use_exp2): exp2(g) = exp(g ln 2)
        g = _dense(g * math.log(2.0))
    if beta is None:
        beta = _zeros((c.B, c.T, c.HV), "f32", c.q) + 1
    elif len(beta.shape) == 4:
        raise NotImplementedError(f"{fn}: beta: shape {tuple(beta.shape)}: a per-channel beta is not supported, "
                                  f"only [B, T, HV]")
    elif tuple(beta.shape) != (c.B, c.T, c.HV):
        raise ValueError(f"{fn}: beta: shape {tuple(beta.shape)}, expected {(c.B, c.T, c.HV)}")
    return dict(g=g, beta=_f32(beta))


def _computed_gates(c: _Call, gate, a, b, A_log, dt_bias, lower_bound, softplus_beta=1.0, threshold=20.0,
                    beta_is_raw=True):
    """g and beta computed here in float32 from raw inputs, for the forms the library's
    in-kernel gates do not cover (softplus beta/threshold other than 1/20, raw g with a given
    beta or the reverse, allow_neg_eigval). a like g; b (raw, or beta itself) [B, T, HV]."""
    kda = gate == "kda"
    if _is_torch(a):
        torch = _torch()
        x = a.float() + dt_bias.float().reshape((c.HV, c.K) if kda else (c.HV,))
        A = A_log.float().exp().reshape((c.HV, 1) if kda else (c.HV,))
        if lower_bound is not None:
            g = lower_bound * torch.sigmoid(A * x)
        else:
            bx = softplus_beta * x
            g = -A * torch.where(bx <= threshold, torch.log1p(torch.exp(bx)) / softplus_beta, x)
        beta = torch.sigmoid(b.float()) if beta_is_raw else b.float()
    else:
        x = _f32(a).astype(np.float64) + _f32(dt_bias).astype(np.float64).reshape((c.HV, c.K) if kda else (c.HV,))
        A = np.exp(_f32(A_log).astype(np.float64)).reshape((c.HV, 1) if kda else (c.HV,))
        with np.errstate(over="ignore"):
            if lower_bound is not None:
                g = lower_bound / (1.0 + np.exp(-A * x))
            else:
                bx = softplus_beta * x
                g = -A * np.where(bx <= threshold, np.log1p(np.exp(np.minimum(bx, threshold))) / softplus_beta, x)
        bb = _f32(b).astype(np.float64)
        beta = 1.0 / (1.0 + np.exp(-bb)) if beta_is_raw else bb
    return dict(g=_f32(g), beta=_f32(beta))


def _raw_gates(c: _Call, gate, a, b, A_log, dt_bias):
    """io kwargs of the library's in-kernel gates: a, b in the io dtype, A_log [HV] and dt_bias
    (GDN [HV], KDA [HV, K]) as float32."""
    kda = gate == "kda"
    if dt_bias is None:
        dt_bias = _zeros((c.HV, c.K) if kda else (c.HV,), "f32", c.q)
    return dict(a=_dense(a), b=_dense(b), A_log=_f32(A_log).reshape(c.HV),
                dt_bias=_f32(dt_bias).reshape((c.HV, c.K) if kda else (c.HV,)))


def _gate_tokens(gkw, fn_reshape):
    return {n: (fn_reshape(x) if n in ("g", "beta", "a", "b") else x) for n, x in gkw.items()}


# ---- the recurrence on sequences (FLA's initial_state / final_state) ---------------------------


def _run_sequences(c: _Call, gate, gkw, lower_bound, scale, l2norm, initial_state, output_final_state, v_first):
    """Every row from its initial state (zeros when None) through its tokens: replayssm prefill
    on a float32 state in the caller's layout (packed decode for one dense token), which becomes
    the final state. Returns (o, final_state)."""
    fn, N, HV, K, V = c.fn, c.rows, c.HV, c.K, c.V
    layer = _layer(gate, c.H, HV, K, V, c.io, scale, l2norm, lower_bound, state_layout=_layout(v_first))
    one_token = c.cu is None and c.T == 1
    st = _alloc_state(layer, N, c.q, ring=not one_token)
    if initial_state is not None:
        want = (N, HV, V, K) if v_first else (N, HV, K, V)
        if tuple(initial_state.shape) != want:
            raise ValueError(f"{fn}: initial_state: shape {tuple(initial_state.shape)}, expected {want} "
                             f"({'V-first' if v_first else 'K-first'}, one state per sequence)")
        if _where(initial_state) != c.where:
            raise ValueError(f"{fn}: initial_state: on a different device than q")
        _check_no_grad(fn, (("initial_state", initial_state),))
        st.checkpoint[...] = _f32(initial_state) if not _is_torch(initial_state) else initial_state.float()
    slot = np.where(c.lens > 0, np.arange(N), -1)
    qkv = dict(q=_dense(c.q), k=_dense(c.k), v=_dense(c.v))
    if one_token:
        o = _ops.decode_packed(c.ctx, layer, st, slot=_i32(slot, c.q), **qkv, **gkw)
    else:
        o = _ops.prefill(c.ctx, layer, st, slot=_i32(slot, c.q), cu_seqlens=None if c.cu is None else c.cu_host,
                         **qkv, **gkw)
    final = None
    if output_final_state:
        final = st.checkpoint
    return o, final


# ---- the recurrence on a state pool (vLLM's ssm_state_indices, SGLang's pool) ------------------


def _check_pool(fn, name, pool, c: _Call, v_first):
    want = (c.HV, c.V, c.K) if v_first else (c.HV, c.K, c.V)
    if not (_is_torch(pool) or isinstance(pool, np.ndarray)) or len(pool.shape) != 4 or tuple(pool.shape[1:]) != want:
        shape = tuple(pool.shape) if hasattr(pool, "shape") else type(pool).__name__
        raise ValueError(f"{fn}: {name}: {shape}, expected a state pool [slots, {', '.join(map(str, want))}] "
                         f"({'V-first' if v_first else 'K-first'})")
    if _kind(pool) not in ("f32", "bf16"):
        raise TypeError(f"{fn}: {name}: dtype {_kind(pool)} is not supported (float32 or bfloat16)")
    if _where(pool) != c.where:
        raise ValueError(f"{fn}: {name}: on a different device than q")
    if not _is_torch(pool) and not pool.flags.writeable:
        raise ValueError(f"{fn}: {name}: the array is read-only")


def _contiguous_aligned(x) -> bool:
    if _is_torch(x):
        return x.is_contiguous() and x.data_ptr() % 16 == 0
    return bool(x.flags.c_contiguous) and x.ctypes.data % 16 == 0


def _run_pool(c: _Call, gate, gkw, lower_bound, scale, l2norm, pool, pool_name, indices, nacc, inplace, v_first,
              write=True, token_sinks=()):
    """Rows read their state from pool[indices] and write it back (vLLM's and SGLang's contract).

    indices [N]: row n reads and, after its last token, writes slot indices[n];
    indices [N, T]: row n reads indices[n, num_accepted_tokens[n] - 1] (or [n, 0]) and writes the
      state after its token t to indices[n, t] (vLLM's speculative decoding);
    negative entries are padding (no read, no write, zero output).
    inplace=False: the pool is not written; the state after every token is returned instead,
      [total tokens, HV, ...] in the pool's layout and dtype (vLLM's inplace_final_state=False).
    write=False: nothing is written (SGLang's disable_state_update).
    token_sinks: callables (row, token, rows' states f32 in the pool's layout) for per-token state copies.
    Returns (o, pool or the per-token states)."""
    fn, N = c.fn, c.rows
    _check_pool(fn, pool_name, pool, c, v_first)
    idx = _host_ints(indices, "ssm_state_indices")
    P = int(pool.shape[0])
    if idx.ndim not in (1, 2) or idx.shape[0] != N:
        raise ValueError(f"{fn}: ssm_state_indices: shape {idx.shape}, expected [{N}] or [{N}, tokens]")
    if idx.size and idx.max() >= P:
        raise ValueError(f"{fn}: ssm_state_indices: slot {int(idx.max())} is outside the pool's {P} slots")
    if nacc is not None:
        if idx.ndim != 2:
            raise ValueError(f"{fn}: num_accepted_tokens: needs per-token ssm_state_indices [N, tokens]")
        acc = _host_ints(nacc, "num_accepted_tokens")
        if acc.shape != (N,) or np.any(acc < 1) or np.any(acc > idx.shape[1]):
            raise ValueError(f"{fn}: num_accepted_tokens: {acc.tolist()[:8]} must be [{N}] counts in [1, "
                             f"{idx.shape[1]}]")
        read = idx[np.arange(N), acc - 1]
    else:
        read = idx if idx.ndim == 1 else idx[:, 0]
    if idx.ndim == 2 and np.any(idx.shape[1] < c.lens):
        raise ValueError(f"{fn}: ssm_state_indices: {idx.shape[1]} slots per row for rows of up to "
                         f"{int(c.lens.max())} tokens")
    live = (read >= 0) & (c.lens > 0)
    qkv = dict(q=c.q, k=c.k, v=c.v)

    # The pool as replayssm's checkpoint, untouched by any copy: f32/bf16, dense, one slot per row.
    direct = (idx.ndim == 1 and inplace and write and not token_sinks and _contiguous_aligned(pool)
              and idx.min(initial=0) >= -1 and c.equal_lens and c.lens[0] > 0
              and len(np.unique(idx[idx >= 0])) == int(np.sum(idx >= 0)))
    if direct:
        layer = _layer(gate, c.H, c.HV, c.K, c.V, c.io, scale, l2norm, lower_bound, state_dtype=_kind(pool),
                       state_layout=_layout(v_first))
        Tn = int(c.lens[0])
        rs = functools.partial(_reshape_tokens, B=N, T=Tn)
        kw = {n: _dense(rs(x)) for n, x in qkv.items()}
        o = _ops.decode_packed(c.ctx, layer, State(layer, checkpoint=pool), slot=_i32(np.where(live, idx, -1), c.q),
                               **kw, **_gate_tokens(gkw, lambda x: _dense(rs(x))))
        return o.reshape(tuple(c.v.shape)), pool

    layer = _layer(gate, c.H, c.HV, c.K, c.V, c.io, scale, l2norm, lower_bound, state_layout=_layout(v_first))
    per_token = idx.ndim == 2 or not inplace or bool(token_sinks)
    carry = _alloc_state(layer, N, c.q, ring=not per_token)
    rows = np.nonzero(live)[0]
    if len(rows):
        carry.checkpoint[_ix(carry.checkpoint, rows)] = _rows_get(pool, read[rows])
    if not per_token:  # one prefill of every row, then its final state back to its slot
        o = _ops.prefill(c.ctx, layer, carry, slot=_i32(np.where(live, np.arange(N), -1), c.q),
                         cu_seqlens=None if c.cu is None else c.cu_host, **{n: _dense(x) for n, x in qkv.items()},
                         **gkw)
        if write and len(rows):
            _rows_put(pool, idx[rows], carry.checkpoint[_ix(carry.checkpoint, rows)])
        return o, pool

    o = _zeros_as(tuple(c.v.shape), c.v)
    states = None
    if not inplace:
        states = _zeros_as((int(c.lens.sum()),) + tuple(pool.shape[1:]), pool)
        start = np.concatenate([[0], np.cumsum(c.lens)[:-1]])
    for t in range(int(c.lens.max(initial=0))):
        act = live & (c.lens > t)
        if not act.any():
            continue
        bi, ti = c.token_index(t)
        step = {n: _dense(x[_ix(x, bi), _ix(x, ti)][:, None]) for n, x in qkv.items()}
        sgk = {n: (_dense(x[_ix(x, bi), _ix(x, ti)][:, None]) if n in ("g", "beta", "a", "b") else x)
               for n, x in gkw.items()}
        o_t = _ops.decode_packed(c.ctx, layer, carry, slot=_i32(np.where(act, np.arange(N), -1), c.q), **step,
                                 **sgk)
        r = np.nonzero(act)[0]
        o[_ix(o, bi[r]), _ix(o, ti[r])] = o_t[_ix(o_t, r), 0]
        S = carry.checkpoint[_ix(carry.checkpoint, r)]
        if not write:
            pass
        elif not inplace:
            _rows_put(states, start[r] + t, S)
        elif idx.ndim == 2:
            dst = idx[r, t]
            keep = dst >= 0
            _rows_put(pool, dst[keep], S[_ix(S, np.nonzero(keep)[0])])
        else:
            last = c.lens[r] == t + 1
            _rows_put(pool, idx[r[last]], S[_ix(S, np.nonzero(last)[0])])
        for sink in token_sinks:
            sink(r, t, S)
    return o, (pool if inplace else states)


# ---- ReplaySSM: the ring cache ----------------------------------------------------------------


class RingCache:
    """ReplaySSM state for `num_slots` sequences of one layer: a checkpoint [num_slots, HV, V, K]
    (state_layout "vk", the default) or [num_slots, HV, K, V] ("kv", FLA's order), a ring of the
    last `ring_len` steps' (k, u, G) and a cursor per slot.

    Pass it as ring_cache= to the functions of replayssm.fla, with ssm_state_indices [N] giving
    each row's slot (or no indices when the call's N rows are slots 0..N-1):
      - one token per row: ReplaySSM decode (decode_replay, then advance);
      - several tokens per row: a prefill into the slots (checkpoint written, ring emptied), or,
        when the cache is `speculative` and the rows have the same T <= ring_len tokens, a
        verify window: its entries stay pending until the next call on those slots commits
        them, keeping num_accepted_tokens[n] of them (vLLM's convention), all of them when that
        argument is absent, or until commit(slots, accepted) is called.
    initial_state (as in FLA, one per row) is loaded into the rows' slots before the tokens;
    output_final_state returns the rows' states at their committed position (pending windows
    are committed whole first). A cache belongs to one layer and advances its own cursors.

    gate "gdn" or "kda"; state_dtype / ring_dtype "f32" or "bf16"; device "cpu" (numpy) or a
    CUDA device ("cuda", "cuda:1", a torch.device: torch tensors). checkpoint: an existing
    pool in the cache's state_layout to adopt (its dtype, device and memory are used; e.g.
    SGLang's initial_state_source), instead of allocating one. States in the other layout are
    transposed on their way in and out (load, read, initial_state, output_final_state)."""

    def __init__(self, num_slots: int, num_heads: int, head_k_dim: int, num_v_heads: Optional[int] = None,
                 head_v_dim: Optional[int] = None, *, gate: str = "gdn", ring_len: int = 16, device="cpu",
                 state_dtype: str = "f32", ring_dtype: Optional[str] = None, speculative: bool = False,
                 checkpoint: Optional[Tensor] = None, state_layout: str = "vk"):
        H, K = int(num_heads), int(head_k_dim)
        HV = H if num_v_heads is None else int(num_v_heads)
        V = K if head_v_dim is None else int(head_v_dim)
        self.state_layout = str(state_layout).lower()
        if self.state_layout not in ("vk", "kv"):
            raise ValueError(f"RingCache: state_layout {state_layout!r} (use 'vk' or 'kv')")
        if checkpoint is not None:
            want = (HV, V, K) if self.state_layout == "vk" else (HV, K, V)
            if len(checkpoint.shape) != 4 or tuple(checkpoint.shape[1:]) != want:
                raise ValueError(f"RingCache: checkpoint: shape {tuple(checkpoint.shape)}, expected "
                                 f"[slots, {', '.join(map(str, want))}] (state_layout {self.state_layout!r})")
            num_slots, state_dtype = int(checkpoint.shape[0]), _kind(checkpoint)
            where = _where(checkpoint)
        else:
            s = str(device).lower()
            if s.startswith("cuda"):
                where = ("cuda", int(s.split(":", 1)[1]) if ":" in s else _torch().cuda.current_device())
            elif s in ("cpu", "host", "numpy"):
                where = ("host", 0)
            else:
                raise ValueError(f"RingCache: device {device!r} (use 'cpu' or a CUDA device)")
        self.gate, self.H, self.HV, self.K, self.V = str(gate).lower(), H, HV, K, V
        self.ring_len, self.speculative = int(ring_len), bool(speculative)
        self.ctx = _context(*where)
        self.base = Layer(gate=self.gate, H=H, HV=HV, K=K, V=V, ring_len=self.ring_len, state_dtype=state_dtype,
                          ring_dtype=ring_dtype, state_layout=self.state_layout)
        like = checkpoint
        if like is None:
            like = _torch().empty(0, device=f"cuda:{where[1]}") if where[0] == "cuda" else np.empty(0, np.float32)
        tensors = {name: _zeros(shape, kind, like) for name, (shape, kind) in
                   self.base.state_shapes(int(num_slots)).items()}
        if checkpoint is not None:
            tensors["checkpoint"] = checkpoint  # adopted (the zeros made for it are dropped)
        self.state = State(self.base, **tensors)
        self.num_slots = self.state.num_slots
        self._pending = {}  # slot -> tokens of a verified window not yet committed

    @property
    def checkpoint(self):
        """The checkpoint in the cache's state_layout (the state at each slot's last fold)."""
        return self.state.checkpoint

    def _layer(self, io, scale, l2norm, lower_bound):
        b = self.base
        return _layer(self.gate, self.H, self.HV, self.K, self.V, io, scale, l2norm, lower_bound,
                      ring_len=self.ring_len, state_dtype=b.state_dtype, ring_dtype=b.ring_dtype,
                      state_layout=self.state_layout)

    def _swapped(self, state_v_first: bool) -> bool:
        """True when states in the given order must be transposed to or from the checkpoint's."""
        return bool(state_v_first) != (self.state_layout == "vk")

    def _slots(self, slots):
        s = _host_ints(slots, "slots").reshape(-1)
        if s.size and (s.min() < 0 or s.max() >= self.num_slots):
            raise ValueError(f"RingCache: slots {s.tolist()[:8]} outside [0, {self.num_slots})")
        return s

    def pending(self) -> dict:
        """slot -> tokens of its verified window that no commit has decided yet."""
        return dict(self._pending)

    def commit(self, slots, accepted) -> None:
        """Keeps accepted[i] tokens (0..T) of the pending verify window of slots[i]; the rest are
        never read again (rollback is this cursor move)."""
        s = self._slots(slots)
        acc = _host_ints(accepted, "accepted").reshape(-1)
        if acc.shape != s.shape:
            raise ValueError(f"RingCache.commit: accepted: {acc.shape[0]} counts for {s.shape[0]} slots")
        for T in sorted({self._pending[x] for x in s.tolist() if x in self._pending}):
            sel = np.array([i for i, x in enumerate(s.tolist()) if self._pending.get(x) == T], np.int64)
            a = acc[sel]
            if np.any(a < 0) or np.any(a > T):
                raise ValueError(f"RingCache.commit: accepted {a.tolist()} outside [0, {T}]")
            _ops.commit(self.ctx, self.base, self.state, T, _i32(s[sel], self.checkpoint), None, _i32(a, self.checkpoint))
            for x in s[sel].tolist():
                del self._pending[x]

    def _commit_all(self, slots, accepted=None):
        s = [x for x in np.asarray(slots).tolist() if x in self._pending]
        if not s:
            return
        a = [self._pending[x] if accepted is None else int(accepted[x]) for x in s]
        self.commit(np.array(s), np.array(a))

    def load(self, slots, states, *, state_v_first: bool = False) -> None:
        """Sets slots[i] to states[i] ([n, HV, K, V], or V-first [n, HV, V, K] with state_v_first)
        with an empty ring; pending windows of those slots are dropped."""
        s = self._slots(slots)
        if len(s) == 0:
            return
        want = (len(s), self.HV, self.V, self.K) if state_v_first else (len(s), self.HV, self.K, self.V)
        if tuple(states.shape) != want:
            raise ValueError(f"RingCache.load: states: shape {tuple(states.shape)}, expected {want}")
        x = _swap(states) if self._swapped(state_v_first) else states
        x = _as_framework(_f32(x) if not _is_torch(x) else x.float(), self.checkpoint)
        self.checkpoint[_ix(self.checkpoint, s)] = _cast_like(x, self.checkpoint)
        self._clear(s)

    def _clear(self, s):
        st = self.state
        st.cursor[_ix(st.cursor, s)] = 0
        if st.ring_base is not None:
            st.ring_base[_ix(st.ring_base, s)] = 0
        for x in s.tolist():
            self._pending.pop(x, None)

    def reset(self, slots) -> None:
        """Forgets the sequences in slots (zero state, empty ring)."""
        s = self._slots(slots)
        self.checkpoint[_ix(self.checkpoint, s)] = 0
        self._clear(s)

    def read(self, slots, *, state_v_first: bool = False):
        """The states of slots at their committed position, float32 [n, HV, K, V] (or V-first):
        each checkpoint with its live ring folded in, into a copy (the cache is not changed)."""
        s = self._slots(slots)
        n = len(s)
        like = self.checkpoint
        shape = self.base.state_shapes(max(n, 1))["checkpoint"][0]
        dst = State(self.base, checkpoint=_zeros(shape, self.base.state_dtype, like),
                    ring_base=_zeros((max(n, 1), self.HV), "i32", like))
        if n:
            _ops.materialize(self.ctx, self.base, self.state, dst, _i32(s, like), _i32(np.arange(n), like))
        out = _f32(dst.checkpoint[:n]) if not _is_torch(like) else dst.checkpoint[:n].float()
        return _dense(_swap(out)) if self._swapped(state_v_first) else out

    def __repr__(self):
        return (f"RingCache(gate={self.gate!r}, slots={self.num_slots}, H={self.H}, HV={self.HV}, K={self.K}, "
                f"V={self.V}, ring_len={self.ring_len}, state_layout={self.state_layout!r}, "
                f"speculative={self.speculative}, pending={len(self._pending)})")


def _run_ring(c: _Call, gate, gkw, lower_bound, scale, l2norm, cache: RingCache, indices, nacc, initial_state,
              output_final_state, v_first):
    """One call through a RingCache (see RingCache). Returns (o, final_state or None)."""
    fn, N = c.fn, c.rows
    if not isinstance(cache, RingCache):
        raise TypeError(f"{fn}: ring_cache: expected a replayssm.fla.RingCache, got {type(cache).__name__}")
    if (cache.gate, cache.H, cache.HV, cache.K, cache.V) != (gate, c.H, c.HV, c.K, c.V):
        raise ValueError(f"{fn}: ring_cache: made for {cache.gate} H={cache.H} HV={cache.HV} K={cache.K} "
                         f"V={cache.V}, the call is {gate} H={c.H} HV={c.HV} K={c.K} V={c.V}")
    if _where(cache.checkpoint) != c.where:
        raise ValueError(f"{fn}: ring_cache: on a different device than q")
    if indices is None:
        if N > cache.num_slots:
            raise ValueError(f"{fn}: ring_cache: {N} rows without ssm_state_indices, the cache has "
                             f"{cache.num_slots} slots")
        slots = np.arange(N)
    else:
        slots = _host_ints(indices, "ssm_state_indices")
        if slots.shape != (N,):
            raise ValueError(f"{fn}: ssm_state_indices: shape {slots.shape}; with ring_cache one slot per row [{N}] "
                             f"(the ring replaces per-token state slots)")
        if slots.max(initial=-1) >= cache.num_slots or slots.min(initial=0) < -1:
            raise ValueError(f"{fn}: ssm_state_indices: slots outside [-1, {cache.num_slots})")
    slots = np.where(c.lens > 0, slots, -1)
    live = slots >= 0
    if nacc is not None:
        acc = _host_ints(nacc, "num_accepted_tokens").reshape(-1)
        if acc.shape != (N,):
            raise ValueError(f"{fn}: num_accepted_tokens: shape {acc.shape}, expected [{N}]")
        cache._commit_all(slots[live], {int(s): int(a) for s, a in zip(slots[live], acc[live])})
    else:
        cache._commit_all(slots[live])
    if initial_state is not None:
        want = (N, c.HV, c.V, c.K) if v_first else (N, c.HV, c.K, c.V)
        if tuple(initial_state.shape) != want:
            raise ValueError(f"{fn}: initial_state: shape {tuple(initial_state.shape)}, expected {want}")
        rows = np.nonzero(live)[0]
        cache.load(slots[rows], initial_state[_ix(initial_state, rows)], state_v_first=v_first)
    layer = cache._layer(c.io, scale, l2norm, lower_bound)
    st, ctx, like = cache.state, cache.ctx, c.q
    slot_arr = _i32(slots, like)
    T = int(c.lens[0])
    qkv = dict(q=c.q, k=c.k, v=c.v)
    if c.equal_lens and (T == 1 or (cache.speculative and T <= cache.ring_len)):
        rs = functools.partial(_reshape_tokens, B=N, T=T)
        kw = {n: _dense(rs(x)) for n, x in qkv.items()}
        gk = _gate_tokens(gkw, lambda x: _dense(rs(x)))
        if T == 1:
            o = _ops.decode_replay(ctx, layer, st, slot=slot_arr, **kw, **gk)
            _ops.advance(ctx, layer, st, slot_arr)
        else:
            o = _ops.verify(ctx, layer, st, slot=slot_arr, **kw, **gk)
            for s in slots[live].tolist():
                cache._pending[s] = T
        o = o.reshape(tuple(c.v.shape))
    else:
        o = _ops.prefill(ctx, layer, st, slot=slot_arr, cu_seqlens=None if c.cu is None else c.cu_host,
                         **{n: _dense(x) for n, x in qkv.items()}, **gkw)
        _ops.reset_cursors(ctx, st, slot_arr)
    final = None
    if output_final_state:
        cache._commit_all(slots[live])
        rows = np.nonzero(live)[0]
        final = _zeros((N, c.HV, c.V, c.K) if v_first else (N, c.HV, c.K, c.V), "f32", like)
        if len(rows):
            final[_ix(final, rows)] = _as_framework(cache.read(slots[rows], state_v_first=v_first), final)
    return o, final


# ---- dispatch ---------------------------------------------------------------------------------


def _dispatch(c, gate, gkw, lower_bound, scale, l2norm, initial_state, output_final_state, v_first,
              inplace_final_state, ssm_state_indices, num_accepted_tokens, ring_cache):
    fn = c.fn
    if initial_state is not None:
        _check_no_grad(fn, (("initial_state", initial_state),))
    if ring_cache is not None:
        if inplace_final_state:
            raise ValueError(f"{fn}: inplace_final_state: the ring cache owns the states (use "
                             f"ring_cache.read / load)")
        return _run_ring(c, gate, gkw, lower_bound, scale, l2norm, ring_cache, ssm_state_indices,
                         num_accepted_tokens, initial_state, output_final_state, v_first)
    if ssm_state_indices is None and num_accepted_tokens is not None:
        raise ValueError(f"{fn}: num_accepted_tokens: needs ssm_state_indices [N, tokens]")
    if inplace_final_state is None:
        inplace_final_state = ssm_state_indices is not None
    if ssm_state_indices is not None or inplace_final_state:
        if initial_state is None:
            raise ValueError(f"{fn}: initial_state: required (the state pool) with "
                             f"{'ssm_state_indices' if ssm_state_indices is not None else 'inplace_final_state'}")
        idx = np.arange(c.rows) if ssm_state_indices is None else ssm_state_indices
        return _run_pool(c, gate, gkw, lower_bound, scale, l2norm, initial_state, "initial_state", idx,
                         num_accepted_tokens, bool(inplace_final_state), v_first)
    return _run_sequences(c, gate, gkw, lower_bound, scale, l2norm, initial_state, output_final_state, v_first)


def _sigmoid_f32(x, times=1.0):
    """times * sigmoid(x) as dense float32."""
    if _is_torch(x):
        return _dense(_torch().sigmoid(x.float()) * times)
    return _f32(times / (1.0 + np.exp(-_f32(x).astype(np.float64))))


def _fla_gates(c, gate, g, beta, *, A_log=None, dt_bias=None, use_gate_in_kernel=False,
               use_beta_sigmoid_in_kernel=False, allow_neg_eigval=False, lower_bound=None, use_exp2=False):
    """io kwargs and the layer's lower bound for FLA's gate arguments: precomputed g / beta, or
    with use_gate_in_kernel the raw g with A_log, dt_bias (and lower_bound), with
    use_beta_sigmoid_in_kernel a raw beta (2 sigmoid(beta) with allow_neg_eigval)."""
    fn = c.fn
    if allow_neg_eigval and not use_beta_sigmoid_in_kernel:
        raise ValueError(f"{fn}: allow_neg_eigval: requires use_beta_sigmoid_in_kernel=True")
    if use_beta_sigmoid_in_kernel:
        if beta is None:
            raise ValueError(f"{fn}: beta: required with use_beta_sigmoid_in_kernel=True")
        if tuple(beta.shape) != (c.B, c.T, c.HV):
            raise ValueError(f"{fn}: beta: shape {tuple(beta.shape)}, expected {(c.B, c.T, c.HV)}")
    if not use_gate_in_kernel:
        if use_beta_sigmoid_in_kernel:
            out = _precomputed_gates(c, gate, g, None, use_exp2)
            out["beta"] = _sigmoid_f32(beta, 2.0 if allow_neg_eigval else 1.0)
            return out, None
        return _precomputed_gates(c, gate, g, beta, use_exp2), None
    if A_log is None:
        raise ValueError(f"{fn}: A_log: required with use_gate_in_kernel=True")
    if g is None:
        raise ValueError(f"{fn}: g: required with use_gate_in_kernel=True")
    gshape = (c.B, c.T, c.HV, c.K) if gate == "kda" else (c.B, c.T, c.HV)
    if tuple(g.shape) != gshape:
        raise ValueError(f"{fn}: g: shape {tuple(g.shape)}, expected {gshape}")
    if use_exp2:
        raise NotImplementedError(f"{fn}: use_exp2: not with use_gate_in_kernel=True")
    lb = None if lower_bound is None else float(lower_bound)
    if lb is not None and gate != "kda":
        raise NotImplementedError(f"{fn}: lower_bound: the bounded gate is KDA's")
    if use_beta_sigmoid_in_kernel and not allow_neg_eigval and _kind(g) == c.io and _kind(beta) == c.io:
        return _raw_gates(c, gate, g, beta, A_log, dt_bias), lb  # the library's own gates
    if beta is None:
        beta = _zeros((c.B, c.T, c.HV), "f32", c.q) + 1
    elif tuple(beta.shape) != (c.B, c.T, c.HV):
        raise ValueError(f"{fn}: beta: shape {tuple(beta.shape)}, expected {(c.B, c.T, c.HV)}")
    if dt_bias is None:
        dt_bias = _zeros((c.HV, c.K) if gate == "kda" else (c.HV,), "f32", c.q)
    out = _computed_gates(c, gate, g, beta, A_log, dt_bias, lb, beta_is_raw=use_beta_sigmoid_in_kernel)
    if allow_neg_eigval:
        out["beta"] = _f32(out["beta"] * 2)
    return out, None


# ---- FLA's entry points -----------------------------------------------------------------------


def fused_recurrent_gated_delta_rule(
    q: Tensor, k: Tensor, v: Tensor, g: Optional[Tensor] = None, beta: Optional[Tensor] = None,
    scale: Optional[float] = None, initial_state: Optional[Tensor] = None, output_final_state: bool = False, *,
    use_qk_l2norm_in_kernel: bool = False, cu_seqlens: Optional[Tensor] = None, gk: Optional[Tensor] = None,
    gv: Optional[Tensor] = None, use_exp2: bool = False, transpose_state_layout: Optional[bool] = None,
    inplace_final_state: Optional[bool] = None, ssm_state_indices: Optional[Tensor] = None,
    num_accepted_tokens: Optional[Tensor] = None, ring_cache: Optional[RingCache] = None, **kwargs,
):
    """Gated DeltaNet over T tokens per row, as fla.ops.gated_delta_rule.fused_recurrent_gated_delta_rule.

    q, k [B, T, H, K]; v [B, T, HV, V]; g [B, T, HV] log-decays (None: no decay; gk [B, T, HV, K]
    adds a per-key-channel decay, which makes it KDA); beta [B, T, HV] (None: ones);
    scale (None: K**-0.5); initial_state [N, HV, K, V] float (V-first with
    transpose_state_layout=True); cu_seqlens [N + 1] with B = 1 for ragged rows.
    Returns (o [B, T, HV, V], final_state [N, HV, K, V] float32 or None).

    vLLM's continuous-batching form: ssm_state_indices [N] (or [N, T], with num_accepted_tokens
    [N]) picks each row's slot of the pool passed as initial_state (V-first unless
    transpose_state_layout=False); inplace_final_state (default True there) writes the rows'
    states back into the pool and returns it as final_state; False leaves it untouched and
    returns every token's state [total tokens, HV, ...]. ring_cache: see RingCache.

    Maps to replayssm prefill (packed decode for T = 1; the pool's packed decode in place when
    it is V-first). Arguments after output_final_state are keyword-only: FLA's versions order
    them differently."""
    fn = "fused_recurrent_gated_delta_rule"
    state_v_first = kwargs.pop("state_v_first", None)
    _reject(fn, kwargs)
    if gv is not None:
        raise NotImplementedError(f"{fn}: gv: a decay on the value side is not supported")
    c = _Call(fn, q, k, v, cu_seqlens, (("g", g), ("gk", gk), ("beta", beta)))
    gate = "gdn"
    if gk is not None:
        gate = "kda"
        if tuple(gk.shape) != (c.B, c.T, c.HV, c.K):
            raise ValueError(f"{fn}: gk: shape {tuple(gk.shape)}, expected {(c.B, c.T, c.HV, c.K)}")
        if g is not None:
            if tuple(g.shape) != (c.B, c.T, c.HV):
                raise ValueError(f"{fn}: g: shape {tuple(g.shape)}, expected {(c.B, c.T, c.HV)}")
            g = _f32(g)[..., None] + _f32(gk)  # exp(g) exp(gk) = exp(g + gk)
        else:
            g = gk
    pooled = ssm_state_indices is not None and ring_cache is None  # vLLM's pools are V-first
    v_first = _state_layout(fn, transpose_state_layout, state_v_first, pooled)
    gkw, lb = _fla_gates(c, gate, g, beta, use_exp2=use_exp2)
    return _dispatch(c, gate, gkw, lb, _scale(fn, scale, c.K), bool(use_qk_l2norm_in_kernel), initial_state,
                     output_final_state, v_first, inplace_final_state, ssm_state_indices, num_accepted_tokens,
                     ring_cache)


def fused_recurrent_kda(
    q: Tensor, k: Tensor, v: Tensor, g: Tensor, beta: Optional[Tensor] = None, scale: Optional[float] = None,
    initial_state: Optional[Tensor] = None, output_final_state: bool = False, *,
    use_qk_l2norm_in_kernel: bool = False, cu_seqlens: Optional[Tensor] = None, A_log: Optional[Tensor] = None,
    dt_bias: Optional[Tensor] = None, use_gate_in_kernel: bool = False, use_beta_sigmoid_in_kernel: bool = False,
    allow_neg_eigval: bool = False, lower_bound: Optional[float] = None, state_v_first: Optional[bool] = None,
    transpose_state_layout: Optional[bool] = None, inplace_final_state: Optional[bool] = None,
    ssm_state_indices: Optional[Tensor] = None, num_accepted_tokens: Optional[Tensor] = None,
    ring_cache: Optional[RingCache] = None, **kwargs,
):
    """Kimi Delta Attention over T tokens per row, as fla.ops.kda.fused_recurrent_kda.

    As fused_recurrent_gated_delta_rule with g [B, T, HV, K] (a log-decay per key channel).
    use_gate_in_kernel: g is the raw gate input, g = -exp(A_log) softplus(g + dt_bias) (A_log
    [HV], dt_bias [HV * K] or [HV, K]), or lower_bound * sigmoid(exp(A_log) (g + dt_bias)) with
    lower_bound; use_beta_sigmoid_in_kernel: beta = sigmoid(beta) (times 2 with
    allow_neg_eigval). Both in-kernel flags together use replayssm's own gates; one alone is
    computed here in float32. Returns (o, final_state)."""
    fn = "fused_recurrent_kda"
    _reject(fn, kwargs)
    c = _Call(fn, q, k, v, cu_seqlens, (("g", g), ("beta", beta)))
    pooled = ssm_state_indices is not None and ring_cache is None  # vLLM's pools are V-first
    v_first = _state_layout(fn, transpose_state_layout, state_v_first, pooled)
    gkw, lb = _fla_gates(c, "kda", g, beta, A_log=A_log, dt_bias=dt_bias, use_gate_in_kernel=use_gate_in_kernel,
                         use_beta_sigmoid_in_kernel=use_beta_sigmoid_in_kernel, allow_neg_eigval=allow_neg_eigval,
                         lower_bound=lower_bound)
    return _dispatch(c, "kda", gkw, lb, _scale(fn, scale, c.K), bool(use_qk_l2norm_in_kernel), initial_state,
                     output_final_state, v_first, inplace_final_state, ssm_state_indices, num_accepted_tokens,
                     ring_cache)


def chunk_gated_delta_rule(
    q: Tensor, k: Tensor, v: Tensor, g: Tensor, beta: Tensor, scale: Optional[float] = None,
    initial_state: Optional[Tensor] = None, output_final_state: bool = False, *,
    use_qk_l2norm_in_kernel: bool = False, cu_seqlens: Optional[Tensor] = None,
    transpose_state_layout: Optional[bool] = None, ring_cache: Optional[RingCache] = None,
    A_log: Optional[Tensor] = None, dt_bias: Optional[Tensor] = None, use_gate_in_kernel: bool = False, **kwargs,
):
    """Gated DeltaNet prefill, as fla.ops.gated_delta_rule.chunk_gated_delta_rule: the same
    results as fused_recurrent_gated_delta_rule (replayssm runs the recurrence; on CUDA in
    chunks of 16 tokens). g [B, T, HV] log-decays (raw with use_gate_in_kernel, A_log and
    dt_bias [HV]); beta [B, T, HV]. Returns (o, final_state [N, HV, K, V] float32 or None)."""
    fn = "chunk_gated_delta_rule"
    state_v_first = kwargs.pop("state_v_first", None)
    _reject(fn, kwargs)
    c = _Call(fn, q, k, v, cu_seqlens, (("g", g), ("beta", beta)))
    v_first = _state_layout(fn, transpose_state_layout, state_v_first, False)
    gkw, lb = _fla_gates(c, "gdn", g, beta, A_log=A_log, dt_bias=dt_bias, use_gate_in_kernel=use_gate_in_kernel)
    return _dispatch(c, "gdn", gkw, lb, _scale(fn, scale, c.K), bool(use_qk_l2norm_in_kernel), initial_state,
                     output_final_state, v_first, False, None, None, ring_cache)


def chunk_kda(
    q: Tensor, k: Tensor, v: Tensor, g: Tensor, beta: Tensor, scale: Optional[float] = None,
    initial_state: Optional[Tensor] = None, output_final_state: bool = False, *,
    use_qk_l2norm_in_kernel: bool = False, use_gate_in_kernel: bool = False,
    use_beta_sigmoid_in_kernel: bool = False, allow_neg_eigval: bool = False, lower_bound: Optional[float] = None,
    state_v_first: Optional[bool] = None, cu_seqlens: Optional[Tensor] = None, A_log: Optional[Tensor] = None,
    dt_bias: Optional[Tensor] = None, transpose_state_layout: Optional[bool] = None,
    ring_cache: Optional[RingCache] = None, **kwargs,
):
    """Kimi Delta Attention prefill, as fla.ops.kda.chunk_kda: the same results as
    fused_recurrent_kda (replayssm runs the recurrence). Gate flags as fused_recurrent_kda;
    safe_gate, disable_recompute, chunk_size, cu_seqlens_cpu are accepted and ignored.
    Returns (o, final_state [N, HV, K, V] float32 or None)."""
    fn = "chunk_kda"
    _reject(fn, kwargs)
    c = _Call(fn, q, k, v, cu_seqlens, (("g", g), ("beta", beta)))
    v_first = _state_layout(fn, transpose_state_layout, state_v_first, False)
    gkw, lb = _fla_gates(c, "kda", g, beta, A_log=A_log, dt_bias=dt_bias, use_gate_in_kernel=use_gate_in_kernel,
                         use_beta_sigmoid_in_kernel=use_beta_sigmoid_in_kernel, allow_neg_eigval=allow_neg_eigval,
                         lower_bound=lower_bound)
    return _dispatch(c, "kda", gkw, lb, _scale(fn, scale, c.K), bool(use_qk_l2norm_in_kernel), initial_state,
                     output_final_state, v_first, False, None, None, ring_cache)


def fused_sigmoid_gating_delta_rule_update(
    A_log: Tensor, a: Tensor, dt_bias: Tensor, softplus_beta: float, softplus_threshold: float, q: Tensor,
    k: Tensor, v: Tensor, b: Tensor, initial_state_source: Optional[Tensor], initial_state_indices: Optional[Tensor],
    scale: Optional[float] = None, use_qk_l2norm_in_kernel: bool = False, cu_seqlens: Optional[Tensor] = None,
    is_kda: bool = False, lower_bound: Optional[float] = None, disable_state_update: bool = False,
    intermediate_states_buffer: Optional[Tensor] = None, intermediate_state_indices: Optional[Tensor] = None,
    cache_steps: Optional[int] = None, retrieve_parent_token: Optional[Tensor] = None, *,
    ring_cache: Optional[RingCache] = None, **kwargs,
):
    """SGLang's decode entry (sglang.srt.layers.attention.fla.fused_sigmoid_gating_recurrent):
    raw gates in, the state pool updated in place, o returned.

    A_log [HV]; a GDN [tokens, HV] / [B, T, HV], KDA (is_kda) [tokens, HV * K] / [B, T, HV, K];
    dt_bias GDN [HV], KDA [HV * K]; b like GDN's a. g = -exp(A_log) softplus(a + dt_bias) with
    softplus_beta / softplus_threshold (KDA with lower_bound: lower_bound * sigmoid(exp(A_log)
    (a + dt_bias))); beta = sigmoid(b). q, k [B, T, H, K], v [B, T, HV, V] (decode: [1, N, ...]
    with cu_seqlens, or [N, 1, ...]). initial_state_source: the V-first pool [slots, HV, V, K]
    (None: zero initial states, nothing written); initial_state_indices [N] (-1: padding row,
    zero output, no read or write). disable_state_update: the pool is only read.
    intermediate_states_buffer [C, steps, HV, V, K] with intermediate_state_indices [N]:
    the state after each token t is also written to buffer[index[n], t].

    Maps to replayssm packed decode on the pool in place (the library's own gates for
    softplus_beta = 1, threshold = 20 and a, b of q's dtype; else computed here in float32),
    or, with ring_cache (whose checkpoint is the pool), to ReplaySSM decode. Returns o
    [B, T, HV, V]."""
    fn = "fused_sigmoid_gating_delta_rule_update"
    if kwargs.pop("cache_ring", False):
        raise NotImplementedError(f"{fn}: cache_ring: SGLang's own ring is not supported; pass ring_cache= "
                                  f"(replayssm.fla.RingCache) for ReplaySSM")
    for name in ("replayssm_rawv", "replayssm_rawk", "replayssm_g", "replayssm_beta"):
        if kwargs.pop(name, None) is not None:
            raise NotImplementedError(f"{fn}: {name}: SGLang's ring buffers are not supported; pass ring_cache=")
    _reject(fn, kwargs)
    if retrieve_parent_token is not None:
        raise NotImplementedError(f"{fn}: retrieve_parent_token: tree verify is not supported")
    c = _Call(fn, q, k, v, cu_seqlens, (("a", a), ("b", b), ("A_log", A_log), ("dt_bias", dt_bias),
                                        ("initial_state_source", initial_state_source)))
    gate = "kda" if is_kda else "gdn"
    gshape = (c.B, c.T, c.HV, c.K) if is_kda else (c.B, c.T, c.HV)
    n_a = math.prod(gshape)
    if math.prod(tuple(a.shape)) != n_a:
        raise ValueError(f"{fn}: a: shape {tuple(a.shape)}, expected {n_a} values ({gshape})")
    if math.prod(tuple(b.shape)) != c.B * c.T * c.HV:
        raise ValueError(f"{fn}: b: shape {tuple(b.shape)}, expected {(c.B, c.T, c.HV)}")
    a4, b3 = _dense(a).reshape(gshape), _dense(b).reshape((c.B, c.T, c.HV))
    lb = None if lower_bound is None or not is_kda else float(lower_bound)
    if lower_bound is not None and not is_kda:
        raise NotImplementedError(f"{fn}: lower_bound: the bounded gate is KDA's (is_kda=True)")
    native = float(softplus_beta) == 1.0 and float(softplus_threshold) == 20.0 and _kind(a) == c.io and \
        _kind(b) == c.io
    if native or lb is not None:
        if lb is not None and not (_kind(a) == c.io and _kind(b) == c.io):
            gkw, lb_layer = _computed_gates(c, gate, a4, b3, A_log, dt_bias, lb), None
        else:
            gkw, lb_layer = _raw_gates(c, gate, a4, b3, A_log, dt_bias), lb
    else:
        gkw, lb_layer = _computed_gates(c, gate, a4, b3, A_log, dt_bias, None, float(softplus_beta),
                                        float(softplus_threshold)), None
    sc, l2 = _scale(fn, scale, c.K), bool(use_qk_l2norm_in_kernel)
    if ring_cache is not None:
        if initial_state_source is not None and initial_state_source is not ring_cache.checkpoint:
            raise ValueError(f"{fn}: initial_state_source: with ring_cache it must be ring_cache.checkpoint "
                             f"(or None)")
        if disable_state_update or intermediate_states_buffer is not None:
            raise NotImplementedError(f"{fn}: disable_state_update / intermediate_states_buffer: with ring_cache "
                                      f"use a speculative RingCache (verify windows, commit)")
        return _run_ring(c, gate, gkw, lb_layer, sc, l2, ring_cache, initial_state_indices, None, None, False,
                         True)[0]
    if initial_state_source is None:
        o, _ = _run_sequences(c, gate, gkw, lb_layer, sc, l2, None, False, True)
        return o
    if initial_state_indices is None:
        raise ValueError(f"{fn}: initial_state_indices: required with initial_state_source")
    sinks = []
    if intermediate_states_buffer is not None:
        buf = intermediate_states_buffer
        if intermediate_state_indices is None:
            raise ValueError(f"{fn}: intermediate_state_indices: required with intermediate_states_buffer")
        if len(buf.shape) != 5 or tuple(buf.shape[2:]) != (c.HV, c.V, c.K):
            raise ValueError(f"{fn}: intermediate_states_buffer: shape {tuple(buf.shape)}, expected "
                             f"[entries, steps, {c.HV}, {c.V}, {c.K}]")
        cidx = _host_ints(intermediate_state_indices, "intermediate_state_indices").reshape(-1)

        def sink(r, t, S):
            keep = cidx[r] >= 0
            if keep.any():
                S = S[_ix(S, np.nonzero(keep)[0])]
                buf[_ix(buf, cidx[r][keep]), t] = _cast_like(S, buf)

        sinks.append(sink)
    o, _ = _run_pool(c, gate, gkw, lb_layer, sc, l2, initial_state_source, "initial_state_source",
                     initial_state_indices, None, True, True, write=not disable_state_update, token_sinks=tuple(sinks))
    return o
