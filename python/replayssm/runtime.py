"""The runtime of replayssm_runtime.h: state pool, step planner, prefix cache, sharding.

    pool = Pool(ctx, [layer] * n_layers, num_slots)
    s = pool.acquire()
    st = pool.state(i)            # State of layer i over the pool's memory (for the kernel ops)
    plan = Plan(pool, batch=8, track_interval=64)
    plan.set([s], seq_len=[0]); plan.begin("decode")
    ... replayssm.decode_replay(ctx, layer_i, pool.state(i), ..., slot=plan.slot, fold=plan.fold) ...
    plan.end()
    cache = PrefixCache(pool); cache.insert(tokens, pool, s); matched, lock = cache.match(tokens, pool, s2)
"""
from __future__ import annotations

import ctypes
import weakref
from typing import Sequence

import numpy as np

from . import _lib
from . import _tensors as tz
from .core import Context, Layer, State

__all__ = ["Pool", "Plan", "PrefixCache", "EXPORT_RING", "EXPORT_MATERIALIZED"]

EXPORT_RING = _lib.RSSM_EXPORT_RING
EXPORT_MATERIALIZED = _lib.RSSM_EXPORT_MATERIALIZED
_MODES = {"decode": _lib.RSSM_PLAN_DECODE, "verify": _lib.RSSM_PLAN_VERIFY}
_SOURCES = {"checkpoint": _lib.RSSM_SNAPSHOT_CHECKPOINT, "materialize": _lib.RSSM_SNAPSHOT_MATERIALIZE}


def _layers_array(layers):
    layers = list(layers)
    if not layers or not all(isinstance(x, Layer) for x in layers):
        raise TypeError("layers: a non-empty list of replayssm.Layer")
    arr = (_lib.rssm_layer * len(layers))()
    for i, x in enumerate(layers):
        arr[i] = x._c
    return arr


def _i32_array(x, name, n=None):
    a = tz.aligned_copy(np.ascontiguousarray(tz.int_array(x, name, "i32")))
    if a.ndim != 1 or (n is not None and a.shape[0] != n):
        raise ValueError(f"{name}: expected a 1-D array" + (f" of {n}" if n is not None else ""))
    return a


def _ptr(handle_obj):
    return handle_obj.handle



def _closed_guard(obj, what):
    """The C object, as a ctypes argument that keeps it alive for the call."""
    owned = obj._owned
    if owned is None:
        raise ValueError(f"the {what} is closed")
    return owned

def shard_layer(layer: Layer, tp: int, rank: int) -> tuple[Layer, int, int]:
    """rssm_layer_shard: the layer a tensor-parallel rank holds (H/tp key heads, HV/tp value
    heads) and its first key and value heads: (Layer, k_head0, v_head0). A rank's ops on those
    head slices of the inputs and state equal the unsharded heads bit for bit."""
    out, k0, v0 = _lib.rssm_layer(), ctypes.c_int32(), ctypes.c_int32()
    _lib.call("rssm_layer_shard", ctypes.byref(layer._c), _lib.c_int32_arg("tp", tp), _lib.c_int32_arg("rank", rank), ctypes.byref(out), ctypes.byref(k0),
              ctypes.byref(v0))
    return Layer.from_c(out), k0.value, v0.value


