"""Reader of the golden vector file (shared/vectors/fla-reference.txt, "format 1").

Each case is a dict: name, gate ("gdn"/"kda"), B, T, H, HV, K, V, l2norm (bool), scale (float),
lower_bound (float or None), and the float64 numpy tensors q, k, v, a, b, A_log, dt_bias,
initial_state, o, final_state (shapes in the vectors README).
"""
from __future__ import annotations

import os

import numpy as np

_INTS = ("B", "T", "H", "HV", "K", "V")


def default_path(checkout=None):
    """$REPLAYSSM_VECTORS, else shared/vectors/fla-reference.txt beside the checkout (../shared
    from the repository root) or inside it, for the checkout given or the one this package is
    used from; None when absent."""
    env = os.environ.get("REPLAYSSM_VECTORS")
    if env:
        return env if os.path.isfile(env) else None
    from ._lib import checkout_root

    for root in (checkout, checkout_root()):
        if not root:
            continue
        for p in (os.path.join(root, "..", "shared", "vectors", "fla-reference.txt"),
                  os.path.join(root, "shared", "vectors", "fla-reference.txt")):
            if os.path.isfile(p):
                return os.path.normpath(p)
    return None


def load(path) -> list:
    cases, cur = [], None
    with open(path) as f:
        for lineno, line in enumerate(f, 1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            word, _, rest = line.partition(" ")
            if word == "case":
                cur = {"name": rest.strip()}
            elif cur is None:
                raise ValueError(f"{path}:{lineno}: {word!r} outside a case")
            elif word == "end":
                cases.append(cur)
                cur = None
            elif word == "gate":
                cur["gate"] = rest.strip()
            elif word in _INTS:
                cur[word] = int(rest)
            elif word == "l2norm":
                cur["l2norm"] = rest.strip() == "1"
            elif word == "scale":
                cur["scale"] = float(rest)
            elif word == "lower_bound":
                cur["lower_bound"] = None if rest.strip() == "none" else float(rest)
            elif word == "tensor":
                name, shape, values = rest.split(" ", 2)
                dims = tuple(int(x) for x in shape.strip("[]").split(",") if x)
                arr = np.array(values.split(), dtype=np.float64)
                if arr.size != int(np.prod(dims)):
                    raise ValueError(f"{path}:{lineno}: tensor {name} has {arr.size} values for shape {dims}")
                cur[name] = arr.reshape(dims)
            else:
                raise ValueError(f"{path}:{lineno}: unknown line {word!r}")
    if cur is not None:
        raise ValueError(f"{path}: case {cur['name']!r} has no end")
    return cases
