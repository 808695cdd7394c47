"""torch.library custom ops for engines that call the decode ops under torch.compile / CUDA graphs.

Importable without torch: the ops are registered (namespace `replayssm`) only when torch
(>= 2.4, torch.library.custom_op) is importable; `AVAILABLE` says whether they were.

Custom ops take only tensors and plain values, so the layer travels as its spec string
(Layer.spec()) and the back end as a string: "auto" (a CUDA context for CUDA tensors, the
optimised CPU back end for CPU tensors), "cpu", "reference" or "cuda". Contexts are created
once per (back end, device ordinal) and cached. Every op runs on the current CUDA stream.

    torch.ops.replayssm.decode_replay(q, k, v, a, b, A_log, dt_bias, g, beta,
        checkpoint, ring_u, ring_k, ring_g, ring_base, cursor, slot, fold, layer_spec, backend) -> o
    torch.ops.replayssm.decode_packed(q, k, v, a, b, A_log, dt_bias, g, beta, checkpoint, slot,
        write_slot, layer_spec, backend) -> o
    torch.ops.replayssm.verify(... same as decode_replay ...) -> o
    torch.ops.replayssm.prefill(q, k, v, a, b, A_log, dt_bias, g, beta,
        checkpoint, ring_u, ring_k, ring_g, ring_base, cursor, slot, layer_spec, backend) -> o
    torch.ops.replayssm.advance(cursor, slot, fold, layer_spec, backend)
    torch.ops.replayssm.commit(cursor, tokens, slot, fold, accepted, layer_spec, backend)
    torch.ops.replayssm.materialize(checkpoint, ring_u, ring_k, ring_g, ring_base, cursor, src_slot,
        dst_slot, dst_checkpoint, dst_ring_base, layer_spec, backend)   (dst None = in place)
    torch.ops.replayssm.reset_cursors(cursor, slot, backend)

Mutated arguments are declared (checkpoint, ring tensors, ring_base, cursor as each op writes
them). The helpers decode_replay(layer, state, ...) etc. below call the ops with a State.
Note: this module deliberately has no `from __future__ import annotations`: custom_op infers
the schema from real annotation objects.
"""
import functools
import threading
from typing import List, Optional

from . import ops as _ops
from .core import Context, Layer, State

try:
    import torch
    from torch import Tensor

    AVAILABLE = hasattr(torch, "library") and hasattr(torch.library, "custom_op")
except ImportError:  # torch is optional
    torch = None
    AVAILABLE = False

_ctx_lock = threading.Lock()
_contexts = {}


@functools.lru_cache(maxsize=None)
def _layer(spec):
    return Layer.from_spec(spec)


def context_for(backend, tensor):
    """The cached Context for a back end name and the device of `tensor`."""
    if backend == "auto":
        backend = "cuda" if tensor.is_cuda else "cpu"
    index = (tensor.device.index or 0) if backend == "cuda" else 0
    key = (backend, index)
    with _ctx_lock:
        ctx = _contexts.get(key)
        if ctx is None:
            ctx = _contexts[key] = Context(backend, device_ordinal=index)
    return ctx


def _state(layer, checkpoint, ring_u=None, ring_k=None, ring_g=None, ring_base=None, cursor=None):
    return State(layer, checkpoint, ring_u, ring_k, ring_g, ring_base, cursor)


def _gate_kw(a, b, A_log, dt_bias, g, beta):
    return dict(a=a, b=b, A_log=A_log, dt_bias=dt_bias, g=g, beta=beta)


def _new_out(v):
    return torch.empty(v.shape, dtype=v.dtype, device=v.device)


