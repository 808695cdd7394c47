"""Context, Layer and State: the objects every kernel-level call takes.

- Context("cpu" | "cuda[:N]" | "reference", threads=, **switches): owns an rssm_context (freed on collection or
  close()).
- Layer(gate=, H=, HV=, K=, V=, ring_len=, ...): an rssm_layer, validated by the library.
- State: the state tensors of one layer (replayssm.h "State tensors of one layer"), either
  allocated here (numpy on the host, torch on CUDA) or wrapping the caller's tensors.
"""
from __future__ import annotations

import ctypes
import math
import weakref
from typing import Optional

import numpy as np

from . import _lib
from . import _tensors as tz

_DEVICES = {"cpu": _lib.DEVICE_CPU, "cuda": _lib.DEVICE_CUDA, "reference": _lib.DEVICE_REFERENCE,
            "ref": _lib.DEVICE_REFERENCE}
_DEVICE_NAMES = {_lib.DEVICE_CPU: "cpu", _lib.DEVICE_CUDA: "cuda", _lib.DEVICE_REFERENCE: "reference"}
_GATES = {"gdn": _lib.GATE_GDN, "kda": _lib.GATE_KDA}
_GATE_NAMES = {v: k for k, v in _GATES.items()}
# rssm_state_layout: each head's state [V, K] ("vk": vLLM, SGLang, FlashInfer) or [K, V] ("kv": FLA, transformers)
_LAYOUTS = {"vk": 0, "kv": 1}
_LAYOUT_NAMES = {v: k for k, v in _LAYOUTS.items()}


def version() -> str:
    """Version string of the loaded library ("major.minor.patch")."""
    return _lib.lib().rssm_version_string().decode()


def version_number() -> int:
    return int(_lib.lib().rssm_version_number())


def cuda_available() -> bool:
    """True when the library was built with CUDA and a device is present."""
    return bool(_lib.lib().rssm_cuda_available())


def status_name(status: int) -> str:
    return _lib.status_name(status)


def dtype_size(dtype) -> int:
    return int(_lib.lib().rssm_dtype_size(tz.DTYPE_CODES[tz.dtype_name(dtype)]))


# ---- context --------------------------------------------------------------------------------


class Context:
    """A device context: "cpu", "cuda" (or "cuda:N" for GPU N) or "reference" (the float64
    oracle, host memory). threads: CPU worker threads (0 = every core). The other keywords are
    the tuning switches of rssm_context_params (cpu_simd, cuda_fast, cuda_split, cuda_prefetch,
    cuda_ring_read, cuda_pipeline, cuda_pipeline_balance, cuda_pipeline_producers, cuda_prefill, cuda_pdl,
    cuda_stream), for comparisons."""

    def __init__(self, device: str = "cpu", *, threads: int = 0, device_ordinal: int = 0, **switches):
        ordinal = device_ordinal
        if isinstance(device, int):
            code = device
        else:
            d = str(device).lower()
            if d.startswith("cuda:"):
                d, ordinal = "cuda", int(d.split(":", 1)[1])
            if d not in _DEVICES:
                raise ValueError(f"unknown device {device!r} (use 'cpu', 'cuda' or 'reference')")
            code = _DEVICES[d]
        params = _lib.lib().rssm_context_params_default()
        params.threads = _lib.c_int32_arg("threads", threads)
        params.device_ordinal = _lib.c_int32_arg("device_ordinal", ordinal)
        names = {f[0] for f in _lib.rssm_context_params._fields_} - {"threads", "device_ordinal", "pipeline_trace_file"}
        for name, value in switches.items():
            if name not in names:
                raise TypeError(f"Context: unknown switch {name!r} (one of {', '.join(sorted(names))})")
            setattr(params, name, _lib.c_int32_arg(name, int(value)))
        handle = ctypes.c_void_p()
        _lib.call("rssm_context_create", code, ctypes.byref(params), ctypes.byref(handle))
        self._owned = _lib.Owned(handle, "rssm_context_free")
        self.device = _DEVICE_NAMES.get(code, str(code))
        info = _lib.rssm_context_info()
        _lib.call("rssm_context_get_info", handle, ctypes.byref(info))
        self.device_ordinal = int(info.device_ordinal)
        self.threads = int(info.threads)
        self._dependents = weakref.WeakSet()  # pools made on this context (closed first)

    @property
    def handle(self) -> "_lib.Owned":
        """The C context, as a ctypes argument that keeps it alive for the call."""
        owned = self._owned
        if owned is None:
            raise ValueError("the context is closed")
        return owned

    @property
    def is_cuda(self) -> bool:
        return self.device == "cuda"

    @property
    def memory(self) -> str:
        """Where this context's tensors live: "cuda" or "host"."""
        return "cuda" if self.is_cuda else "host"

    def check_device_errors(self) -> None:
        """CUDA: synchronises and raises BAD_SLOT if a kernel saw an out-of-range slot. Not for the hot path."""
        _lib.call("rssm_context_check_device_errors", self.handle)

    def close(self) -> None:
        """Frees the context; the pools made on it (and their planners and caches) are closed
        first, so none is later freed against a freed context."""
        for d in list(self._dependents):
            d.close()
        self._owned = None  # freed now, or when the last pool made on it goes

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self):
        return f"Context({self.device!r}, device_ordinal={self.device_ordinal}, threads={self.threads})"


