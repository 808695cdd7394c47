"""Kernel-level ops on numpy arrays against the numpy float64 recurrence, on every host device."""
import numpy as np
import pytest

import replayssm as rs
from replayssm import reference as R
from _util import Problem, aligned, checkpoint_of, from_io, rel_err, to_io, tol

SHAPE = dict(H=2, HV=4, K=16, V=8)  # grouped heads, V != K (catches a transposed state)
GATES = ["gdn", "kda"]


def make_layer(gate, L=4, **kw):
    d = dict(SHAPE)
    d.update(kw)
    return rs.Layer(gate=gate, ring_len=L, **d)


def decode_steps(ctx, layer, st, p, t0, t1, replay=True, fold=None):
    """Feeds tokens t0..t1-1 one at a time; returns o [B, t1-t0, HV, V] as float64."""
    slot = p.slot()
    outs = []
    for t in range(t0, t1):
        f = None if fold is None else fold(t)
        if replay:
            o = rs.decode_replay(ctx, layer, st, slot=slot, fold=f, **p.token(t))
            rs.advance(ctx, layer, st, slot, f)
        else:
            o = rs.decode_packed(ctx, layer, st, slot=slot, **p.token(t))
        outs.append(from_io(o, layer.io_dtype))
    return np.stack(outs, 1)


@pytest.mark.parametrize("gate", GATES)
@pytest.mark.parametrize("io", ["f32", "bf16"])
def test_packed_decode_matches_recurrence(ctx, gate, io):
    layer = make_layer(gate, io_dtype=io)
    st = rs.State.allocate(layer, 4, ctx, ring=False)
    p = Problem(layer, [3, 1], T=12, seed=1)
    p.load(st)
    o = decode_steps(ctx, layer, st, p, 0, 7, replay=False)
    o2 = from_io(rs.decode_packed(ctx, layer, st, slot=p.slot(), **p.tokens(7, 12)), io)  # T=5 in one call
    o = np.concatenate([o, o2], 1)
    assert o.shape == (2, 12, layer.HV, layer.V)
    assert rel_err(o, p.o) < tol(io)
    assert rel_err(checkpoint_of(st, p.rows, "f32"), p.S) < tol(io)


@pytest.mark.parametrize("gate", GATES)
@pytest.mark.parametrize("L", [1, 3, 8])
def test_replay_decode_many_steps(ctx, gate, L):
    layer = make_layer(gate, L=L)
    st = rs.State.allocate(layer, 5, ctx)
    p = Problem(layer, [4, -1, 0], T=40, seed=2)  # a padding row in the middle
    p.load(st)
    sentinel = st.copy()
    o = decode_steps(ctx, layer, st, p, 0, 40)
    live = p.live()
    assert rel_err(o[live], p.o[live]) < tol("f32")
    assert not o[1].any(), "a padding row's output must be zero"
    assert st.cursor[4] == 40 % L and st.cursor[0] == 40 % L
    for s in (1, 2, 3):  # slots no row uses stay bitwise unchanged
        for name, t in st.tensors().items():
            np.testing.assert_array_equal(t[s], sentinel.tensors()[name][s], err_msg=f"{name}[{s}]")
    rs.materialize(ctx, layer, st, st, p.slot(), p.slot())
    rs.reset_cursors(ctx, st, p.slot())
    assert rel_err(checkpoint_of(st, p.rows, "f32"), p.S[live]) < tol("f32")
    assert st.cursor[4] == 0


@pytest.mark.parametrize("gate", GATES)
def test_replay_L1_equals_packed_bitwise(ctx, gate):
    """design.md: at L = 1 every step folds and replay must equal packed decode bit for bit."""
    layer = make_layer(gate, L=1)
    a, b = rs.State.allocate(layer, 2, ctx), rs.State.allocate(layer, 2, ctx)
    p = Problem(layer, [1, 0], T=10, seed=3)
    p.load(a)
    p.load(b)
    o_rep = decode_steps(ctx, layer, a, p, 0, 10, replay=True)
    o_pk = decode_steps(ctx, layer, b, p, 0, 10, replay=False)
    np.testing.assert_array_equal(o_rep, o_pk)
    np.testing.assert_array_equal(a.checkpoint, b.checkpoint)


