"""Kernel-level operations on caller tensors (one layer per call), FLA-like signatures.

Tensors (replayssm.h "Per-step inputs and outputs"):
  q, k   [B, T, H, K]   io dtype   (3-D [B, H, K] = one token per row; o is then [B, HV, V])
  v      [B, T, HV, V]  io dtype
  a      GDN [B, T, HV], KDA [B, T, HV, K]  io dtype;  b [B, T, HV] io dtype
  A_log  [HV] f32;  dt_bias GDN [HV], KDA [HV, K] f32
  or precomputed g (like a, f32) and beta [B, T, HV] f32 (used when g is given; float64 with the f64
  io dtype of the reference device)
  slot   [B] int32 (-1 = padding row); fold [B] uint8/bool; accepted [B] int32
q, k, v, a, b, g, beta may be strided views along the token axes (e.g. slices of a fused projection):
their per-token part must be contiguous; the token stride becomes q_stride etc.

Host contexts ("cpu", "reference") take numpy arrays or CPU torch tensors; a "cuda" context
takes CUDA torch tensors and enqueues on torch.cuda.current_stream() unless `stream` is given
(a torch.cuda.Stream or a raw cudaStream_t int). Index arrays may be lists (converted).
Every call raises ReplaySSMError with the library's message when the library refuses.
"""
from __future__ import annotations

import ctypes
from typing import Any, Optional, Sequence, Union

from . import _lib
from . import _tensors as tz
from .core import Context, Layer, State

# A tensor argument: a numpy array or a torch tensor (host contexts), a CUDA torch tensor ("cuda").
Array = Any
# An index argument (slot, fold, accepted): an array or tensor as above, or a sequence of ints.
Index = Union[Array, Sequence[int]]
# A stream: a torch.cuda.Stream or a raw cudaStream_t as int (None: torch's current stream).
Stream = Any

__all__ = ["decode_packed", "decode_replay", "verify", "prefill", "advance", "commit", "materialize",
           "reset_cursors"]


def _check_ctx(ctx, layer, state=None):
    if not isinstance(ctx, Context):
        raise TypeError(f"ctx: expected a replayssm.Context, got {type(ctx).__name__}")
    if not isinstance(layer, Layer):
        raise TypeError(f"layer: expected a replayssm.Layer, got {type(layer).__name__}")
    if state is not None:
        if not isinstance(state, State):
            raise TypeError(f"state: expected a replayssm.State, got {type(state).__name__}")
        if state.layer.spec() != layer.spec() and not _same_shape(state.layer, layer):
            raise ValueError(f"state was made for {state.layer!r}, not {layer!r}")
        _check_memory(ctx, state.memory, state.device_index, "state")


def _same_shape(a: Layer, b: Layer) -> bool:
    return all(getattr(a, f) == getattr(b, f) for f in ("gate", "H", "HV", "K", "V", "ring_len", "state_dtype",
                                                         "ring_dtype", "state_layout"))


def _check_memory(ctx, memory, index, name):
    if memory != ctx.memory:
        raise ValueError(f"{name}: {memory} memory, but the {ctx.device} context needs "
                         f"{'CUDA torch tensors' if ctx.is_cuda else 'host memory (numpy or CPU torch)'}")
    if ctx.is_cuda and index != ctx.device_ordinal:
        raise ValueError(f"{name}: on cuda:{index}, the context is on cuda:{ctx.device_ordinal}")


def _stream(ctx, stream, keep=()):
    """The cudaStream_t to enqueue on: `stream` (a torch stream or a raw handle) or torch's current
    stream. When it is not the current stream, it first waits for the current one (where any
    converted inputs in `keep` were made), and those tensors are recorded on it so the caching
    allocator does not reuse them before the library's kernels have read them."""
    if not ctx.is_cuda:
        return None
    import torch

    cur = torch.cuda.current_stream(ctx.device_ordinal)
    if stream is None:
        return ctypes.c_void_p(cur.cuda_stream)
    handle = int(getattr(stream, "cuda_stream", stream))
    if handle != cur.cuda_stream:
        s = stream if isinstance(stream, torch.cuda.Stream) else torch.cuda.ExternalStream(
            handle, device=torch.device("cuda", ctx.device_ordinal))
        s.wait_stream(cur)
        for t in keep:
            if isinstance(t, torch.Tensor) and t.is_cuda:
                t.record_stream(s)
    return ctypes.c_void_p(handle)


def _tensor_in(ctx, x, name, shape, kind, keep, strided):
    v = tz.view(x, name)
    _check_memory(ctx, v.device, v.index, name)
    if len(shape) == len(v.shape) + 1 and v.shape[:1] == shape[:1] and v.shape[1:] == shape[2:] and shape[1] == 1:
        v = v.unsqueeze1()  # 3-D decode input
    tz.check_shape(v, name, shape)
    tz.check_kind(v, name, kind)
    keep.append(x)
    if strided:
        return v.ptr, tz.token_stride(v, name)
    tz.check_contiguous(v, name)
    return v.ptr, 0