class Pool:
    """rssm_pool: every layer's state for num_slots slots plus the shared cursors, library-owned."""

    def __init__(self, ctx: Context, layers: Sequence[Layer], num_slots: int):
        self.ctx = ctx
        arr = _layers_array(layers)
        h = ctypes.c_void_p()
        _lib.call("rssm_pool_create", ctx.handle, arr, len(arr), _lib.c_int32_arg("num_slots", num_slots), ctypes.byref(h))
        self._owned = _lib.Owned(h, "rssm_pool_free", ctx._owned)
        self._layers = [Layer.from_c(arr[i]) for i in range(len(arr))]
        self._dependents = weakref.WeakSet()  # planners and prefix caches on this pool (closed first)
        ctx._dependents.add(self)

    @staticmethod
    def bytes_needed(layers, num_slots: int) -> int:
        """rssm_pool_bytes: exact device bytes a pool of these layers and slots allocates."""
        arr = _layers_array(layers)
        out = ctypes.c_size_t()
        _lib.call("rssm_pool_bytes", arr, len(arr), _lib.c_int32_arg("num_slots", num_slots), ctypes.byref(out))
        return out.value

    @property
    def handle(self):
        return _closed_guard(self, "pool")

    def close(self):
        """Closes the pool (its planners and caches first). Its memory is freed now, or when the
        last State or numpy view taken from state() goes."""
        for d in list(self._dependents):
            d.close()
        self._owned = None

    memory = property(lambda s: int(_lib.lib().rssm_pool_memory(s.handle)))
    slot_bytes = property(lambda s: int(_lib.lib().rssm_pool_slot_bytes(s.handle)))
    num_slots = property(lambda s: int(_lib.lib().rssm_pool_num_slots(s.handle)))
    num_free = property(lambda s: int(_lib.lib().rssm_pool_num_free(s.handle)))
    num_layers = property(lambda s: int(_lib.lib().rssm_pool_num_layers(s.handle)))

    def is_held(self, slot: int) -> bool:
        return bool(_lib.lib().rssm_pool_is_held(self.handle, _lib.c_int32_arg("slot", slot)))

    def layer(self, i: int) -> Layer:
        c = _lib.rssm_layer()
        _lib.call("rssm_pool_layer", self.handle, _lib.c_int32_arg("i", i), ctypes.byref(c))
        return Layer.from_c(c)

    def state(self, i: int) -> State:
        """The state tensors of layer i (num_slots + 1 slots: the last is the pool's scratch slot).
        Host contexts: numpy views of the pool's memory; CUDA: pointers only."""
        c = _lib.rssm_state()
        _lib.call("rssm_pool_state", self.handle, _lib.c_int32_arg("i", i), ctypes.byref(c))
        return State.from_pointers(self.layer(i), c, self.ctx.memory, self.ctx.device_ordinal if self.ctx.is_cuda else 0,
                                   owner=self._owned)

    def acquire(self) -> int:
        s = ctypes.c_int32()
        _lib.call("rssm_pool_acquire", self.handle, ctypes.byref(s))
        return s.value

    def acquire_copy(self, src_pool: "Pool", src_slot: int) -> int:
        s = ctypes.c_int32()
        _lib.call("rssm_pool_acquire_copy", self.handle, src_pool.handle, _lib.c_int32_arg("src_slot", src_slot), ctypes.byref(s))
        return s.value

    def release(self, slot: int) -> None:
        _lib.call("rssm_pool_release", self.handle, _lib.c_int32_arg("slot", slot))

    def copy(self, src_slot: int, dst_pool: "Pool" = None, dst_slot: int = None) -> None:
        """dst_slot <- src_slot's state at its committed position (materialised), cursor 0."""
        dst_pool = self if dst_pool is None else dst_pool
        _lib.call("rssm_pool_copy", self.handle, _lib.c_int32_arg("src_slot", src_slot), dst_pool.handle,
                  _lib.c_int32_arg("dst_slot", src_slot if dst_slot is None else dst_slot))

    def copy_checkpoint(self, src_slot: int, dst_pool: "Pool", dst_slot: int) -> None:
        _lib.call("rssm_pool_copy_checkpoint", self.handle, _lib.c_int32_arg("src_slot", src_slot), dst_pool.handle, _lib.c_int32_arg("dst_slot", dst_slot))

    def cursor(self, slot: int) -> int:
        c = ctypes.c_int32()
        _lib.call("rssm_pool_cursor", self.handle, _lib.c_int32_arg("slot", slot), ctypes.byref(c))
        return c.value

    def export_size(self, materialized: bool = False) -> int:
        n = ctypes.c_size_t()
        _lib.call("rssm_pool_export_size", self.handle, EXPORT_MATERIALIZED if materialized else EXPORT_RING,
                  ctypes.byref(n))
        return n.value

    def export(self, slot: int, materialized: bool = False) -> bytes:
        """The slot as a blob (ring form, or the materialised checkpoint only)."""
        cap = self.export_size(materialized)
        buf = ctypes.create_string_buffer(cap)
        written = ctypes.c_size_t()
        _lib.call("rssm_pool_export", self.handle, _lib.c_int32_arg("slot", slot), EXPORT_MATERIALIZED if materialized else EXPORT_RING,
                  buf, cap, ctypes.byref(written))
        return buf.raw[:written.value]

    def import_(self, blob: bytes) -> int:
        """Takes a free slot and loads a blob into it; returns the slot."""
        data = bytes(blob)
        s = ctypes.c_int32()
        _lib.call("rssm_pool_import", self.handle, data, len(data), ctypes.byref(s))
        return s.value

    def validate(self) -> None:
        _lib.call("rssm_pool_validate", self.handle)

    def __repr__(self):
        return f"Pool({self.ctx!r}, layers={self.num_layers}, num_slots={self.num_slots}, free={self.num_free})"


