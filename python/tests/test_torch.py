"""torch tensors: CPU tensors on the host devices, CUDA tensors on the CUDA device (current stream),
and the torch.library custom ops. Skipped without torch (and without a GPU for the CUDA tests)."""
import numpy as np
import pytest

import replayssm as rs

torch = pytest.importorskip("torch", reason="torch is not installed")
from replayssm import torch_ops  # noqa: E402

cuda = pytest.mark.skipif(not (torch.cuda.is_available() and rs.cuda_available()),
                          reason="needs a CUDA GPU, torch with CUDA and a CUDA build of libreplayssm")


def torch_recurrence(q, k, v, g, beta, S, scale):
    """Plain torch float64 recurrence (GDN g [B,T,HV] or KDA g [B,T,HV,K]); S [B,HV,V,K]."""
    q, k, v, g, beta, S = (x.double() for x in (q, k, v, g, beta, S))
    group = v.shape[2] // q.shape[2]
    q = q / torch.sqrt((q * q).sum(-1, keepdim=True) + 1e-6)
    k = k / torch.sqrt((k * k).sum(-1, keepdim=True) + 1e-6)
    q, k = (q * scale).repeat_interleave(group, 2), k.repeat_interleave(group, 2)
    o = []
    for t in range(q.shape[1]):
        a = g[:, t].exp()
        S = S * (a[:, :, None, :] if a.dim() == 3 else a[:, :, None, None])
        u = beta[:, t, :, None] * (v[:, t] - torch.einsum("bhvk,bhk->bhv", S, k[:, t]))
        S = S + u[..., None] * k[:, t, :, None, :]
        o.append(torch.einsum("bhvk,bhk->bhv", S, q[:, t]))
    return torch.stack(o, 1), S


def inputs(gate, device, B=2, T=6, H=2, HV=4, K=16, V=16, seed=0):
    gen = torch.Generator().manual_seed(seed)
    r = lambda *s: torch.randn(*s, generator=gen)  # noqa: E731
    d = dict(q=r(B, T, H, K), k=r(B, T, H, K), v=r(B, T, HV, V), a=r(B, T, HV, K) if gate == "kda" else r(B, T, HV),
             b=r(B, T, HV), A_log=torch.rand(HV, generator=gen) - 1, dt_bias=(torch.rand(HV, K, generator=gen) if gate == "kda" else torch.rand(HV, generator=gen)) - 1)
    return {n: x.float().to(device) for n, x in d.items()}


def gates(gate, d):
    x = d["a"].double() + d["dt_bias"].double()
    A = d["A_log"].double().exp()
    g = -(A[:, None] if gate == "kda" else A) * torch.nn.functional.softplus(x, threshold=20)
    return g, torch.sigmoid(d["b"].double())


def run(ctx, gate, device, custom_op=False):
    layer = rs.Layer(gate=gate, H=2, HV=4, K=16, V=16, ring_len=4)
    d = inputs(gate, device)
    st = rs.State.allocate(layer, 3, device)
    if device == "cpu":  # host: torch CPU views of the numpy-backed state (the custom ops take tensors)
        st = rs.State(layer, **{n: torch.from_numpy(t) for n, t in st.tensors().items()})
    slot = torch.tensor([2, 0], dtype=torch.int32, device=device)
    outs = []
    for t in range(6):
        kw = {n: d[n][:, t].contiguous() for n in ("q", "k", "v", "a", "b")}
        if custom_op:
            o = torch_ops.decode_replay(layer, st, A_log=d["A_log"], dt_bias=d["dt_bias"], slot=slot,
                                        backend=ctx.device, **kw)
            torch_ops.advance(layer, st, slot, backend=ctx.device)
        else:
            o = rs.decode_replay(ctx, layer, st, A_log=d["A_log"], dt_bias=d["dt_bias"], slot=slot, **kw)
            rs.advance(ctx, layer, st, slot)
        outs.append(o)
    o = torch.stack(outs, 1)
    g, beta = gates(gate, d)
    ro, _ = torch_recurrence(d["q"], d["k"], d["v"], g, beta, torch.zeros(2, 4, 16, 16, dtype=torch.float64,
                                                                             device=device), layer.effective_scale)
    err = ((o.double() - ro).abs().max() / ro.abs().max()).item()
    assert err < 2e-5, err


