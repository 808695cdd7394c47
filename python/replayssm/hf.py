"""transformers' linear-attention layers through replayssm.

    from transformers import AutoModelForCausalLM
    import replayssm.hf

    model = AutoModelForCausalLM.from_pretrained(...)   # Qwen3-Next, Qwen3.5 or Kimi-Linear
    replayssm.hf.enable(model, ring_len=16)
    out = model.generate(**inputs, max_new_tokens=300)

enable() finds the model's Gated DeltaNet layers (Qwen3-Next, Qwen3.5, Qwen3.5-MoE) and Kimi Delta
Attention layers (Kimi-Linear) and runs their recurrences through replayssm: a prompt through
replayssm's prefill, every decoded token through ReplaySSM decode. Each layer's state lives in a
replayssm.fla.RingCache (a V-first checkpoint, a ring of the last ring_len tokens and a cursor per
row) kept on the generation cache object, so a new generate() starts new rings and a cache passed
back in continues them. transformers' own delta-rule functions no longer run for those layers;
everything around the recurrence (projections, convolution, gates, norms) is transformers' own.

The generation cache's recurrent-state tensors are not kept up to date while enabled (the state is
the ring's; writing it back every step would cost the traffic replay saves): states(cache, layer)
reads a layer's state. Beam search works (the cache's reordering reorders the rings' rows, at the
cost of a fold of each state per reorder). Packed sequences (cu_seqlens, or Kimi-Linear's
cu_seq_lens_q) give each sequence its own ring row: a packed prompt is their prefill, a packed
step of one token per sequence their ReplaySSM decode. enable(model, speculative=True) makes the
last tokens of every forward (up to ring_len) a verify window that the cache's crop commits in part
(the rejected tokens are a cursor move), which lets transformers' assisted generation
(prompt_lookup_num_tokens, assistant_model) run on these models, whose recurrent state
transformers itself cannot roll back before 5.25 (5.25 runs a window's draft tokens one call each
to keep their states: an enabled layer takes them as one window, and the cache's history of
placeholders lets its crop roll back the rest). Tested with transformers 5.24 and 5.25 on the CPU
(float32 and bfloat16 weights) and 5.17 on an H200 (CUDA tensors).
"""
from __future__ import annotations

import contextvars
import functools
import sys
from typing import Any, Optional

__all__ = ["enable", "disable", "states", "FAMILIES"]

# the layer whose forward is running: (module, generation cache or None, ring_len, speculative)
_ACTIVE: contextvars.ContextVar = contextvars.ContextVar("replayssm_hf_active", default=None)

# modeling module, layer class, gate, decode function, prefill function (module-level names the
# layer's forward calls)
FAMILIES = (
    ("transformers.models.qwen3_next.modeling_qwen3_next", "Qwen3NextGatedDeltaNet", "gdn",
     "torch_recurrent_gated_delta_rule", "torch_chunk_gated_delta_rule"),
    ("transformers.models.qwen3_5.modeling_qwen3_5", "Qwen3_5GatedDeltaNet", "gdn",
     "torch_recurrent_gated_delta_rule", "torch_chunk_gated_delta_rule"),
    ("transformers.models.qwen3_5_moe.modeling_qwen3_5_moe", "Qwen3_5MoeGatedDeltaNet", "gdn",
     "torch_recurrent_gated_delta_rule", "torch_chunk_gated_delta_rule"),
    ("transformers.models.kimi_linear.modeling_kimi_linear", "KimiLinearDeltaAttention", "kda",
     "recurrent_kimi_delta_attention", "chunk_kimi_delta_attention"),
)


def _family(module) -> Optional[tuple]:
    cls = type(module)
    for fam in FAMILIES:
        if cls.__module__ == fam[0] and cls.__name__ == fam[1]:
            return fam
    return None


def _patch_functions(fam) -> None:
    """Replaces the modeling module's delta-rule functions (once) by dispatchers that take
    replayssm's path inside an enabled layer's forward and transformers' own elsewhere."""
    mod = sys.modules[fam[0]]
    for name, decode in ((fam[3], True), (fam[4], False)):
        f = getattr(mod, name)
        if not getattr(f, "_replayssm_original", None):
            setattr(mod, name, _dispatcher(f, fam[2], decode))


