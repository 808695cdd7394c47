"""Loading libreplayssm.so and the ctypes mirror of include/replayssm.h.

Everything in this module is a literal transcription of the C header: struct field order and
types, enum values, function prototypes. Nothing here knows about numpy or torch.

Library search order (first hit wins):
  1. the environment variable REPLAYSSM_LIBRARY (a path to the shared library; an error if it
     does not exist), to use another build of the same version;
  2. the package directory, where `pip install .` puts the library it builds;
  3. in a source checkout only (python/replayssm beside the repository's CMakeLists.txt): the
     newest build*/libreplayssm.so of the checkout.
The library's version must equal the package's (a mismatch raises LibraryVersionError).
"""
from __future__ import annotations

import ctypes
import glob
import os
import re
import sys
import threading
import weakref

# ---- enums (values exactly as in replayssm.h) -------------------------------------------

STATUS_NAMES = (
    "RSSM_OK",
    "RSSM_ERROR_NULL_POINTER",
    "RSSM_ERROR_BAD_SHAPE",
    "RSSM_ERROR_BAD_DTYPE",
    "RSSM_ERROR_BAD_SLOT",
    "RSSM_ERROR_BAD_RING_LEN",
    "RSSM_ERROR_BAD_TOKENS",
    "RSSM_ERROR_MISALIGNED",
    "RSSM_ERROR_BAD_ARGUMENT",
    "RSSM_ERROR_UNSUPPORTED",
    "RSSM_ERROR_DEVICE",
    "RSSM_ERROR_OUT_OF_MEMORY",
    "RSSM_ERROR_POOL_FULL",
    "RSSM_ERROR_BAD_FORMAT",
    "RSSM_ERROR_CHECKSUM",
    "RSSM_ERROR_NOT_FOUND",
)
RSSM_OK = 0
RSSM_ERROR_UNSUPPORTED = STATUS_NAMES.index("RSSM_ERROR_UNSUPPORTED")

DEVICE_CPU, DEVICE_CUDA, DEVICE_REFERENCE = 0, 1, 2
DTYPE_F32, DTYPE_BF16, DTYPE_F64 = 0, 1, 2
GATE_GDN, GATE_KDA = 0, 1

MAX_HEAD_DIM = 256
MAX_RING_LEN = 64
ALIGNMENT = 16  # every tensor pointer (RSSM_ERROR_MISALIGNED otherwise)

# ---- structs ------------------------------------------------------------------------------

_c_enum = ctypes.c_int  # C enums are int-sized on every ABI the library targets


class rssm_layer(ctypes.Structure):
    _fields_ = [
        ("num_k_heads", ctypes.c_int32),
        ("num_v_heads", ctypes.c_int32),
        ("head_k_dim", ctypes.c_int32),
        ("head_v_dim", ctypes.c_int32),
        ("gate", _c_enum),
        ("ring_len", ctypes.c_int32),
        ("state_dtype", _c_enum),
        ("ring_dtype", _c_enum),
        ("io_dtype", _c_enum),
        ("scale", ctypes.c_float),
        ("qk_l2norm", ctypes.c_int32),
        ("has_lower_bound", ctypes.c_int32),
        ("lower_bound", ctypes.c_float),
        ("fold_threshold", ctypes.c_float),
        ("state_layout", _c_enum),
    ]


class rssm_context_params(ctypes.Structure):
    _fields_ = [
        ("device_ordinal", ctypes.c_int32),
        ("threads", ctypes.c_int32),
        ("cpu_simd", ctypes.c_int32),
        ("cuda_fast", ctypes.c_int32),
        ("cuda_split", ctypes.c_int32),
        ("cuda_prefetch", ctypes.c_int32),
        ("cuda_ring_read", ctypes.c_int32),
        ("cuda_pipeline", ctypes.c_int32),
        ("cuda_pipeline_balance", ctypes.c_int32),
        ("cuda_pipeline_producers", ctypes.c_int32),
        ("cuda_prefill", ctypes.c_int32),
        ("cuda_pdl", ctypes.c_int32),
        ("cuda_stream", ctypes.c_int32),
        ("pipeline_trace_file", ctypes.c_char_p),
    ]


class rssm_context_info(ctypes.Structure):
    _fields_ = [
        ("device", _c_enum),
        ("device_ordinal", ctypes.c_int32),
        ("threads", ctypes.c_int32),
        ("multiprocessors", ctypes.c_int32),
    ]