@pytest.mark.parametrize("gate", GATES)
def test_k_first_layout_gives_the_same_bits(ctx, gate):
    """state_layout="kv": the checkpoint is [slots, HV, K, V] and every op gives the V-first bits."""
    vk, kv = make_layer(gate, L=3), make_layer(gate, L=3, state_layout="kv")
    assert kv.state_layout == "kv" and kv.state_shapes(2)["checkpoint"][0] == (2, 4, 16, 8)
    assert rs.Layer.from_spec(kv.spec()) == kv and kv != vk and "state_layout='kv'" in repr(kv)
    a, b = rs.State.allocate(vk, 2, ctx), rs.State.allocate(kv, 2, ctx)
    p = Problem(vk, [1, 0], T=9, seed=5)
    p.load(a)
    for r, s in enumerate(p.rows):
        b.checkpoint[s] = np.swapaxes(to_io(p.S0[r], "f32"), -1, -2)
    np.testing.assert_array_equal(decode_steps(ctx, vk, a, p, 0, 7), decode_steps(ctx, kv, b, p, 0, 7))
    np.testing.assert_array_equal(decode_steps(ctx, vk, a, p, 7, 9, replay=False),
                                  decode_steps(ctx, kv, b, p, 7, 9, replay=False))
    np.testing.assert_array_equal(np.swapaxes(a.checkpoint, -1, -2), b.checkpoint)
    with pytest.raises(ValueError, match="state was made for"):  # a V-first state under a K-first layer
        rs.decode_packed(ctx, kv, a, slot=p.slot(), **p.token(0))
    with pytest.raises(ValueError, match="state_layout"):
        make_layer(gate, state_layout="vkk")


@pytest.mark.parametrize("gate", GATES)
@pytest.mark.parametrize("L,T", [(4, 4), (8, 3), (6, 2)])
def test_verify_commit_matches_sequential(ctx, gate, L, T):
    layer = make_layer(gate, L=L)
    st = rs.State.allocate(layer, 3, ctx)
    N = 48
    p = Problem(layer, [2, 0], T=N + 2 * T, seed=4)
    p.load(st)
    rng = np.random.default_rng(5)
    pos = np.zeros(2, int)  # next stream position of each row
    checked = 0
    while pos.min() < N:
        kw = {n: np.stack([p.io[n][b, pos[b]:pos[b] + T] for b in range(2)]) for n in ("q", "k", "v", "a", "b")}
        kw = {n: aligned(x) for n, x in kw.items()}
        o = rs.verify(ctx, layer, st, slot=p.slot(), A_log=p.io["A_log"], dt_bias=p.io["dt_bias"], **kw)
        for b in range(2):  # every window token sees exactly the stream before it
            assert rel_err(o[b], p.o[b, pos[b]:pos[b] + T]) < tol("f32"), (b, pos[b])
        acc = rng.integers(0, T + 1, 2).astype(np.int32)
        acc[pos >= N] = 0  # a finished row waits (its window is re-verified unchanged)
        rs.commit(ctx, layer, st, T, p.slot(), None, acc)
        pos += acc
        checked += 1
    # then plain decode continues from the committed position
    for b in range(2):
        t = pos[b]
        kw = {n: aligned(p.io[n][b:b + 1, t]) for n in ("q", "k", "v", "a", "b")}
        o = rs.decode_replay(ctx, layer, st, slot=[p.rows[b]], A_log=p.io["A_log"], dt_bias=p.io["dt_bias"], **kw)
        assert rel_err(o[0], p.o[b, t]) < tol("f32")
    assert checked > 5