def ragged_prefill(ctx, gate, device):
    """The prefill custom op on ragged rows (cu_seqlens) from zero states against the plain torch
    recurrence of each row alone: outputs and final states."""
    layer = rs.Layer(gate=gate, H=2, HV=4, K=16, V=16, ring_len=4)
    d = inputs(gate, device, B=1, T=12, seed=3)
    st = rs.State.allocate(layer, 3, device)
    if device == "cpu":
        st = rs.State(layer, **{n: torch.from_numpy(t) for n, t in st.tensors().items()})
    cu_host = [0, 5, 6, 12]
    cu = torch.tensor(cu_host, dtype=torch.int32, device=device)
    slot = torch.tensor([2, 0, 1], dtype=torch.int32, device=device)
    o = torch_ops.prefill(layer, st, d["q"], d["k"], d["v"], d["a"], d["b"], d["A_log"], d["dt_bias"], slot=slot,
                          cu_seqlens=cu, max_seqlen=6, backend=ctx.device)
    assert o.shape == d["v"].shape
    g, beta = gates(gate, d)
    for row, s in enumerate([2, 0, 1]):
        t0, t1 = cu_host[row], cu_host[row + 1]
        S0 = torch.zeros(1, 4, 16, 16, dtype=torch.float64, device=device)
        ro, rS = torch_recurrence(d["q"][:, t0:t1], d["k"][:, t0:t1], d["v"][:, t0:t1], g[:, t0:t1], beta[:, t0:t1],
                                  S0, layer.effective_scale)
        eo = ((o[:, t0:t1].double() - ro).abs().max() / ro.abs().max()).item()
        es = ((st.checkpoint[s].double() - rS[0]).abs().max() / rS.abs().max()).item()
        assert eo < 2e-5 and es < 2e-5, (row, eo, es)


@pytest.mark.skipif(not torch_ops.AVAILABLE, reason="torch.library.custom_op needs torch >= 2.4")
@pytest.mark.parametrize("gate", ["gdn", "kda"])
def test_custom_op_ragged_prefill_on_the_reference(gate):
    ragged_prefill(rs.Context("reference"), gate, "cpu")


@cuda
@pytest.mark.skipif(not torch_ops.AVAILABLE, reason="torch.library.custom_op needs torch >= 2.4")
@pytest.mark.parametrize("gate", ["gdn", "kda"])
def test_cuda_custom_op_ragged_prefill(gate):
    ragged_prefill(rs.Context("cuda", device_ordinal=torch.cuda.current_device()), gate, "cuda")


@pytest.mark.parametrize("gate", ["gdn", "kda"])
def test_torch_cpu_tensors_on_the_reference(gate):
    run(rs.Context("reference"), gate, "cpu")


@pytest.mark.skipif(not torch_ops.AVAILABLE, reason="torch.library.custom_op needs torch >= 2.4")
@pytest.mark.parametrize("gate", ["gdn", "kda"])
def test_custom_ops_on_the_reference(gate):
    run(rs.Context("reference"), gate, "cpu", custom_op=True)


@pytest.mark.skipif(not torch_ops.AVAILABLE, reason="torch.library.custom_op needs torch >= 2.4")
def test_custom_op_schemas_declare_mutation():
    schema = str(torch.ops.replayssm.decode_replay.default._schema)
    assert "Tensor(a" in schema and "!)" in schema
    assert "!" in str(torch.ops.replayssm.advance.default._schema)


@cuda
@pytest.mark.parametrize("gate", ["gdn", "kda"])
def test_cuda_tensors_on_the_current_stream(gate):
    ctx = rs.Context("cuda", device_ordinal=torch.cuda.current_device())
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        run(ctx, gate, "cuda")
    torch.cuda.synchronize()
    ctx.check_device_errors()


@cuda
@pytest.mark.skipif(not torch_ops.AVAILABLE, reason="torch.library.custom_op needs torch >= 2.4")
def test_cuda_custom_ops():
    run(rs.Context("cuda", device_ordinal=torch.cuda.current_device()), "gdn", "cuda", custom_op=True)


