#!/usr/bin/env python3
"""triton_rns.py: Triton baselines for fhjit_bench's graphs, exact SPEC semantics.

The same three fused graphs as bench/fhjit_bench.c, both radices, over dense
[rows, n] residue polynomials (n = 2^16, rows * n = 2^21 or 2^26 elements):

  mul                c = mul(a, b)
  tensor_product     d = (a0*b0, a0*b1 + a1*b0, a1*b1)   (mul, add_lazy)
  keyswitch_3digits  acc_c = sum_j mul(d_j, key[j, c]), c = 0, 1 (add_lazy)

mul is SPEC's Montgomery product REDC(a*b): r32 with a 64-bit product and a
final subtraction (canonical), r62 with a 128-bit product assembled from
64-bit halves (tl.umulhi for the high half), m = low64(t)*k mod 2^62, and no
final subtraction (lazy). The kernels read q and k from SPEC's parameter table
(rows 0, 3, 4), built here. Every output is checked, on a sample of elements,
against SPEC's formulas evaluated with Python's exact integers.

Kernel time: CUDA events around replays of a CUDA graph of several launches
(no Python launch overhead), median, buffers rotated so that the working set
exceeds the 60 MB L2; a torch copy of the same bytes in the same run gives
the bandwidth ratio. Compile latency: the first call with an empty Triton
cache (TRITON_CACHE_DIR is set to a new directory unless given).

  python3 triton_rns.py [--log2 21,26] [--json FILE] [--reps N]
  python3 triton_rns.py --selftest   (no GPU: the kernels' word arithmetic,
                                      emulated, against exact integers)
"""
import argparse
import json
import os
import random
import sys
import tempfile
import time

MASK64 = (1 << 64) - 1


# ------------------------------------------------------------- SPEC, exactly

def is_prime(n):
    if n < 2:
        return False
    for p in (2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37):
        if n % p == 0:
            return n == p
    d, s = n - 1, 0
    while d % 2 == 0:
        d //= 2
        s += 1
    for a in (2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37):
        x = pow(a, d, n)
        if x in (1, n - 1):
            continue
        for _ in range(s - 1):
            x = x * x % n
            if x == n - 1:
                break
        else:
            return False
    return True


def find_primes(bits, m, count):
    """The `count` largest primes q < 2^bits with q = 1 mod m, descending."""
    out, q = [], ((1 << bits) - 1) // m * m + 1
    while len(out) < count:
        if q < (1 << bits) and is_prime(q):
            out.append(q)
        q -= m
    return out


class Radix:
    def __init__(self, name):
        self.name = name
        self.w = 32 if name == "r32" else 62
        self.R = 1 << self.w
        self.half = self.w // 2

    def k_of(self, q):
        return (-pow(q, -1, self.R)) % self.R

    def redc(self, q, t):
        """SPEC section 2: REDC(t), exact integers."""
        k = self.k_of(q)
        if self.w == 32:
            m = (t * k) % self.R
            u = (t + m * q) >> 32
            return u - q if u >= q else u
        m = ((t & MASK64) * k) % self.R
        return (t + m * q) >> 62

    def mul(self, q, a, b):
        return self.redc(q, a * b)

    @staticmethod
    def add_lazy(q, a, b):
        s = a + b
        return s - 2 * q if s >= 2 * q else s

    def param_rows(self, q):
        """Rows 0..7 of SPEC's parameter table for one modulus (N, D unused: 0)."""
        k = self.k_of(q)
        h = self.half
        return [2 * q, q % (1 << h), q >> h, k % (1 << h), k >> h, self.R * self.R % q, 0, 0]


# ---------------------------------------- the kernels' word arithmetic, emulated

def redc62_words(a, b, q, k):
    """What the Triton kernel computes with 64-bit words (mirrors _redc62)."""
    lo = (a * b) & MASK64
    hi = (a * b) >> 64
    m = (((lo * k) & MASK64) << 2 & MASK64) >> 2
    mlo = (m * q) & MASK64
    mhi = (m * q) >> 64
    slo = (lo + mlo) & MASK64
    carry = 1 if slo < lo else 0
    shi = (hi + mhi + carry) & MASK64
    return ((shi << 2) & MASK64) | (slo >> 62)


def redc32_words(a, b, q, k):
    """Mirrors _redc32: one 64-bit product, masks by shifts."""
    t = (a * b) & MASK64
    m = (((((t << 32) & MASK64) >> 32) * k) << 32 & MASK64) >> 32
    u = ((t + m * q) & MASK64) >> 32
    return u - q if u >= q else u