def _ragged_rows(cu_seqlens, max_seqlen, total):
    """Rows and longest row of ragged prefill: cu_seqlens [rows + 1] (list, numpy or torch); the
    longest row is read from it (a host copy) unless max_seqlen is given with a GPU tensor (no
    device read-back, so a CUDA graph can capture the call). Its last entry must be the packed
    length `total`, checked wherever it is on the host (the library reads that many tokens); with
    a GPU tensor and max_seqlen that is the caller's promise, as in FLA's varlen kernels."""
    n = len(cu_seqlens)
    if n < 2:
        raise ValueError(f"cu_seqlens: {n} entries, expected rows + 1 >= 2")
    on_gpu = tz.is_torch(cu_seqlens) and cu_seqlens.device.type != "cpu"
    if max_seqlen is None or not on_gpu:
        cu = cu_seqlens.cpu().tolist() if tz.is_torch(cu_seqlens) else [int(x) for x in cu_seqlens]
        if cu[-1] != total:
            raise ValueError(f"cu_seqlens: ends at {cu[-1]}, the tokens are packed as {total}")
        if max_seqlen is None:
            max_seqlen = max(max(cu[i + 1] - cu[i] for i in range(n - 1)), 1)
    return n - 1, int(max_seqlen)


def _step(fn, ctx, layer, state, q, k, v, a, b, A_log, dt_bias, g, beta, slot, write_slot, fold, out, stream,
          cu_seqlens=None, max_seqlen=None, fold_every=False):
    _check_ctx(ctx, layer, state)
    qv = tz.view(q, "q")
    if len(qv.shape) == 3:
        squeeze, B, T = True, qv.shape[0], 1
    elif len(qv.shape) == 4:
        squeeze, B, T = False, qv.shape[0], qv.shape[1]
    else:
        raise ValueError(f"q: shape {qv.shape}, expected [B, T, H, K] (or [B, H, K] for one token)")
    H, HV, K, V, io = layer.H, layer.HV, layer.K, layer.V, layer.io_dtype
    gshape = (B, T, HV, K) if layer.gate == "kda" else (B, T, HV)
    keep = []
    c = _lib.rssm_step_io()
    rows, tokens = B, T
    if cu_seqlens is not None:  # ragged: the rows' tokens packed as [1, total, ...]
        if squeeze or B != 1:
            raise ValueError(f"q: shape {qv.shape}; with cu_seqlens the tokens are packed as [1, total, H, K]")
        rows, tokens = _ragged_rows(cu_seqlens, max_seqlen, T)
    c.batch, c.tokens = rows, tokens
    c.q, c.q_stride = _tensor_in(ctx, q, "q", (B, T, H, K), io, keep, True)
    c.k, c.k_stride = _tensor_in(ctx, k, "k", (B, T, H, K), io, keep, True)
    c.v, c.v_stride = _tensor_in(ctx, v, "v", (B, T, HV, V), io, keep, True)
    if g is not None:
        gk = "f64" if io == "f64" else "f32"  # precomputed gates follow an f64 io dtype (the reference)
        c.g, c.g_stride = _tensor_in(ctx, g, "g", gshape, gk, keep, True)
        if beta is None:
            raise ValueError("beta is required with g")
        c.beta, c.beta_stride = _tensor_in(ctx, beta, "beta", (B, T, HV), gk, keep, True)
    else:
        if a is None or b is None or A_log is None or dt_bias is None:
            raise ValueError("pass the raw gates a, b, A_log, dt_bias, or the precomputed g and beta")
        c.a, c.a_stride = _tensor_in(ctx, a, "a", gshape, io, keep, True)
        c.b, c.b_stride = _tensor_in(ctx, b, "b", (B, T, HV), io, keep, True)
    if A_log is not None:
        c.A_log, _ = _tensor_in(ctx, A_log, "A_log", (HV,), "f32", keep, False)
    if dt_bias is not None:
        c.dt_bias, _ = _tensor_in(ctx, dt_bias, "dt_bias", (HV, K) if layer.gate == "kda" else (HV,), "f32", keep,
                                  False)
    oshape = (B, T, HV, V)
    if out is None:
        out = _empty_like_input(q, oshape, io)
    ov = tz.view(out, "out")
    _check_memory(ctx, ov.device, ov.index, "out")
    if len(ov.shape) == 3 and squeeze:
        ov = ov.unsqueeze1()
    tz.check_shape(ov, "out", oshape)
    tz.check_kind(ov, "out", io)
    tz.check_contiguous(ov, "out")
    if not ov.writeable:
        raise ValueError("out: the array is read-only")
    c.o = ov.ptr
    mem, idx = ctx.memory, ctx.device_ordinal
    c.slot = tz.index_tensor(slot, "slot", "i32", rows, mem, idx, keep)
    if c.slot is None:
        raise ValueError("slot is required ([B] int32, -1 = padding)")
    c.write_slot = tz.index_tensor(write_slot, "write_slot", "i32", B, mem, idx, keep)
    c.fold = tz.index_tensor(fold, "fold", "u8", B, mem, idx, keep)
    c.cu_seqlens = tz.index_tensor(cu_seqlens, "cu_seqlens", "i32", rows + 1, mem, idx, keep)
    c.fold_every = 1 if fold_every else 0
    _lib.call(fn, ctx.handle, ctypes.byref(layer._c), ctypes.byref(state._c), ctypes.byref(c), _stream(ctx, stream, keep))
    if squeeze and len(tz.view(out, "out").shape) == 4:
        out = out[:, 0]
    return out


