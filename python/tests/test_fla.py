"""replayssm.fla against FLA's reference semantics, on the CPU back end.

The oracle below is a float64 transcription of FLA's naive recurrence in FLA's own layout
(fla/ops/gated_delta_rule/naive.py, fla/ops/kda/naive.py): per sequence and value head a
state S [K, V]; per token S = S * exp(g) (GDN: a scalar; KDA: row k scaled by exp(g_k)),
v_new = beta (v - S^T k), S = S + k v_new^T, o = S^T q, with q, k L2-normalised as
x / sqrt(sum x^2 + 1e-6) when asked and q scaled (default K^-0.5) after. Value head hv reads
key head hv // (HV / H). The golden vectors (../shared/vectors/fla-reference.txt) pin the same
semantics from FLA itself. numpy inputs throughout; CPU torch tensors where torch imports.
"""
import os

import numpy as np
import pytest

import replayssm as rs
from replayssm import fla, vectors
from replayssm import reference as R
from _util import rel_err

F32, BF16 = 1e-5, 2e-2
CHECKOUT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
GOLDEN = vectors.default_path(CHECKOUT)
CASES = vectors.load(GOLDEN) if GOLDEN else []

try:
    import ml_dtypes  # noqa: F401

    BF16_NP = np.dtype("bfloat16")
except ImportError:  # pragma: no cover
    BF16_NP = np.dtype(np.uint16)


# ---- the oracle: FLA's recurrence in float64, K-first --------------------------------------