class rssm_state_bytes(ctypes.Structure):
    _fields_ = [
        ("checkpoint", ctypes.c_size_t),
        ("ring_u", ctypes.c_size_t),
        ("ring_k", ctypes.c_size_t),
        ("ring_g", ctypes.c_size_t),
        ("ring_base", ctypes.c_size_t),
        ("cursor", ctypes.c_size_t),
        ("total", ctypes.c_size_t),
    ]


class rssm_state(ctypes.Structure):
    _fields_ = [
        ("num_slots", ctypes.c_int32),
        ("checkpoint", ctypes.c_void_p),
        ("ring_u", ctypes.c_void_p),
        ("ring_k", ctypes.c_void_p),
        ("ring_g", ctypes.c_void_p),
        ("ring_base", ctypes.c_void_p),  # int32_t *
        ("cursor", ctypes.c_void_p),  # int32_t *
        ("bytes", rssm_state_bytes),  # checked against the layer by every call
    ]


class rssm_step_io(ctypes.Structure):
    _fields_ = [
        ("batch", ctypes.c_int32),
        ("tokens", ctypes.c_int32),
        ("q", ctypes.c_void_p),
        ("k", ctypes.c_void_p),
        ("v", ctypes.c_void_p),
        ("a", ctypes.c_void_p),
        ("b", ctypes.c_void_p),
        ("A_log", ctypes.c_void_p),  # const float *
        ("dt_bias", ctypes.c_void_p),  # const float *
        ("g", ctypes.c_void_p),  # const float *
        ("beta", ctypes.c_void_p),  # const float *
        ("q_stride", ctypes.c_int64),
        ("k_stride", ctypes.c_int64),
        ("v_stride", ctypes.c_int64),
        ("a_stride", ctypes.c_int64),
        ("b_stride", ctypes.c_int64),
        ("o", ctypes.c_void_p),
        ("slot", ctypes.c_void_p),  # const int32_t *
        ("write_slot", ctypes.c_void_p),  # const int32_t *
        ("fold", ctypes.c_void_p),  # const uint8_t *
        ("cu_seqlens", ctypes.c_void_p),  # const int32_t * (ragged prefill)
        ("fold_every", ctypes.c_int32),  # replay decode: a small-batch step of drained rows
        ("g_stride", ctypes.c_int64),
        ("beta_stride", ctypes.c_int64),
    ]


class rssm_prefix_cache_stats(ctypes.Structure):
    _fields_ = [
        ("nodes", ctypes.c_int32),
        ("snapshots", ctypes.c_int32),
        ("locked", ctypes.c_int32),
        ("locks", ctypes.c_int32),
        ("bytes", ctypes.c_size_t),
        ("hits", ctypes.c_int64),
        ("misses", ctypes.c_int64),
        ("inserts", ctypes.c_int64),
        ("evictions", ctypes.c_int64),
    ]


RSSM_EXPORT_RING = 0
RSSM_EXPORT_MATERIALIZED = 1
RSSM_EXPORT_FORMAT_VERSION = 4
RSSM_PLAN_DECODE, RSSM_PLAN_VERIFY = 0, 1
RSSM_SNAPSHOT_CHECKPOINT, RSSM_SNAPSHOT_MATERIALIZE = 0, 1


# ---- errors -------------------------------------------------------------------------------


class LibraryNotFoundError(OSError):
    """libreplayssm.so could not be found or loaded."""


class LibraryVersionError(ImportError):
    """The library found is another version than this package."""


class ReplaySSMError(RuntimeError):
    """A replayssm call returned a status other than RSSM_OK.

    Attributes: status (int), status_name ("RSSM_ERROR_BAD_SLOT", ...), message (the library's
    rssm_last_error() sentence), function (the C function called)."""

    def __init__(self, status: int, message: str, function: str = ""):
        self.status = int(status)
        self.status_name = status_name(self.status)
        self.message = message
        self.function = function
        where = f"{function}: " if function else ""
        super().__init__(f"{where}{self.status_name}: {message}")


class UnsupportedError(ReplaySSMError):
    """RSSM_ERROR_UNSUPPORTED: a valid request this device cannot do."""


# ---- loading ------------------------------------------------------------------------------

_LIB_NAMES = {"linux": "libreplayssm.so", "darwin": "libreplayssm.dylib", "win32": "replayssm.dll"}
LIB_NAME = _LIB_NAMES.get(sys.platform, "libreplayssm.so")
PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))
_CHECKOUT_ROOT = os.path.dirname(os.path.dirname(PACKAGE_DIR))  # python/replayssm -> repo root
_CMAKELISTS = os.path.join(_CHECKOUT_ROOT, "CMakeLists.txt")
_VERSION_RE = re.compile(r"project\(replayssm VERSION ([0-9]+\.[0-9]+\.[0-9]+)")