def layer_step(layer, st, d, slot, t, backend):
    """One decode step of a layer through the custom ops: replay decode, then the cursor move."""
    kw = {n: d[n][:, t].contiguous() for n in ("q", "k", "v", "a", "b")}
    o = torch_ops.decode_replay(layer, st, A_log=d["A_log"], dt_bias=d["dt_bias"], slot=slot, backend=backend, **kw)
    torch_ops.advance(layer, st, slot, backend=backend)
    return o


@pytest.mark.skipif(not torch_ops.AVAILABLE, reason="torch.library.custom_op needs torch >= 2.4")
@pytest.mark.parametrize("gate", ["gdn", "kda"])
def test_torch_compile_fullgraph_traces_the_custom_ops(gate):
    """torch.compile(fullgraph=True) traces a step that calls the ops (their fake implementations
    give the shapes; aot_eager runs the traced graph without a C++ toolchain), and the compiled
    step gives the eager step's outputs and state."""
    layer = rs.Layer(gate=gate, H=2, HV=4, K=16, V=16, ring_len=4)
    d = inputs(gate, "cpu")
    slot = torch.tensor([2, 0], dtype=torch.int32)
    states = []
    for _ in range(2):
        st = rs.State.allocate(layer, 3, "cpu")
        states.append(rs.State(layer, **{n: torch.from_numpy(t) for n, t in st.tensors().items()}))

    spec = layer.spec()

    def step(q, k, v, a, b, checkpoint, ring_u, ring_k, ring_g, ring_base, cursor):
        """A layer's decode as a model would write it: the ops on its own tensors."""
        o = torch.ops.replayssm.decode_replay(q, k, v, a, b, d["A_log"], d["dt_bias"], None, None, checkpoint, ring_u,
                                              ring_k, ring_g, ring_base, cursor, slot, None, spec, "reference")
        torch.ops.replayssm.advance(cursor, slot, None, spec, "reference")
        return o * 1.0

    torch._dynamo.reset()
    compiled = torch.compile(step, fullgraph=True, backend="aot_eager")
    names = ("checkpoint", "ring_u", "ring_k", "ring_g", "ring_base", "cursor")
    for t in range(6):
        x = [d[n][:, t].contiguous() for n in ("q", "k", "v", "a", "b")]
        ea = step(*x, *[states[0].tensors()[n] for n in names])
        co = compiled(*x, *[states[1].tensors()[n] for n in names])
        assert torch.equal(ea, co), t
    for n, x in states[0].tensors().items():
        assert torch.equal(x, states[1].tensors()[n]), n


@cuda
@pytest.mark.skipif(not torch_ops.AVAILABLE, reason="torch.library.custom_op needs torch >= 2.4")
@pytest.mark.parametrize("gate", ["gdn", "kda"])
def test_cuda_graph_capture_on_the_current_stream(gate):
    """A decode step captured in a torch CUDA graph (the ops enqueue on torch's current stream,
    the capture stream) and replayed gives the eager steps' outputs bit for bit."""
    layer = rs.Layer(gate=gate, H=2, HV=4, K=128, V=128, ring_len=4)
    dev = "cuda"
    d = inputs(gate, dev, K=128, V=128, T=9)
    slot = torch.tensor([2, 0], dtype=torch.int32, device=dev)
    backend = "cuda"
    eager, graphed = rs.State.allocate(layer, 3, dev), rs.State.allocate(layer, 3, dev)
    ref = [layer_step(layer, eager, d, slot, t, backend).clone() for t in range(9)]
    x = {n: d[n][:, 0].clone() for n in ("q", "k", "v", "a", "b")}
    static = dict(d, **{n: x[n][:, None] for n in x})
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.stream(side), torch.cuda.graph(graph):
        out = layer_step(layer, graphed, static, slot, 0, backend)
    for t in range(9):
        for n in x:
            x[n].copy_(d[n][:, t])
        graph.replay()
        torch.cuda.synchronize()
        assert torch.equal(out, ref[t]), t
    for n, t in eager.tensors().items():
        assert torch.equal(t, graphed.tensors()[n]), n