def selftest():
    rng = random.Random(7)
    checked = 0
    for rname, bits in (("r32", 30), ("r62", 60)):
        r = Radix(rname)
        moduli = find_primes(bits, 1 << 17, 3) + [find_primes(bits - 14, 1 << 10, 1)[0]]
        if rname == "r32":
            moduli += [268369921, 134176769]
        else:
            moduli += [1152921504606748673, 576460752303423649]
        for q in moduli:
            k = r.k_of(q)
            rows = r.param_rows(q)
            kk = rows[3] | (rows[4] << r.half)
            assert kk == k and rows[0] // 2 == q
            edges = [0, 1, q - 1, q, q + 1, 2 * q - 2, 2 * q - 1]
            pairs = [(x, y) for x in edges for y in edges]
            pairs += [(rng.randrange(2 * q), rng.randrange(2 * q)) for _ in range(3000)]
            for a, b in pairs:
                want = r.mul(q, a, b)
                got = (redc32_words if rname == "r32" else redc62_words)(a, b, q, kk)
                assert got == want, (rname, q, a, b, got, want)
                # the characterisation of SPEC's representative
                assert (want * r.R - a * b) % q == 0
                assert want < (q if rname == "r32" else 2 * q)
                checked += 1
    print(f"selftest: {checked} products, word arithmetic == exact SPEC REDC")
    return 0


# --------------------------------------------------------------- the kernels

# Triton resolves the names a @triton.jit function uses (tl, the helpers)
# from the module's globals, so the kernels live at module level; without
# Triton (--selftest on a machine without a GPU) they are not defined.
try:
    import triton
    import triton.language as tl
except ImportError:
    triton = tl = None