@pytest.mark.parametrize("gate", GATES)
def test_forced_fold(ctx, gate):
    layer = make_layer(gate, L=8)
    st = rs.State.allocate(layer, 2, ctx)
    p = Problem(layer, [0, 1], T=20, seed=6)
    p.load(st)
    fold = lambda t: np.array([t % 5 == 4, t % 7 == 6], np.uint8)  # noqa: E731
    o = decode_steps(ctx, layer, st, p, 0, 20, fold=fold)
    assert rel_err(o, p.o) < tol("f32")
    # row 0 folded at t = 19 (the last step): its checkpoint is the current state, cursor 0
    assert st.cursor[0] == 0
    assert rel_err(from_io(st.checkpoint[0], "f32"), p.S[0]) < tol("f32")


@pytest.mark.parametrize("gate", GATES)
def test_materialize_into_another_state(ctx, gate):
    layer = make_layer(gate, L=8)
    src = rs.State.allocate(layer, 3, ctx)
    dst = rs.State.allocate(layer, 4, ctx)
    dst.cursor[:] = 5  # stale cursors: materialize leaves them, reset_cursors clears them
    p = Problem(layer, [1, 2], T=6, seed=7)
    p.load(src)
    decode_steps(ctx, layer, src, p, 0, 6)
    before = src.copy()
    rs.materialize(ctx, layer, src, dst, [1, 2, -1], [3, 0, 1])
    for name, t in src.tensors().items():
        np.testing.assert_array_equal(t, before.tensors()[name], err_msg=f"src.{name} changed")
    assert rel_err(dst.checkpoint[[3, 0]], p.S) < tol("f32")
    assert not dst.checkpoint[1].any() and not dst.checkpoint[2].any()
    assert list(dst.cursor) == [5, 5, 5, 5]
    rs.reset_cursors(ctx, dst, [3, 0])
    assert list(dst.cursor) == [0, 5, 5, 0]


@pytest.mark.parametrize("gate", GATES)
def test_prefill_then_decode(ctx, gate):
    layer = make_layer(gate, L=4)
    st = rs.State.allocate(layer, 3, ctx)
    p = Problem(layer, [2, 0], T=30, seed=8)
    p.load(st)
    o1 = rs.prefill(ctx, layer, st, slot=p.slot(), **p.tokens(0, 10))
    rs.reset_cursors(ctx, st, p.slot())
    o2 = decode_steps(ctx, layer, st, p, 10, 17)  # leaves live ring entries (7 % 4 = 3)
    assert st.cursor[2] == 3
    o3 = rs.prefill(ctx, layer, st, slot=p.slot(), **p.tokens(17, 30))  # continues from checkpoint + ring
    rs.reset_cursors(ctx, st, p.slot())
    o = np.concatenate([o1, o2, o3], 1)
    assert rel_err(o, p.o) < tol("f32")
    assert rel_err(checkpoint_of(st, p.rows, "f32"), p.S) < tol("f32")