def _dispatcher(original, gate: str, decode: bool):
    @functools.wraps(original)
    def run(query, key, value, g, beta, initial_state=None, output_final_state=False,
            use_qk_l2norm_in_kernel=False, **kwargs):
        active = _ACTIVE.get()
        if active is None:
            return original(query, key, value, g=g, beta=beta, initial_state=initial_state,
                            output_final_state=output_final_state, use_qk_l2norm_in_kernel=use_qk_l2norm_in_kernel,
                            **kwargs)
        # packed sequences: Qwen3-Next / Qwen3.5 pass cu_seqlens, Kimi-Linear the attention kwargs' cu_seq_lens_q
        cu_seqlens = kwargs.get("cu_seqlens", kwargs.get("cu_seq_lens_q"))
        return _replayssm_step(active, gate, decode, query, key, value, g, beta, initial_state, output_final_state,
                               use_qk_l2norm_in_kernel, cu_seqlens)

    run._replayssm_original = original
    return run


def _replayssm_step(active, gate, decode, q, k, v, g, beta, initial_state, output_final_state, l2norm, cu_seqlens):
    from . import fla

    module, cache, ring_len, speculative = active
    kda = gate == "kda"
    if decode:
        fn = fla.fused_recurrent_kda if kda else fla.fused_recurrent_gated_delta_rule
    else:
        fn = fla.chunk_kda if kda else fla.chunk_gated_delta_rule
    if cache is None:  # a forward without a generation cache: the packed recurrence, state as FLA gives it
        return fn(q, k, v, g, beta, initial_state=initial_state, output_final_state=output_final_state,
                  use_qk_l2norm_in_kernel=l2norm, cu_seqlens=cu_seqlens)
    _, _, H, K = q.shape
    HV, V = v.shape[2], v.shape[3]
    # one ring row per sequence: a batch row, or a packed sequence of cu_seqlens (one row of tokens)
    rows = q.shape[0] if cu_seqlens is None else len(cu_seqlens) - 1
    rings = _rings_of(cache, speculative)
    ring = rings.get(module.layer_idx)
    if ring is None or ring.num_slots != rows or (initial_state is None and not decode):
        # a new sequence batch (a prompt from the start, or rows that changed): new rings, from
        # the given state when there is one. V-first: every step at the fast layout's speed (K-first
        # decode takes 1.02-1.15x as long on CUDA with an f32 state, 1.05-1.25x with a bf16 one,
        # bench/results/README.md "State layouts"; the CPU transposes each head both ways); only
        # the rare loads and reads of transformers' K-first states transpose.
        ring = fla.RingCache(rows, H, K, HV, V, gate=gate, ring_len=ring_len, device=q.device, state_layout="vk",
                             speculative=speculative)
        if initial_state is not None:
            ring.load(list(range(rows)), initial_state.float())
        rings[module.layer_idx] = ring
    T = q.shape[1]
    if speculative and cu_seqlens is None and T > ring_len:
        # the last ring_len tokens stay a verify window that a crop may take back (assisted
        # generation's first forward is the prompt with the drafts after it); the rest are committed
        cut = T - ring_len
        o1, _ = fn(q[:, :cut], k[:, :cut], v[:, :cut], g[:, :cut], beta[:, :cut], use_qk_l2norm_in_kernel=l2norm,
                   ring_cache=ring)
        o2, _ = fn(q[:, cut:], k[:, cut:], v[:, cut:], g[:, cut:], beta[:, cut:], use_qk_l2norm_in_kernel=l2norm,
                   ring_cache=ring)
        import torch

        o = torch.cat([o1, o2], 1)
    else:
        o, _ = fn(q, k, v, g, beta, use_qk_l2norm_in_kernel=l2norm, ring_cache=ring, cu_seqlens=cu_seqlens)
    if not output_final_state:
        return o, None
    # The cache copies what is returned into its own tensor: that tensor itself (a copy onto
    # itself moves nothing), or on the first call a zero placeholder of the state's shape.
    if initial_state is None:
        import torch

        initial_state = torch.zeros((), dtype=torch.float32, device=q.device).expand(rows, HV, K, V)
    if speculative:  # this forward's tokens, for the history the cache keeps (_updating_history)
        cache.__dict__.setdefault("_replayssm_tokens", {})[module.layer_idx] = T
    return o, initial_state


