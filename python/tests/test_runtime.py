"""The runtime section (state pool, step planner, prefix cache) through the binding."""
import os
import subprocess
import sys

import numpy as np
import pytest

import replayssm as rs
from _util import Problem, aligned, from_io, rel_err, tol
from replayssm.runtime import Plan, Pool, PrefixCache


LAYERS = [rs.Layer(gate="gdn", H=2, HV=4, K=16, V=8, ring_len=4), rs.Layer(gate="kda", H=2, HV=4, K=16, V=8, ring_len=4)]


def test_pool_bookkeeping(ctx):
    pool = Pool(ctx, LAYERS, 3)
    assert pool.memory == Pool.bytes_needed(LAYERS, 3)
    assert (pool.num_slots, pool.num_free, pool.num_layers) == (3, 3, 2)
    assert pool.layer(1) == LAYERS[1]
    slots = [pool.acquire() for _ in range(3)]
    assert sorted(slots) == [0, 1, 2] and pool.num_free == 0 and pool.is_held(slots[0])
    with pytest.raises(rs.ReplaySSMError) as e:
        pool.acquire()
    assert e.value.status_name == "RSSM_ERROR_POOL_FULL"
    pool.release(slots[1])
    with pytest.raises(rs.ReplaySSMError) as e:
        pool.release(slots[1])
    assert e.value.status_name == "RSSM_ERROR_NOT_FOUND" and e.value.message
    pool.validate()
    st = pool.state(0)
    assert st.num_slots == 4  # + the scratch slot
    assert st.cursor is pool.state(1).cursor or np.shares_memory(st.cursor, pool.state(1).cursor)


def test_plan_decode_over_layers_matches_recurrence(ctx):
    """A two-layer "model" (independent layers sharing the cursor) stepped by the planner."""
    pool = Pool(ctx, LAYERS, 4)
    s = [pool.acquire(), pool.acquire()]
    plan = Plan(pool, batch=3, track_interval=5)
    probs = [Problem(layer, s + [-1], T=13, seed=20 + i, initial_state=np.zeros((3, 4, 8, 16)))
             for i, layer in enumerate(LAYERS)]
    outs = [[], []]
    seq = [0, 0]
    for t in range(13):
        plan.set(s, seq_len=seq)
        plan.begin("decode")
        np.testing.assert_array_equal(plan.fold_rows("decode")[:2], [(x + 1) % 5 == 0 for x in seq])
        for i, (layer, p) in enumerate(zip(LAYERS, probs)):
            o = rs.decode_replay(ctx, layer, pool.state(i), slot=plan.slot, fold=plan.fold, **p.token(t))
            outs[i].append(from_io(o, "f32"))
        plan.end()
        seq = [x + 1 for x in seq]
    np.testing.assert_array_equal(plan.seq_len[:2], [13, 13])
    for i, p in enumerate(probs):
        o = np.stack(outs[i], 1)
        assert rel_err(o[:2], p.o[:2]) < tol("f32")
        assert not o[2].any()
    assert pool.cursor(s[0]) == 13 % 5 % 4 or pool.cursor(s[0]) in range(0, 5)
    # copy (materialise) a slot and compare the folded state
    d = pool.acquire()
    pool.copy(s[0], pool, d)
    assert pool.cursor(d) == 0
    for i, p in enumerate(probs):
        assert rel_err(pool.state(i).checkpoint[d], p.S[0]) < tol("f32")
    pool.validate()


def test_plan_small_batch_folds_every_row(ctx):
    """With the small-batch limit a step of few rows folds every row: the cursor stays at 0 and
    the outputs are still the recurrence's; over the limit the ring fills as usual."""
    pool = Pool(ctx, LAYERS, 4)
    s = [pool.acquire(), pool.acquire()]
    plan = Plan(pool, batch=3)
    plan.set_small_batch(1)
    assert plan.small_batch == 1
    probs = [Problem(layer, [s[0], -1, -1], T=6, seed=40 + i, initial_state=np.zeros((3, 4, 8, 16)))
             for i, layer in enumerate(LAYERS)]
    for t in range(6):
        plan.set([s[0]])
        plan.begin("decode")
        # only CUDA's K = V = 128 kernels drain small steps and run them as packed decode
        assert not plan.fold_every
        for i, (layer, p) in enumerate(zip(LAYERS, probs)):
            o = rs.decode_replay(ctx, layer, pool.state(i), slot=plan.slot, fold=plan.fold,
                                 fold_every=plan.fold_every, **p.token(t))
            assert rel_err(from_io(o, "f32")[:1], p.o[:1, t]) < tol("f32")
        plan.end()
        assert pool.cursor(s[0]) == 0
    plan.set(s)  # 2 live rows > 1: plain replay
    plan.begin("decode")
    assert not plan.fold_every
    for i, layer in enumerate(LAYERS):
        rs.decode_replay(ctx, layer, pool.state(i), slot=plan.slot, fold=plan.fold, **probs[i].token(0))
    plan.end()
    assert pool.cursor(s[0]) == 1 and pool.cursor(s[1]) == 1
    plan.set_small_batch("auto")
    assert plan.small_batch >= 0 if ctx.is_cuda else plan.small_batch == 0
    with pytest.raises(rs.ReplaySSMError) as e:
        plan.set_small_batch(-2)
    assert e.value.status_name == "RSSM_ERROR_BAD_ARGUMENT"