# ---- layer ----------------------------------------------------------------------------------


class Layer:
    """The shape of one linear-attention layer (rssm_layer).

    gate: "gdn" or "kda"; H, HV (a multiple of H), K, V head counts and dims; ring_len L;
    state_dtype (checkpoint), ring_dtype (ring u and k; default = state_dtype), io_dtype
    (q, k, v, a, b, o): "f32", "bf16" or "f64" (reference device only); scale (0 = K^-0.5);
    qk_l2norm; lower_bound (KDA safe gate, None = plain gate); fold_threshold (G_MAX of the per-head
    early folds of both gates: 0 = 60, else up to 80); state_layout: each head's state in the checkpoint
    as [V, K] ("vk", the default: vLLM, SGLang) or [K, V] ("kv": FLA, transformers).
    The library validates it (ReplaySSMError on a bad layer)."""

    def __init__(self, gate: str = "gdn", H: int = 1, HV: Optional[int] = None, K: int = 128, V: Optional[int] = None,
                 ring_len: int = 16, state_dtype: str = "f32", ring_dtype: Optional[str] = None, io_dtype: str = "f32",
                 scale: float = 0.0, qk_l2norm: bool = True, lower_bound: Optional[float] = None,
                 fold_threshold: float = 0.0, state_layout: str = "vk"):
        g = str(gate).lower()
        if g not in _GATES:
            raise ValueError(f"unknown gate {gate!r} (use 'gdn' or 'kda')")
        if str(state_layout).lower() not in _LAYOUTS:
            raise ValueError(f"unknown state_layout {state_layout!r} (use 'vk' or 'kv')")
        HV = H if HV is None else HV
        V = K if V is None else V
        state_dtype = tz.dtype_name(state_dtype)
        ring_dtype = state_dtype if ring_dtype is None else tz.dtype_name(ring_dtype)
        io_dtype = tz.dtype_name(io_dtype)
        c = _lib.rssm_layer()
        i32 = _lib.c_int32_arg
        c.num_k_heads, c.num_v_heads = i32("H", H), i32("HV", HV)
        c.head_k_dim, c.head_v_dim = i32("K", K), i32("V", V)
        c.gate = _GATES[g]
        c.ring_len = i32("ring_len", ring_len)
        c.state_dtype = tz.DTYPE_CODES[state_dtype]
        c.ring_dtype = tz.DTYPE_CODES[ring_dtype]
        c.io_dtype = tz.DTYPE_CODES[io_dtype]
        c.scale = float(scale)
        c.qk_l2norm = 1 if qk_l2norm else 0
        c.has_lower_bound = 0 if lower_bound is None else 1
        c.lower_bound = 0.0 if lower_bound is None else float(lower_bound)
        c.fold_threshold = float(fold_threshold)
        c.state_layout = _LAYOUTS[str(state_layout).lower()]
        _lib.call("rssm_layer_validate", ctypes.byref(c))
        self._c = c

    @classmethod
    def from_c(cls, c: "_lib.rssm_layer") -> "Layer":
        return cls(gate=_GATE_NAMES[c.gate], H=c.num_k_heads, HV=c.num_v_heads, K=c.head_k_dim,
                   V=c.head_v_dim, ring_len=c.ring_len, state_dtype=tz.DTYPE_NAMES[c.state_dtype],
                   ring_dtype=tz.DTYPE_NAMES[c.ring_dtype], io_dtype=tz.DTYPE_NAMES[c.io_dtype],
                   scale=c.scale, qk_l2norm=bool(c.qk_l2norm),
                   lower_bound=c.lower_bound if c.has_lower_bound else None,
                   fold_threshold=c.fold_threshold, state_layout=_LAYOUT_NAMES[c.state_layout])

    @classmethod
    def default(cls, gate, H, HV, K, V, ring_len) -> "Layer":
        """rssm_layer_default: scale K^-0.5, l2norm on, f32 everywhere."""
        return cls.from_c(_lib.lib().rssm_layer_default(_GATES[gate], H, HV, K, V, ring_len))

    # fields
    gate = property(lambda s: _GATE_NAMES[s._c.gate])
    H = property(lambda s: s._c.num_k_heads)
    HV = property(lambda s: s._c.num_v_heads)
    K = property(lambda s: s._c.head_k_dim)
    V = property(lambda s: s._c.head_v_dim)
    ring_len = property(lambda s: s._c.ring_len)
    state_dtype = property(lambda s: tz.DTYPE_NAMES[s._c.state_dtype])
    ring_dtype = property(lambda s: tz.DTYPE_NAMES[s._c.ring_dtype])
    io_dtype = property(lambda s: tz.DTYPE_NAMES[s._c.io_dtype])
    scale = property(lambda s: s._c.scale)
    qk_l2norm = property(lambda s: bool(s._c.qk_l2norm))
    lower_bound = property(lambda s: s._c.lower_bound if s._c.has_lower_bound else None)
    fold_threshold = property(lambda s: s._c.fold_threshold)
    state_layout = property(lambda s: _LAYOUT_NAMES[s._c.state_layout])

    @property
    def group(self) -> int:
        return self.HV // self.H

    @property
    def gk(self) -> int:
        """Entries of one log-gate: 1 (GDN) or K (KDA)."""
        return self.K if self.gate == "kda" else 1

    @property
    def effective_scale(self) -> float:
        """The scale the library applies: layer.scale, or K^-0.5 computed in float32 as the C code does."""
        return self.scale if self.scale != 0 else float(np.float32(1.0) / np.sqrt(np.float32(self.K)))

    @property
    def ring_g_dtype(self) -> str:
        return "f64" if self.ring_dtype == "f64" else "f32"

    def state_shapes(self, num_slots: int) -> dict:
        """name -> (shape, dtype name) of each state tensor."""
        N, H, HV, K, V, L = num_slots, self.H, self.HV, self.K, self.V, self.ring_len
        kda = self.gate == "kda"
        shapes = {
            "checkpoint": ((N, HV, K, V) if self.state_layout == "kv" else (N, HV, V, K), self.state_dtype),
            "ring_u": ((N, HV, L, V), self.ring_dtype),
            "ring_k": ((N, HV if kda else H, L, K), self.ring_dtype),
            "ring_g": ((N, HV, L, K) if kda else (N, HV, L), self.ring_g_dtype),
            "ring_base": ((N, HV), "i32"),
            "cursor": ((N,), "i32"),
        }
        return shapes

    def state_bytes(self, num_slots: int) -> dict:
        """rssm_state_size: bytes of each state tensor."""
        out = _lib.rssm_state_bytes()
        _lib.call("rssm_state_size", ctypes.byref(self._c), _lib.c_int32_arg("num_slots", num_slots), ctypes.byref(out))
        return {f: getattr(out, f) for f, _ in out._fields_}

    def spec(self) -> str:
        """A compact string that round-trips through Layer.from_spec (used by the torch ops)."""
        c = self._c
        return ",".join([self.gate, str(self.H), str(self.HV), str(self.K), str(self.V), str(self.ring_len),
                         self.state_dtype, self.ring_dtype, self.io_dtype, repr(float(c.scale)),
                         str(int(c.qk_l2norm)), "none" if not c.has_lower_bound else repr(float(c.lower_bound)),
                         repr(float(c.fold_threshold)), self.state_layout])

    @classmethod
    def from_spec(cls, spec: str) -> "Layer":
        f = spec.split(",")
        if len(f) != 14:
            raise ValueError(f"bad layer spec {spec!r}")
        return cls(gate=f[0], H=int(f[1]), HV=int(f[2]), K=int(f[3]), V=int(f[4]), ring_len=int(f[5]),
                   state_dtype=f[6], ring_dtype=f[7], io_dtype=f[8], scale=float(f[9]), qk_l2norm=f[10] == "1",
                   lower_bound=None if f[11] == "none" else float(f[11]), fold_threshold=float(f[12]),
                   state_layout=f[13])

    def replace(self, **kw) -> "Layer":
        d = dict(gate=self.gate, H=self.H, HV=self.HV, K=self.K, V=self.V, ring_len=self.ring_len,
                 state_dtype=self.state_dtype, ring_dtype=self.ring_dtype, io_dtype=self.io_dtype,
                 scale=self.scale, qk_l2norm=self.qk_l2norm, lower_bound=self.lower_bound,
                 fold_threshold=self.fold_threshold, state_layout=self.state_layout)
        d.update(kw)
        return Layer(**d)

    def __eq__(self, other):
        return isinstance(other, Layer) and self.spec() == other.spec()

    def __hash__(self):
        return hash(self.spec())

    def __repr__(self):
        lb = f", lower_bound={self.lower_bound}" if self.lower_bound is not None else ""
        lay = ", state_layout='kv'" if self.state_layout == "kv" else ""
        return (f"Layer(gate={self.gate!r}, H={self.H}, HV={self.HV}, K={self.K}, V={self.V}, "
                f"ring_len={self.ring_len}, state_dtype={self.state_dtype!r}, ring_dtype={self.ring_dtype!r}, "
                f"io_dtype={self.io_dtype!r}, scale={self.scale}, qk_l2norm={self.qk_l2norm}{lb}{lay})")