def _empty_like_input(q, shape, io):
    if tz.is_torch(q):
        import torch

        return torch.empty(shape, dtype=tz.torch_dtype(io), device=q.device)
    import numpy as np

    dt = q.dtype if io == "bf16" else tz.numpy_dtype(io)  # keep uint16 vs ml_dtypes.bfloat16
    return tz.aligned_zeros(shape, np.dtype(dt))


def decode_packed(
    ctx: Context, layer: Layer, state: State, q: Array, k: Array, v: Array, a: Optional[Array] = None,
    b: Optional[Array] = None, A_log: Optional[Array] = None, dt_bias: Optional[Array] = None, g: Optional[Array] = None,
    beta: Optional[Array] = None, *, slot: Index, write_slot: Optional[Index] = None, out: Optional[Array] = None,
    stream: Stream = None,
) -> Array:
    """Baseline decode of T tokens in order (rssm_decode_packed): S = checkpoint[slot]; per token
    u = beta (v - S diag(alpha) k); S = S diag(alpha) + u k^T; o = S q; checkpoint[write_slot] = S.
    Only state.checkpoint is used. Returns o [B, T, HV, V] (or [B, HV, V] for 3-D q)."""
    return _step("rssm_decode_packed", ctx, layer, state, q, k, v, a, b, A_log, dt_bias, g, beta, slot,
                 write_slot, None, out, stream)


def decode_replay(
    ctx: Context, layer: Layer, state: State, q: Array, k: Array, v: Array, a: Optional[Array] = None,
    b: Optional[Array] = None, A_log: Optional[Array] = None, dt_bias: Optional[Array] = None, g: Optional[Array] = None,
    beta: Optional[Array] = None, *, slot: Index, fold: Optional[Index] = None, out: Optional[Array] = None, stream: Stream = None,
    fold_every: bool = False,
) -> Array:
    """ReplaySSM decode of one token per row (rssm_decode_replay): reads the checkpoint and the live
    ring, appends the new entry, folds when the ring is full or fold[b]. Does not move the
    cursor: call advance() once after the last layer. Returns o. fold_every: a small-batch step
    whose rows all fold and have empty rings (Plan.fold_every, after the planner's drain; needs
    fold): packed decode's kernels; a row otherwise is refused (an error, its state kept)."""
    return _step("rssm_decode_replay", ctx, layer, state, q, k, v, a, b, A_log, dt_bias, g, beta, slot, None,
                 fold, out, stream, fold_every=fold_every)


def verify(
    ctx: Context, layer: Layer, state: State, q: Array, k: Array, v: Array, a: Optional[Array] = None,
    b: Optional[Array] = None, A_log: Optional[Array] = None, dt_bias: Optional[Array] = None, g: Optional[Array] = None,
    beta: Optional[Array] = None, *, slot: Index, fold: Optional[Index] = None, out: Optional[Array] = None, stream: Stream = None,
) -> Array:
    """Speculative verify of T <= L tokens per row through the ring (rssm_verify): o for every token,
    the T entries appended after the committed ones. Call commit() after the last layer."""
    return _step("rssm_verify", ctx, layer, state, q, k, v, a, b, A_log, dt_bias, g, beta, slot, None, fold,
                 out, stream)


