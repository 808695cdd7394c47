"""replayssm.hf.enable on transformers' own models: tiny random Qwen3-Next, Qwen3.5, Qwen3.5-MoE and
Kimi-Linear configurations on the CPU, a ragged batch (left padding), 300 greedy tokens: the same tokens as
transformers' own path, the recurrences run by replayssm's rings (checked in the cache), and the
ring's state equal to transformers' recurrent state. Skipped without torch and transformers."""
import functools

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="torch is not installed")
transformers = pytest.importorskip("transformers", reason="transformers is not installed")
import replayssm.hf as hf  # noqa: E402

NEW_TOKENS = 300
VOCAB = 96


# the Qwen families' shared shape: 2 key heads, 4 value heads of 16, a full-attention layer between
QWEN = dict(vocab_size=VOCAB, hidden_size=64, intermediate_size=64, num_hidden_layers=3, num_attention_heads=4,
            num_key_value_heads=2, head_dim=16, linear_num_key_heads=2, linear_num_value_heads=4,
            linear_key_head_dim=16, linear_value_head_dim=16, max_position_embeddings=1024,
            layer_types=["linear_attention", "full_attention", "linear_attention"])


def qwen3_next():
    from transformers import Qwen3NextConfig, Qwen3NextForCausalLM

    return Qwen3NextForCausalLM(Qwen3NextConfig(**QWEN, num_experts=4, num_experts_per_tok=2, moe_intermediate_size=32,
                                                shared_expert_intermediate_size=32))


def qwen3_5():
    from transformers import Qwen3_5ForCausalLM, Qwen3_5TextConfig

    return Qwen3_5ForCausalLM(Qwen3_5TextConfig(**QWEN))


def qwen3_5_moe():
    from transformers import Qwen3_5MoeForCausalLM, Qwen3_5MoeTextConfig

    return Qwen3_5MoeForCausalLM(Qwen3_5MoeTextConfig(**QWEN, num_experts=4, num_experts_per_tok=2,
                                                      moe_intermediate_size=32, shared_expert_intermediate_size=32))


def kimi_linear():
    from transformers import KimiLinearConfig, KimiLinearForCausalLM

    cfg = KimiLinearConfig(vocab_size=VOCAB, hidden_size=64, intermediate_size=64, moe_intermediate_size=32,
                           num_hidden_layers=3, num_attention_heads=4, num_key_value_heads=4, kv_lora_rank=16,
                           q_lora_rank=None, qk_rope_head_dim=8, qk_nope_head_dim=8, v_head_dim=16,
                           num_local_experts=4, num_experts_per_tok=2, linear_head_dim=16, linear_num_heads=4,
                           layer_types=["linear_attention", "full_attention", "linear_attention"],
                           mlp_layer_types=["dense"] * 3, pad_token_id=0, bos_token_id=1, eos_token_id=2,
                           max_position_embeddings=1024)
    return KimiLinearForCausalLM(cfg)


MODELS = {"qwen3-next": qwen3_next, "qwen3.5": qwen3_5, "qwen3.5-moe": qwen3_5_moe, "kimi-linear": kimi_linear}


def make(name, dtype):
    torch.manual_seed(0)
    try:
        model = MODELS[name]()
    except (ImportError, TypeError, ValueError) as e:  # a transformers without this family
        pytest.skip(f"{name}: this transformers ({transformers.__version__}) cannot build it: {e}")
    return model.to(dtype).eval()


def generate(model, ids, mask):
    with torch.no_grad():
        return model.generate(input_ids=ids, attention_mask=mask, max_new_tokens=NEW_TOKENS, min_new_tokens=NEW_TOKENS,
                              do_sample=False, return_dict_in_generate=True, output_scores=True, pad_token_id=0)


def assert_same_greedy_tokens(out, ref, prompt, dtype):
    """The same tokens, except that a row may part from transformers' at a step where transformers'
    own two best logits were a tie at the weights' precision (bf16 activations are rounded at other
    points on the GPU than on the CPU): the step's logit gap must be below that resolution, and the
    row is not compared after it."""
    res = 2.0 ** -7 if dtype == torch.bfloat16 else 1e-5
    for row in range(ref.sequences.shape[0]):
        mine, theirs = out.sequences[row, prompt:], ref.sequences[row, prompt:]
        diff = torch.nonzero(mine != theirs)
        if len(diff) == 0:
            continue
        t = int(diff[0])
        scores = ref.scores[t][row].float()
        gap = float(scores[theirs[t]] - scores[mine[t]])
        assert gap <= res * max(1.0, float(scores[theirs[t]].abs())), \
            f"row {row} parts from transformers' tokens at step {t} with a logit gap of {gap}"


DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["f32", "bf16"])
@pytest.mark.parametrize("name", list(MODELS))
def test_greedy_tokens_equal_transformers(name, dtype, device):
    """On the CPU and, where torch has CUDA, on the GPU with CUDA tensors (replayssm's CUDA back end)."""
    model = make(name, dtype).to(device)
    gen = torch.Generator().manual_seed(1)
    ids = torch.randint(3, VOCAB, (2, 11), generator=gen).to(device)
    mask = torch.ones_like(ids)
    mask[1, :4] = 0  # a shorter prompt, left-padded
    ref = generate(model, ids, mask)
    layers = [m.layer_idx for m in model.modules() if hf._family(m)]
    hf.enable(model, ring_len=16)
    try:
        out = generate(model, ids, mask)
    finally:
        hf.disable(model)
    assert out.sequences.shape == (2, 11 + NEW_TOKENS)
    assert_same_greedy_tokens(out, ref, 11, dtype)
    rings = out.past_key_values.__dict__.get("_replayssm_rings", {})
    assert sorted(rings) == layers  # every linear-attention layer ran through a ring
    # the ring's state equals transformers' own recurrent state after the same tokens (where the rows
    # did not part at a tie)
    tol = 1e-4 if dtype == torch.float32 else 5e-2
    for i in (layers if torch.equal(out.sequences, ref.sequences) else []):
        mine = hf.states(out.past_key_values, i)
        mine = np.asarray(mine, np.float64) if isinstance(mine, np.ndarray) else mine.double().cpu().numpy()
        theirs = ref.past_key_values.layers[i].recurrent_states[0].double().cpu().numpy()
        err = np.abs(mine - theirs).max() / np.abs(theirs).max()
        assert err < tol, (i, err)


def test_enable_refuses_a_model_without_such_layers():
    model = torch.nn.Sequential(torch.nn.Linear(4, 4))
    with pytest.raises(ValueError, match="no Qwen3-Next, Qwen3.5 or Kimi-Linear"):
        hf.enable(model)


def test_disabled_layers_and_other_models_keep_transformers_path():
    """The patched module functions dispatch to transformers' own outside an enabled layer."""
    model = make("qwen3-next", torch.float32)
    hf.enable(model)
    hf.disable(model)
    ids = torch.randint(3, VOCAB, (1, 7))
    with torch.no_grad():
        out = model.generate(input_ids=ids, max_new_tokens=5, do_sample=False, return_dict_in_generate=True,
                             pad_token_id=0)
    assert "_replayssm_rings" not in out.past_key_values.__dict__


@pytest.mark.parametrize("name", list(MODELS))
def test_beam_search_tokens_equal_transformers(name):
    """Beam search reorders the cache every step: the rings' rows follow (reorder_cache)."""
    model = make(name, torch.float32)
    ids = torch.randint(3, VOCAB, (2, 9), generator=torch.Generator().manual_seed(2))
    kw = dict(input_ids=ids, attention_mask=torch.ones_like(ids), max_new_tokens=24, min_new_tokens=24,
              num_beams=3, do_sample=False, pad_token_id=0)
    with torch.no_grad():
        ref = model.generate(**kw)
        hf.enable(model, ring_len=4)
        try:
            out = model.generate(**kw)
        finally:
            hf.disable(model)
    assert torch.equal(out, ref)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", ["qwen3-next", "kimi-linear"])