class Plan:
    """rssm_plan: static per-batch-size buffers and the cursor move after the last layer."""

    def __init__(self, pool: Pool, batch: int, track_interval: int = 0):
        self.pool = pool
        h = ctypes.c_void_p()
        _lib.call("rssm_plan_create", pool.handle, _lib.c_int32_arg("batch", batch), _lib.c_int32_arg("track_interval", track_interval), ctypes.byref(h))
        self._owned = _lib.Owned(h, "rssm_plan_free", pool._owned)
        pool._dependents.add(self)
        self.batch = int(_lib.lib().rssm_plan_batch(h))

    @property
    def handle(self):
        return _closed_guard(self, "plan")

    def close(self):
        """Closes the planner; its buffers are freed now, or when the last view of them goes."""
        self._owned = None

    memory = property(lambda s: int(_lib.lib().rssm_plan_memory(s.handle)))

    def set(self, slots, seq_len=None) -> None:
        """Rows [0, n) get slots[i] (held or -1) and seq_len[i]; the rest become padding."""
        s = _i32_array(slots, "slots")
        n = s.shape[0]
        sl = None if seq_len is None else _i32_array(seq_len, "seq_len", n)
        _lib.call("rssm_plan_set", self.handle, n, s.ctypes.data, None if sl is None else sl.ctypes.data)

    def set_small_batch(self, max_rows="auto") -> None:
        """Decode steps of at most max_rows live rows fold every row (replay then moves the state as
        packed decode does, which is faster on grids too small to be bound by bandwidth); 0 = never,
        "auto" = by device (rssm_plan_set_small_batch). Takes effect from the next set()."""
        n = -1 if max_rows == "auto" else _lib.c_int32_arg("max_rows", max_rows)
        _lib.call("rssm_plan_set_small_batch", self.handle, n)

    small_batch = property(lambda s: int(_lib.lib().rssm_plan_small_batch(s.handle)))

    @property
    def fold_every(self) -> bool:
        """True between begin() and end() of a small-batch decode step whose rows begin() drained
        (every ring folded, cursor 0; CUDA's fast kernels): pass it to decode_replay with
        fold=plan.fold, and the layers run packed decode's kernels."""
        io = _lib.rssm_step_io()
        _lib.call("rssm_plan_io", self.handle, ctypes.byref(io))
        return bool(io.fold_every)

    def set_accepted(self, accepted) -> None:
        a = _i32_array(accepted, "accepted")
        _lib.call("rssm_plan_set_accepted", self.handle, a.shape[0], a.ctypes.data)

    def begin(self, mode: str = "decode", tokens: int = 1, stream=None) -> None:
        _lib.call("rssm_plan_begin", self.handle, _MODES[mode], _lib.c_int32_arg("tokens", tokens), self._stream(stream))

    def end(self, stream=None) -> None:
        _lib.call("rssm_plan_end", self.handle, self._stream(stream))

    def fold_rows(self, mode: str = "decode") -> np.ndarray:
        out = tz.aligned_zeros((self.batch,), np.uint8)
        _lib.call("rssm_plan_fold_rows", self.handle, _MODES[mode], out.ctypes.data)
        return out

    def _stream(self, stream):
        from .ops import _stream

        return _stream(self.pool.ctx, stream)

    def _buffer(self, fn, dtype):
        ptr = getattr(_lib.lib(), fn)(self.handle)
        if not self.pool.ctx.is_cuda:
            buf = (ctypes.c_char * (self.batch * np.dtype(dtype).itemsize)).from_address(ptr)
            buf.owner = self._owned  # the view's base: holds the planner's memory
            return np.frombuffer(buf, dtype=dtype)
        return ptr

    # [batch] device buffers: numpy views on host contexts, raw device pointers (int) on CUDA
    slot = property(lambda s: s._buffer("rssm_plan_slot_buffer", np.int32))
    fold = property(lambda s: s._buffer("rssm_plan_fold_buffer", np.uint8))
    seq_len = property(lambda s: s._buffer("rssm_plan_seq_len_buffer", np.int32))
    accepted = property(lambda s: s._buffer("rssm_plan_accepted_buffer", np.int32))