def prefill(
    ctx: Context, layer: Layer, state: State, q: Array, k: Array, v: Array, a: Optional[Array] = None,
    b: Optional[Array] = None, A_log: Optional[Array] = None, dt_bias: Optional[Array] = None, g: Optional[Array] = None,
    beta: Optional[Array] = None, *, slot: Index, out: Optional[Array] = None, stream: Stream = None,
    cu_seqlens: Optional[Index] = None, max_seqlen: Optional[int] = None,
) -> Array:
    """Recurrent prefill of T tokens per row from the slot's current (materialised) state
    (rssm_prefill): o for every token, the final state as the checkpoint. Zero the slot first
    for a fresh sequence; call reset_cursors() after the last layer.
    Ragged rows, as FLA's varlen: cu_seqlens [rows + 1] int32 (on the context's device), the
    tokens packed as q [1, total, H, K] (and so on), row b's at cu_seqlens[b] + t, cu_seqlens[-1]
    = total; slot [rows]. max_seqlen (the longest row) is read from cu_seqlens when not given
    (with a GPU tensor and max_seqlen given nothing is read back: cu_seqlens[-1] is then the
    caller's promise; a host tensor is always checked)."""
    return _step("rssm_prefill", ctx, layer, state, q, k, v, a, b, A_log, dt_bias, g, beta, slot, None, None,
                 out, stream, cu_seqlens, max_seqlen)


def advance(ctx: Context, layer: Layer, state: State, slot: Index, fold: Optional[Index] = None, *,
            stream: Stream = None) -> None:
    """Cursor move after a decode step (rssm_advance); once per forward, after the last layer."""
    _check_ctx(ctx, layer, state)
    keep = []
    B = _batch_of(slot)
    s = tz.index_tensor(slot, "slot", "i32", B, ctx.memory, ctx.device_ordinal, keep)
    f = tz.index_tensor(fold, "fold", "u8", B, ctx.memory, ctx.device_ordinal, keep)
    _lib.call("rssm_advance", ctx.handle, ctypes.byref(layer._c), ctypes.byref(state._c), B, s, f,
              _stream(ctx, stream, keep))


def commit(ctx: Context, layer: Layer, state: State, tokens: int, slot: Index, fold: Optional[Index],
           accepted: Index, *, stream: Stream = None) -> None:
    """Cursor move after a verify of `tokens` tokens keeping accepted[b] of them (rssm_commit; the
    arguments in C's order, the batch taken from slot; fold may be None)."""
    _check_ctx(ctx, layer, state)
    keep = []
    B = _batch_of(slot)
    s = tz.index_tensor(slot, "slot", "i32", B, ctx.memory, ctx.device_ordinal, keep)
    acc = tz.index_tensor(accepted, "accepted", "i32", B, ctx.memory, ctx.device_ordinal, keep)
    f = tz.index_tensor(fold, "fold", "u8", B, ctx.memory, ctx.device_ordinal, keep)
    _lib.call("rssm_commit", ctx.handle, ctypes.byref(layer._c), ctypes.byref(state._c), B, _lib.c_int32_arg("tokens", tokens), s, f, acc,
              _stream(ctx, stream, keep))


def materialize(ctx: Context, layer: Layer, src: State, dst: State, src_slot: Index, dst_slot: Index, *,
                stream: Stream = None) -> None:
    """Folds the ring of src_slot[b] into dst's checkpoint at dst_slot[b] (rssm_materialize); src and
    dst may be the same State. Reset dst's cursors afterwards (reset_cursors)."""
    _check_ctx(ctx, layer, src)
    _check_ctx(ctx, layer, dst)
    keep = []
    B = _batch_of(src_slot)
    s = tz.index_tensor(src_slot, "src_slot", "i32", B, ctx.memory, ctx.device_ordinal, keep)
    d = tz.index_tensor(dst_slot, "dst_slot", "i32", B, ctx.memory, ctx.device_ordinal, keep)
    _lib.call("rssm_materialize", ctx.handle, ctypes.byref(layer._c), ctypes.byref(src._c), ctypes.byref(dst._c),
              B, s, d, _stream(ctx, stream, keep))


def reset_cursors(ctx: Context, state: State, slot: Index, *, stream: Stream = None) -> None:
    """cursor[slot[b]] = 0 for every non-padding row (rssm_reset_cursors)."""
    if not isinstance(state, State):
        raise TypeError(f"state: expected a replayssm.State, got {type(state).__name__}")
    _check_ctx(ctx, state.layer, state)
    keep = []
    B = _batch_of(slot)
    s = tz.index_tensor(slot, "slot", "i32", B, ctx.memory, ctx.device_ordinal, keep)
    _lib.call("rssm_reset_cursors", ctx.handle, ctypes.byref(state._c), B, s, _stream(ctx, stream, keep))


def _batch_of(x) -> int:
    if x is None:
        raise ValueError("slot is required")
    if hasattr(x, "shape"):
        if len(x.shape) != 1:
            raise ValueError(f"slot: shape {tuple(x.shape)}, expected [B]")
        return int(x.shape[0])
    return len(x)