def test_packed_sequences_with_a_cache(name, device):
    """Packed sequences with a generation cache, as transformers passes them to an enabled layer's
    delta-rule function (one row of tokens, cu_seqlens; Kimi-Linear: cu_seq_lens_q): a packed prompt
    of 3 sequences, then 12 packed steps of one token per sequence (ring_len 4: folds on the way).
    Each sequence's outputs and final state equal transformers' own recurrence over that sequence
    alone."""
    import sys

    model = hf.enable(make(name, torch.float32).to(device), ring_len=4)
    layer = next(m for m in model.modules() if hf._family(m) is not None)
    fam = hf._family(layer)
    mod = sys.modules[fam[0]]
    packed_fn, own = getattr(mod, fam[4]), getattr(mod, fam[3])._replayssm_original
    kda, HV, K, lens, steps = fam[2] == "kda", 4, 16, [5, 2, 7], 12
    cu_name = "cu_seq_lens_q" if kda else "cu_seqlens"
    gen = torch.Generator().manual_seed(5)

    def tokens(n):
        rnd = functools.partial(torch.randn, generator=gen)
        g = -torch.rand((1, n, HV, K) if kda else (1, n, HV), generator=gen) * 2
        x = rnd(1, n, HV, K), rnd(1, n, HV, K), rnd(1, n, HV, K), g, torch.rand(1, n, HV, generator=gen)
        return tuple(t.to(device) for t in x)

    class Cache:
        pass

    cache, calls = Cache(), [(tokens(sum(lens)), torch.tensor([0, 5, 7, 14], device=device))]
    calls += [(tokens(3), torch.arange(4, device=device)) for _ in range(steps)]
    outs, state = [], None
    active = hf._ACTIVE.set((layer, cache, 4, False))
    try:
        for x, cu in calls:
            o, state = packed_fn(*x, initial_state=state, output_final_state=True, use_qk_l2norm_in_kernel=True,
                                 **{cu_name: cu})
            outs.append((o, cu))
    finally:
        hf._ACTIVE.reset(active)
    final = hf.states(cache, layer.layer_idx)
    for n in range(3):  # sequence n alone, through transformers' own recurrence
        seq = [torch.cat([x[i][:, cu[n]:cu[n + 1]] for x, cu in calls], 1) for i in range(5)]
        ref_o, ref_s = own(*seq, initial_state=None, output_final_state=True, use_qk_l2norm_in_kernel=True)
        mine = torch.cat([o[:, cu[n]:cu[n + 1]] for o, cu in outs], 1)
        assert torch.allclose(mine, ref_o, rtol=1e-4, atol=1e-5), float((mine - ref_o).abs().max())
        assert torch.allclose(torch.as_tensor(final[n], device=device), ref_s[0], rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", list(MODELS))
def test_assisted_generation_tokens_equal_transformers(name, device, monkeypatch):
    """enable(speculative=True): transformers' assisted generation (prompt lookup, 3 drafts) runs on
    these models; every candidate forward is a verify window of the rings and each crop commits the
    accepted part. The tokens equal transformers' own greedy search, and windows were cut short on
    the way (rollback exercised)."""
    from replayssm import fla

    if not hasattr(transformers.Cache, "activate_past_recording"):
        pytest.skip(f"transformers {transformers.__version__} has no cache rollback for assisted generation")
    model = make(name, torch.float32).to(device)
    half = torch.randint(3, VOCAB, (1, 12), generator=torch.Generator().manual_seed(4))
    ids = torch.cat([half, half, half[:, :6]], 1).to(device)  # repeats: the lookup finds drafts
    kw = dict(input_ids=ids, attention_mask=torch.ones_like(ids), max_new_tokens=80, min_new_tokens=80,
              do_sample=False, pad_token_id=0)
    commits = []
    original = fla.RingCache.commit

    def commit(self, slots, accepted):
        commits.append((dict(self.pending()), [int(a) for a in accepted]))
        return original(self, slots, accepted)

    monkeypatch.setattr(fla.RingCache, "commit", commit)
    with torch.no_grad():
        ref = model.generate(**kw)
        hf.enable(model, ring_len=8, speculative=True)
        try:
            out = model.generate(**kw, prompt_lookup_num_tokens=3)
        finally:
            hf.disable(model)
    assert torch.equal(out, ref)
    cut = sum(1 for pend, acc in commits if any(a < t for a, t in zip(acc, pend.values())))
    assert cut > 0, "no verify window was cut short"
    if hasattr(type(model), "_is_stateful"):  # transformers < 5.25
        assert model._is_stateful  # disable gives transformers' own flag back


@pytest.mark.parametrize("name", ["qwen3-next", "kimi-linear"])
def test_assistant_model_tokens_equal_transformers(name):
    """enable(speculative=True) with a draft model (another random model of the family, whose own
    drafts are mostly rejected): windows of up to 21 tokens (ring_len 32), the tokens of
    transformers' own greedy search."""
    if not hasattr(transformers.Cache, "activate_past_recording"):
        pytest.skip(f"transformers {transformers.__version__} has no cache rollback for assisted generation")
    model = make(name, torch.float32)
    torch.manual_seed(1)
    draft = MODELS[name]().eval()
    ids = torch.randint(3, VOCAB, (1, 20), generator=torch.Generator().manual_seed(7))
    kw = dict(input_ids=ids, attention_mask=torch.ones_like(ids), max_new_tokens=40, min_new_tokens=40,
              do_sample=False, pad_token_id=0)
    with torch.no_grad():
        ref = model.generate(**kw)
        hf.enable(model, ring_len=32, speculative=True)
        try:
            out = model.generate(**kw, assistant_model=draft)
        finally:
            hf.disable(model)
    assert torch.equal(out, ref)


def test_speculative_states_after_a_window_count_every_token():
    """enable(speculative=True): the state read right after a forward whose last tokens are a
    pending window (no crop) counts them all, as the non-speculative path does."""
    model = make("qwen3-next", torch.float32)
    ids = torch.randint(3, VOCAB, (2, 11), generator=torch.Generator().manual_seed(6))
    states = []
    for speculative in (False, True):
        hf.enable(model, ring_len=4, speculative=speculative)
        try:
            with torch.no_grad():
                out = model(input_ids=ids, use_cache=True)
            states.append(torch.as_tensor(hf.states(out.past_key_values, 0)))
        finally:
            hf.disable(model)
    # a prefill of 11 tokens against a prefill of 7 and a window of 4: the same state to rounding
    assert float((states[0] - states[1]).abs().max()) <= 1e-5 * float(states[0].abs().max())