def _rings_of(cache, speculative: bool = False) -> dict:
    """The rings of a generation cache (layer index -> RingCache), made on first use; the cache's
    row reordering (beam search) and row selection then reorder the rings' rows too, and its crop
    commits the rings' pending windows (speculative: the cache becomes croppable)."""
    rings = cache.__dict__.get("_replayssm_rings")
    if rings is not None:
        return rings
    rings = cache.__dict__["_replayssm_rings"] = {}
    for name in ("reorder_cache", "batch_select_indices"):
        original = getattr(cache, name, None)
        if original is not None:
            setattr(cache, name, _following(original, rings))
    if getattr(cache, "crop", None) is not None:
        cache.crop = _cropping(cache.crop, rings)
    if speculative and hasattr(type(cache), "is_croppable"):
        cache.__class__ = _croppable_class(type(cache))
    keep = getattr(cache, "get_recurrent_states_to_keep", None)
    if speculative and keep is not None:
        cache.get_recurrent_states_to_keep = _keeping_no_states(keep)
        cache.update_recurrent_state = _updating_history(cache.update_recurrent_state, cache)
    return rings


def _croppable_class(cls):
    """cls whose is_croppable also holds for linear-attention layers: transformers calls them not
    croppable because it cannot roll their recurrent state back; here that state is the rings',
    which the crop commits (convolution states roll back by transformers' own past recording)."""

    def is_croppable(self):
        return all(getattr(layer, "is_croppable", True) or hasattr(layer, "recurrent_states") for layer in self.layers)

    return type(cls.__name__, (cls,), {"is_croppable": property(is_croppable), "__module__": cls.__module__})


def _keeping_no_states(original):
    """cache.get_recurrent_states_to_keep (transformers >= 5.25) answering 0 for the enabled layers:
    while it records the past for a crop, transformers runs a forward's last tokens one call per
    token to keep each one's state; on a ring those tokens are one verify window, which the crop
    commits in part (the history it keeps instead: _updating_history)."""

    def keep(layer_idx=None, *args, **kwargs):
        active = _ACTIVE.get()  # asked from inside an enabled layer's forward: its own index
        if active is not None and layer_idx is not None and getattr(active[0], "layer_idx", None) == layer_idx:
            return 0
        return original(layer_idx, *args, **kwargs)

    return keep


def _updating_history(original, cache):
    """cache.update_recurrent_state (transformers >= 5.25) given an enabled layer's state while the
    cache records the past: as one state per token of the forward, since a crop(-n) rolls the
    layer back to its history's entry -n (these are placeholders: the states are the rings')."""

    def update(states, layer_idx, *args, **kwargs):
        n = cache.__dict__.get("_replayssm_tokens", {}).pop(layer_idx, 0)
        if n > 1 and not isinstance(states, (list, tuple)) and cache.is_recording_past(layer_idx):
            states = [states] * n
        return original(states, layer_idx, *args, **kwargs)

    return update


def _cropping(original, rings):
    """cache.crop(-n) (transformers' assisted generation: n of the verified window's tokens were
    rejected) as a commit of each pending window's first T - n tokens; crop(0) keeps them all. The
    cache's own crop then rolls back its convolution states and attention caches."""

    def crop(tokens_to_remove, *args, **kwargs):
        n = -int(tokens_to_remove) if int(tokens_to_remove) < 0 else 0
        for ring in rings.values():
            pending = ring.pending()
            if n and len(pending) != ring.num_slots:
                raise ValueError(f"replayssm.hf: crop({tokens_to_remove}) of tokens that no speculative window holds "
                                 f"(enable(model, speculative=True) keeps a window's tokens until the crop)")
            if pending and min(pending.values()) < n:
                raise ValueError(f"replayssm.hf: crop({tokens_to_remove}) of a window of {min(pending.values())} "
                                 f"tokens")
            _commit_pending(ring, n)
        return original(tokens_to_remove, *args, **kwargs)

    return crop


def _following(original, rings):
    """A cache method taking row indices (reorder_cache(beam_idx), batch_select_indices(indices)),
    applied to the rings as well: each ring's rows become its states at those indices (read from
    the ring, loaded with an empty ring; a rare step, so the fold it costs does not matter)."""

    def apply(indices, *args, **kwargs):
        from . import fla

        out = original(indices, *args, **kwargs)
        idx = [int(i) for i in (indices.tolist() if hasattr(indices, "tolist") else indices)]
        for layer, ring in list(rings.items()):
            _commit_pending(ring)
            states = ring.read(list(range(ring.num_slots)))[idx]
            new = ring if len(idx) == ring.num_slots else fla.RingCache(
                len(idx), ring.H, ring.K, ring.HV, ring.V, gate=ring.gate, ring_len=ring.ring_len,
                device=_device_of(ring), state_layout=ring.state_layout)
            new.load(list(range(len(idx))), states)
            rings[layer] = new
        return out

    return apply


