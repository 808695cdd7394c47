#!/usr/bin/env bash
# Call I: 6b82fa2's new launch of a bf16 state's packed decode (programmatic, B = 5-8 at 32 heads)
# gives the bits of the plain launch, and its float64 error: 37 steps at B = 5 and 8, GDN and KDA,
# through bench/peers.py's error run. Carry [".gpu"].
set -uo pipefail
tar xJf .gpu/libs.txz -C /tmp
export LD_LIBRARY_PATH=/tmp/X PYTHONPATH=$PWD/python REPLAYSSM_LIBRARY=/tmp/X/libreplayssm.so
python3 - <<'PY'
import importlib.util, torch
spec = importlib.util.spec_from_file_location("peers", "bench/peers.py")
p = importlib.util.module_from_spec(spec); spec.loader.exec_module(p)
p.STATE = torch.bfloat16
for B in (5, 8):
    p.ERR_B = B
    for model in ("qwen3-next", "kimi-linear"):
        gate, H, HV = p.MODELS[model]
        runs = {}
        for name, sw in (("rule", {}), ("pdl0", {"cuda_pdl": 0})):
            k = p.ReplaySSM(False, sw)
            gen = torch.Generator(device="cuda").manual_seed(3)
            x = p.make_inputs(gate, B, H, HV, p.ERR_T, gen, io=torch.float32)
            import numpy as np
            S0 = np.random.default_rng(3).normal(0, 0.1, (B, HV, p.V, p.K))
            runs[name] = k.run_steps(gate, H, HV, S0, x)
        err = p.f64_error(p.ReplaySSM(False), gate, H, HV, 3)
        print(f"{model} bf16 packed B={B}: rule == pdl0 bitwise: {bool((runs['rule'] == runs['pdl0']).all())}, err vs f64 {err:.2e}")
PY