def test_export_import_roundtrip(ctx):
    pool = Pool(ctx, LAYERS, 3)
    s = pool.acquire()
    st = pool.state(0)
    st.checkpoint[s] = np.random.default_rng(0).standard_normal(st.checkpoint[s].shape)
    blob = pool.export(s)
    assert len(blob) == pool.export_size()
    t = pool.import_(blob)
    np.testing.assert_array_equal(pool.state(0).checkpoint[t], st.checkpoint[s])
    bad = bytearray(blob)
    bad[-1] ^= 0xFF
    with pytest.raises(rs.ReplaySSMError) as e:
        pool.import_(bytes(bad))
    assert e.value.status_name in ("RSSM_ERROR_CHECKSUM", "RSSM_ERROR_BAD_FORMAT")
    with pytest.raises(rs.ReplaySSMError) as e:
        pool.import_(b"not a blob")
    assert e.value.status_name == "RSSM_ERROR_BAD_FORMAT"
    assert len(pool.export(s, materialized=True)) == pool.export_size(materialized=True)


def test_export_records_the_state_layout(ctx):
    """A K-first pool's blob goes back into a K-first pool (the same bits, materialised too) and is
    refused by a V-first pool of the same shape."""
    kv = [layer.replace(state_layout="kv") for layer in LAYERS]
    pool, other = Pool(ctx, kv, 3), Pool(ctx, LAYERS, 3)
    s = pool.acquire()
    st = pool.state(0)
    st.checkpoint[s] = np.random.default_rng(1).standard_normal(st.checkpoint[s].shape)
    assert st.checkpoint.shape[2:] == (16, 8)  # [slots, HV, K, V]
    t = pool.import_(pool.export(s))
    np.testing.assert_array_equal(pool.state(0).checkpoint[t], st.checkpoint[s])
    t2 = pool.import_(pool.export(s, materialized=True))
    np.testing.assert_array_equal(pool.state(0).checkpoint[t2], st.checkpoint[s])
    with pytest.raises(rs.ReplaySSMError, match="state layout") as e:
        other.import_(pool.export(s))
    assert e.value.status_name == "RSSM_ERROR_BAD_FORMAT"


def test_prefix_cache(ctx):
    """Run in a child process: a library that hangs fails this test instead of stalling the run."""
    here = os.path.dirname(os.path.abspath(__file__))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([here, os.path.dirname(here), os.environ.get("PYTHONPATH", "")]))
    env.setdefault("REPLAYSSM_LIBRARY", rs.library_path())
    code = f"import test_runtime as t, replayssm as rs; t.prefix_cache_body(rs.Context({ctx.device!r}))"
    try:
        r = subprocess.run([sys.executable, "-c", code], env=env, cwd=here, capture_output=True, text=True, timeout=60)
    except subprocess.TimeoutExpired:
        pytest.fail("the prefix cache calls did not return within 60 s (library hang)")
    assert r.returncode == 0, r.stdout + r.stderr


def prefix_cache_body(ctx):
    pool = Pool(ctx, LAYERS, 6)
    s = pool.acquire()
    pool.state(0).checkpoint[s] = 1.5
    cache = PrefixCache(pool, max_snapshots=3)
    cache.insert([1, 2, 3, 4], pool, s)
    d = pool.acquire()
    matched, lock = cache.match([1, 2, 3, 4, 5], pool, d, lock=True)
    assert matched == 4 and lock is not None
    assert (pool.state(0).checkpoint[d] == 1.5).all()
    assert cache.match([9, 9])[0] == 0
    st = cache.stats()
    assert st["snapshots"] == 1 and st["locked"] == 1 and st["hits"] >= 1 and st["misses"] >= 1
    # stream-ordered: the fill on the current stream lands before the copy, the next fill after it
    pool.state(0).checkpoint[s] = 2.5
    cache.insert([7, 8], pool, s, stream=None)
    pool.state(0).checkpoint[s] = 3.5
    d2 = pool.acquire()
    assert cache.match([7, 8, 9], pool, d2)[0] == 2
    assert (pool.state(0).checkpoint[d2] == 2.5).all()
    pool.release(d2)
    cache.evict(1)
    cache.unlock(lock)
    with pytest.raises(rs.ReplaySSMError) as e:
        cache.unlock(lock)
    assert e.value.status_name == "RSSM_ERROR_NOT_FOUND"
    assert cache.evict(10) == 1
    cache.validate()