class PrefixCache:
    """rssm_prefix_cache: a radix tree over token ids whose nodes hold snapshot slots of a pool."""

    def __init__(self, snapshot_pool: Pool, max_bytes: int = 0, max_snapshots: int = 0):
        self.pool = snapshot_pool
        h = ctypes.c_void_p()
        _lib.call("rssm_prefix_cache_create", snapshot_pool.handle, _lib.c_size_arg("max_bytes", max_bytes), _lib.c_int32_arg("max_snapshots", max_snapshots),
                  ctypes.byref(h))
        self._owned = _lib.Owned(h, "rssm_prefix_cache_free", snapshot_pool._owned)
        snapshot_pool._dependents.add(self)

    @property
    def handle(self):
        return _closed_guard(self, "prefix cache")

    def close(self):
        self._owned = None

    def insert(self, tokens, src_pool: Pool, src_slot: int, source: str = "checkpoint", stream=False) -> None:
        """Snapshots the state after `tokens`. By default the call synchronises; with `stream`
        (None: torch's current stream, or a torch stream / raw handle) the copy is instead
        ordered after that stream's work so far and its later work after the copy, and the host
        does not wait (rssm_prefix_cache_insert_async)."""
        t = _i32_array(tokens, "tokens")
        if stream is False:
            _lib.call("rssm_prefix_cache_insert", self.handle, t.ctypes.data, t.shape[0], src_pool.handle,
                      _lib.c_int32_arg("src_slot", src_slot), _SOURCES[source])
            return
        from .ops import _stream

        _lib.call("rssm_prefix_cache_insert_async", self.handle, t.ctypes.data, t.shape[0], src_pool.handle,
                  _lib.c_int32_arg("src_slot", src_slot), _SOURCES[source], _stream(src_pool.ctx, stream))

    def match(self, tokens, dst_pool: Pool = None, dst_slot: int = -1, lock: bool = False):
        """Longest cached prefix: returns (matched, lock_handle or None); copies the snapshot into
        dst_slot of dst_pool when given and matched > 0."""
        t = _i32_array(tokens, "tokens")
        matched = ctypes.c_int32()
        handle = ctypes.c_uint64()
        _lib.call("rssm_prefix_cache_match", self.handle, t.ctypes.data, t.shape[0],
                  None if dst_pool is None else dst_pool.handle, _lib.c_int32_arg("dst_slot", dst_slot), ctypes.byref(matched),
                  ctypes.byref(handle) if lock else None)
        return matched.value, (handle.value if lock and handle.value else None)

    def unlock(self, lock_handle: int) -> None:
        _lib.call("rssm_prefix_cache_unlock", self.handle, _lib.c_uint64_arg("lock_handle", lock_handle))

    def evict(self, count: int) -> int:
        n = ctypes.c_int32()
        _lib.call("rssm_prefix_cache_evict", self.handle, _lib.c_int32_arg("count", count), ctypes.byref(n))
        return n.value

    def stats(self) -> dict:
        s = _lib.rssm_prefix_cache_stats()
        _lib.call("rssm_prefix_cache_get_stats", self.handle, ctypes.byref(s))
        return {f: getattr(s, f) for f, _ in s._fields_}

    def validate(self) -> None:
        _lib.call("rssm_prefix_cache_validate", self.handle)