if AVAILABLE:
    _STEP_MUTATES = ("checkpoint", "ring_u", "ring_k", "ring_g", "ring_base")

    @torch.library.custom_op("replayssm::decode_packed", mutates_args=("checkpoint",))
    def _decode_packed(q: Tensor, k: Tensor, v: Tensor, a: Optional[Tensor], b: Optional[Tensor],
                       A_log: Optional[Tensor], dt_bias: Optional[Tensor], g: Optional[Tensor],
                       beta: Optional[Tensor], checkpoint: Tensor, slot: Tensor, write_slot: Optional[Tensor],
                       layer_spec: str, backend: str) -> Tensor:
        layer = _layer(layer_spec)
        out = _new_out(v)
        _ops.decode_packed(context_for(backend, q), layer, _state(layer, checkpoint), q, k, v,
                           slot=slot, write_slot=write_slot, out=out, **_gate_kw(a, b, A_log, dt_bias, g, beta))
        return out

    @torch.library.custom_op("replayssm::decode_replay", mutates_args=_STEP_MUTATES)
    def _decode_replay(q: Tensor, k: Tensor, v: Tensor, a: Optional[Tensor], b: Optional[Tensor],
                       A_log: Optional[Tensor], dt_bias: Optional[Tensor], g: Optional[Tensor],
                       beta: Optional[Tensor], checkpoint: Tensor, ring_u: Tensor, ring_k: Tensor, ring_g: Tensor,
                       ring_base: Optional[Tensor], cursor: Tensor, slot: Tensor, fold: Optional[Tensor],
                       layer_spec: str, backend: str) -> Tensor:
        layer = _layer(layer_spec)
        out = _new_out(v)
        st = _state(layer, checkpoint, ring_u, ring_k, ring_g, ring_base, cursor)
        _ops.decode_replay(context_for(backend, q), layer, st, q, k, v, slot=slot, fold=fold, out=out,
                           **_gate_kw(a, b, A_log, dt_bias, g, beta))
        return out

    @torch.library.custom_op("replayssm::verify", mutates_args=_STEP_MUTATES)
    def _verify(q: Tensor, k: Tensor, v: Tensor, a: Optional[Tensor], b: Optional[Tensor],
                A_log: Optional[Tensor], dt_bias: Optional[Tensor], g: Optional[Tensor], beta: Optional[Tensor],
                checkpoint: Tensor, ring_u: Tensor, ring_k: Tensor, ring_g: Tensor, ring_base: Optional[Tensor],
                cursor: Tensor, slot: Tensor, fold: Optional[Tensor], layer_spec: str, backend: str) -> Tensor:
        layer = _layer(layer_spec)
        out = _new_out(v)
        st = _state(layer, checkpoint, ring_u, ring_k, ring_g, ring_base, cursor)
        _ops.verify(context_for(backend, q), layer, st, q, k, v, slot=slot, fold=fold, out=out,
                    **_gate_kw(a, b, A_log, dt_bias, g, beta))
        return out

    @torch.library.custom_op("replayssm::prefill", mutates_args=("checkpoint", "ring_base"))
    def _prefill(q: Tensor, k: Tensor, v: Tensor, a: Optional[Tensor], b: Optional[Tensor],
                 A_log: Optional[Tensor], dt_bias: Optional[Tensor], g: Optional[Tensor], beta: Optional[Tensor],
                 checkpoint: Tensor, ring_u: Tensor, ring_k: Tensor, ring_g: Tensor, ring_base: Optional[Tensor],
                 cursor: Tensor, slot: Tensor, cu_seqlens: Optional[Tensor], max_seqlen: Optional[int],
                 layer_spec: str, backend: str) -> Tensor:
        layer = _layer(layer_spec)
        out = _new_out(v)
        st = _state(layer, checkpoint, ring_u, ring_k, ring_g, ring_base, cursor)
        _ops.prefill(context_for(backend, q), layer, st, q, k, v, slot=slot, out=out, cu_seqlens=cu_seqlens,
                     max_seqlen=max_seqlen, **_gate_kw(a, b, A_log, dt_bias, g, beta))
        return out

    @torch.library.custom_op("replayssm::advance", mutates_args=("cursor",))
    def _advance(cursor: Tensor, slot: Tensor, fold: Optional[Tensor], layer_spec: str, backend: str) -> None:
        layer = _layer(layer_spec)
        ctx = context_for(backend, cursor)
        _ops.advance(ctx, layer, _cursor_state(layer, cursor), slot, fold)

    @torch.library.custom_op("replayssm::commit", mutates_args=("cursor",))
    def _commit(cursor: Tensor, tokens: int, slot: Tensor, fold: Optional[Tensor], accepted: Tensor,
                layer_spec: str, backend: str) -> None:
        layer = _layer(layer_spec)
        ctx = context_for(backend, cursor)
        _ops.commit(ctx, layer, _cursor_state(layer, cursor), tokens, slot, fold, accepted)

    @torch.library.custom_op("replayssm::materialize",
                             mutates_args=("checkpoint", "ring_base", "dst_checkpoint", "dst_ring_base"))
    def _materialize(checkpoint: Tensor, ring_u: Tensor, ring_k: Tensor, ring_g: Tensor,
                     ring_base: Optional[Tensor], cursor: Tensor, src_slot: Tensor, dst_slot: Tensor,
                     dst_checkpoint: Optional[Tensor], dst_ring_base: Optional[Tensor], layer_spec: str,
                     backend: str) -> None:
        layer = _layer(layer_spec)
        src = _state(layer, checkpoint, ring_u, ring_k, ring_g, ring_base, cursor)
        dst = src if dst_checkpoint is None else _state(layer, dst_checkpoint, ring_base=dst_ring_base)
        _ops.materialize(context_for(backend, checkpoint), layer, src, dst, src_slot, dst_slot)

    @torch.library.custom_op("replayssm::reset_cursors", mutates_args=("cursor",))
    def _reset_cursors(cursor: Tensor, slot: Tensor, backend: str) -> None:
        ctx = context_for(backend, cursor)
        _lib_reset(ctx, cursor, slot)

    # ---- fake (meta) implementations: shapes only, for torch.compile tracing ----

    def _fake_out(q, k, v, *args, **kw):
        return v.new_empty(v.shape)

    for _op in (_decode_packed, _decode_replay, _verify, _prefill):
        _op.register_fake(_fake_out)

    def _fake_none(*args, **kw):
        return None

    for _op in (_advance, _commit, _materialize, _reset_cursors):
        _op.register_fake(_fake_none)


def _cursor_state(layer, cursor):
    from . import _lib, _tensors as tz

    v = tz.view(cursor, "cursor")
    tz.check_kind(v, "cursor", "i32")
    tz.check_contiguous(v, "cursor")
    if len(v.shape) != 1:
        raise ValueError(f"cursor: shape {tuple(v.shape)}, expected [slots]")
    st = State.__new__(State)
    st.layer, st.num_slots, st.memory, st.device_index = layer, int(v.shape[0]), v.device, v.index
    for name in ("checkpoint", "ring_u", "ring_k", "ring_g", "ring_base"):
        setattr(st, name, None)
    st.cursor = cursor
    c = _lib.rssm_state()
    c.num_slots = st.num_slots
    c.cursor = v.ptr
    c.bytes.cursor = v.nbytes()
    st._c = c
    return st


def _lib_reset(ctx, cursor, slot):
    # rssm_reset_cursors needs no layer; any valid one describes the cursor-only state
    layer = _layer("gdn,1,1,1,1,1,f32,f32,f32,0.0,1,none,0.0")
    _ops.reset_cursors(ctx, _cursor_state(layer, cursor), slot)


# ---- helpers taking a Layer and a State --------------------------------------------------------


def _need():
    if not AVAILABLE:
        raise RuntimeError("replayssm.torch_ops needs torch >= 2.4 (torch.library.custom_op)")


def decode_packed(layer: Layer, state: State, q, k, v, a=None, b=None, A_log=None, dt_bias=None, g=None,
                  beta=None, *, slot, write_slot=None, backend: str = "auto"):
    _need()
    return torch.ops.replayssm.decode_packed(q, k, v, a, b, A_log, dt_bias, g, beta, state.checkpoint, slot,
                                             write_slot, layer.spec(), backend)


def decode_replay(layer: Layer, state: State, q, k, v, a=None, b=None, A_log=None, dt_bias=None, g=None,
                  beta=None, *, slot, fold=None, backend: str = "auto"):
    _need()
    return torch.ops.replayssm.decode_replay(q, k, v, a, b, A_log, dt_bias, g, beta, state.checkpoint,
                                             state.ring_u, state.ring_k, state.ring_g, state.ring_base,
                                             state.cursor, slot, fold, layer.spec(), backend)


def verify(layer: Layer, state: State, q, k, v, a=None, b=None, A_log=None, dt_bias=None, g=None, beta=None, *,
           slot, fold=None, backend: str = "auto"):
    _need()
    return torch.ops.replayssm.verify(q, k, v, a, b, A_log, dt_bias, g, beta, state.checkpoint, state.ring_u,
                                      state.ring_k, state.ring_g, state.ring_base, state.cursor, slot, fold,
                                      layer.spec(), backend)


def prefill(layer: Layer, state: State, q, k, v, a=None, b=None, A_log=None, dt_bias=None, g=None, beta=None, *,
            slot, cu_seqlens=None, max_seqlen=None, backend: str = "auto"):
    """As replayssm.prefill; ragged rows with cu_seqlens (int32 tensor) and the tokens packed as
    [1, total, ...]. Give max_seqlen (an int) with them: otherwise the longest row is read back
    from cu_seqlens, a synchronisation that a captured graph cannot hold."""
    _need()
    return torch.ops.replayssm.prefill(q, k, v, a, b, A_log, dt_bias, g, beta, state.checkpoint, state.ring_u,
                                       state.ring_k, state.ring_g, state.ring_base, state.cursor, slot, cu_seqlens,
                                       None if max_seqlen is None else int(max_seqlen), layer.spec(), backend)


def advance(layer: Layer, state: State, slot, fold=None, backend: str = "auto"):
    _need()
    torch.ops.replayssm.advance(state.cursor, slot, fold, layer.spec(), backend)


def commit(layer: Layer, state: State, tokens: int, slot, fold, accepted, backend: str = "auto"):
    """rssm_commit's arguments in C's order (fold may be None)."""
    _need()
    torch.ops.replayssm.commit(state.cursor, int(tokens), slot, fold, accepted, layer.spec(), backend)


def materialize(layer: Layer, src: State, dst: State, src_slot, dst_slot, backend: str = "auto"):
    _need()
    same = dst is src
    torch.ops.replayssm.materialize(src.checkpoint, src.ring_u, src.ring_k, src.ring_g, src.ring_base, src.cursor,
                                    src_slot, dst_slot, None if same else dst.checkpoint,
                                    None if same else dst.ring_base, layer.spec(), backend)


def reset_cursors(state: State, slot, backend: str = "auto"):
    _need()
    torch.ops.replayssm.reset_cursors(state.cursor, slot, backend)


__all__: List[str] = ["AVAILABLE", "context_for", "decode_packed", "decode_replay", "verify", "prefill", "advance",
                      "commit", "materialize", "reset_cursors"]