@pytest.mark.parametrize("gate", GATES)
def test_prefill_ragged_rows(ctx, gate):
    """Rows of 5, 1 and 9 tokens in one call (cu_seqlens, tokens packed as [1, total, ...]) give the
    bits of each row's own call, live ring entries folded first."""
    layer = make_layer(gate, L=4)
    lens, rows = [5, 1, 9], [2, 0, 1]
    p = Problem(layer, rows, T=12, seed=21)
    ragged, alone = rs.State.allocate(layer, 3, ctx), rs.State.allocate(layer, 3, ctx)
    for st in (ragged, alone):
        p.load(st)
        decode_steps(ctx, layer, st, p, 0, 3)  # live ring entries in every slot
    names = ("q", "k", "v", "a", "b")
    kw = {n: aligned(np.concatenate([p.io[n][r, 3:3 + n_] for r, n_ in enumerate(lens)])[None]) for n in names}
    cu = np.array([0, 5, 6, 15], np.int32)
    o = rs.prefill(ctx, layer, ragged, slot=rows, cu_seqlens=cu, A_log=p.io["A_log"], dt_bias=p.io["dt_bias"], **kw)
    assert o.shape == (1, 15, layer.HV, layer.V)
    for r, n_ in enumerate(lens):
        one = {n: aligned(p.io[n][r:r + 1, 3:3 + n_]) for n in names}
        o1 = rs.prefill(ctx, layer, alone, slot=[rows[r]], A_log=p.io["A_log"], dt_bias=p.io["dt_bias"], **one)
        np.testing.assert_array_equal(o1[0], o[0, cu[r]:cu[r + 1]])
    for name, t in ragged.tensors().items():
        np.testing.assert_array_equal(t, alone.tensors()[name], err_msg=f"state.{name}")
    with pytest.raises(rs.ReplaySSMError, match="tokens"):
        rs.prefill(ctx, layer, ragged, slot=rows, cu_seqlens=[0, 5, 5, 15], A_log=p.io["A_log"],
                   dt_bias=p.io["dt_bias"], **kw)  # a live row without tokens
    with pytest.raises(ValueError, match="packed as 15"):
        rs.prefill(ctx, layer, ragged, slot=rows, cu_seqlens=[0, 5, 6, 16], A_log=p.io["A_log"],
                   dt_bias=p.io["dt_bias"], **kw)  # more tokens than the packed tensors hold


def test_packed_copy_on_write(ctx):
    layer = make_layer("gdn")
    st = rs.State.allocate(layer, 3, ctx, ring=False)
    p = Problem(layer, [0], T=1, seed=9)
    p.load(st)
    before = st.checkpoint.copy()
    rs.decode_packed(ctx, layer, st, slot=[0], write_slot=[2], **p.token(0))
    np.testing.assert_array_equal(st.checkpoint[0], before[0])
    assert rel_err(st.checkpoint[2], p.S[0]) < tol("f32")


@pytest.mark.parametrize("gate", GATES)
def test_strided_views_of_a_fused_projection(ctx, gate):
    """q, k, v as views of one [B, T, 2HK + HV V + pad] projection: token strides, no copies."""
    layer = make_layer(gate, L=8)
    H, HV, K, V = layer.H, layer.HV, layer.K, layer.V
    B, T = 2, 3
    p = Problem(layer, [0, 1], T=T, seed=10)
    width = 2 * H * K + HV * V + 8  # padded row: the token stride is not the packed one
    fused = aligned(np.zeros((B, T, width), np.float32))
    fused[..., :H * K] = p.io["q"].reshape(B, T, -1)
    fused[..., H * K:2 * H * K] = p.io["k"].reshape(B, T, -1)
    fused[..., 2 * H * K:2 * H * K + HV * V] = p.io["v"].reshape(B, T, -1)
    q = np.lib.stride_tricks.as_strided(fused, (B, T, H, K), (T * width * 4, width * 4, K * 4, 4))
    k = np.lib.stride_tricks.as_strided(fused[..., H * K:], (B, T, H, K), (T * width * 4, width * 4, K * 4, 4))
    v = np.lib.stride_tricks.as_strided(fused[..., 2 * H * K:], (B, T, HV, V), (T * width * 4, width * 4, V * 4, 4))
    gates = {n: aligned(p.io[n]) for n in ("a", "b")}
    s1, s2 = rs.State.allocate(layer, 2, ctx), rs.State.allocate(layer, 2, ctx)
    p.load(s1)
    p.load(s2)
    o1 = rs.verify(ctx, layer, s1, q, k, v, A_log=p.io["A_log"], dt_bias=p.io["dt_bias"], slot=[0, 1], **gates)
    o2 = rs.verify(ctx, layer, s2, slot=[0, 1], **p.tokens(0, T))
    np.testing.assert_array_equal(o1, o2)
    assert rel_err(o1, p.o) < tol("f32")
    with pytest.raises(ValueError, match="per-token part"):
        bad_q = np.lib.stride_tricks.as_strided(fused, (B, T, H, K), (T * width * 4, width * 4, 4, H * 4))
        rs.verify(ctx, layer, s1, bad_q, k, v, A_log=p.io["A_log"], dt_bias=p.io["dt_bias"], slot=[0, 1], **gates)


@pytest.mark.parametrize("gate", GATES)
def test_precomputed_gates(ctx, gate):
    layer = make_layer(gate, L=4)
    p = Problem(layer, [0, 1], T=6, seed=11)
    g, beta = rs.reference.gates(gate, p.exact["a"], p.exact["b"], p.exact["A_log"], p.exact["dt_bias"])
    s1, s2 = rs.State.allocate(layer, 2, ctx), rs.State.allocate(layer, 2, ctx)
    p.load(s1)
    p.load(s2)
    for t in range(6):
        kw = p.token(t)
        o1 = rs.decode_replay(ctx, layer, s1, slot=[0, 1], **kw)
        o2 = rs.decode_replay(ctx, layer, s2, kw["q"], kw["k"], kw["v"], g=aligned(g[:, t].astype(np.float32)),
                              beta=aligned(beta[:, t].astype(np.float32)), slot=[0, 1])
        rs.advance(ctx, layer, s1, [0, 1])
        rs.advance(ctx, layer, s2, [0, 1])
        assert rel_err(o2, o1) < 1e-5


@pytest.mark.parametrize("gate", GATES)
def test_precomputed_gates_as_strided_views(ctx, gate):
    """g and beta as views of one [B, T, HV * gk + HV + pad] tensor (token strides, as q, k, v take)."""
    layer = make_layer(gate, L=8)
    HV, gk, B, T = layer.HV, layer.gk, 2, 3
    p = Problem(layer, [0, 1], T=T, seed=12)
    g, beta = rs.reference.gates(gate, p.exact["a"], p.exact["b"], p.exact["A_log"], p.exact["dt_bias"])
    width = HV * gk + HV + 12  # a gap of NaN between tokens: it must not be read
    fused = aligned(np.full((B, T, width), np.nan, np.float32))
    fused[..., :HV * gk] = g.reshape(B, T, -1)
    fused[..., HV * gk:HV * gk + HV] = beta.reshape(B, T, -1)
    gv = np.lib.stride_tricks.as_strided(fused, g.shape, (T * width * 4, width * 4) + ((gk * 4, 4) if gk > 1 else (4,)))
    bv = np.lib.stride_tricks.as_strided(fused[..., HV * gk:], beta.shape, (T * width * 4, width * 4, 4))
    s1, s2 = rs.State.allocate(layer, 2, ctx), rs.State.allocate(layer, 2, ctx)
    p.load(s1)
    p.load(s2)
    qkv = {n: p.tokens(0, T)[n] for n in ("q", "k", "v")}
    o1 = rs.verify(ctx, layer, s1, **qkv, g=gv, beta=bv, slot=[0, 1])
    o2 = rs.verify(ctx, layer, s2, **qkv, g=aligned(g.astype(np.float32)), beta=aligned(beta.astype(np.float32)),
                   slot=[0, 1])
    np.testing.assert_array_equal(o1, o2)
    assert np.isfinite(o1).all() and rel_err(o1, p.o) < tol("f32")


@pytest.mark.parametrize("gate", GATES)
@pytest.mark.parametrize("state,ring", [("f32", "bf16"), ("bf16", "bf16")])
def test_bf16_state_and_ring(ctx, gate, state, ring):
    layer = make_layer(gate, L=4, state_dtype=state, ring_dtype=ring, io_dtype="bf16")
    st = rs.State.allocate(layer, 2, ctx)
    assert st.checkpoint.dtype == (np.uint16 if state == "bf16" else np.float32)
    p = Problem(layer, [1, 0], T=16, seed=12)
    p.load(st)
    o = decode_steps(ctx, layer, st, p, 0, 16)
    assert rel_err(o, p.o) < tol("bf16")


