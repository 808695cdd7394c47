"""The golden vectors (../shared/vectors/fla-reference.txt: FLA's reference recurrences) through
every decode path: packed, replay at several L, verify windows with an acceptance pattern,
prefill then decode. o of every token and the materialised final state must match."""
import numpy as np
import pytest

import replayssm as rs
from _util import aligned, from_io, rel_err, to_io
from replayssm import vectors

import os

PATH = vectors.default_path(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
CASES = vectors.load(PATH) if PATH else []
pytestmark = pytest.mark.skipif(not PATH, reason="golden vectors not found (../shared/vectors/fla-reference.txt "
                                                 "beside the checkout, or $REPLAYSSM_VECTORS)")
NAMES = [c["name"] for c in CASES] or ["none"]
PATHS = ["packed", "replay_L1", "replay_L4", "replay_L16", "verify", "prefill_decode"]


def run_case(ctx, c, path, dtype):
    L = {"replay_L1": 1, "replay_L4": 4, "replay_L16": 16, "verify": 8}.get(path, 5)
    layer = rs.Layer(gate=c["gate"], H=c["H"], HV=c["HV"], K=c["K"], V=c["V"], ring_len=L, state_dtype=dtype,
                     io_dtype=dtype, scale=c["scale"], qk_l2norm=c["l2norm"], lower_bound=c["lower_bound"])
    B, T = c["B"], c["T"]
    rows = list(range(B))[::-1]  # row b lives in slot B-1-b, slot B unused
    st = rs.State.allocate(layer, B + 1, ctx)
    for b, s in enumerate(rows):
        st.checkpoint[s] = to_io(c["initial_state"][b], dtype)
    slot = np.array(rows, np.int32)
    io = {n: to_io(c[n], dtype) for n in ("q", "k", "v", "a", "b")}
    gates = dict(A_log=c["A_log"].astype(np.float32), dt_bias=c["dt_bias"].astype(np.float32))

    def window(t0, t1):
        return {n: aligned(x[:, t0:t1]) for n, x in io.items()}

    outs = []
    if path == "packed" or path.startswith("replay"):
        for t in range(T):
            kw = {n: aligned(x[:, t]) for n, x in io.items()}
            if path == "packed":
                outs.append(rs.decode_packed(ctx, layer, st, slot=slot, **kw, **gates)[:, None])
            else:
                outs.append(rs.decode_replay(ctx, layer, st, slot=slot, **kw, **gates)[:, None])
                rs.advance(ctx, layer, st, slot)
    elif path == "verify":
        # windows of 3 tokens, the same acceptance for every row: 3, 1, 2, 0, ... -> tokens advance
        t, pattern, i = 0, [3, 1, 2, 0, 3, 2], 0
        produced = np.zeros((B, T, c["HV"], c["V"]))
        while t < T:
            n = min(3, T - t)
            o = from_io(rs.verify(ctx, layer, st, slot=slot, **window(t, t + n), **gates), dtype)
            acc = min(pattern[i % len(pattern)], n)
            i += 1
            produced[:, t:t + n] = o  # rejected tokens are re-verified (and overwritten) next window
            rs.commit(ctx, layer, st, n, slot, None, np.full(B, acc, np.int32))
            t += acc
        outs = [produced]
    else:  # prefill the first half, decode the rest
        h = T // 2
        outs.append(rs.prefill(ctx, layer, st, slot=slot, **window(0, h), **gates))
        rs.reset_cursors(ctx, st, slot)
        for t in range(h, T):
            kw = {n: aligned(x[:, t]) for n, x in io.items()}
            outs.append(rs.decode_replay(ctx, layer, st, slot=slot, **kw, **gates)[:, None])
            rs.advance(ctx, layer, st, slot)
    o = np.concatenate([from_io(x, dtype) for x in outs], 1)
    if path != "packed":
        rs.materialize(ctx, layer, st, st, slot, slot)
    S = np.stack([from_io(st.checkpoint[s], dtype) for s in rows])
    assert not st.checkpoint[B].any(), "the unused slot was written"
    return o, S


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("name", NAMES)
def test_golden_f32(ctx, name, path):
    c = next(x for x in CASES if x["name"] == name)
    o, S = run_case(ctx, c, path, "f32")
    assert rel_err(o, c["o"]) < 1e-5, "o"
    assert rel_err(S, c["final_state"]) < 1e-5, "final_state"


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("name", NAMES)
def test_golden_f64_reference(ref_ctx, name, path):
    c = next(x for x in CASES if x["name"] == name)
    o, S = run_case(ref_ctx, c, path, "f64")
    # A_log, dt_bias and scale are float32 in the C API: that rounding (~1e-8) is all that remains
    assert rel_err(o, c["o"]) < 1e-6, "o"
    assert rel_err(S, c["final_state"]) < 1e-6, "final_state"
    f32 = lambda x: np.float32(x).astype(np.float64)  # noqa: E731
    ro, rS = rs.reference.run_layer(c["gate"], c["q"], c["k"], c["v"], c["a"], c["b"], f32(c["A_log"]),
                                    f32(c["dt_bias"]), c["initial_state"], float(np.float32(c["scale"])),
                                    c["l2norm"], None if c["lower_bound"] is None else float(np.float32(c["lower_bound"])))
    assert rel_err(o, ro) < 1e-11, "o vs the numpy float64 recurrence"
    assert rel_err(S, rS) < 1e-11, "final_state vs the numpy float64 recurrence"


@pytest.mark.parametrize("name", NAMES)
def test_golden_bf16_io(ctx, name):
    c = next(x for x in CASES if x["name"] == name)
    o, S = run_case(ctx, c, "replay_L4", "bf16")
    assert rel_err(o, c["o"]) < 5e-2
    assert rel_err(S, c["final_state"]) < 5e-2


@pytest.mark.parametrize("name", NAMES)
def test_numpy_reference_reproduces_golden(name):
    c = next(x for x in CASES if x["name"] == name)
    o, S = rs.reference.run_layer(c["gate"], c["q"], c["k"], c["v"], c["a"], c["b"], c["A_log"], c["dt_bias"],
                                  c["initial_state"], c["scale"], c["l2norm"], c["lower_bound"])
    assert rel_err(o, c["o"]) < 1e-12
    assert rel_err(S, c["final_state"]) < 1e-12