def checkout_root():
    """The repository root when this package is used from a source checkout, else None."""
    if os.path.basename(os.path.dirname(PACKAGE_DIR)) != "python" or not os.path.isfile(_CMAKELISTS):
        return None
    with open(_CMAKELISTS) as f:
        return _CHECKOUT_ROOT if _VERSION_RE.search(f.read()) else None


def package_version() -> str:
    """This package's version: written into _version.py by the build, or, in a source
    checkout, read from CMakeLists.txt's project() (the one place it is written)."""
    try:
        from ._version import __version__
        return __version__
    except ImportError:
        pass
    root = checkout_root()
    if root:
        with open(_CMAKELISTS) as f:
            return _VERSION_RE.search(f.read()).group(1)
    return "unknown"


def candidate_paths() -> list:
    """Where the library is looked for, in order (the env var is handled by find_library)."""
    paths = [os.path.join(PACKAGE_DIR, LIB_NAME)]
    root = checkout_root()
    if root:
        builds = glob.glob(os.path.join(root, "build*", LIB_NAME))
        builds.sort(key=lambda p: os.path.getmtime(p), reverse=True)  # newest build first
        paths += builds
    return paths


def find_library() -> str:
    env = os.environ.get("REPLAYSSM_LIBRARY")
    if env:
        if not os.path.isfile(env):
            raise LibraryNotFoundError(f"REPLAYSSM_LIBRARY={env!r} does not name a file")
        return env
    for p in candidate_paths():
        if os.path.isfile(p):
            return p
    root = checkout_root()
    if root:
        raise LibraryNotFoundError(
            f"{LIB_NAME} not found: build it in the checkout at {root} (make, or cmake -S . -B build && "
            f"cmake --build build), install the package (pip install {root}), or set REPLAYSSM_LIBRARY "
            f"to a library of version {package_version()}")
    raise LibraryNotFoundError(
        f"{LIB_NAME} is missing from the installed package (it should be in {PACKAGE_DIR}): reinstall "
        f"replayssm with pip, or set REPLAYSSM_LIBRARY to a library of version {package_version()}")


_P = ctypes.c_void_p
_I32 = ctypes.c_int32
_ST = ctypes.c_int  # rssm_status
_LAYER_P = ctypes.POINTER(rssm_layer)
_STATE_P = ctypes.POINTER(rssm_state)
_IO_P = ctypes.POINTER(rssm_step_io)

# name: (restype, argtypes)
_PROTOTYPES = {
    "rssm_version_number": (ctypes.c_uint, []),
    "rssm_version_string": (ctypes.c_char_p, []),
    "rssm_status_name": (ctypes.c_char_p, [_ST]),
    "rssm_last_error": (ctypes.c_char_p, []),
    "rssm_context_params_default": (rssm_context_params, []),
    "rssm_context_create": (_ST, [_c_enum, ctypes.POINTER(rssm_context_params), ctypes.POINTER(_P)]),
    "rssm_context_get_info": (_ST, [_P, ctypes.POINTER(rssm_context_info)]),
    "rssm_context_free": (None, [_P]),
    "rssm_context_device": (_c_enum, [_P]),
    "rssm_cuda_available": (ctypes.c_int, []),
    "rssm_context_check_device_errors": (_ST, [_P]),
    "rssm_layer_default": (rssm_layer, [_c_enum, _I32, _I32, _I32, _I32, _I32]),
    "rssm_layer_validate": (_ST, [_LAYER_P]),
    "rssm_dtype_size": (ctypes.c_size_t, [_c_enum]),
    "rssm_state_size": (_ST, [_LAYER_P, _I32, ctypes.POINTER(rssm_state_bytes)]),
    "rssm_decode_packed": (_ST, [_P, _LAYER_P, _STATE_P, _IO_P, _P]),
    "rssm_decode_replay": (_ST, [_P, _LAYER_P, _STATE_P, _IO_P, _P]),
    "rssm_verify": (_ST, [_P, _LAYER_P, _STATE_P, _IO_P, _P]),
    "rssm_prefill": (_ST, [_P, _LAYER_P, _STATE_P, _IO_P, _P]),
    "rssm_advance": (_ST, [_P, _LAYER_P, _STATE_P, _I32, _P, _P, _P]),
    "rssm_commit": (_ST, [_P, _LAYER_P, _STATE_P, _I32, _I32, _P, _P, _P, _P]),
    "rssm_materialize": (_ST, [_P, _LAYER_P, _STATE_P, _STATE_P, _I32, _P, _P, _P]),
    "rssm_reset_cursors": (_ST, [_P, _STATE_P, _I32, _P, _P]),
}

