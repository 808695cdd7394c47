"""Loading, versions, struct layouts, contexts, layers and state sizing."""
import ctypes
import os
import subprocess
import sys

import numpy as np
import pytest

import replayssm as rs
from replayssm import _lib


def test_version():
    v = rs.version()
    major, minor, patch = (int(x) for x in v.split("."))
    assert rs.version_number() == major * 10000 + minor * 100 + patch
    assert os.path.isfile(rs.library_path())
    assert rs.__version__ == v  # the package and the library it loaded are one version


@pytest.mark.skipif(ctypes.sizeof(ctypes.c_void_p) != 8, reason="offsets checked for LP64")
def test_struct_layouts_match_the_header():
    # sizeof/offsetof as compiled from include/replayssm.h on LP64
    assert ctypes.sizeof(_lib.rssm_layer) == 60 and _lib.rssm_layer.state_layout.offset == 56
    assert ctypes.sizeof(_lib.rssm_state) == 112 and _lib.rssm_state.bytes.offset == 56
    assert _lib.rssm_state.checkpoint.offset == 8 and _lib.rssm_state.cursor.offset == 48
    assert ctypes.sizeof(_lib.rssm_step_io) == 184 and _lib.rssm_step_io.fold_every.offset == 160
    assert _lib.rssm_step_io.g_stride.offset == 168 and _lib.rssm_step_io.beta_stride.offset == 176
    assert _lib.rssm_step_io.q.offset == 8 and _lib.rssm_step_io.A_log.offset == 48
    assert _lib.rssm_step_io.q_stride.offset == 80 and _lib.rssm_step_io.o.offset == 120
    assert _lib.rssm_step_io.fold.offset == 144 and _lib.rssm_step_io.cu_seqlens.offset == 152
    assert ctypes.sizeof(_lib.rssm_state_bytes) == 56


def test_layer_default_comes_back_through_the_struct():
    layer = rs.Layer.default("kda", 2, 4, 32, 16, 8)
    assert (layer.gate, layer.H, layer.HV, layer.K, layer.V, layer.ring_len) == ("kda", 2, 4, 32, 16, 8)
    assert (layer.state_dtype, layer.ring_dtype, layer.io_dtype) == ("f32", "f32", "f32")
    assert layer.scale == 0 and layer.qk_l2norm and layer.lower_bound is None
    assert rs.Layer.from_spec(layer.spec()) == layer
    lb = layer.replace(lower_bound=-5.0, io_dtype="bf16")
    assert rs.Layer.from_spec(lb.spec()) == lb and lb.lower_bound == -5.0


def test_status_names_match_the_library():
    for i, name in enumerate(_lib.STATUS_NAMES):
        assert _lib.lib().rssm_status_name(i).decode() == name
    assert rs.status_name(999) == "RSSM_ERROR_UNKNOWN"


@pytest.mark.parametrize("gate", ["gdn", "kda"])
@pytest.mark.parametrize("dtypes", [("f32", "f32"), ("bf16", "bf16"), ("f32", "bf16"), ("f64", "f64")])
def test_state_allocation_matches_rssm_state_size(gate, dtypes):
    layer = rs.Layer(gate=gate, H=2, HV=4, K=16, V=8, ring_len=6, state_dtype=dtypes[0], ring_dtype=dtypes[1])
    st = rs.State.allocate(layer, 3, "cpu")
    sizes = layer.state_bytes(3)
    for name, t in st.tensors().items():
        assert t.nbytes == sizes[name], name
        assert t.ctypes.data % 64 == 0
    assert sum(t.nbytes for t in st.tensors().values()) == sizes["total"]
    assert st.ring_base.shape == (3, 4) and st.ring_base.dtype == np.int32  # both gates


def test_shared_cursor_between_layers():
    l1 = rs.Layer(gate="gdn", H=1, HV=2, K=16, V=16, ring_len=4)
    l2 = rs.Layer(gate="kda", H=1, HV=2, K=16, V=16, ring_len=4)
    s1 = rs.State.allocate(l1, 2, "cpu")
    s2 = rs.State.allocate(l2, 2, "cpu", cursor=s1.cursor)
    assert s2.cursor is s1.cursor


def test_contexts():
    for d in ("cpu", "reference"):
        with rs.Context(d) as c:
            assert c.device == d and not c.is_cuda
            c.check_device_errors()
    with pytest.raises(ValueError, match="unknown device"):
        rs.Context("tpu")


@pytest.mark.skipif(rs.cuda_available(), reason="this build has CUDA")
def test_cuda_context_without_cuda_is_unsupported():
    with pytest.raises(rs.UnsupportedError) as e:
        rs.Context("cuda")
    assert e.value.status_name == "RSSM_ERROR_UNSUPPORTED" and "CUDA" in e.value.message


def test_library_not_found(monkeypatch, tmp_path):
    monkeypatch.setenv("REPLAYSSM_LIBRARY", str(tmp_path / "nope.so"))
    with pytest.raises(rs.LibraryNotFoundError, match="REPLAYSSM_LIBRARY"):
        _lib.find_library()
    code = "import replayssm; replayssm.version()"
    env = dict(os.environ, REPLAYSSM_LIBRARY=str(tmp_path / "nope.so"),
               PYTHONPATH=os.path.dirname(os.path.dirname(os.path.abspath(rs.__file__))))
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert r.returncode != 0 and "LibraryNotFoundError" in r.stderr


def test_bf16_conversion():
    x = np.array([1.0, -2.5, 3.14159265, 1e-40, np.inf, -0.0], np.float32)
    u = rs.bf16.to_bf16(x)
    assert u.dtype == np.uint16 and u[0] == 0x3F80 and u[1] == 0xC020
    assert rs.bf16.from_bf16(u)[2] == np.float32(3.140625)
    assert np.isnan(rs.bf16.from_bf16(rs.bf16.to_bf16(np.array([np.nan], np.float32))))[0]
    assert (rs.bf16.to_bf16(np.array([1.0 + 2 ** -8], np.float32)) == 0x3F80).all()  # tie -> even


def test_library_version_must_match(monkeypatch):
    """A library of another version than the package is refused with a message saying both."""
    monkeypatch.setattr(_lib, "_lib", None)
    monkeypatch.setattr(_lib, "package_version", lambda: "9.9.9")
    with pytest.raises(rs.LibraryVersionError, match=r"is libreplayssm .*this package is replayssm 9\.9\.9"):
        _lib.lib()


def test_integers_do_not_wrap():
    with pytest.raises(ValueError, match="H = 4294967297 does not fit"):
        rs.Layer(gate="gdn", H=2**32 + 1)
    with pytest.raises(ValueError, match="threads"):
        rs.Context("cpu", threads=2**40)
