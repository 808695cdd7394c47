"""replayssm: ctypes binding of libreplayssm (ReplaySSM decode for GDN / KDA linear attention).

    import replayssm as rs
    ctx = rs.Context("cpu")                      # or "cuda", "reference"
    layer = rs.Layer(gate="gdn", H=16, HV=32, K=128, V=128, ring_len=16)
    st = rs.State.allocate(layer, num_slots=64, device=ctx)
    o = rs.decode_replay(ctx, layer, st, q, k, v, a=a, b=b, A_log=A_log, dt_bias=dt_bias, slot=slot)
    rs.advance(ctx, layer, st, slot)             # once per forward, after the last layer

`pip install .` from the repository root builds the library into the package; in a source
checkout the package also finds build*/libreplayssm.so, and REPLAYSSM_LIBRARY overrides both
(see replayssm._lib). At import the library, when found, must have the package's version.
replayssm.fla has FLA's op names (fused_recurrent_gated_delta_rule, chunk_kda, ...) over these ops.
"""
from . import bf16, reference, runtime, vectors
from . import _lib
from ._lib import LibraryNotFoundError, LibraryVersionError, ReplaySSMError, UnsupportedError, library_path
from .core import Context, Layer, State, cuda_available, dtype_size, status_name, version, version_number
from .ops import advance, commit, decode_packed, decode_replay, materialize, prefill, reset_cursors, verify
from .runtime import Plan, Pool, PrefixCache
from . import fla  # noqa: E402  (FLA's op names over the ops above: replayssm.fla)

__version__ = _lib.package_version()
_lib.check_at_import()

__all__ = [
    "Context", "Layer", "State", "ReplaySSMError", "UnsupportedError", "LibraryNotFoundError", "LibraryVersionError",
    "decode_packed", "decode_replay", "verify", "prefill", "advance", "commit", "materialize", "reset_cursors",
    "Pool", "Plan", "PrefixCache",
    "cuda_available", "version", "version_number", "status_name", "dtype_size", "library_path",
]