# The runtime (include/replayssm_runtime.h): state pool, step planner, prefix cache.
_SZ = ctypes.c_size_t
_PP = ctypes.POINTER(_P)
_I32P = ctypes.POINTER(_I32)
_RUNTIME_PROTOTYPES = {
    "rssm_pool_bytes": (_ST, [_LAYER_P, _I32, _I32, ctypes.POINTER(_SZ)]),
    "rssm_pool_create": (_ST, [_P, _LAYER_P, _I32, _I32, _PP]),
    "rssm_pool_free": (None, [_P]),
    "rssm_pool_memory": (_SZ, [_P]),
    "rssm_pool_slot_bytes": (_SZ, [_P]),
    "rssm_pool_num_slots": (_I32, [_P]),
    "rssm_pool_num_free": (_I32, [_P]),
    "rssm_pool_num_layers": (_I32, [_P]),
    "rssm_pool_context": (_P, [_P]),
    "rssm_pool_is_held": (ctypes.c_int, [_P, _I32]),
    "rssm_pool_layer": (_ST, [_P, _I32, _LAYER_P]),
    "rssm_pool_state": (_ST, [_P, _I32, _STATE_P]),
    "rssm_pool_acquire": (_ST, [_P, _I32P]),
    "rssm_pool_acquire_copy": (_ST, [_P, _P, _I32, _I32P]),
    "rssm_pool_release": (_ST, [_P, _I32]),
    "rssm_pool_copy": (_ST, [_P, _I32, _P, _I32]),
    "rssm_pool_copy_checkpoint": (_ST, [_P, _I32, _P, _I32]),
    "rssm_pool_cursor": (_ST, [_P, _I32, _I32P]),
    "rssm_pool_export_size": (_ST, [_P, ctypes.c_uint32, ctypes.POINTER(_SZ)]),
    "rssm_pool_export": (_ST, [_P, _I32, ctypes.c_uint32, _P, _SZ, ctypes.POINTER(_SZ)]),
    "rssm_pool_import": (_ST, [_P, _P, _SZ, _I32P]),
    "rssm_pool_validate": (_ST, [_P]),
    "rssm_layer_shard": (_ST, [_LAYER_P, _I32, _I32, _LAYER_P, _I32P, _I32P]),
    "rssm_plan_create": (_ST, [_P, _I32, _I32, _PP]),
    "rssm_plan_free": (None, [_P]),
    "rssm_plan_memory": (_SZ, [_P]),
    "rssm_plan_batch": (_I32, [_P]),
    "rssm_plan_set": (_ST, [_P, _I32, _P, _P]),
    "rssm_plan_set_accepted": (_ST, [_P, _I32, _P]),
    "rssm_plan_begin": (_ST, [_P, _c_enum, _I32, _P]),
    "rssm_plan_io": (_ST, [_P, _IO_P]),
    "rssm_plan_end": (_ST, [_P, _P]),
    "rssm_plan_fold_rows": (_ST, [_P, _c_enum, _P]),
    "rssm_plan_set_small_batch": (_ST, [_P, _I32]),
    "rssm_plan_small_batch": (_I32, [_P]),
    "rssm_plan_slot_buffer": (_P, [_P]),
    "rssm_plan_fold_buffer": (_P, [_P]),
    "rssm_plan_seq_len_buffer": (_P, [_P]),
    "rssm_plan_accepted_buffer": (_P, [_P]),
    "rssm_prefix_cache_create": (_ST, [_P, _SZ, _I32, _PP]),
    "rssm_prefix_cache_free": (None, [_P]),
    "rssm_prefix_cache_insert": (_ST, [_P, _P, _I32, _P, _I32, ctypes.c_uint32]),
    "rssm_prefix_cache_insert_async": (_ST, [_P, _P, _I32, _P, _I32, ctypes.c_uint32, _P]),
    "rssm_prefix_cache_match": (_ST, [_P, _P, _I32, _P, _I32, _I32P, ctypes.POINTER(ctypes.c_uint64)]),
    "rssm_prefix_cache_unlock": (_ST, [_P, ctypes.c_uint64]),
    "rssm_prefix_cache_evict": (_ST, [_P, _I32, _I32P]),
    "rssm_prefix_cache_get_stats": (_ST, [_P, ctypes.POINTER(rssm_prefix_cache_stats)]),
    "rssm_prefix_cache_validate": (_ST, [_P]),
}