def test_closing_the_context_closes_what_was_made_on_it():
    """A pool (and its planner and prefix cache) that outlives an explicit Context.close() is
    closed with it, in dependency order, so a later garbage collection frees nothing twice and
    never frees a pool against a freed context."""
    import gc

    c = rs.Context("cpu", threads=1)
    pool, snaps = Pool(c, LAYERS, 2), Pool(c, LAYERS, 2)
    plan, cache = Plan(pool, 2), PrefixCache(snaps)
    c.close()
    for obj in (pool, snaps, plan, cache):
        with pytest.raises(ValueError, match="closed"):
            obj.handle
    del pool, snaps, plan, cache
    gc.collect()
    c.close()  # twice is fine


def test_shard_layer_slices_heads_bit_identically():
    """rssm_layer_shard through the binding: each rank's replay decode on its head slices equals
    those heads of the unsharded decode bit for bit (CPU), and a tp that splits the key heads is
    refused."""
    from replayssm.runtime import shard_layer

    full = rs.Layer(gate="gdn", H=2, HV=4, K=16, V=8, ring_len=4)
    with pytest.raises(rs.ReplaySSMError) as e:
        shard_layer(full, 4, 0)
    assert e.value.status_name == "RSSM_ERROR_BAD_SHAPE"
    c = rs.Context("cpu", threads=1)
    p = Problem(full, [0, 1], 1, seed=7)
    st = rs.State.allocate(full, 2)
    p.load(st)
    kw = p.token(0)
    o_full = rs.decode_replay(c, full, st, **kw, slot=p.slot())
    for rank in range(2):
        layer, k0, v0 = shard_layer(full, 2, rank)
        assert (layer.H, layer.HV, k0, v0) == (1, 2, rank, 2 * rank)
        ks, vs = slice(k0, k0 + layer.H), slice(v0, v0 + layer.HV)
        sk = {n: aligned(kw[n][:, ks]) for n in ("q", "k")}
        sk.update({n: aligned(kw[n][:, vs]) for n in ("v", "a", "b")})
        sk["A_log"], sk["dt_bias"] = aligned(kw["A_log"][vs]), aligned(kw["dt_bias"][vs])
        sst = rs.State.allocate(layer, 2)
        for b in range(2):
            sst.checkpoint[b] = p.S0[b][vs]
        o = rs.decode_replay(c, layer, sst, **sk, slot=p.slot())
        assert np.array_equal(o, o_full[:, vs])
        assert np.array_equal(sst.ring_u, st.ring_u[:, vs]) and np.array_equal(sst.ring_k, st.ring_k[:, ks])
    c.close()


def test_import_refuses_any_flipped_bit():
    """Every single-bit change of a blob, in the header or anywhere in the payload (the four
    checksum lanes and the zero-padded tail word), is refused and takes no slot."""
    c = rs.Context("cpu", threads=1)
    pool = Pool(c, LAYERS, 2)
    s = pool.acquire()
    rng = np.random.default_rng(3)
    for i in range(2):
        st = pool.state(i)
        st.checkpoint[s] = rng.standard_normal(st.checkpoint[s].shape)
        st.ring_u[s] = rng.standard_normal(st.ring_u[s].shape)
    blob = pool.export(s)
    t = pool.import_(blob)  # the intact blob loads
    pool.release(t)
    positions = sorted(set(range(0, len(blob), 37)) | set(range(len(blob) - 16, len(blob))))
    for pos in positions:
        bad = bytearray(blob)
        bad[pos] ^= 1 << (pos % 8)
        with pytest.raises(rs.ReplaySSMError) as e:
            pool.import_(bytes(bad))
        assert e.value.status_name in ("RSSM_ERROR_CHECKSUM", "RSSM_ERROR_BAD_FORMAT"), pos
        assert pool.num_free == 1
    c.close()
