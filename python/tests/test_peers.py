"""bench/peers.py without a GPU: its inputs, its replayssm kernels on the CPU back end and its
float64 error measurement, so that the benchmark's own code keeps working between GPU runs.
Skipped without torch."""
import importlib.util
import os

import pytest

torch = pytest.importorskip("torch", reason="torch is not installed")

PEERS = os.path.join(os.path.dirname(__file__), "..", "..", "bench", "peers.py")


@pytest.fixture(scope="module")
def peers():
    spec = importlib.util.spec_from_file_location("peers", PEERS)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    mod.DEV = "cpu"
    return mod


@pytest.mark.parametrize("model", ["qwen3-next", "kimi-linear"])
def test_replayssm_error_runs_on_the_cpu(peers, model):
    gate, H, HV = peers.MODELS[model]
    packed = peers.f64_error(peers.ReplaySSM(False), gate, H, HV, seed=3)
    replay = peers.f64_error(peers.ReplaySSM(True), gate, H, HV, seed=3)
    assert packed < 1e-6  # float32 state and io
    assert replay < 5e-3  # its bf16 ring


@pytest.mark.parametrize("model", ["qwen3-next", "kimi-linear"])
def test_replayssm_kfirst_gives_the_vfirst_bits(peers, model):
    """--kfirst: the same kernels on K-first states (S0 transposed into FLA's order) give the same
    outputs bit for bit, so the same error."""
    gate, H, HV = peers.MODELS[model]
    for replay in (False, True):
        kf = peers.ReplaySSM(replay, layout="kfirst")
        assert kf.name.endswith("-kf") and kf.layout == "kfirst"
        vf = peers.ReplaySSM(replay)
        assert peers.f64_error(kf, gate, H, HV, seed=3) == peers.f64_error(vf, gate, H, HV, seed=3)


def test_outputs_are_written(peers, tmp_path):
    kernels = (("rs-packed", "seq", 1.0), ("rs-replay", "rnd", 1.0), ("fla-vfirst", "inplace", 1.5),
               ("fla-vfirst", "reuse", 0.5), ("sgl-replay", "seq", 0.25))
    rows = [dict(model="qwen3-next", gate="gdn", B=b, kernel=k, order=o, layout="vfirst", us=float(b) * f,
                 floor_packed_us=0.5, layers=2, err_f64="1.0e-07", gpu="-", commit="-", date="-")
            for b in (1, 8) for k, o, f in kernels]
    peers.write_outputs(str(tmp_path), ["# test"], rows)
    text = (tmp_path / "peers.txt").read_text()
    # the comparison takes rs rnd (8.00) against the peers' engine forms: inplace (12.00), not reuse or seq
    assert "| 8 | 8.00 | 8.00 | 12.00 | 4.00 | 2.00 | 0.50 | 8.00 | 12.00 | 1.50x |" in text
    assert (tmp_path / "peers.csv").read_text().count("\n") == 11


def test_replayssm_switches_reach_its_context(peers):
    """--cuda-pdl (and any context switch) reaches replayssm's kernels; a bad value is refused."""
    gate, H, HV = peers.MODELS["qwen3-next"]
    off = peers.f64_error(peers.ReplaySSM(False, {"cuda_pdl": 0}), gate, H, HV, seed=3)
    assert off == peers.f64_error(peers.ReplaySSM(False), gate, H, HV, seed=3)  # no bit depends on it
    with pytest.raises(Exception, match="cuda_pdl"):
        peers.ReplaySSM(False, {"cuda_pdl": 4})


@pytest.mark.parametrize("model", ["qwen3-next", "kimi-linear"])
def test_replayssm_verify_error_runs_on_the_cpu(peers, model):
    """--verify: replayssm's verify + commit over whole windows, every token accepted, against the
    float64 recurrence of the same tokens; a wrong window or commit shows as an O(1) error."""
    gate, H, HV = peers.MODELS[model]
    err = peers.f64_error(peers.ReplaySSMVerify(4), gate, H, HV, seed=3)
    assert err < 5e-3  # its bf16 ring
    assert peers.ERR_T // 4 * 4 >= 2 * peers.L  # the windows pass at least one fold


def test_accepted_rows(peers):
    gen = torch.Generator(device="cpu").manual_seed(1)
    acc = peers.accepted_rows(4096, 4, gen)
    assert set(acc.tolist()) == {3, 4} and abs(acc.float().mean().item() - 3.5) < 0.05


def test_verify_outputs_name_the_window(peers, tmp_path):
    rows = [dict(model="qwen3-next", gate="gdn", B=8, T=4, kernel=k, order="rnd", layout="vfirst", us=2.0,
                 floor_packed_us=0.25, layers=2, err_f64="1.0e-07", gpu="-", commit="-", date="-")
            for k in ("rs-verify", "sgl-spec")]
    peers.write_outputs(str(tmp_path), ["# test"], rows)
    text = (tmp_path / "peers.txt").read_text()
    assert "verify of 4 tokens + commit" in text and "| 8 | 2.00 | 2.00 | 0.25 |" in text and "read floor" in text


@pytest.mark.parametrize("model", ["qwen3-next", "kimi-linear"])
def test_bf16_state_reaches_replayssm(peers, model):
    """--state bf16: replayssm's kernels keep a bf16 state, whose rounding shows in the error (an
    f32 state's packed decode is exact to 1e-6), and only the kernels that keep one are loaded."""
    gate, H, HV = peers.MODELS[model]
    peers.STATE = torch.bfloat16
    try:
        packed = peers.f64_error(peers.ReplaySSM(False), gate, H, HV, seed=3)
        kernels, notes = peers.load_kernels()
    finally:
        peers.STATE = torch.float32
    assert 1e-5 < packed < 3e-2
    assert {k.name for k in kernels} <= {"rs-packed", "rs-replay", "fi"}
    assert any("f32 state" in n for n in notes)