def _commit_pending(ring, rejected: int = 0) -> None:
    """Commits each pending window of a speculative ring but its last `rejected` tokens; with none
    rejected (no crop came: every token counts) the windows count whole."""
    pending = ring.pending()
    if pending:
        slots = sorted(pending)
        ring.commit(slots, [pending[s] - rejected for s in slots])


def _device_of(ring):
    ck = ring.checkpoint
    return ck.device if hasattr(ck, "device") and not isinstance(ck.device, str) else "cpu"


def _wrap_forward(module, ring_len: int, speculative: bool) -> None:
    original = module.__dict__.get("_replayssm_forward") or module.forward

    def forward(*args, **kwargs):
        cache = kwargs.get("cache", kwargs.get("cache_params"))
        if cache is None and len(args) > 1:
            cache = args[1]
        if cache is not None and speculative:  # its methods wrapped before the layer asks them
            _rings_of(cache, speculative)
        token = _ACTIVE.set((module, cache, ring_len, speculative))
        try:
            return original(*args, **kwargs)
        finally:
            _ACTIVE.reset(token)

    module._replayssm_forward = original
    module.forward = forward


def enable(model: Any, ring_len: int = 16, speculative: bool = False) -> Any:
    """Routes the model's Qwen3-Next / Qwen3.5 Gated DeltaNet and Kimi-Linear KDA layers through
    replayssm (see the module's text). ring_len: the ring's length L (the checkpoint is written
    every L tokens). speculative: the last tokens of every forward (up to ring_len of them) are a
    verify window that the cache's crop (transformers' assisted generation) commits in part, so the
    model is no longer stateful for transformers (assisted generation runs: prompt_lookup_num_tokens,
    assistant_model); a crop may take back up to ring_len tokens (ring_len >= the drafts + 1).
    Returns the model; raises ValueError when it has no such layer."""
    ring_len = int(ring_len)
    if ring_len < 1:
        raise ValueError(f"replayssm.hf.enable: ring_len {ring_len} < 1")
    n = 0
    for m in model.modules():
        fam = _family(m)
        if fam is None:
            continue
        _patch_functions(fam)
        _wrap_forward(m, ring_len, bool(speculative))
        n += 1
    if n == 0:
        raise ValueError("replayssm.hf.enable: the model has no Qwen3-Next, Qwen3.5 or Kimi-Linear linear-attention "
                         "layer (" + ", ".join(f[1] for f in FAMILIES) + ")")
    model._replayssm_layers = n
    # the recurrent state rolls back (the rings); transformers releases before 5.25 refuse assisted
    # generation for models whose class is stateful, and later ones roll linear layers back themselves
    if speculative and hasattr(type(model), "_is_stateful"):
        model.__dict__.setdefault("_replayssm_stateful", type(model)._is_stateful)
        model._is_stateful = False
    return model


def disable(model: Any) -> Any:
    """Gives the model's layers back to transformers' own path (caches made while enabled hold no
    usable recurrent state for it)."""
    for m in model.modules():
        original = m.__dict__.pop("_replayssm_forward", None)
        if original is not None:
            m.__dict__.pop("forward", None)
    model.__dict__.pop("_replayssm_layers", None)
    if "_replayssm_stateful" in model.__dict__:
        model.__dict__.pop("_replayssm_stateful")
        model.__dict__.pop("_is_stateful", None)
    return model


def states(cache: Any, layer_idx: int, *, state_v_first: bool = False):
    """The recurrent state of every row of layer layer_idx held by an enabled generation
    (K-first [B, HV, K, V] as transformers keeps it, or V-first), materialised from its ring."""
    rings = cache.__dict__.get("_replayssm_rings", {})
    if layer_idx not in rings:
        raise KeyError(f"replayssm.hf.states: layer {layer_idx} has no replayssm state in this cache")
    ring = rings[layer_idx]
    _commit_pending(ring)
    return ring.read(list(range(ring.num_slots)), state_v_first=state_v_first)
