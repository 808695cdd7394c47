"""Python-side safety: integers that would wrap in C are refused with the argument's name, and
the memory of a pool, planner or context outlives every view taken of it (closing them cannot
leave a numpy array or State pointing at freed memory)."""
import gc

import numpy as np
import pytest

import replayssm as rs
from replayssm import _lib


@pytest.fixture
def pool():
    ctx = rs.Context("reference")
    layer = rs.Layer(gate="gdn", H=1, HV=2, K=8, V=8, ring_len=4)
    p = rs.Pool(ctx, [layer], 4)
    yield p
    p.close()


def test_slots_do_not_wrap(pool):
    s = pool.acquire()
    for bad in (2**32, 2**32 + s, -(2**31) - 1):
        with pytest.raises(ValueError, match="slot"):
            pool.release(bad)
    assert pool.is_held(s)  # nothing moved
    with pytest.raises(ValueError, match="slots: values"):
        rs.Plan(pool, 2).set([2**32 + s])
    with pytest.raises(ValueError, match="batch"):
        rs.Plan(pool, 2**32 + 1)


def test_index_arrays_do_not_wrap():
    ctx = rs.Context("reference")
    layer = rs.Layer(gate="gdn", H=1, HV=1, K=8, V=8, ring_len=4, io_dtype="f64", state_dtype="f64")
    st = rs.State.allocate(layer, 2, ctx)
    q = np.zeros((1, 1, 8)), np.zeros((1, 1, 8)), np.zeros((1, 1, 8))
    g = dict(g=np.zeros((1, 1)), beta=np.zeros((1, 1)))  # float64 gates with the f64 io dtype
    for slot in ([2**32], np.array([2**32], np.int64), np.array([2**32 - 1], np.uint32)):
        with pytest.raises(ValueError, match="slot: values"):
            rs.decode_replay(ctx, layer, st, *q, **g, slot=slot)
    assert int(st.cursor[0]) == 0 and not st.checkpoint.any()  # nothing ran
    # a fold flag is any nonzero value, as C reads it (256 does not wrap to 0)
    rs.decode_replay(ctx, layer, st, *q, **g, slot=[0], fold=[256])
    rs.advance(ctx, layer, st, [0], fold=[256])
    assert int(st.cursor[0]) == 0  # folded: the ring is empty again


def test_prefix_tokens_do_not_wrap(pool):
    cache = rs.PrefixCache(pool)
    s = pool.acquire()
    cache.insert([7, 8], pool, s)
    with pytest.raises(ValueError, match="tokens: values"):
        cache.match([2**32 + 7, 8])
    assert cache.match([7, 8])[0] == 2


def test_layer_and_context_integers():
    with pytest.raises(ValueError, match="H = 4294967297"):
        rs.Layer(gate="gdn", H=2**32 + 1)
    with pytest.raises(ValueError, match="threads"):
        rs.Context("cpu", threads=2**40)
    with pytest.raises(TypeError, match="unknown switch"):
        rs.Context("cpu", cuda_spilt=4)


def test_views_outlive_pool_close():
    ctx = rs.Context("cpu")
    layer = rs.Layer(gate="gdn", H=1, HV=2, K=16, V=16, ring_len=4)
    pool = rs.Pool(ctx, [layer], 3)
    s = pool.acquire()
    st = pool.state(0)
    ckpt = st.checkpoint[s]  # a numpy view of the pool's memory
    plan = rs.Plan(pool, 2)
    plan.set([s])
    slots = plan.slot
    pool.close()
    ctx.close()
    gc.collect()
    with pytest.raises(ValueError, match="closed"):
        pool.acquire()
    with pytest.raises(ValueError, match="closed"):
        plan.set([s])
    # the memory is still there, with what it held
    ckpt[:] = 1.5
    assert float(ckpt.sum()) == 1.5 * ckpt.size and int(slots[0]) == s
    with pytest.raises(ValueError, match="closed"):  # no op runs on a closed context
        rs.advance(ctx, layer, st, [s])


def test_memory_goes_with_the_last_view():
    ctx = rs.Context("cpu")
    layer = rs.Layer(gate="gdn", H=1, HV=2, K=16, V=16, ring_len=4)
    pool = rs.Pool(ctx, [layer], 3)
    freed = []
    owned = pool._owned
    import weakref

    weakref.finalize(owned, freed.append, "pool")
    del owned
    view = pool.state(0).checkpoint
    pool.close()
    ctx.close()
    gc.collect()
    assert not freed  # the view holds the pool
    del view
    gc.collect()
    assert freed == ["pool"]
    assert _lib.last_error() is not None


CLOSE_DURING_CALL = """
import threading, time, gc, numpy as np, replayssm as rs
from replayssm import reference as R
ctx = rs.Context("cpu", threads=2)
B = 1024
layer = rs.Layer(gate="gdn", H=4, HV=8, K=128, V=128, ring_len=4)
st = rs.State.allocate(layer, B, ctx)
d = R.random_inputs(np.random.default_rng(0), "gdn", B, 1, 4, 8, 128, 128)
slot = np.arange(B, dtype=np.int32)
outcome = []
def run():
    try:
        for _ in range(4):
            rs.decode_packed(ctx, layer, st, d["q"], d["k"], d["v"], a=d["a"], b=d["b"], A_log=d["A_log"],
                             dt_bias=d["dt_bias"], slot=slot)
        outcome.append("done")
    except ValueError as e:
        outcome.append("refused: " + str(e))
t = threading.Thread(target=run)
t.start()
time.sleep(0.02)
ctx.close()
gc.collect()
t.join()
print(outcome[0])
"""


def test_close_during_a_call_on_another_thread():
    """A call holds its context: closing it from another thread makes later calls refuse, never
    frees the context under the running one (run in a child, which a crash would kill)."""
    import os
    import subprocess
    import sys

    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    r = subprocess.run([sys.executable, "-c", CLOSE_DURING_CALL], env=env, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.startswith("done") or "closed" in r.stdout