if tl is not None:

    @triton.jit
    def _redc62(a, b, q, k):
        lo = a * b
        hi = tl.umulhi(a, b)
        m = ((lo * k) << 2) >> 2
        mlo = m * q
        mhi = tl.umulhi(m, q)
        slo = lo + mlo
        carry = (slo < lo).to(tl.uint64)
        shi = hi + mhi + carry
        return (shi << 2) | (slo >> 62)

    @triton.jit
    def _redc32(a, b, q, k):
        t = a * b
        m = ((((t << 32) >> 32) * k) << 32) >> 32
        u = (t + m * q) >> 32
        return tl.where(u >= q, u - q, u)

    @triton.jit
    def _mul(a, b, q, k, R62: tl.constexpr):
        if R62:
            return _redc62(a, b, q, k)
        else:
            return _redc32(a, b, q, k)

    @triton.jit
    def _add_lazy(a, b, q):
        s = a + b
        return tl.where(s >= 2 * q, s - 2 * q, s)

    @triton.jit
    def _ld(p, idx, mask, R62: tl.constexpr):
        if R62:
            return tl.load(p + idx, mask=mask, other=0).to(tl.uint64, bitcast=True)
        else:
            return tl.load(p + idx, mask=mask, other=0).to(tl.uint32, bitcast=True).to(tl.uint64)

    @triton.jit
    def _st(p, idx, v, mask, R62: tl.constexpr):
        if R62:
            tl.store(p + idx, v.to(tl.int64, bitcast=True), mask=mask)
        else:
            tl.store(p + idx, v.to(tl.uint32).to(tl.int32, bitcast=True), mask=mask)

    @triton.jit
    def _params(P, pstride, row, mask, R62: tl.constexpr):
        twoq = _ld(P, row, mask, R62)
        klo = _ld(P, 3 * pstride + row, mask, R62)
        khi = _ld(P, 4 * pstride + row, mask, R62)
        if R62:
            k = klo | (khi << 31)
        else:
            k = klo | (khi << 16)
        return twoq >> 1, k

    @triton.jit
    def mul_kernel(A, B, C, P, pstride, n, E, R62: tl.constexpr, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < E
        q, k = _params(P, pstride, offs // n, mask, R62)
        a = _ld(A, offs, mask, R62)
        b = _ld(B, offs, mask, R62)
        _st(C, offs, _mul(a, b, q, k, R62), mask, R62)

    @triton.jit
    def tensor_kernel(A, B, D, P, pstride, n, E, R62: tl.constexpr, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < E
        q, k = _params(P, pstride, offs // n, mask, R62)
        a0 = _ld(A, offs, mask, R62)
        a1 = _ld(A, E + offs, mask, R62)
        b0 = _ld(B, offs, mask, R62)
        b1 = _ld(B, E + offs, mask, R62)
        _st(D, offs, _mul(a0, b0, q, k, R62), mask, R62)
        cross = _add_lazy(_mul(a0, b1, q, k, R62), _mul(a1, b0, q, k, R62), q)
        _st(D, E + offs, cross, mask, R62)
        _st(D, 2 * E + offs, _mul(a1, b1, q, k, R62), mask, R62)

    @triton.jit
    def keyswitch_kernel(D0, D1, D2, K, ACC, P, pstride, n, E, R62: tl.constexpr,
                         BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < E
        q, k = _params(P, pstride, offs // n, mask, R62)
        d0 = _ld(D0, offs, mask, R62)
        d1 = _ld(D1, offs, mask, R62)
        d2 = _ld(D2, offs, mask, R62)
        for c in tl.static_range(2):
            p0 = _mul(d0, _ld(K, (0 * 2 + c) * E + offs, mask, R62), q, k, R62)
            p1 = _mul(d1, _ld(K, (1 * 2 + c) * E + offs, mask, R62), q, k, R62)
            p2 = _mul(d2, _ld(K, (2 * 2 + c) * E + offs, mask, R62), q, k, R62)
            _st(ACC, c * E + offs, _add_lazy(_add_lazy(p0, p1, q), p2, q), mask, R62)

    KERNELS = {"mul": mul_kernel, "tensor_product": tensor_kernel,
               "keyswitch_3digits": keyswitch_kernel}


def make_kernels():
    if tl is None:
        raise RuntimeError("Triton is not installed")
    return KERNELS


# ------------------------------------------------------------------ the run

GRAPHS = {
    # name: (inputs as (name, leading shape), outputs as (name, leading shape))
    "mul": ([("a", ()), ("b", ())], [("c", ())]),
    "tensor_product": ([("a", (2,)), ("b", (2,))], [("d", (3,))]),
    "keyswitch_3digits": ([("d0", ()), ("d1", ()), ("d2", ()), ("key", (3, 2))], [("acc", (2,))]),
}


def reference(name, r, q, vals):
    """Outputs at one element from its input values (dicts of flat lists)."""
    mul, add = r.mul, Radix.add_lazy
    if name == "mul":
        return {"c": [mul(q, vals["a"][0], vals["b"][0])]}
    if name == "tensor_product":
        a0, a1 = vals["a"]
        b0, b1 = vals["b"]
        return {"d": [mul(q, a0, b0), add(q, mul(q, a0, b1), mul(q, a1, b0)), mul(q, a1, b1)]}
    key = vals["key"]  # [j*2 + c]
    acc = []
    for c in range(2):
        s = add(q, mul(q, vals["d0"][0], key[c]), mul(q, vals["d1"][0], key[2 + c]))
        acc.append(add(q, s, mul(q, vals["d2"][0], key[4 + c])))
    return {"acc": acc}


def run(args):
    if not args.triton_cache:
        os.environ["TRITON_CACHE_DIR"] = tempfile.mkdtemp(prefix="fhjit-triton-cache-")
    else:
        os.environ["TRITON_CACHE_DIR"] = args.triton_cache
    import torch
    import triton

    dev = torch.device("cuda")
    kernels = make_kernels()
    results = []
    print(f"triton {triton.__version__}, torch {torch.__version__}, "
          f"{torch.cuda.get_device_name(0)}", flush=True)
    pools = {"r32": find_primes(30, 1 << 17, 32), "r62": find_primes(60, 1 << 17, 32)}
    stream = torch.cuda.Stream()
    rng = random.Random(11)
    compiled = set()
    failures = 0

    def timed(fn, nsets, per_graph, reps):
        """Median time per launch of fn(set) over graph replays, ms."""
        with torch.cuda.stream(stream):
            fn(0)  # compiled and run once outside the capture
            torch.cuda.synchronize()
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g, stream=stream):
                for i in range(per_graph):
                    fn(i % nsets)
            for _ in range(3):
                g.replay()
            torch.cuda.synchronize()
            e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            times = []
            for _ in range(reps):
                e0.record(stream)
                g.replay()
                e1.record(stream)
                e1.synchronize()
                times.append(e0.elapsed_time(e1) / per_graph)
        times.sort()
        return times[len(times) // 2]

    for log2 in args.log2:
        n = 1 << min(log2, 16)
        rows = (1 << log2) // n
        E = rows * n
        # the copy: as many bytes per launch as a tensor product in r62
        copy_bytes = 7 * E * 8 // 2
        nsets = max(2, min(16, (256 << 20) // (2 * copy_bytes) + 1))
        src = [torch.randint(0, 1 << 62, (copy_bytes // 8,), dtype=torch.int64, device=dev)
               for _ in range(nsets)]
        dst = [torch.empty_like(s) for s in src]
        ms = timed(lambda i: dst[i].copy_(src[i]), nsets, 4 * nsets, args.reps)
        copy_gbps = 2 * copy_bytes / (ms * 1e-3) / 1e9
        del src, dst
        print(f"elements 2^{log2}: torch copy {copy_gbps:.1f} GB/s ({ms * 1e3:.2f} us)", flush=True)
        results.append({"kind": "copy", "log2": log2, "GBps": copy_gbps, "us": ms * 1e3})
        for name, (ins, outs) in GRAPHS.items():
            for rname in ("r32", "r62"):
                r = Radix(rname)
                r62 = rname == "r62"
                dtype = torch.int64 if r62 else torch.int32
                ws = 8 if r62 else 4
                moduli = [pools[rname][i % 32] for i in range(rows)]
                table = [[0] * rows for _ in range(8)]
                for i, q in enumerate(moduli):
                    for row, v in enumerate(r.param_rows(q)):
                        table[row][i] = v
                params = torch.tensor(table, dtype=torch.int64, device=dev).to(dtype)
                twoq = params[0].to(torch.int64).view(rows, 1)

                def lazy(lead):
                    x = torch.randint(0, 1 << 62, lead + (rows, n), dtype=torch.int64, device=dev)
                    return (x % twoq).to(dtype)

                set_bytes = sum(E * ws * _prod(s) for _, s in ins) + \
                    sum(E * ws * _prod(s) for _, s in outs)
                k_sets = max(2, min(16, (256 << 20) // set_bytes + 1))
                sets = []
                for _ in range(k_sets):
                    sets.append(({nm: lazy(s) for nm, s in ins},
                                 {nm: torch.empty(s + (rows, n), dtype=dtype, device=dev)
                                  for nm, s in outs}))
                BLOCK = 1024
                grid = (triton.cdiv(E, BLOCK),)
                kern = kernels[name]

                def launch(i, sets=sets, kern=kern, grid=grid, params=params, r62=r62):
                    inp, out = sets[i]
                    args_ = [inp[nm] for nm, _ in ins] + [out[nm] for nm, _ in outs]
                    kern[grid](*args_, params, rows, n, E, R62=r62, BLOCK=BLOCK, num_warps=8)

                key = (name, rname)
                t0 = time.perf_counter()
                launch(0)
                torch.cuda.synchronize()
                first_ms = (time.perf_counter() - t0) * 1e3
                cold = key not in compiled
                compiled.add(key)
                # check a sample of elements against exact integers
                inp, out = sets[0]
                bad = 0
                idx = [rng.randrange(E) for _ in range(args.sample)]
                idx_t = torch.tensor(idx, dtype=torch.int64, device=dev)
                got_in = {nm: inp[nm].reshape(-1, E)[:, idx_t].to(torch.int64).cpu().tolist()
                          for nm, _ in ins}
                got_out = {nm: out[nm].reshape(-1, E)[:, idx_t].to(torch.int64).cpu().tolist()
                           for nm, _ in outs}
                for j, e in enumerate(idx):
                    q = moduli[e // n]
                    vals = {nm: [lead[j] for lead in got_in[nm]] for nm, _ in ins}
                    want = reference(name, r, q, vals)
                    for nm, _ in outs:
                        if [lead[j] for lead in got_out[nm]] != want[nm]:
                            bad += 1
                failures += bad > 0
                ms = timed(launch, k_sets, max(4, k_sets), args.reps)
                gbps = set_bytes / (ms * 1e-3) / 1e9
                print(f"  {name:18s} {rname} 2^{log2}  {ms * 1e3:10.2f} us  {gbps:8.1f} GB/s  "
                      f"{gbps / copy_gbps:5.3f} of copy  "
                      f"{'exact' if not bad else f'WRONG ({bad} of {len(idx)})'}  "
                      f"(first call {first_ms:.0f} ms{', compiled' if cold else ''})", flush=True)
                results.append({"kind": "kernel", "graph": name, "radix": rname, "log2": log2,
                                "us": ms * 1e3, "GBps": gbps, "copy_GBps": copy_gbps,
                                "ratio": gbps / copy_gbps, "bytes": set_bytes,
                                "exact": int(not bad), "first_call_ms": first_ms,
                                "first_call_compiled": int(cold)})
                del sets, params, twoq
                torch.cuda.empty_cache()
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"triton": triton.__version__, "torch": torch.__version__,
                       "results": results}, f, indent=1)
    if failures:
        print(f"{failures} Triton kernels differ from SPEC on the sample")
    return 1 if failures else 0


def _prod(shape):
    p = 1
    for s in shape:
        p *= s
    return p


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--log2", default="21,26",
                    type=lambda s: [int(x) for x in s.split(",") if x])
    ap.add_argument("--json")
    ap.add_argument("--reps", type=int, default=25)
    ap.add_argument("--sample", type=int, default=4096)
    ap.add_argument("--triton-cache")
    ap.add_argument("--selftest", action="store_true")
    args = ap.parse_args()
    if args.selftest:
        return selftest()
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