def fla_recurrence(q, k, v, g, beta, scale=None, initial_state=None, l2norm=False, cu_seqlens=None):
    """FLA's semantics in float64. q, k [B, T, H, K]; v [B, T, HV, V]; g [B, T, HV] (GDN) or
    [B, T, HV, K] (KDA); beta [B, T, HV]; initial_state [N, HV, K, V] (None: zeros).
    Returns o [B, T, HV, V], final states [N, HV, K, V] and, per sequence, the state after
    every token (a list of [n_tokens, HV, K, V])."""
    q, k, v, g, beta = (np.asarray(x, np.float64) for x in (q, k, v, g, beta))
    B, T, H, K = q.shape
    HV, V = v.shape[2], v.shape[3]
    if l2norm:
        q = q / np.sqrt((q * q).sum(-1, keepdims=True) + 1e-6)
        k = k / np.sqrt((k * k).sum(-1, keepdims=True) + 1e-6)
    q = q * (K ** -0.5 if scale is None else scale)
    q, k = np.repeat(q, HV // H, axis=2), np.repeat(k, HV // H, axis=2)  # [B, T, HV, K]
    seqs = [(b, 0, T) for b in range(B)] if cu_seqlens is None else \
        [(0, int(cu_seqlens[i]), int(cu_seqlens[i + 1])) for i in range(len(cu_seqlens) - 1)]
    o = np.zeros((B, T, HV, V))
    finals, per_token = [], []
    for n, (b, s, e) in enumerate(seqs):
        S = np.zeros((HV, K, V)) if initial_state is None else np.array(initial_state[n], np.float64)
        steps = []
        for t in range(s, e):
            decay = np.exp(g[b, t])
            S = S * (decay[:, :, None] if g.ndim == 4 else decay[:, None, None])
            kt = k[b, t]
            u = beta[b, t][:, None] * (v[b, t] - np.einsum("hk,hkv->hv", kt, S))
            S = S + kt[:, :, None] * u[:, None, :]
            o[b, t] = np.einsum("hk,hkv->hv", q[b, t], S)
            steps.append(S.copy())
        finals.append(S)
        per_token.append(np.array(steps).reshape(-1, HV, K, V))
    return o, np.array(finals), per_token


def vfirst(x):
    return np.ascontiguousarray(np.swapaxes(np.asarray(x), -1, -2))


def make(gate, B, T, H=2, HV=4, K=16, V=32, seed=0, l2norm=True, N=None):
    """Realistic inputs (float32): q, k normal (pre-normalised k when the op does not
    normalise), g in (-1, 0), beta in (0, 1), a small initial state per sequence."""
    rng = np.random.default_rng(seed)
    q = rng.standard_normal((B, T, H, K))
    k = rng.standard_normal((B, T, H, K))
    if not l2norm:
        q, k = q / np.linalg.norm(q, axis=-1, keepdims=True), k / np.linalg.norm(k, axis=-1, keepdims=True)
    d = dict(q=q, k=k, v=rng.standard_normal((B, T, HV, V)),
             g=-rng.uniform(0.02, 1.0, (B, T, HV, K) if gate == "kda" else (B, T, HV)),
             beta=rng.uniform(0.05, 1.0, (B, T, HV)),
             h0=rng.standard_normal((B if N is None else N, HV, K, V)) * 0.3)
    return {n: x.astype(np.float32) for n, x in d.items()}


def ops_of(gate):
    if gate == "gdn":
        return fla.fused_recurrent_gated_delta_rule, fla.chunk_gated_delta_rule
    return fla.fused_recurrent_kda, fla.chunk_kda


# ---- the recurrence on sequences -------------------------------------------------------------


@pytest.mark.parametrize("layout", ["k_first", "v_first"])
@pytest.mark.parametrize("l2norm", [True, False])
@pytest.mark.parametrize("init", [False, True])
@pytest.mark.parametrize("op", ["fused_recurrent", "chunk"])
@pytest.mark.parametrize("gate", ["gdn", "kda"])
def test_sequences(gate, op, init, l2norm, layout):
    d = make(gate, 2, 7, l2norm=l2norm, seed=hash((gate, op, init, l2norm)) % 1000)
    fn = ops_of(gate)[op == "chunk"]
    scale = None if l2norm else 0.3
    h0 = d["h0"] if init else None
    v_first = layout == "v_first"
    o, ht = fn(d["q"], d["k"], d["v"], d["g"], d["beta"], scale=scale,
               initial_state=None if h0 is None else (vfirst(h0) if v_first else h0), output_final_state=True,
               use_qk_l2norm_in_kernel=l2norm, transpose_state_layout=v_first)
    ro, rS, _ = fla_recurrence(d["q"], d["k"], d["v"], d["g"], d["beta"], scale, h0, l2norm)
    assert o.shape == d["v"].shape and o.dtype == np.float32
    assert ht.dtype == np.float32 and ht.shape == ((2, 4, 32, 16) if v_first else (2, 4, 16, 32))
    assert rel_err(o, ro) < F32
    assert rel_err(vfirst(ht) if v_first else ht, rS) < F32


@pytest.mark.parametrize("gate", ["gdn", "kda"])
def test_no_final_state_and_one_token(gate):
    d = make(gate, 3, 1)
    fr = ops_of(gate)[0]
    o, ht = fr(d["q"], d["k"], d["v"], d["g"], d["beta"], initial_state=d["h0"], use_qk_l2norm_in_kernel=True)
    assert ht is None
    ro, _, _ = fla_recurrence(d["q"], d["k"], d["v"], d["g"], d["beta"], None, d["h0"], True)
    assert rel_err(o, ro) < F32


@pytest.mark.parametrize("op", ["fused_recurrent", "chunk"])
@pytest.mark.parametrize("gate", ["gdn", "kda"])
def test_varlen(gate, op):
    cu = np.array([0, 3, 3, 4, 11])  # a row of 0 tokens keeps its initial state
    d = make(gate, 1, 11, N=4, seed=7)
    fn = ops_of(gate)[op == "chunk"]
    o, ht = fn(d["q"], d["k"], d["v"], d["g"], d["beta"], initial_state=d["h0"], output_final_state=True,
               use_qk_l2norm_in_kernel=True, cu_seqlens=cu)
    ro, rS, _ = fla_recurrence(d["q"], d["k"], d["v"], d["g"], d["beta"], None, d["h0"], True, cu)
    assert rel_err(o, ro) < F32 and rel_err(ht, rS) < F32
    assert np.array_equal(ht[1], d["h0"][1])


def test_varlen_torch_style_cu_seqlens_list_and_no_initial_state():
    d = make("gdn", 1, 6, seed=3)
    o, ht = fla.chunk_gated_delta_rule(d["q"], d["k"], d["v"], d["g"], d["beta"], output_final_state=True,
                                       use_qk_l2norm_in_kernel=True, cu_seqlens=[0, 2, 6])
    ro, rS, _ = fla_recurrence(d["q"], d["k"], d["v"], d["g"], d["beta"], None, None, True, [0, 2, 6])
    assert rel_err(o, ro) < F32 and rel_err(ht, rS) < F32


@pytest.mark.parametrize("bits", ["ml_dtypes", "uint16"])
@pytest.mark.parametrize("gate", ["gdn", "kda"])
def test_bf16_io(gate, bits):
    d = make(gate, 2, 9, seed=11)
    to = (lambda x: rs.bf16.to_bf16(x)) if bits == "uint16" else (lambda x: x.astype(BF16_NP))
    q, k, v = (to(d[n]) for n in ("q", "k", "v"))
    exact = {n: rs.bf16.from_bf16(x) for n, x in (("q", q), ("k", k), ("v", v))}
    g_bf16 = to(d["g"])  # FLA's gates may be bf16 too: used as float32
    o, ht = ops_of(gate)[1](q, k, v, g_bf16, d["beta"], initial_state=d["h0"], output_final_state=True,
                            use_qk_l2norm_in_kernel=True)
    assert o.dtype == q.dtype
    ro, rS, _ = fla_recurrence(exact["q"], exact["k"], exact["v"], rs.bf16.from_bf16(g_bf16), d["beta"], None,
                               d["h0"], True)
    assert rel_err(rs.bf16.from_bf16(o), ro) < BF16 and rel_err(ht, rS) < BF16


def test_gdn_with_gk_is_kda_and_exp2():
    d = make("kda", 2, 5, seed=5)
    g = make("gdn", 2, 5, seed=6)["g"]
    o, ht = fla.fused_recurrent_gated_delta_rule(d["q"], d["k"], d["v"], g=g, gk=d["g"], beta=d["beta"],
                                                 initial_state=d["h0"], output_final_state=True,
                                                 use_qk_l2norm_in_kernel=True)
    ro, rS, _ = fla_recurrence(d["q"], d["k"], d["v"], g[..., None] + d["g"], d["beta"], None, d["h0"], True)
    assert rel_err(o, ro) < F32 and rel_err(ht, rS) < F32
    o2, _ = fla.fused_recurrent_gated_delta_rule(d["q"], d["k"], d["v"], g=(g / np.log(2)).astype(np.float32),
                                                 beta=d["beta"], use_exp2=True, use_qk_l2norm_in_kernel=True)
    ro2, _, _ = fla_recurrence(d["q"], d["k"], d["v"], g, d["beta"], None, None, True)
    assert rel_err(o2, ro2) < F32


def test_defaults_no_decay_unit_beta():
    d = make("gdn", 1, 4, seed=9)
    o, _ = fla.fused_recurrent_gated_delta_rule(d["q"], d["k"], d["v"], use_qk_l2norm_in_kernel=True)
    ro, _, _ = fla_recurrence(d["q"], d["k"], d["v"], np.zeros((1, 4, 4)), np.ones((1, 4, 4)), None, None, True)
    assert rel_err(o, ro) < F32


@pytest.mark.parametrize("lower_bound", [None, -5.0])
@pytest.mark.parametrize("beta_in_kernel", [True, False])
@pytest.mark.parametrize("op", ["fused_recurrent", "chunk"])
def test_kda_gate_in_kernel(op, beta_in_kernel, lower_bound):
    """use_gate_in_kernel: g is raw, gate = -exp(A_log) softplus(g + dt_bias) (or the bounded
    gate); with use_beta_sigmoid_in_kernel too, replayssm's own gates run."""
    rng = np.random.default_rng(21)
    d = make("kda", 2, 6, seed=21)
    raw_g = rng.standard_normal(d["g"].shape).astype(np.float32)
    A_log = rng.uniform(-1.5, 0.5, 4).astype(np.float32)
    dt_bias = rng.uniform(-2, 0.5, 4 * 16).astype(np.float32)  # FLA's [HV * K]
    raw_b = rng.standard_normal(d["beta"].shape).astype(np.float32)
    beta_in = raw_b if beta_in_kernel else R.sigmoid(raw_b).astype(np.float32)
    fn = fla.fused_recurrent_kda if op == "fused_recurrent" else fla.chunk_kda
    o, ht = fn(d["q"], d["k"], d["v"], raw_g, beta_in, initial_state=d["h0"], output_final_state=True,
               use_qk_l2norm_in_kernel=True, use_gate_in_kernel=True, use_beta_sigmoid_in_kernel=beta_in_kernel,
               A_log=A_log, dt_bias=dt_bias, lower_bound=lower_bound, safe_gate=lower_bound is not None)
    g = R.kda_gate(raw_g, A_log, dt_bias.reshape(4, 16), lower_bound)
    ro, rS, _ = fla_recurrence(d["q"], d["k"], d["v"], g, R.sigmoid(raw_b), None, d["h0"], True)
    assert rel_err(o, ro) < F32 and rel_err(ht, rS) < F32


def test_gdn_gate_in_kernel_and_neg_eigval():
    rng = np.random.default_rng(22)
    d = make("gdn", 2, 6, seed=22)
    raw_g = rng.standard_normal(d["g"].shape).astype(np.float32)
    A_log, dt_bias = rng.uniform(-1.5, 0.5, 4).astype(np.float32), rng.uniform(-2, 0.5, 4).astype(np.float32)
    raw_b = rng.standard_normal(d["beta"].shape).astype(np.float32)
    o, _ = fla.chunk_gated_delta_rule(d["q"], d["k"], d["v"], raw_g, R.sigmoid(raw_b).astype(np.float32),
                                      use_qk_l2norm_in_kernel=True, use_gate_in_kernel=True, A_log=A_log,
                                      dt_bias=dt_bias)
    ro, _, _ = fla_recurrence(d["q"], d["k"], d["v"], R.gdn_gate(raw_g, A_log, dt_bias), R.sigmoid(raw_b), None,
                              None, True)
    assert rel_err(o, ro) < F32
    dk = make("kda", 2, 6, seed=23)
    o, _ = fla.fused_recurrent_kda(dk["q"], dk["k"], dk["v"], dk["g"], raw_b, use_qk_l2norm_in_kernel=True,
                                   use_beta_sigmoid_in_kernel=True, allow_neg_eigval=True)
    ro, _, _ = fla_recurrence(dk["q"], dk["k"], dk["v"], dk["g"], 2 * R.sigmoid(raw_b), None, None, True)
    assert rel_err(o, ro) < F32


# ---- vLLM's continuous batching: a state pool and ssm_state_indices --------------------------


def pool_of(h0_rows, P, slots, v_first, rng, dtype=np.float32):
    """A pool of P slots filled with noise, rows' K-first states h0_rows at `slots`."""
    pool = rng.standard_normal((P,) + h0_rows.shape[1:]) * 0.3
    for s, S in zip(slots, h0_rows):
        if s >= 0:
            pool[s] = S
    pool = vfirst(pool) if v_first else pool
    return rs._tensors.aligned_copy(np.ascontiguousarray(pool.astype(dtype)), 64)


@pytest.mark.parametrize("form", ["decode", "multi_token", "ragged", "k_first", "bf16_pool"])
@pytest.mark.parametrize("gate", ["gdn", "kda"])
def test_pool_in_place(gate, form):
    """Rows read pool[ssm_state_indices[n]], write their final state back there; a padding row
    (-1) reads and writes nothing and gets a zero output; the other slots stay bitwise."""
    rng = np.random.default_rng(31)
    slots = np.array([4, -1, 1])
    T = 1 if form == "decode" else 3
    cu = None
    if form == "ragged":
        d = make(gate, 1, 6, N=3, seed=31)
        cu = np.array([0, 2, 3, 6])
    else:
        d = make(gate, 3, T, seed=31)
    v_first = form != "k_first"
    dtype = np.float32 if form != "bf16_pool" else BF16_NP
    pool = pool_of(d["h0"], 7, slots, v_first, rng, dtype)
    before = pool.copy()
    h0 = np.stack([(vfirst(pool[s]) if v_first else pool[s]).astype(np.float64) for s in np.maximum(slots, 0)])
    o, ret = ops_of(gate)[0](d["q"], d["k"], d["v"], d["g"], d["beta"], initial_state=pool,
                             ssm_state_indices=slots, cu_seqlens=cu, use_qk_l2norm_in_kernel=True,
                             transpose_state_layout=None if v_first else False)
    assert ret is pool
    ro, rS, _ = fla_recurrence(d["q"], d["k"], d["v"], d["g"], d["beta"], None, h0, True, cu)
    tol = BF16 if form == "bf16_pool" else F32
    if cu is None:
        assert rel_err(o[[0, 2]], ro[[0, 2]]) < tol
        assert not o[1].any()
    else:
        keep = np.r_[0:2, 3:6]
        assert rel_err(o[0, keep], ro[0, keep]) < tol and not o[0, 2].any()  # row 1 (padding) is token 2
    after = pool.astype(np.float64)
    for n, s in enumerate(slots):
        if s >= 0:
            assert rel_err(vfirst(after[s]) if v_first else after[s], rS[n]) < tol
    untouched = [s for s in range(7) if s not in (4, 1)]
    assert np.array_equal(pool[untouched].view(np.uint8), before[untouched].view(np.uint8))


def test_pool_not_in_place_returns_every_tokens_state():
    rng = np.random.default_rng(32)
    d = make("gdn", 1, 5, N=2, seed=32)
    cu = np.array([0, 2, 5])
    pool = pool_of(d["h0"], 4, [3, 0], True, rng)
    before = pool.copy()
    o, states = fla.fused_recurrent_gated_delta_rule(d["q"], d["k"], d["v"], d["g"], d["beta"], initial_state=pool,
                                                     ssm_state_indices=np.array([3, 0]), inplace_final_state=False,
                                                     cu_seqlens=cu, use_qk_l2norm_in_kernel=True)
    assert np.array_equal(pool, before)
    ro, _, per_token = fla_recurrence(d["q"], d["k"], d["v"], d["g"], d["beta"], None, d["h0"], True, cu)
    assert states.shape == (5, 4, 32, 16)  # [total tokens, HV, V, K]: the pool's layout
    assert rel_err(o, ro) < F32
    assert rel_err(vfirst(states), np.concatenate(per_token)) < F32


def test_inplace_final_state_without_indices_updates_initial_state():
    d = make("kda", 2, 4, seed=33)
    h0 = d["h0"].copy()
    o, ret = fla.fused_recurrent_kda(d["q"], d["k"], d["v"], d["g"], d["beta"], initial_state=h0,
                                     inplace_final_state=True, use_qk_l2norm_in_kernel=True)
    ro, rS, _ = fla_recurrence(d["q"], d["k"], d["v"], d["g"], d["beta"], None, d["h0"], True)
    assert ret is h0 and rel_err(o, ro) < F32 and rel_err(h0, rS) < F32


@pytest.mark.parametrize("gate", ["gdn", "kda"])
def test_pool_per_token_slots_and_num_accepted_tokens(gate):
    """vLLM's speculative form: indices [N, T]; row n starts from slot indices[n, accepted-1]
    and writes its state after token t to indices[n, t] (-1: not stored)."""
    rng = np.random.default_rng(34)
    d = make(gate, 3, 3, seed=34)
    idx = np.array([[0, 1, 2], [3, 4, -1], [-1, 5, 6]])
    acc = np.array([2, 1, 3])  # start slots 1, 3, 6
    starts = [1, 3, 6]
    pool = pool_of(d["h0"], 8, starts, True, rng)
    before = pool.copy()
    o, ret = ops_of(gate)[0](d["q"], d["k"], d["v"], d["g"], d["beta"], initial_state=pool, ssm_state_indices=idx,
                             num_accepted_tokens=acc, use_qk_l2norm_in_kernel=True)
    ro, _, per_token = fla_recurrence(d["q"], d["k"], d["v"], d["g"], d["beta"], None, d["h0"], True)
    assert rel_err(o, ro) < F32
    for n in range(3):
        for t in range(3):
            if idx[n, t] >= 0:
                assert rel_err(vfirst(pool[idx[n, t]]), per_token[n][t]) < F32
    assert np.array_equal(pool[7], before[7])


# ---- SGLang's decode entry ---------------------------------------------------------------------


def sglang_inputs(gate, N, T=1, seed=41, HV=4, K=16):
    rng = np.random.default_rng(seed)
    kda = gate == "kda"
    d = make(gate, N, T, seed=seed)
    d["a"] = rng.standard_normal((N, T, HV, K) if kda else (N, T, HV)).astype(np.float32)
    d["b"] = rng.standard_normal((N, T, HV)).astype(np.float32)
    d["A_log"] = rng.uniform(-1.5, 0.5, HV).astype(np.float32)
    d["dt_bias"] = rng.uniform(-2, 0.5, HV * K if kda else HV).astype(np.float32)
    return d


def sglang_gates(gate, d, lower_bound=None, softplus_beta=1.0, threshold=20.0):
    x = d["a"].astype(np.float64) + (d["dt_bias"].reshape(4, 16) if gate == "kda" else d["dt_bias"])
    A = np.exp(d["A_log"].astype(np.float64))
    A = A[:, None] if gate == "kda" else A
    if lower_bound is not None:
        g = lower_bound * R.sigmoid(A * x)
    else:
        bx = softplus_beta * x
        g = -A * np.where(bx <= threshold, np.log1p(np.exp(np.minimum(bx, threshold))) / softplus_beta, x)
    return g, R.sigmoid(d["b"])


SGLANG_FORMS = [(g, f) for g in ("gdn", "kda") for f in ("packed_cu_seqlens", "batch", "flat_gates", "softplus_2")]


@pytest.mark.parametrize("gate,form", SGLANG_FORMS + [("kda", "lower_bound")])
def test_sglang_decode(gate, form):
    N = 3
    d = sglang_inputs(gate, N)
    rng = np.random.default_rng(42)
    slots = np.array([5, -1, 2])
    pool = pool_of(d["h0"], 6, slots, True, rng)
    before = pool.copy()
    h0 = np.stack([vfirst(pool[s]) for s in np.maximum(slots, 0)]).astype(np.float64)
    q, k, v, a, b = d["q"], d["k"], d["v"], d["a"], d["b"]
    cu = None
    if form in ("packed_cu_seqlens", "flat_gates"):  # SGLang's decode: [1, N, ...] with cu_seqlens, a [N, HV(*K)]
        q, k, v = (x.reshape((1, N) + x.shape[2:]) for x in (q, k, v))
        cu = np.arange(N + 1)
        if form == "flat_gates":
            a, b = a.reshape(N, -1), b.reshape(N, -1)
    sp_beta, thr = (2.0, 10.0) if form == "softplus_2" else (1.0, 20.0)
    lb = -5.0 if form == "lower_bound" else None
    o = fla.fused_sigmoid_gating_delta_rule_update(d["A_log"], a, d["dt_bias"], sp_beta, thr, q, k, v, b, pool,
                                                   slots, use_qk_l2norm_in_kernel=True, cu_seqlens=cu,
                                                   is_kda=gate == "kda", lower_bound=lb)
    g, beta = sglang_gates(gate, d, lb, sp_beta, thr)
    ro, rS, _ = fla_recurrence(d["q"], d["k"], d["v"], g, beta, None, h0, True)
    o = o.reshape(d["v"].shape)
    assert rel_err(o[[0, 2]], ro[[0, 2]]) < F32 and not o[1].any()
    assert rel_err(vfirst(pool[5]), rS[0]) < F32 and rel_err(vfirst(pool[2]), rS[2]) < F32
    for s in (0, 1, 3, 4):  # padding and unused slots: bitwise untouched
        assert np.array_equal(pool[s], before[s])


@pytest.mark.parametrize("gate", ["gdn", "kda"])
def test_sglang_verify_buffers_and_no_update(gate):
    """disable_state_update with intermediate_states_buffer: the pool is only read, every
    token's state goes to buffer[intermediate_state_indices[n], t]."""
    N, T = 2, 3
    d = sglang_inputs(gate, N, T, seed=43)
    pool = pool_of(d["h0"], 3, [2, 0], True, np.random.default_rng(43))
    before = pool.copy()
    buf = np.zeros((4, T, 4, 32, 16), np.float32)
    o = fla.fused_sigmoid_gating_delta_rule_update(d["A_log"], d["a"], d["dt_bias"], 1.0, 20.0, d["q"], d["k"],
                                                   d["v"], d["b"], pool, np.array([2, 0]),
                                                   use_qk_l2norm_in_kernel=True, is_kda=gate == "kda",
                                                   disable_state_update=True, intermediate_states_buffer=buf,
                                                   intermediate_state_indices=np.array([3, 1]))
    g, beta = sglang_gates(gate, d)
    ro, _, per_token = fla_recurrence(d["q"], d["k"], d["v"], g, beta, None, d["h0"], True)
    assert np.array_equal(pool, before)
    assert rel_err(o, ro) < F32
    assert rel_err(vfirst(buf[3]), per_token[0]) < F32 and rel_err(vfirst(buf[1]), per_token[1]) < F32
    assert not buf[0].any() and not buf[2].any()


def test_sglang_without_pool():
    d = sglang_inputs("gdn", 2, 2, seed=44)
    o = fla.fused_sigmoid_gating_delta_rule_update(d["A_log"], d["a"], d["dt_bias"], 1.0, 20.0, d["q"], d["k"],
                                                   d["v"], d["b"], None, None, use_qk_l2norm_in_kernel=True)
    g, beta = sglang_gates("gdn", d)
    ro, _, _ = fla_recurrence(d["q"], d["k"], d["v"], g, beta, None, None, True)
    assert rel_err(o, ro) < F32


# ---- ReplaySSM through the same call sites: RingCache -----------------------------------------


@pytest.mark.parametrize("gate", ["gdn", "kda"])
def test_ring_decode_matches_packed(gate):
    """Prefill 5 tokens, then 60 decode steps of one token (L = 4: a fold every 4 steps), once
    through a RingCache and once through the packed pool path: the same outputs within f32
    tolerance, both equal to FLA's recurrence; the cache's final states too."""
    N, P, steps = 3, 5, 60
    d = make(gate, N, 5 + steps, seed=51)
    slots = np.array([4, 0, 2])
    cache = fla.RingCache(P, 2, 16, 4, 32, gate=gate, ring_len=4)
    pool = np.zeros((P, 4, 32, 16), np.float32)
    fr = ops_of(gate)[0]
    pre = {n: np.ascontiguousarray(d[n][:, :5]) for n in ("q", "k", "v", "g", "beta")}
    o_ring, _ = fr(**pre, initial_state=d["h0"], ring_cache=cache, ssm_state_indices=slots,
                   use_qk_l2norm_in_kernel=True)
    pool[slots] = vfirst(d["h0"])
    o_pack, _ = fr(**pre, initial_state=pool, ssm_state_indices=slots, use_qk_l2norm_in_kernel=True)
    outs_ring, outs_pack = [o_ring], [o_pack]
    for t in range(5, 5 + steps):
        tok = {n: np.ascontiguousarray(d[n][:, t:t + 1]) for n in ("q", "k", "v", "g", "beta")}
        outs_ring.append(fr(**tok, ring_cache=cache, ssm_state_indices=slots, use_qk_l2norm_in_kernel=True)[0])
        outs_pack.append(fr(**tok, initial_state=pool, ssm_state_indices=slots, use_qk_l2norm_in_kernel=True)[0])
    o_ring, o_pack = np.concatenate(outs_ring, 1), np.concatenate(outs_pack, 1)
    ro, rS, _ = fla_recurrence(d["q"], d["k"], d["v"], d["g"], d["beta"], None, d["h0"], True)
    assert rel_err(o_ring, o_pack) < F32
    assert rel_err(o_ring, ro) < F32 and rel_err(o_pack, ro) < F32
    assert rel_err(cache.read(slots), rS) < F32 and rel_err(vfirst(pool[slots]), rS) < F32
    assert np.array_equal(cache.state.cursor[slots], np.full(3, (steps - 0) % 4))


@pytest.mark.parametrize("spikes", [False, True])
@pytest.mark.parametrize("layout", ["vk", "kv"])
@pytest.mark.parametrize("gate", ["gdn", "kda"])
def test_ring_verify_windows(gate, layout, spikes):
    """A speculative cache: windows of 3 tokens are verified, the next call's
    num_accepted_tokens keeps 3, 1, 2, ... of them (rejected tokens come again in the next
    window). Every window's outputs equal FLA's recurrence at those positions; the committed
    states equal the recurrence after the accepted tokens. With spikes, some tokens decay by
    1e4 (value head 0) and 300 (one channel of head 1): windows far past what pre-decayed KDA
    keys hold, taken as any other."""
    N, total, W = 2, 40, 3
    d = make(gate, N, total, seed=52)
    if spikes:
        d["g"] = np.array(d["g"])
        d["g"][:, 4::5, 0] = -1e4
        if gate == "kda":
            d["g"][:, 7::6, 1, 3] = -300.0
    slots = np.array([1, 0])
    cache = fla.RingCache(2, 2, 16, 4, 32, gate=gate, ring_len=8, speculative=True, state_layout=layout)
    assert cache.checkpoint.shape[2:] == ((32, 16) if layout == "vk" else (16, 32))
    fr = ops_of(gate)[0]
    ro, _, per_token = fla_recurrence(d["q"], d["k"], d["v"], d["g"], d["beta"], None, d["h0"], True)
    pos = np.zeros(N, np.int64)
    pattern = [[3, 1], [1, 2], [2, 3], [3, 3], [1, 1]]
    acc, i, first = None, 0, True
    while np.all(pos + W <= total):
        win = {n: np.stack([d[n][r, pos[r]:pos[r] + W] for r in range(N)]) for n in ("q", "k", "v", "g", "beta")}
        o, _ = fr(**win, ring_cache=cache, ssm_state_indices=slots, num_accepted_tokens=acc,
                  initial_state=d["h0"] if first else None, use_qk_l2norm_in_kernel=True)
        first = False
        for r in range(N):
            assert rel_err(o[r], ro[r, pos[r]:pos[r] + W]) < F32
        assert cache.pending() == {1: W, 0: W}
        acc = np.array(pattern[i % len(pattern)])
        pos += acc
        i += 1
    cache.commit(slots, acc)  # the last window's decision, without another call
    assert cache.pending() == {}
    states = cache.read(slots)
    for r in range(N):
        assert rel_err(states[r], per_token[r][pos[r] - 1]) < F32


def test_ring_verify_commits_whole_windows_by_default_and_output_final_state():
    d = make("gdn", 2, 6, seed=53)
    cache = fla.RingCache(2, 2, 16, 4, 32, ring_len=4, speculative=True)
    fr = fla.fused_recurrent_gated_delta_rule
    kw = dict(use_qk_l2norm_in_kernel=True, ring_cache=cache)
    first = {n: np.ascontiguousarray(d[n][:, :3]) for n in ("q", "k", "v", "g", "beta")}
    rest = {n: np.ascontiguousarray(d[n][:, 3:]) for n in ("q", "k", "v", "g", "beta")}
    o1, _ = fr(**first, initial_state=d["h0"], **kw)
    o2, ht = fr(**rest, output_final_state=True, **kw)  # commits the first window whole
    ro, rS, _ = fla_recurrence(d["q"], d["k"], d["v"], d["g"], d["beta"], None, d["h0"], True)
    assert rel_err(np.concatenate([o1, o2], 1), ro) < F32 and rel_err(ht, rS) < F32
    assert cache.pending() == {}


def test_ring_prefill_ragged_and_load_read():
    """Ragged rows through a cache are a prefill (rows without ssm_state_indices are slots 0..N-1)."""
    d = make("kda", 1, 9, N=3, seed=54)
    cu = np.array([0, 4, 5, 9])
    cache = fla.RingCache(6, 2, 16, 4, 32, gate="kda", ring_len=4)
    o, ht = fla.chunk_kda(d["q"], d["k"], d["v"], d["g"], d["beta"], initial_state=d["h0"], cu_seqlens=cu,
                          output_final_state=True, use_qk_l2norm_in_kernel=True, ring_cache=cache)
    ro, rS, _ = fla_recurrence(d["q"], d["k"], d["v"], d["g"], d["beta"], None, d["h0"], True, cu)
    assert rel_err(o, ro) < F32 and rel_err(ht, rS) < F32
    assert rel_err(cache.read([0, 1, 2]), rS) < F32
    cache.load([4], rS[:1])
    assert rel_err(cache.read([4], state_v_first=True), vfirst(rS[:1])) < F32
    kv = fla.RingCache(6, 2, 16, 4, 32, gate="kda", ring_len=4, state_layout="kv")
    kv.load([1], vfirst(rS[:1]), state_v_first=True)  # transposed on the way in and out
    np.testing.assert_array_equal(kv.checkpoint[1], rS[0].astype(np.float32))
    assert np.array_equal(kv.read([1]), rS[:1].astype(np.float32))
    cache.reset([4])
    assert not cache.read([4]).any()


@pytest.mark.parametrize("gate", ["gdn", "kda"])
def test_ring_through_sglang_entry(gate):
    """SGLang's pool adopted by a RingCache: decode with ring_cache= equals the plain pool path."""
    N, steps = 2, 20
    d = sglang_inputs(gate, N, steps, seed=55)
    pool_a = pool_of(d["h0"], 3, [0, 2], True, np.random.default_rng(55))
    pool_b = pool_a.copy()
    cache = fla.RingCache(3, 2, 16, 4, 32, gate=gate, ring_len=4, checkpoint=pool_b)
    assert cache.checkpoint is pool_b
    slots = np.array([0, 2])
    for t in range(steps):
        tok = {n: np.ascontiguousarray(d[n][:, t:t + 1]) for n in ("q", "k", "v", "a", "b")}
        args = (d["A_log"], tok["a"], d["dt_bias"], 1.0, 20.0, tok["q"], tok["k"], tok["v"], tok["b"])
        oa = fla.fused_sigmoid_gating_delta_rule_update(*args, pool_a, slots, use_qk_l2norm_in_kernel=True,
                                                        is_kda=gate == "kda")
        ob = fla.fused_sigmoid_gating_delta_rule_update(*args, pool_b, slots, use_qk_l2norm_in_kernel=True,
                                                        is_kda=gate == "kda", ring_cache=cache)
        assert rel_err(ob, oa) < F32
    assert rel_err(cache.read(slots, state_v_first=True), pool_a[slots]) < F32


# ---- the golden vectors through the fla entry points -------------------------------------------


@pytest.mark.skipif(not GOLDEN, reason="golden vectors not found (../shared/vectors/fla-reference.txt beside the "
                                       "checkout, or $REPLAYSSM_VECTORS)")
@pytest.mark.parametrize("entry", ["sglang_pool", "fused_recurrent", "chunk", "ring_decode"])
@pytest.mark.parametrize("name", [c["name"] for c in CASES] or ["none"])
def test_golden(name, entry):
    c = next(x for x in CASES if x["name"] == name)
    kda, B, T, HV, K = c["gate"] == "kda", c["B"], c["T"], c["HV"], c["K"]
    f32 = lambda x: np.ascontiguousarray(x, dtype=np.float32)  # noqa: E731
    q, k, v, a, b = (f32(c[n]) for n in ("q", "k", "v", "a", "b"))
    A_log, dt_bias = f32(c["A_log"]), f32(c["dt_bias"])
    lb = c["lower_bound"]
    common = dict(use_qk_l2norm_in_kernel=c["l2norm"], scale=c["scale"])
    if entry in ("sglang_pool", "ring_decode"):
        pool = f32(c["initial_state"])  # the vectors' states are V-first, as SGLang's pool
        slots = np.arange(B)
        dtb = dt_bias.reshape(-1)
        if entry == "sglang_pool":
            o = fla.fused_sigmoid_gating_delta_rule_update(A_log, a, dtb, 1.0, 20.0, q, k, v, b, pool, slots,
                                                           is_kda=kda, lower_bound=lb, **common)
            S = pool
        else:
            cache = fla.RingCache(B, c["H"], K, HV, c["V"], gate=c["gate"], ring_len=4, checkpoint=pool)
            outs = []
            for t in range(T):
                tok = [np.ascontiguousarray(x[:, t:t + 1]) for x in (q, k, v, a, b)]
                outs.append(fla.fused_sigmoid_gating_delta_rule_update(
                    A_log, tok[3], dtb, 1.0, 20.0, tok[0], tok[1], tok[2], tok[4], pool, slots, is_kda=kda,
                    lower_bound=lb, ring_cache=cache, **common))
            o, S = np.concatenate(outs, 1), cache.read(slots, state_v_first=True)
    else:
        g = R.kda_gate(c["a"], c["A_log"], c["dt_bias"], lb) if kda else R.gdn_gate(c["a"], c["A_log"], c["dt_bias"])
        fn = ops_of(c["gate"])[entry == "chunk"]
        o, ht = fn(q, k, v, f32(g), f32(R.sigmoid(c["b"])), initial_state=vfirst(c["initial_state"]),
                   output_final_state=True, **common)
        S = vfirst(ht)
    assert rel_err(o, c["o"]) < F32, "o"
    assert rel_err(S, c["final_state"]) < F32, "final_state"


# ---- what replayssm cannot honour raises, naming the argument -----------------------------------


def _seq_args(gate="gdn", B=1, T=2):
    d = make(gate, B, T, seed=61)
    return d, (d["q"], d["k"], d["v"], d["g"], d["beta"])


def _errors():
    d, args = _seq_args()
    _, kargs = _seq_args("kda")
    q64 = d["q"].astype(np.float64)
    f16 = d["q"].astype(np.float16)
    fr, ch = fla.fused_recurrent_gated_delta_rule, fla.chunk_gated_delta_rule
    pool = np.zeros((3, 4, 32, 16), np.float32)
    s = sglang_inputs("gdn", 1)
    sg = (s["A_log"], s["a"], s["dt_bias"], 1.0, 20.0, s["q"], s["k"], s["v"], s["b"], pool, np.array([0]))
    return [
        ("head_first", NotImplementedError, lambda: fr(*args, head_first=True)),
        ("reverse", NotImplementedError, lambda: fr(*args, reverse=True)),
        ("gv", NotImplementedError, lambda: fr(*args[:4], gv=np.zeros((1, 2, 4, 32), np.float32), beta=args[4])),
        ("cp_context", NotImplementedError, lambda: ch(*args, cp_context=object())),
        ("return_intermediate_states", NotImplementedError,
         lambda: fla.chunk_kda(*kargs, return_intermediate_states=True)),
        ("beta", NotImplementedError, lambda: fr(*args[:4], beta=np.ones((1, 2, 4, 32), np.float32))),
        ("q", TypeError, lambda: fr(q64, q64, d["v"].astype(np.float64), d["g"], d["beta"])),
        ("q", TypeError, lambda: fr(f16, f16, d["v"].astype(np.float16), d["g"], d["beta"])),
        ("v", TypeError, lambda: fr(d["q"], d["k"], d["v"].astype(np.float64), d["g"], d["beta"])),
        ("foo", TypeError, lambda: fr(*args, foo=1)),
        ("cu_seqlens", ValueError, lambda: fr(*_seq_args(B=2)[1], cu_seqlens=[0, 1, 2])),
        ("initial_state", ValueError, lambda: fr(*args, initial_state=np.zeros((2, 4, 16, 32), np.float32))),
        ("initial_state", ValueError, lambda: fr(*args, ssm_state_indices=np.array([0]))),
        ("num_accepted_tokens", ValueError,
         lambda: fr(*args, initial_state=pool, ssm_state_indices=np.array([0]), num_accepted_tokens=[1])),
        ("ssm_state_indices", ValueError, lambda: fr(*args, initial_state=pool, ssm_state_indices=np.array([5]))),
        ("scale", ValueError, lambda: fr(*args, scale=-1.0)),
        ("g", ValueError, lambda: fr(d["q"], d["k"], d["v"], np.zeros((1, 2, 4, 16), np.float32), d["beta"])),
        ("state_v_first", ValueError, lambda: fr(*args, transpose_state_layout=True, state_v_first=False)),
        ("allow_neg_eigval", ValueError, lambda: fla.fused_recurrent_kda(*kargs, allow_neg_eigval=True)),
        ("A_log", ValueError, lambda: fla.chunk_kda(*kargs, use_gate_in_kernel=True)),
        ("ssm_state_indices", ValueError,
         lambda: fr(*args, ring_cache=fla.RingCache(2, 2, 16, 4, 32), ssm_state_indices=np.zeros((1, 2), int))),
        ("ring_cache", ValueError, lambda: fr(*args, ring_cache=fla.RingCache(2, 2, 16, 4, 32, gate="kda"))),
        ("retrieve_parent_token", NotImplementedError,
         lambda: fla.fused_sigmoid_gating_delta_rule_update(*sg, retrieve_parent_token=np.zeros((1, 1), int))),
        ("cache_ring", NotImplementedError, lambda: fla.fused_sigmoid_gating_delta_rule_update(*sg, cache_ring=True)),
        ("lower_bound", NotImplementedError,
         lambda: fla.fused_sigmoid_gating_delta_rule_update(*sg, lower_bound=-5.0)),
        ("initial_state_source", ValueError,
         lambda: fla.fused_sigmoid_gating_delta_rule_update(*sg[:9], np.zeros((3, 4, 16, 32), np.float32), sg[10])),
    ]


ERRORS = _errors()


@pytest.mark.parametrize("i", range(len(ERRORS)), ids=[f"{e[0]}-{i}" for i, e in enumerate(ERRORS)])
def test_unsupported_argument_raises_with_its_name(i):
    name, exc, call = ERRORS[i]
    with pytest.raises(exc) as info:
        call()
    assert name in str(info.value), str(info.value)


def test_kernel_choices_are_accepted():
    d, args = _seq_args("kda", T=3)
    o1, _ = fla.chunk_kda(*args, use_qk_l2norm_in_kernel=True, chunk_size=64, cu_seqlens_cpu=None,
                          disable_recompute=True, head_first=False, chunk_indices=None)
    o2, _ = fla.chunk_kda(*args, use_qk_l2norm_in_kernel=True)
    assert np.array_equal(o1, o2)


# ---- CPU torch tensors -------------------------------------------------------------------------


def test_torch_cpu_tensors():
    torch = pytest.importorskip("torch", reason="torch is not installed: the CPU torch tensor test is skipped")
    d = make("kda", 1, 7, N=2, seed=71)
    cu = torch.tensor([0, 3, 7], dtype=torch.long)
    T = {n: torch.from_numpy(x.copy()) for n, x in d.items()}
    o, ht = fla.chunk_kda(T["q"], T["k"], T["v"], T["g"], T["beta"], initial_state=T["h0"], output_final_state=True,
                          use_qk_l2norm_in_kernel=True, cu_seqlens=cu)
    assert isinstance(o, torch.Tensor) and isinstance(ht, torch.Tensor) and ht.dtype == torch.float32
    ro, rS, _ = fla_recurrence(d["q"], d["k"], d["v"], d["g"], d["beta"], None, d["h0"], True, [0, 3, 7])
    assert rel_err(o.numpy(), ro) < F32 and rel_err(ht.numpy(), rS) < F32
    ob, _ = fla.chunk_kda(T["q"].bfloat16(), T["k"].bfloat16(), T["v"].bfloat16(), T["g"], T["beta"],
                          initial_state=T["h0"], use_qk_l2norm_in_kernel=True, cu_seqlens=cu)
    assert ob.dtype == torch.bfloat16 and rel_err(ob.float().numpy(), ro) < BF16
    # a pool of torch tensors, updated in place; and a ring cache adopting it
    s = sglang_inputs("gdn", 2, seed=72)
    pool = torch.zeros(3, 4, 32, 16)
    St = {n: torch.from_numpy(x.copy()) for n, x in s.items()}
    args = (St["A_log"], St["a"], St["dt_bias"], 1.0, 20.0, St["q"], St["k"], St["v"], St["b"])
    o = fla.fused_sigmoid_gating_delta_rule_update(*args, pool, torch.tensor([2, 0]), use_qk_l2norm_in_kernel=True)
    g, beta = sglang_gates("gdn", s)
    ro, rS, _ = fla_recurrence(s["q"], s["k"], s["v"], g, beta, None, None, True)
    assert rel_err(o.numpy(), ro) < F32 and rel_err(vfirst(pool[[2, 0]].numpy()), rS) < F32
    cache = fla.RingCache(3, 2, 16, 4, 32, checkpoint=torch.zeros(3, 4, 32, 16))
    oc = fla.fused_sigmoid_gating_delta_rule_update(*args, cache.checkpoint, torch.tensor([2, 0]),
                                                    use_qk_l2norm_in_kernel=True, ring_cache=cache)
    assert rel_err(oc.numpy(), ro) < F32 and rel_err(cache.read([2, 0]).numpy(), rS) < F32
    with pytest.raises(NotImplementedError, match="gradients"):
        fla.fused_recurrent_gated_delta_rule(T["q"].requires_grad_(), T["k"], T["v"][:1, :7], T["g"][..., 0],
                                             T["beta"])
