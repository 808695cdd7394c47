"""bfloat16 <-> float32 in plain numpy (bf16 stored as uint16 bits), matching the library's
rounding (round to nearest even; NaN stays NaN)."""
from __future__ import annotations

import numpy as np


def to_bf16(x) -> np.ndarray:
    """float array -> uint16 bf16 bits (round to nearest even, as rssm_f32_to_bf16)."""
    f = np.ascontiguousarray(np.asarray(x, dtype=np.float32))
    u = f.view(np.uint32).astype(np.uint64)
    nan = (u & 0x7FFFFFFF) > 0x7F800000
    r = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    r[nan] = ((u[nan] >> 16) | 0x40).astype(np.uint16)
    return r


def from_bf16(u) -> np.ndarray:
    """uint16 bf16 bits (or an ml_dtypes.bfloat16 array) -> float32."""
    a = np.asarray(u)
    if a.dtype.name == "bfloat16":
        return a.astype(np.float32)
    return (np.ascontiguousarray(a, dtype=np.uint16).astype(np.uint32) << 16).view(np.float32)


def round_bf16(x) -> np.ndarray:
    """x rounded to bf16, as float32."""
    return from_bf16(to_bf16(x))
