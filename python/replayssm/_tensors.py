"""Caller tensors -> raw pointers: numpy arrays (host) and torch tensors (host or CUDA).

torch is optional and never imported here unless the caller already imported it (a torch
tensor cannot exist otherwise). Only what ctypes needs for memory safety is checked: dtype,
shape, device, layout (last dimension contiguous, a single token stride); the library reports
everything else (alignment, slot ranges, cursors, ...).
"""
from __future__ import annotations

import math
import sys

import numpy as np

from . import _lib

# dtype names used throughout the package: "f32", "bf16", "f64" (library dtypes) plus the
# index types "i32" and "u8".
DTYPE_CODES = {"f32": _lib.DTYPE_F32, "bf16": _lib.DTYPE_BF16, "f64": _lib.DTYPE_F64}
DTYPE_NAMES = {v: k for k, v in DTYPE_CODES.items()}
_ALIASES = {
    "f32": "f32", "float32": "f32", "float": "f32", "fp32": "f32",
    "bf16": "bf16", "bfloat16": "bf16",
    "f64": "f64", "float64": "f64", "double": "f64", "fp64": "f64",
}


def dtype_name(d) -> str:
    """Library dtype name of a string, numpy dtype, torch dtype or int code."""
    if isinstance(d, str):
        if d.lower() in _ALIASES:
            return _ALIASES[d.lower()]
        raise ValueError(f"unknown dtype {d!r} (use 'f32', 'bf16' or 'f64')")
    if isinstance(d, int):
        if d in DTYPE_NAMES:
            return DTYPE_NAMES[d]
        raise ValueError(f"unknown dtype code {d}")
    name = str(d).replace("torch.", "")
    try:
        name = np.dtype(d).name
    except TypeError:
        pass
    if name in _ALIASES:
        return _ALIASES[name]
    raise ValueError(f"unknown dtype {d!r} (use 'f32', 'bf16' or 'f64')")


def _bf16_numpy_dtype():
    """ml_dtypes.bfloat16 when installed, else None (bf16 is then uint16 bits)."""
    try:
        import ml_dtypes  # noqa: F401

        return np.dtype(ml_dtypes.bfloat16)
    except Exception:  # pragma: no cover - optional
        return None


def numpy_dtype(name: str, prefer_ml_dtypes: bool = False) -> np.dtype:
    if name == "f32":
        return np.dtype(np.float32)
    if name == "f64":
        return np.dtype(np.float64)
    if name == "bf16":
        if prefer_ml_dtypes:
            d = _bf16_numpy_dtype()
            if d is not None:
                return d
        return np.dtype(np.uint16)
    if name == "i32":
        return np.dtype(np.int32)
    if name == "u8":
        return np.dtype(np.uint8)
    raise ValueError(name)


def torch_dtype(name: str):
    import torch

    return {"f32": torch.float32, "bf16": torch.bfloat16, "f64": torch.float64, "i32": torch.int32,
            "u8": torch.uint8}[name]


def _np_kind(dt: np.dtype) -> str:
    if dt == np.float32:
        return "f32"
    if dt == np.float64:
        return "f64"
    if dt == np.uint16 or dt.name == "bfloat16":
        return "bf16"
    if dt == np.int32:
        return "i32"
    if dt == np.uint8:
        return "u8"
    if dt == np.bool_:
        return "bool"
    return dt.name


def _torch_kind(dt) -> str:
    s = str(dt).replace("torch.", "")
    return {"float32": "f32", "bfloat16": "bf16", "float64": "f64", "int32": "i32", "uint8": "u8",
            "bool": "bool"}.get(s, s)


def is_torch(x) -> bool:
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(x, torch.Tensor)


