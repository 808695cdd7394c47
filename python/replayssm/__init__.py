"""replayssm: ctypes binding of libreplayssm (ReplaySSM decode for GDN / KDA linear attention).

    import replayssm as rs
    ctx = rs.Context("cpu")                      # or "cuda", "reference"
    layer = rs.Layer(gate="gdn", H=16, HV=32, K=128, V=128, ring_len=16)
    st = rs.State.allocate(layer, num_slots=64, device=ctx)
    o = rs.decode_replay(ctx, layer, st, q, k, v, a=a, b=b, A_log=A_log, dt_bias=dt_bias, slot=slot)
    rs.advance(ctx, layer, st, slot)             # once per forward, after the last layer

The library is found through REPLAYSSM_LIBRARY, the package directory, or ../build*/ of a
checkout (see replayssm._lib). Nothing is loaded until first use.
"""
from . import bf16, reference, runtime, vectors
from ._lib import LibraryNotFoundError, ReplaySSMError, UnsupportedError, library_path
from .core import Context, Layer, State, cuda_available, dtype_size, status_name, version, version_number
from .ops import advance, commit, decode_packed, decode_replay, materialize, prefill, reset_cursors, verify
from .runtime import Plan, Pool, PrefixCache

__version__ = "0.3.0"

__all__ = [
    "Context", "Layer", "State", "ReplaySSMError", "UnsupportedError", "LibraryNotFoundError",
    "decode_packed", "decode_replay", "verify", "prefill", "advance", "commit", "materialize", "reset_cursors",
    "Pool", "Plan", "PrefixCache",
    "cuda_available", "version", "version_number", "status_name", "dtype_size", "library_path",
]
