"""Plain numpy float64 implementation of the layers (the tests' oracle in Python).

FLA's semantics: gates g = -exp(A_log) * softplus(a + dt_bias) (softplus threshold 20) or
the KDA safe gate lower_bound * sigmoid(exp(A_log) * (a + dt_bias)); beta = sigmoid(b);
q, k L2-normalised as x / sqrt(sum x^2 + 1e-6), then q *= scale; value head hv reads key
head hv // (HV / H). Per token (alpha = exp(g), scalar for GDN, K-vector for KDA):

    u_t = beta_t (v_t - S_{t-1} diag(alpha_t) k_t)
    S_t = S_{t-1} diag(alpha_t) + u_t k_t^T          S is [V, K] per value head
    o_t = S_t q_t
"""
from __future__ import annotations

import numpy as np

L2NORM_EPS = 1e-6
SOFTPLUS_THRESHOLD = 20.0


def softplus(x):
    x = np.asarray(x, dtype=np.float64)
    return np.where(x > SOFTPLUS_THRESHOLD, x, np.log1p(np.exp(np.minimum(x, SOFTPLUS_THRESHOLD))))


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-np.asarray(x, dtype=np.float64)))


def l2norm(x, eps: float = L2NORM_EPS):
    x = np.asarray(x, dtype=np.float64)
    return x / np.sqrt(np.sum(x * x, axis=-1, keepdims=True) + eps)


def gdn_gate(a, A_log, dt_bias):
    """a [..., HV], A_log [HV], dt_bias [HV] -> g [..., HV]."""
    return -np.exp(np.asarray(A_log, np.float64)) * softplus(np.asarray(a, np.float64) + dt_bias)


def kda_gate(a, A_log, dt_bias, lower_bound=None):
    """a [..., HV, K], A_log [HV], dt_bias [HV, K] -> g [..., HV, K]."""
    a = np.asarray(a, np.float64)
    A = np.exp(np.asarray(A_log, np.float64))[:, None]
    x = a + np.asarray(dt_bias, np.float64)
    if lower_bound is not None:
        return lower_bound * sigmoid(A * x)
    return -A * softplus(x)


def gates(gate, a, b, A_log, dt_bias, lower_bound=None):
    """Raw gate inputs -> (g, beta) for gate "gdn" or "kda"."""
    g = gdn_gate(a, A_log, dt_bias) if gate == "gdn" else kda_gate(a, A_log, dt_bias, lower_bound)
    return g, sigmoid(b)


def recurrent(q, k, v, g, beta, initial_state=None, scale=None, qk_l2norm=True):
    """The packed recurrence over T tokens, float64.

    q, k [B, T, H, K]; v [B, T, HV, V]; g [B, T, HV] (GDN) or [B, T, HV, K] (KDA) log-gates;
    beta [B, T, HV]; initial_state [B, HV, V, K] (None = zeros); scale None = K^-0.5.
    Returns o [B, T, HV, V] and final_state [B, HV, V, K]."""
    q, k, v, g, beta = (np.asarray(x, np.float64) for x in (q, k, v, g, beta))
    B, T, H, K = q.shape
    HV, V = v.shape[2], v.shape[3]
    group = HV // H
    if qk_l2norm:
        q, k = l2norm(q), l2norm(k)
    q = q * (K ** -0.5 if scale is None or scale == 0 else scale)
    q = np.repeat(q, group, axis=2)  # [B, T, HV, K]
    k = np.repeat(k, group, axis=2)
    S = np.zeros((B, HV, V, K)) if initial_state is None else np.array(initial_state, np.float64)
    o = np.zeros((B, T, HV, V))
    kda = g.ndim == 4
    for t in range(T):
        alpha = np.exp(g[:, t])  # [B, HV] or [B, HV, K]
        alpha = alpha[:, :, None, :] if kda else alpha[:, :, None, None]
        S = S * alpha
        kt = k[:, t]  # [B, HV, K]
        u = beta[:, t, :, None] * (v[:, t] - np.einsum("bhvk,bhk->bhv", S, kt))
        S = S + u[..., None] * kt[:, :, None, :]
        o[:, t] = np.einsum("bhvk,bhk->bhv", S, q[:, t])
    return o, S


def run_layer(gate, q, k, v, a, b, A_log, dt_bias, initial_state=None, scale=None, qk_l2norm=True,
              lower_bound=None):
    """Raw inputs -> (o, final_state): gates() then recurrent()."""
    g, beta = gates(gate, a, b, A_log, dt_bias, lower_bound)
    return recurrent(q, k, v, g, beta, initial_state, scale, qk_l2norm)


def random_inputs(rng, gate, B, T, H, HV, K, V, dtype=np.float32, gate_scale=1.0):
    """Realistic random raw inputs (design.md: q, k of unit-ish size, g in [-20, 0), beta in [0, 1]).
    Returns a dict q, k, v, a, b, A_log, dt_bias (A_log, dt_bias always float32)."""
    kda = gate == "kda"
    d = dict(
        q=rng.standard_normal((B, T, H, K)),
        k=rng.standard_normal((B, T, H, K)),
        v=rng.standard_normal((B, T, HV, V)),
        a=rng.standard_normal((B, T, HV, K) if kda else (B, T, HV)) * gate_scale,
        b=rng.standard_normal((B, T, HV)),
    )
    d = {n: x.astype(dtype) for n, x in d.items()}
    d["A_log"] = rng.uniform(-1.5, 0.5, HV).astype(np.float32)
    d["dt_bias"] = rng.uniform(-2.0, 0.5, (HV, K) if kda else HV).astype(np.float32)
    return d