_lib = None
_lib_path = None
_lock = threading.Lock()


def lib() -> ctypes.CDLL:
    """The loaded library (loaded on first use)."""
    global _lib, _lib_path
    if _lib is not None:
        return _lib
    with _lock:
        if _lib is None:
            path = find_library()
            try:
                handle = ctypes.CDLL(path)
            except OSError as e:
                raise LibraryNotFoundError(f"could not load {path}: {e}") from e
            handle.rssm_version_string.restype = ctypes.c_char_p
            found, wanted = handle.rssm_version_string().decode(), package_version()
            if found != wanted:
                raise LibraryVersionError(
                    f"{path} is libreplayssm {found}, this package is replayssm {wanted}: rebuild or "
                    f"reinstall one of them (pip install . from the checkout builds both), or point "
                    f"REPLAYSSM_LIBRARY at a library of version {wanted}")
            for name, (res, args) in list(_PROTOTYPES.items()) + list(_RUNTIME_PROTOTYPES.items()):
                fn = getattr(handle, name)
                fn.restype = res
                fn.argtypes = args
            _lib_path = path
            _lib = handle
    return _lib


def check_at_import() -> None:
    """Loads the library when it can be found, so that a version mismatch is reported at import;
    a library that is not found is reported at first use instead."""
    try:
        lib()
    except LibraryNotFoundError:
        pass


def library_path() -> str:
    lib()
    return _lib_path


def has_symbol(name: str) -> bool:
    return hasattr(lib(), name)


def status_name(status: int) -> str:
    if 0 <= status < len(STATUS_NAMES):
        return STATUS_NAMES[status]
    try:
        return lib().rssm_status_name(status).decode()
    except LibraryNotFoundError:
        return f"RSSM_STATUS_{status}"


def last_error() -> str:
    return lib().rssm_last_error().decode(errors="replace")


def check(status: int, function: str = "") -> None:
    """Raises ReplaySSMError (UnsupportedError for RSSM_ERROR_UNSUPPORTED) unless status is RSSM_OK.
    Must run on the thread that made the call (rssm_last_error is per thread)."""
    if status == RSSM_OK:
        return
    cls = UnsupportedError if status == RSSM_ERROR_UNSUPPORTED else ReplaySSMError
    raise cls(status, last_error(), function)


class Owned:
    """A C object (context, pool, planner, prefix cache) and the objects it was made from.

    It is freed when nothing refers to it any more: neither its Python object (which drops it
    on close()) nor a view of its memory (numpy arrays and States keep it), and never before a
    C object made from it. So closing a pool while a numpy view of its state exists cannot free
    memory the view still reads: the pool refuses further calls, and its memory goes with the
    last view."""

    __slots__ = ("ptr", "__weakref__")

    def __init__(self, ptr, free_name: str, *parents: "Owned"):
        self.ptr = ptr
        # the finaliser holds the parents: they outlive this object
        weakref.finalize(self, _free_owned, free_name, ptr, parents)

    @property
    def _as_parameter_(self):
        """ctypes passes the pointer; the call's argument list holds this object, so a close()
        on another thread cannot free the C object while the call runs."""
        return self.ptr


def _free_owned(free_name, ptr, parents):
    getattr(lib(), free_name)(ptr)
    del parents


def c_int32_arg(name: str, value) -> int:
    """`value` as a C int32_t argument, or a ValueError naming `name` (ctypes would wrap it)."""
    v = int(value)
    if not -(2**31) <= v < 2**31:
        raise ValueError(f"{name} = {v} does not fit a 32-bit signed integer")
    return v


def c_size_arg(name: str, value) -> int:
    """`value` as a C size_t argument (>= 0), or a ValueError naming `name`."""
    v = int(value)
    if not 0 <= v < 2**64:
        raise ValueError(f"{name} = {v} is not a size (0 <= {name} < 2**64)")
    return v


def c_uint64_arg(name: str, value) -> int:
    """`value` as a C uint64_t argument, or a ValueError naming `name`."""
    v = int(value)
    if not 0 <= v < 2**64:
        raise ValueError(f"{name} = {v} does not fit a 64-bit unsigned integer")
    return v


def call(name: str, *args) -> None:
    """Calls a status-returning library function and raises on failure."""
    check(getattr(lib(), name)(*args), name)
