#!/usr/bin/env python3
"""tensor_ntt.py: fhjit from Python: the ciphertext tensor product and an
NTT round trip (plus a negacyclic product through the NTT), on numpy
arrays through the host JIT, checked against the reference interpreter and
exact integers; then the same graphs on torch CUDA tensors when there is a
GPU, checked against the host's results.

    FHJIT_LIBRARY=build/debug/libfhjit.so PYTHONPATH=python \
        python3 examples/python/tensor_ntt.py
"""
import sys

import numpy as np

import fhjit

N = 4096
RADIX = "r62"


def lazy(rng, shape, moduli):
    """Random residues in [0, 2q) of each row's modulus (axis -2)."""
    out = np.empty(shape, np.uint64)
    for r, q in enumerate(moduli):
        out[..., r, :] = rng.integers(0, 2 * q, size=out[..., r, :].shape, dtype=np.uint64)
    return out


def tensor_product_graph(moduli):
    """CT2 x CT2 -> CT3 in the NTT/Montgomery domain, as Python expressions."""
    g = fhjit.Graph("tensor_product", RADIX, moduli=moduli)
    ct = fhjit.ct(2, [], len(moduli), N, domain="ntt", form="mont")
    a, b = g.input("a", ct), g.input("b", ct)
    cross = fhjit.add_lazy(a[0] * b[1], a[1] * b[0])
    g.output(fhjit.pack(a[0] * b[0], cross, a[1] * b[1]), "d")
    return g


def ntt_graphs(moduli):
    """x -> NTT -> inverse NTT (standard form back), and the negacyclic
    product x*y = INTT(NTT(x) . NTT(y))."""
    poly = fhjit.pt([], len(moduli), N, domain="coef", form="std")
    tws = fhjit.twiddles(len(moduli), N)
    rt = fhjit.Graph("ntt_round_trip", RADIX, moduli=moduli)
    x, tf, ti = rt.input("x", poly), rt.input("tf", tws), rt.input("ti", tws)
    rt.output(fhjit.ntt_inv(fhjit.ntt_fwd(x, tf), ti), "back")
    pr = fhjit.Graph("ntt_product", RADIX, moduli=moduli)
    x, y = pr.input("x", poly), pr.input("y", poly)
    tf, ti = pr.input("tf", tws), pr.input("ti", tws)
    # NTT outputs are Montgomery values (X R, Y R); their Montgomery product
    # is X Y R, which the standard-form inverse takes back to x*y
    prod = fhjit.ntt_fwd(x, tf) * fhjit.ntt_fwd(y, tf)
    pr.output(fhjit.ntt_inv(prod, ti, mode="std"), "xy")
    return rt, pr


def negacyclic(x, y, q):
    """x*y mod (X^N + 1, q) in exact integers (slow: a few coefficients)."""
    out = []
    for k in range(8):
        s = 0
        for i in range(N):
            j = k - i
            s += int(x[i]) * int(y[j]) if j >= 0 else -int(x[i]) * int(y[j + N])
        out.append(s % q)
    return out


def main():
    rng = np.random.default_rng(1)
    moduli = fhjit.find_primes(60, 2 * N, 2)  # NTT-friendly r62 primes
    fwd, inv = fhjit.twiddle_tables(moduli, N, RADIX)
    params = fhjit.param_table(moduli, RADIX, n=N)
    ok = True

    tp = tensor_product_graph(moduli)
    a, b = lazy(rng, (2, 2, N), moduli), lazy(rng, (2, 2, N), moduli)
    d = tp.run(a, b, params=params)
    same = np.array_equal(d, tp.run(a, b, params=params, backend="interp"))
    print("tensor product (numpy, host JIT): %s, %s vs the interpreter"
          % (d.shape, "identical" if same else "DIFFERENT"))
    ok &= same

    rt, pr = ntt_graphs(moduli)
    x = np.stack([rng.integers(0, q, N, dtype=np.uint64) for q in moduli])
    y = np.stack([rng.integers(0, q, N, dtype=np.uint64) for q in moduli])
    back = rt.run(x, fwd, inv, params=params)
    same = np.array_equal(back, x)
    print("NTT round trip (numpy): %s" % ("exact" if same else "WRONG"))
    ok &= same
    xy = pr.run(x, y, fwd, inv, params=params)
    want = [negacyclic(x[r], y[r], q) for r, q in enumerate(moduli)]
    got = [[int(v) % q for v in xy[r, :8]] for r, q in enumerate(moduli)]
    print("negacyclic product through the NTT: %s" % ("exact" if got == want else "WRONG"))
    ok &= got == want

    try:
        import torch
        gpu = torch.cuda.is_available()
    except ImportError:
        gpu = False
    if not gpu:
        print("torch with a GPU: not here, skipped")
        return 0 if ok else 1
    dev = lambda arr: fhjit.to_torch(arr, "cuda")  # noqa: E731 (int64 views)
    P = dev(params)
    dt = tp.run(dev(a), dev(b), params=P)  # torch's current stream, output allocated
    same = np.array_equal(dt.cpu().numpy().view(np.uint64), d)
    print("tensor product (torch %s, GPU): %s vs the host" % (tuple(dt.shape),
                                                            "identical" if same else "DIFFERENT"))
    ok &= same
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        bt = rt.run(dev(x), dev(fwd), dev(inv), params=P)
    s.synchronize()
    same = np.array_equal(bt.cpu().numpy().view(np.uint64), x)
    print("NTT round trip (torch, side stream): %s" % ("exact" if same else "WRONG"))
    ok &= same
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