# ---- state ----------------------------------------------------------------------------------

_STATE_FIELDS = ("checkpoint", "ring_u", "ring_k", "ring_g", "ring_base", "cursor")


class State:
    """The state tensors of one layer for `num_slots` slots (shapes in Layer.state_shapes).

    Wrap caller tensors with State(layer, checkpoint=..., ring_u=..., ...) (numpy arrays or
    torch tensors, all on one device, contiguous; the ring tensors may be None for packed
    decode only; ring_base [slots, HV] i32 is required for replay), or allocate with State.allocate.
    The cursor is shared by every layer of a model: pass one layer's state.cursor to the
    others (allocate(..., cursor=...))."""

    def __init__(self, layer: Layer, checkpoint, ring_u=None, ring_k=None, ring_g=None, ring_base=None,
                 cursor=None):
        self.layer = layer
        tensors = dict(checkpoint=checkpoint, ring_u=ring_u, ring_k=ring_k, ring_g=ring_g, ring_base=ring_base,
                       cursor=cursor)
        cv = tz.view(checkpoint, "checkpoint")
        if len(cv.shape) != 4:
            raise ValueError(f"checkpoint: shape {cv.shape}, expected [slots, HV, V, K] (or [slots, HV, K, V] for a "
                             f"K-first layer)")
        self.num_slots = int(cv.shape[0])
        shapes = layer.state_shapes(self.num_slots)
        c = _lib.rssm_state()
        c.num_slots = self.num_slots
        self.memory, self.device_index = cv.device, cv.index
        for name in _STATE_FIELDS:
            x = tensors[name]
            setattr(self, name, x)
            if x is None:
                continue
            shape, kind = shapes[name]
            v = tz.view(x, name)
            tz.check_shape(v, name, shape)
            tz.check_kind(v, name, kind)
            tz.check_contiguous(v, name)
            if not v.writeable:
                raise ValueError(f"{name}: the array is read-only")
            if (v.device, v.index) != (self.memory, self.device_index):
                raise ValueError(f"{name}: on {v.where()}, the checkpoint is on "
                                 f"{'cuda:%d' % self.device_index if self.memory == 'cuda' else 'host'}")
            setattr(c, name, v.ptr)
            setattr(c.bytes, name, v.nbytes())
        self._c = c

    @classmethod
    def allocate(cls, layer: Layer, num_slots: int, device="cpu", ring: bool = True, cursor=None,
                 bf16_as_ml_dtypes: bool = False) -> "State":
        """Zeroed state tensors. device: a Context, "cpu"/"reference"/"host" (numpy arrays, 64-byte
        aligned) or "cuda"/"cuda:N"/a torch.device (torch tensors). ring=False allocates only the
        checkpoint (packed decode). cursor: a shared cursor tensor to reuse instead of a new one.
        numpy bf16 tensors are uint16 bit arrays unless bf16_as_ml_dtypes (needs ml_dtypes)."""
        memory, index = _memory_of(device)
        shapes = layer.state_shapes(int(num_slots))
        expect = layer.state_bytes(int(num_slots))
        out = {}
        for name, (shape, kind) in shapes.items():
            if not ring and name != "checkpoint":
                continue
            if name == "cursor" and cursor is not None:
                out[name] = cursor
                continue
            if memory == "cuda":
                import torch

                t = torch.zeros(shape, dtype=tz.torch_dtype(kind), device=f"cuda:{index}")
            else:
                t = tz.aligned_zeros(shape, tz.numpy_dtype(kind, bf16_as_ml_dtypes))
            nbytes = math.prod(shape) * (2 if kind == "bf16" else 8 if kind == "f64" else 4)
            assert nbytes == expect[name], (name, nbytes, expect[name])  # layout agrees with rssm_state_size
            out[name] = t
        return cls(layer, **out)

    @classmethod
    def from_pointers(cls, layer: Layer, c: "_lib.rssm_state", memory: str = "host", device_index: int = 0,
                      owner=None) -> "State":
        """A State over library-owned memory (e.g. a runtime pool's tensors). On the host the
        tensors are numpy views of that memory; on CUDA they are None (the kernel ops only need
        the pointers). `owner` (the memory's _lib.Owned) is kept alive as long as the State and
        every numpy view of it, so the memory cannot be freed under them."""
        st = cls.__new__(cls)
        st.layer, st.num_slots, st.memory, st.device_index, st._owner = layer, int(c.num_slots), memory, \
            device_index, owner
        shapes = layer.state_shapes(st.num_slots)
        for name in _STATE_FIELDS:
            ptr = getattr(c, name)
            arr = None
            if ptr and memory == "host" and name in shapes:
                shape, kind = shapes[name]
                dt = tz.numpy_dtype(kind)
                buf = (ctypes.c_char * (math.prod(shape) * dt.itemsize)).from_address(ptr)
                buf.owner = owner  # the view's base: holds the memory
                arr = np.frombuffer(buf, dtype=dt).reshape(shape)
            setattr(st, name, arr)
        st._c = _lib.rssm_state.from_buffer_copy(c)
        return st

    def tensors(self) -> dict:
        return {n: getattr(self, n) for n in _STATE_FIELDS if getattr(self, n) is not None}

    def zero_(self, slots=None) -> "State":
        """Zeroes every tensor (or only the given slots: checkpoint, ring, ring_base, cursor)."""
        for t in self.tensors().values():
            if slots is None:
                t[...] = 0
            else:
                for s in np.atleast_1d(np.asarray(slots)).tolist():
                    t[int(s)] = 0
        return self

    def copy(self) -> "State":
        """A deep copy on the same device (cursor copied too, not shared)."""
        def dup(t):
            if tz.is_torch(t):
                return t.clone()
            c = tz.aligned_zeros(t.shape, t.dtype)
            c[...] = t
            return c

        return State(self.layer, **{n: dup(t) for n, t in self.tensors().items()})

    def __repr__(self):
        return f"State({self.layer!r}, num_slots={self.num_slots}, memory={self.memory!r})"


def _memory_of(device):
    """("host", 0) or ("cuda", ordinal) for a Context, a device string or a torch.device."""
    if isinstance(device, Context):
        return device.memory, device.device_ordinal
    s = str(device).lower()
    if s in ("cpu", "reference", "ref", "host", "numpy"):
        return "host", 0
    if s == "cuda":
        try:
            import torch

            return "cuda", torch.cuda.current_device()
        except Exception:
            return "cuda", 0
    if s.startswith("cuda:"):
        return "cuda", int(s.split(":", 1)[1])
    raise ValueError(f"unknown device {device!r}")
