"""Helpers shared by the tests: dtype conversion, tolerances, a driver of per-token inputs, the
bench/ scripts as modules."""
import importlib.util
import pathlib

import numpy as np

import replayssm as rs
from replayssm import reference as R


def rel_err(x, y):
    x = np.asarray(x, np.float64)
    y = np.asarray(y, np.float64)
    assert not np.isnan(x).any(), "NaN in the result"
    return float(np.abs(x - y).max() / max(np.abs(y).max(), 1e-30))


def to_io(x, dtype):
    """A float64 array in a library dtype: f32/f64 numpy arrays, bf16 as uint16 bits."""
    if dtype == "bf16":
        return rs.bf16.to_bf16(x)
    return np.ascontiguousarray(x, dtype=np.float32 if dtype == "f32" else np.float64)


def from_io(x, dtype):
    if dtype == "bf16":
        return rs.bf16.from_bf16(x).astype(np.float64)
    return np.asarray(x, np.float64)


def tol(*dtypes):
    """Relative tolerance against the float64 recurrence for the dtypes in use."""
    if "bf16" in dtypes:
        return 3e-2
    if "f32" in dtypes:
        return 2e-5
    return 1e-10


def aligned(x):
    """A contiguous 64-byte-aligned copy (the library needs 16-byte aligned tensor pointers)."""
    out = rs._tensors.aligned_zeros(x.shape, x.dtype)
    out[...] = x
    return out


class Problem:
    """Random raw inputs of B rows x T tokens, rounded to the io dtype, and the float64 recurrence
    of them. rows: the slot of each row (-1 = padding)."""

    def __init__(self, layer, rows, T, seed=0, initial_state=None, gate_scale=1.0):
        self.layer, self.rows, self.T = layer, list(rows), T
        B = len(self.rows)
        rng = np.random.default_rng(seed)
        d = R.random_inputs(rng, layer.gate, B, T, layer.H, layer.HV, layer.K, layer.V, np.float64, gate_scale)
        io = layer.io_dtype
        self.io = {n: to_io(d[n], io) for n in ("q", "k", "v", "a", "b")}
        self.io["A_log"], self.io["dt_bias"] = d["A_log"], d["dt_bias"]
        self.exact = {n: from_io(self.io[n], io) for n in ("q", "k", "v", "a", "b")}
        self.exact["A_log"], self.exact["dt_bias"] = d["A_log"].astype(np.float64), d["dt_bias"].astype(np.float64)
        S0 = initial_state
        if S0 is None:
            S0 = rng.standard_normal((B, layer.HV, layer.V, layer.K)) * 0.1
        self.S0 = from_io(to_io(S0, layer.state_dtype), layer.state_dtype)
        self.o, self.S = R.run_layer(layer.gate, initial_state=self.S0, scale=layer.effective_scale,
                                     qk_l2norm=layer.qk_l2norm, lower_bound=layer.lower_bound, **self.exact)

    def slot(self):
        return np.array(self.rows, np.int32)

    def load(self, state):
        """Writes the initial states into the rows' slots and empties their rings."""
        for b, s in enumerate(self.rows):
            if s >= 0:
                state.checkpoint[s] = to_io(self.S0[b], self.layer.state_dtype)
                if state.cursor is not None:
                    state.cursor[s] = 0
                if state.ring_base is not None:
                    state.ring_base[s] = 0

    def tokens(self, t0, t1):
        """kwargs of tokens [t0, t1) for an op (4-D views of the inputs)."""
        kw = {n: aligned(self.io[n][:, t0:t1]) for n in ("q", "k", "v", "a", "b")}
        kw["A_log"], kw["dt_bias"] = self.io["A_log"], self.io["dt_bias"]
        return kw

    def token(self, t):
        """kwargs of token t as 3-D [B, ...] views (decode form)."""
        kw = {n: aligned(self.io[n][:, t]) for n in ("q", "k", "v", "a", "b")}
        kw["A_log"], kw["dt_bias"] = self.io["A_log"], self.io["dt_bias"]
        return kw

    def live(self):
        return [b for b, s in enumerate(self.rows) if s >= 0]


def checkpoint_of(state, rows, dtype):
    return np.stack([from_io(state.checkpoint[s], dtype) for s in rows if s >= 0])


def bench_tool(name):
    """bench/NAME.py, loaded as a module (bench/ is not a package)."""
    path = pathlib.Path(__file__).resolve().parents[2] / "bench" / (name + ".py")
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod
