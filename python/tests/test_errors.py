"""Failures raise ReplaySSMError with the status name and the library's message, and change nothing."""
import numpy as np
import pytest

import replayssm as rs
from _util import Problem, aligned


def setup(ctx, gate="gdn", L=4, slots=3, T=1):
    layer = rs.Layer(gate=gate, H=2, HV=4, K=16, V=8, ring_len=L)
    st = rs.State.allocate(layer, slots, ctx)
    p = Problem(layer, [0, 1], T=T, seed=30)
    p.load(st)
    return layer, st, p


def expect(status, fn, *args, match=None, **kw):
    with pytest.raises(rs.ReplaySSMError) as e:
        fn(*args, **kw)
    assert e.value.status_name == status, str(e.value)
    assert e.value.message and e.value.message in str(e.value)
    if match:
        assert match in e.value.message, e.value.message
    return e.value


def test_bad_slot_changes_nothing(ctx):
    layer, st, p = setup(ctx)
    before = st.copy()
    e = expect("RSSM_ERROR_BAD_SLOT", rs.decode_replay, ctx, layer, st, slot=[0, 7], match="slot[1] = 7",
               **p.token(0))
    assert e.function == "rssm_decode_replay"
    for name, t in st.tensors().items():
        np.testing.assert_array_equal(t, before.tensors()[name])
    expect("RSSM_ERROR_BAD_SLOT", rs.decode_replay, ctx, layer, st, slot=[1, 1], match="two rows", **p.token(0))
    expect("RSSM_ERROR_BAD_SLOT", rs.advance, ctx, layer, st, [5])


def test_token_counts(ctx):
    layer, st, p = setup(ctx, L=2, T=3)
    expect("RSSM_ERROR_BAD_TOKENS", rs.verify, ctx, layer, st, slot=p.slot(), **p.tokens(0, 3))
    expect("RSSM_ERROR_BAD_TOKENS", rs.decode_replay, ctx, layer, st, slot=p.slot(), match="rssm_verify",
           **p.tokens(0, 2))
    expect("RSSM_ERROR_BAD_TOKENS", rs.commit, ctx, layer, st, 2, p.slot(), None, [3, 0])


def test_bad_cursor(ctx):
    layer, st, p = setup(ctx)
    st.cursor[0] = 99
    expect("RSSM_ERROR_BAD_ARGUMENT", rs.decode_replay, ctx, layer, st, slot=p.slot(), match="cursor",
           **p.token(0))


def test_misaligned_pointer(ctx):
    layer, st, p = setup(ctx)
    kw = p.token(0)
    buf = aligned(np.zeros(kw["q"].size + 1, np.float32))
    q = buf[1:].reshape(kw["q"].shape)  # 4 bytes off
    q[...] = kw["q"]
    kw["q"] = q
    expect("RSSM_ERROR_MISALIGNED", rs.decode_replay, ctx, layer, st, slot=p.slot(), match="io.q", **kw)


def test_f64_is_for_the_reference_only():
    ctx = rs.Context("cpu")
    layer = rs.Layer(gate="gdn", H=2, HV=4, K=16, V=8, ring_len=4, state_dtype="f64", ring_dtype="f64",
                     io_dtype="f64")
    st = rs.State.allocate(layer, 2, ctx)
    p = Problem(layer, [0, 1], T=1)
    expect("RSSM_ERROR_BAD_DTYPE", rs.decode_replay, ctx, layer, st, slot=p.slot(), **p.token(0))


@pytest.mark.parametrize("kw,status", [
    (dict(H=3, HV=4), "RSSM_ERROR_BAD_SHAPE"),
    (dict(K=300), "RSSM_ERROR_BAD_SHAPE"),
    (dict(ring_len=0), "RSSM_ERROR_BAD_RING_LEN"),
    (dict(ring_len=65), "RSSM_ERROR_BAD_RING_LEN"),
    (dict(lower_bound=-5.0), "RSSM_ERROR_BAD_ARGUMENT"),  # the safe gate is KDA only
    (dict(scale=-1.0), "RSSM_ERROR_BAD_ARGUMENT"),
])
def test_bad_layers(kw, status):
    d = dict(gate="gdn", H=2, HV=4, K=16, V=8, ring_len=4)
    d.update(kw)
    expect(status, rs.Layer, **d)


def test_python_side_checks(ctx):
    layer, st, p = setup(ctx)
    kw = p.token(0)
    with pytest.raises(TypeError, match="dtype f64, expected f32"):
        rs.decode_replay(ctx, layer, st, slot=p.slot(), **dict(kw, v=kw["v"].astype(np.float64)))
    with pytest.raises(ValueError, match="v: shape"):
        rs.decode_replay(ctx, layer, st, slot=p.slot(), **dict(kw, v=kw["v"][:, :2]))
    with pytest.raises(ValueError, match="slot: shape"):
        rs.decode_replay(ctx, layer, st, slot=[0], **kw)
    with pytest.raises(ValueError, match="raw gates"):
        rs.decode_replay(ctx, layer, st, kw["q"], kw["k"], kw["v"], slot=p.slot())
    with pytest.raises(TypeError, match="numpy array or a torch tensor"):
        rs.decode_replay(ctx, layer, st, slot=p.slot(), **dict(kw, q=kw["q"].tolist()))
    with pytest.raises(ValueError, match="checkpoint: shape"):
        rs.State(layer, checkpoint=np.zeros((2, 4, 16, 8), np.float32))
    with pytest.raises(ValueError, match="state was made for"):
        rs.decode_replay(ctx, layer.replace(K=32), st, slot=p.slot(), **kw)
    with pytest.raises(ValueError, match="read-only"):
        ro = st.checkpoint.copy()
        ro.flags.writeable = False
        rs.State(layer, checkpoint=ro)
