"""Shared fixtures: the host devices every op test runs on, and helpers.

Every op test runs on the "reference" device (the float64 oracle, always available) and on the
optimised "cpu" device; the cpu runs are skipped, with the library's message as the reason,
while that back end answers RSSM_ERROR_UNSUPPORTED (for everything, or for one layer shape).
"""
import functools
import os
import sys

import numpy as np
import pytest

try:  # the installed package; from a checkout without it, the package beside these tests
    import replayssm  # noqa: F401
except ImportError:
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import replayssm as rs  # noqa: E402
from replayssm import reference as R  # noqa: E402

HOST_DEVICES = ["reference", "cpu"]


@functools.lru_cache(maxsize=None)
def cpu_probe():
    """None when the CPU back end runs a tiny packed decode, else the reason it does not."""
    ctx = rs.Context("cpu")
    layer = rs.Layer(gate="gdn", H=1, HV=1, K=16, V=16, ring_len=2)
    st = rs.State.allocate(layer, 1, ctx)
    d = R.random_inputs(np.random.default_rng(0), "gdn", 1, 1, 1, 1, 16, 16)
    try:
        rs.decode_packed(ctx, layer, st, d["q"], d["k"], d["v"], a=d["a"], b=d["b"], A_log=d["A_log"],
                         dt_bias=d["dt_bias"], slot=[0])
    except rs.UnsupportedError as e:
        return f"the cpu back end answers {e.status_name}: {e.message}"
    return None


@pytest.fixture(params=HOST_DEVICES)
def ctx(request):
    """A Context on each host device (cpu skipped while unsupported)."""
    if request.param == "cpu":
        reason = cpu_probe()
        if reason:
            pytest.skip(reason)
    c = rs.Context(request.param)
    yield c
    c.close()


@pytest.fixture
def ref_ctx():
    c = rs.Context("reference")
    yield c
    c.close()


@pytest.hookimpl(wrapper=True)
def pytest_pyfunc_call(pyfuncitem):
    """A cpu-device test whose op is unsupported for its layer shape/dtype is skipped, not failed."""
    try:
        return (yield)
    except rs.UnsupportedError as e:
        c = pyfuncitem.funcargs.get("ctx")
        if isinstance(c, rs.Context) and c.device == "cpu":
            pytest.skip(f"cpu back end: {e.status_name}: {e.message}")
        raise

from _util import from_io, rel_err, to_io, tol  # noqa: E402,F401