@pytest.mark.parametrize("gate", GATES)
def test_float64_everywhere_on_the_reference(ref_ctx, gate):
    """With every dtype f64 the reference device is the float64 recurrence itself."""
    layer = make_layer(gate, L=5, state_dtype="f64", ring_dtype="f64", io_dtype="f64")
    st = rs.State.allocate(layer, 2, ref_ctx)
    assert st.ring_g.dtype == np.float64
    p = Problem(layer, [1, 0], T=23, seed=13)
    p.load(st)
    o = decode_steps(ref_ctx, layer, st, p, 0, 23)
    assert rel_err(o, p.o) < 1e-12
    rs.materialize(ref_ctx, layer, st, st, p.slot(), p.slot())
    assert rel_err(st.checkpoint[[1, 0]], p.S) < 1e-12


def test_kda_lower_bound_gate(ctx):
    layer = make_layer("kda", L=4, lower_bound=-5.0)
    st = rs.State.allocate(layer, 1, ctx)
    p = Problem(layer, [0], T=12, seed=14)
    p.load(st)
    o = decode_steps(ctx, layer, st, p, 0, 12)
    assert rel_err(o, p.o) < tol("f32")


@pytest.mark.parametrize("gate", GATES)
def test_early_fold_with_strong_decay(ctx, gate):
    """Gates far below -G_MAX over a ring: the per-head early fold keeps replay exact."""
    layer = make_layer(gate, L=16, fold_threshold=10.0)
    st = rs.State.allocate(layer, 1, ctx)
    p = Problem(layer, [0], T=30, seed=15, gate_scale=4.0)
    p.load(st)
    o = decode_steps(ctx, layer, st, p, 0, 30)
    assert rel_err(o, p.o) < tol("f32")
    assert st.ring_base[0].any(), "some head folded early"
    rs.materialize(ctx, layer, st, st, [0], [0])
    assert rel_err(st.checkpoint[0], p.S[0]) < tol("f32")


@pytest.mark.parametrize("gate", GATES)
def test_infinite_gate_keeps_replay_finite(ctx, gate):
    """A_log = 88.5 on one value head: its gate -exp(A_log) softplus(..) is -inf in float32 on every
    token. Replay clamps it and folds that head early: no NaN, as exact as ever."""
    layer = make_layer(gate, L=8)
    st = rs.State.allocate(layer, 1, ctx)
    p = Problem(layer, [0], T=20, seed=16)
    p.io["A_log"] = p.io["A_log"].copy()
    p.io["A_log"][1] = 88.5
    p.exact["A_log"] = p.io["A_log"].astype(np.float64)
    p.o, p.S = R.run_layer(layer.gate, initial_state=p.S0, scale=layer.effective_scale,
                           qk_l2norm=layer.qk_l2norm, lower_bound=layer.lower_bound, **p.exact)
    p.load(st)
    o = decode_steps(ctx, layer, st, p, 0, 20)
    assert np.isfinite(o).all()
    assert rel_err(o, p.o) < tol("f32")
    rs.materialize(ctx, layer, st, st, [0], [0])
    assert rel_err(st.checkpoint[0], p.S[0]) < tol("f32")


def test_empty_batch_is_a_no_op(ctx):
    layer = make_layer("gdn")
    st = rs.State.allocate(layer, 1, ctx)
    z = lambda *s: aligned(np.zeros(s, np.float32))  # noqa: E731
    o = rs.decode_replay(ctx, layer, st, z(0, 2, 16), z(0, 2, 16), z(0, 4, 8), a=z(0, 4), b=z(0, 4),
                         A_log=z(4), dt_bias=z(4), slot=np.zeros(0, np.int32))
    assert o.shape == (0, 4, 8)
    rs.advance(ctx, layer, st, [])