class View:
    """A tensor seen as a raw pointer, a shape and element strides."""

    __slots__ = ("obj", "ptr", "shape", "strides", "kind", "device", "index", "writeable")

    def __init__(self, obj, ptr, shape, strides, kind, device, index, writeable):
        self.obj, self.ptr, self.shape, self.strides = obj, ptr, tuple(shape), tuple(strides)
        self.kind, self.device, self.index, self.writeable = kind, device, index, writeable

    def unsqueeze1(self) -> "View":
        """Inserts a size-1 token axis after the batch axis."""
        s0 = self.strides[0] if self.strides else 1
        return View(self.obj, self.ptr, (self.shape[0], 1) + self.shape[1:], (s0, s0) + self.strides[1:],
                    self.kind, self.device, self.index, self.writeable)

    def where(self) -> str:
        return "cuda:%d" % self.index if self.device == "cuda" else "host"

    def nbytes(self) -> int:
        """Bytes of the elements (of a contiguous tensor: the memory behind ptr)."""
        return int(math.prod(self.shape)) * {"bf16": 2, "f64": 8}.get(self.kind, 4)


def view(x, name: str) -> View:
    if is_torch(x):
        dev = x.device
        if dev.type == "cuda":
            device, index = "cuda", dev.index if dev.index is not None else 0
        elif dev.type == "cpu":
            device, index = "host", 0
        else:
            raise ValueError(f"{name}: torch tensors on {dev} are not supported (cpu or cuda)")
        return View(x, x.data_ptr(), x.shape, x.stride(), _torch_kind(x.dtype), device, index, True)
    if isinstance(x, np.ndarray):
        item = x.dtype.itemsize
        if any(s % item for s in x.strides):
            raise ValueError(f"{name}: strides {x.strides} are not whole elements")
        return View(x, x.ctypes.data, x.shape, [s // item for s in x.strides], _np_kind(x.dtype), "host", 0,
                    bool(x.flags.writeable))
    raise TypeError(f"{name}: expected a numpy array or a torch tensor, got {type(x).__name__}")


def _dense_ok(shape, strides) -> bool:
    """True when the dims are C-contiguous (size-1 dims may have any stride)."""
    expect = 1
    for n, s in zip(reversed(shape), reversed(strides)):
        if n != 1 and s != expect:
            return False
        expect *= n
    return True


def check_shape(v: View, name: str, shape) -> None:
    if tuple(v.shape) != tuple(shape):
        raise ValueError(f"{name}: shape {tuple(v.shape)}, expected {tuple(shape)}")


def check_kind(v: View, name: str, kind: str) -> None:
    if v.kind != kind:
        raise TypeError(f"{name}: dtype {v.kind}, expected {kind}" +
                        (" (bf16 numpy arrays are uint16 bits or ml_dtypes.bfloat16)" if kind == "bf16" else ""))


def check_contiguous(v: View, name: str) -> None:
    if not _dense_ok(v.shape, v.strides):
        raise ValueError(f"{name}: must be contiguous (shape {v.shape}, element strides {v.strides})")


def token_stride(v: View, name: str) -> int:
    """The element distance between consecutive tokens of a [B, T, ...] tensor whose per-token
    part is contiguous, as rssm_step_io's *_stride (0 = packed when it cannot matter)."""
    B, T = v.shape[0], v.shape[1]
    inner_shape, inner_strides = v.shape[2:], v.strides[2:]
    if not _dense_ok(inner_shape, inner_strides):
        raise ValueError(f"{name}: the per-token part {inner_shape} must be contiguous (element strides "
                         f"{inner_strides}); only the token axes may be strided")
    dense = math.prod(inner_shape)
    if T > 1:
        s = v.strides[1]
        if B > 1 and v.strides[0] != T * s:
            raise ValueError(f"{name}: batch stride {v.strides[0]} is not T * token stride ({T} * {s})")
    elif B > 1:
        s = v.strides[0]
    else:
        return 0
    if s < dense:
        raise ValueError(f"{name}: token stride {s} overlaps a token of {dense} elements")
    return 0 if s == dense else int(s)


def aligned_zeros(shape, dtype, align: int = 64) -> np.ndarray:
    """A zeroed numpy array whose data pointer is `align`-byte aligned."""
    dtype = np.dtype(dtype)
    n = int(math.prod(shape)) * dtype.itemsize
    buf = np.zeros(n + align, dtype=np.uint8)
    off = (-buf.ctypes.data) % align
    return buf[off:off + n].view(dtype).reshape(shape)


def aligned_copy(x: np.ndarray, align: int = 16) -> np.ndarray:
    if x.ctypes.data % align == 0 and x.flags.c_contiguous:
        return x
    out = aligned_zeros(x.shape, x.dtype, max(align, 16))
    out[...] = x
    return out


INT_RANGES = {"i32": (-(2**31), 2**31 - 1), "u8": (0, 255)}


def check_int_range(lo, hi, name: str, kind: str) -> None:
    """Values lo..hi must fit the C type of `kind` ("i32", "u8"): ctypes and numpy would wrap."""
    a, b = INT_RANGES[kind]
    if lo < a or hi > b:
        c_type = "int32_t" if kind == "i32" else "uint8_t"
        raise ValueError(f"{name}: values from {lo} to {hi} do not fit {c_type} ({a}..{b})")


def int_array(x, name: str, kind: str) -> np.ndarray:
    """A host array of x (a list, numpy array or CPU tensor of integers or bools) as int32 (every
    value range-checked instead of wrapped) or as uint8 flags (any nonzero value is 1, as C reads
    a flag)."""
    a = np.asarray(x.cpu() if is_torch(x) else x)
    if a.size and not (np.issubdtype(a.dtype, np.integer) or a.dtype == np.bool_):
        raise TypeError(f"{name}: expected integers, got {a.dtype}")
    if kind == "u8":
        return (a != 0).astype(np.uint8)
    if a.size:
        check_int_range(int(a.min()), int(a.max()), name, kind)
    return a.astype(np.int32)


def index_tensor(x, name: str, kind: str, batch: int, ctx_device: str, ctx_index: int, keep: list):
    """An int32 ([B] slots/accepted) or uint8 ([B] fold) array on the context's device, as a pointer.
    Accepts lists, numpy arrays and torch tensors; converts only when needed (a converted
    tensor is kept alive in `keep`). None -> NULL."""
    if x is None:
        return None
    if is_torch(x):
        import torch

        want = torch.int32 if kind == "i32" else torch.uint8
        if x.dtype == torch.bool and kind == "u8":
            x = x.view(torch.uint8)
        dev = ("cuda", ctx_index) if ctx_device == "cuda" else ("cpu", None)
        if x.device.type != dev[0] or (dev[0] == "cuda" and (x.device.index or 0) != ctx_index):
            if dev[0] == "cuda":
                raise ValueError(f"{name}: tensor on {x.device}, the context is on cuda:{ctx_index}")
            x = x.cpu()
        if x.dtype != want:
            if x.dtype.is_floating_point or x.dtype.is_complex:
                raise TypeError(f"{name}: expected integers, got {x.dtype}")
            if kind == "u8":  # a fold flag is any nonzero value, as in C
                x = (x != 0).to(want)
            elif x.is_cuda:  # no read back on the device: a value past int32 stays out of range
                x = x.clamp(INT_RANGES["i32"][0], INT_RANGES["i32"][1]).to(want)
            else:
                if x.numel():
                    check_int_range(int(x.min()), int(x.max()), name, kind)
                x = x.to(want)
        x = x.contiguous()
    else:
        a = np.asarray(x)
        if not (a.dtype == np.int32 and kind == "i32") and not (a.dtype in (np.uint8, np.bool_) and kind == "u8"):
            a = int_array(a, name, kind)
        elif a.dtype == np.bool_:
            a = a.view(np.uint8)
        if ctx_device == "cuda":
            import torch

            x = torch.as_tensor(a, device=f"cuda:{ctx_index}")
        else:
            x = aligned_copy(np.ascontiguousarray(a))
    v = view(x, name)
    if len(v.shape) != 1 or v.shape[0] != batch:
        raise ValueError(f"{name}: shape {tuple(v.shape)}, expected ({batch},)")
    keep.append(x)
    return v.ptr