@pytest.mark.parametrize("gate", GATES)
def test_nan_and_positive_gates_are_passed_through_alike(ctx, gate):
    """Gates outside (-inf, 0]: one behaviour for packed and replay decode on every host device.
    A log-gate above 0 is applied as given (the state grows by e^g): replay equals packed. A NaN
    log-gate makes that head's outputs NaN from its step on, in both, as the recurrence does;
    the other heads stay finite and equal."""
    layer = make_layer(gate, L=4, io_dtype="f32")
    B, T, HV, K = 2, 9, layer.HV, layer.K
    rng = np.random.default_rng(5)
    x = dict(q=rng.standard_normal((B, T, layer.H, K)), k=rng.standard_normal((B, T, layer.H, K)),
             v=rng.standard_normal((B, T, HV, layer.V)))
    gshape = (B, T, HV, K) if gate == "kda" else (B, T, HV)
    g = -0.1 * rng.random(gshape)
    g[:, 2, 1] = 0.3  # growth on head 1
    g[:, 5, 1] = 0.2
    g[0, 4, 2] = np.nan  # row 0, head 2, token 4
    x = {n: aligned(v.astype(np.float32)) for n, v in x.items()}
    g, beta = aligned(g.astype(np.float32)), aligned(rng.random((B, T, HV)).astype(np.float32))
    slot = np.array([1, 0], np.int32)
    outs = {}
    for replay in (False, True):
        st = rs.State.allocate(layer, 2, ctx, ring=replay)
        o = []
        for t in range(T):
            tok = {n: aligned(v[:, t].copy()) for n, v in x.items()}
            gt, bt = aligned(g[:, t].copy()), aligned(beta[:, t].copy())
            fn = rs.decode_replay if replay else rs.decode_packed
            o.append(fn(ctx, layer, st, tok["q"], tok["k"], tok["v"], g=gt, beta=bt, slot=slot))
            if replay:
                rs.advance(ctx, layer, st, slot)
        outs[replay] = np.stack(o, 1)
    pk, rp = outs[False], outs[True]
    nan = np.zeros(pk.shape, bool)
    nan[0, 4:, 2] = True
    assert np.isnan(pk[nan]).all() and np.isnan(rp[nan]).all()
    assert np.isfinite(pk[~nan]).all() and np.isfinite(rp[~nan]).all()
    assert rel_err(rp[~nan], pk[~nan]) < 1e-5


@pytest.mark.parametrize("gate", GATES)
def test_float64_gates_on_the_float64_device(gate):
    """With the f64 io dtype (the reference device) precomputed gates are float64 too: replay decode
    from float64 g and beta equals the float64 recurrence to rounding, and float32 gates are
    refused naming g."""
    ctx = rs.Context("reference")
    layer = make_layer(gate, L=4, io_dtype="f64", state_dtype="f64", ring_dtype="f64")
    B, T, HV, K = 2, 7, layer.HV, layer.K
    rng = np.random.default_rng(11)
    q, k = (aligned(rng.standard_normal((B, T, layer.H, K))) for _ in range(2))
    v = aligned(rng.standard_normal((B, T, HV, layer.V)))
    g = aligned(-rng.random((B, T, HV, K) if gate == "kda" else (B, T, HV)) * 3)
    beta = aligned(rng.random((B, T, HV)))
    st = rs.State.allocate(layer, 2, ctx)
    slot = np.array([1, 0], np.int32)
    o = []
    for t in range(T):
        tok = [aligned(x[:, t].copy()) for x in (q, k, v)]
        o.append(rs.decode_replay(ctx, layer, st, *tok, g=aligned(g[:, t].copy()), beta=aligned(beta[:, t].copy()),
                                  slot=slot))
        rs.advance(ctx, layer, st, slot)
    ref, _ = R.recurrent(q, k, v, g, beta)
    assert rel_err(np.stack(o, 1), ref) < 1e-13
    with pytest.raises(TypeError, match="g: dtype f32, expected f64"):
        rs.decode_replay(ctx, layer, st, *[aligned(x[:, 0].copy()) for x in (q, k, v)],
                         g=aligned(g[:, 0].astype(np.float32)), beta=aligned(beta[:, 0].copy()), slot=slot)
