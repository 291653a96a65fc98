#!/usr/bin/env python3
"""python_launch.py: the host cost of one launch through the fhjit Python
package on torch tensors, against the C API called from the same process
(fhjit_cuda_launch_kernel and fhjit_cuda_launch through ctypes: the C cost
plus ctypes' own, which an empty ctypes call measures), against the same
kernel written in Triton (bench/baselines/triton_rns.py's mul_kernel) and,
optionally, against fhjit_bench's C loop run right after (--c-bench).

The graph is fhjit_bench's launch-overhead graph: mul r32 over 256
elements, so the GPU's work never shows. Launches are timed like
fhjit_bench's: batches of 64 launches on a side stream, each batch timed on
the host clock, then drained untimed (the queue never fills); mean and
median per launch over the batches.

Targets (issue 18): g.run with preallocated outputs under 10 us, and within
1.2x of the Triton call.

  FHJIT_LIBRARY=build/debug/libfhjit.so python3 bench/python_launch.py --json out.json
      [--count 20032] [--c-bench build/bench/fhjit_bench]
"""
import argparse
import ctypes
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "python"))
sys.path.insert(0, os.path.join(HERE, "baselines"))

BATCH = 64
E = 256


def timed(fn, count, sync):
    for _ in range(200):
        fn()
    sync()
    per = []
    for _ in range(max(1, count // BATCH)):
        t0 = time.perf_counter()
        for _ in range(BATCH):
            fn()
        per.append((time.perf_counter() - t0) * 1e6 / BATCH)
        sync()
    return statistics.fmean(per), statistics.median(per)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--json", help="write the figures here")
    ap.add_argument("--count", type=int, default=20032, help="launches per variant")
    ap.add_argument("--c-bench", help="fhjit_bench binary: also run its launch-overhead part")
    args = ap.parse_args()

    import numpy as np
    import fhjit
    from fhjit import _lib
    try:
        import torch
    except ImportError:
        print("SKIP: no torch")
        return 77
    if not torch.cuda.is_available():
        print("SKIP: torch sees no CUDA device")
        return 77
    lib = _lib.load()
    q = [268369921]
    g = fhjit.Graph("mul", "r32", moduli=q)
    a_, b_ = g.input("a", "pt<[], 1, 256>"), g.input("b", "pt<[], 1, 256>")
    g.output(a_ * b_, "c")
    rng = np.random.default_rng(1)
    host = [rng.integers(0, 2 * q[0], size=(1, E), dtype=np.uint32) for _ in range(2)]
    want = g.run(*host)
    a, b = (torch.from_numpy(x.view(np.int32)).cuda() for x in host)
    P = fhjit.to_torch(fhjit.param_table(q, "r32"))
    c = torch.empty((1, E), dtype=torch.int32, device="cuda")
    s = torch.cuda.Stream()
    torch.cuda.set_stream(s)
    sync = s.synchronize
    results = []

    def record(name, fn, check=None):
        fn()
        sync()
        if check is not None:
            got = check().cpu().numpy().view(np.uint32)
            assert np.array_equal(got, want), "%s: wrong result" % name
        mean, med = timed(fn, args.count, sync)
        results.append({"variant": name, "batched_mean_us": round(mean, 3),
                        "batched_median_us": round(med, 3)})
        print("  %-46s %7.2f us (median %7.2f)" % (name, mean, med), flush=True)

    print("host time per launch, %d launches in batches of %d (mul r32, %d elements):"
          % (args.count, BATCH, E))
    # the C API through ctypes, on the kernel and buffers g.run uses
    g.run(a, b, params=P, out=c)  # compiles; the plan and kernel below are its
    plan = next(iter(g._plans.values()))
    kern = next(iter(plan.kernels.values()))
    cargs = _lib.CudaArgs()
    ins = (ctypes.c_uint64 * 2)(a.data_ptr(), b.data_ptr())
    res = (ctypes.c_uint64 * 1)(c.data_ptr())
    cargs.params, cargs.pstride = P.data_ptr(), 1
    cargs.inputs, cargs.ninputs = ctypes.addressof(ins), 2
    cargs.results, cargs.nresults = ctypes.addressof(res), 1
    cargs.stream = s.cuda_stream
    addr = ctypes.addressof(cargs)
    launch_kernel, launch = lib.fhjit_cuda_launch_kernel, lib.fhjit_cuda_launch
    gh, kh = g.handle(), kern.handle
    empty = lib.fhjit_is_prime
    record("ctypes: an empty call (fhjit_is_prime)", lambda: empty(3))
    record("ctypes: fhjit_cuda_launch_kernel", lambda: launch_kernel(kh, addr), lambda: c)
    g.bind(a, b)  # fhjit_cuda_launch finds the kernel by the bound graph's hash
    record("ctypes: fhjit_cuda_launch", lambda: launch(gh, addr), lambda: c)
    record("fhjit: g.run(a, b, params=P, out=c)",
           lambda: g.run(a, b, params=P, out=c), lambda: c)
    record("fhjit: g.run(..., pointer_checks=False)",
           lambda: g.run(a, b, params=P, out=c, pointer_checks=False), lambda: c)
    record("fhjit: g.run(a, b, params=P) (allocates c)",
           lambda: g.run(a, b, params=P), lambda: g.run(a, b, params=P))
    record("torch: torch.mul(a, b) (for scale)", lambda: torch.mul(a, b))
    meta = (a, b, P, c)

    def reads():  # what g.run's fast path reads of each tensor, alone
        for x in meta:
            (x.shape, x.stride(), x.dtype, x.get_device(), x.data_ptr() & 15)
    record("torch: the metadata g.run reads (4 tensors)", reads)
    triton_ok = False
    try:
        import triton_rns  # imports triton
        kernel = triton_rns.make_kernels()["mul"]
        record("triton: mul_kernel[grid](a, b, c, P, ...)",
               lambda: kernel[(1,)](a, b, c, P, 1, E, E, R62=False, BLOCK=E, num_warps=8),
               lambda: c)
        triton_ok = True
    except Exception as e:  # no Triton (or an old one): the figure is left out
        print("  triton: skipped (%s)" % e)
    torch.cuda.set_stream(torch.cuda.default_stream())

    by = {r["variant"]: r["batched_median_us"] for r in results}
    run_us = by["fhjit: g.run(a, b, params=P, out=c)"]
    c_us = by["ctypes: fhjit_cuda_launch"]
    ratios = {"run_over_ctypes_launch": round(run_us / c_us, 3),
              "run_over_ctypes_launch_kernel":
                  round(run_us / by["ctypes: fhjit_cuda_launch_kernel"], 3),
              "python_overhead_us": round(run_us - by["ctypes: fhjit_cuda_launch_kernel"]
                                          + by["ctypes: an empty call (fhjit_is_prime)"], 3)}
    if triton_ok:
        ratios["run_over_triton"] = round(run_us / by["triton: mul_kernel[grid](a, b, c, P, "
                                                      "...)"], 3)
    c_bench = None
    if args.c_bench:
        with tempfile.TemporaryDirectory() as d:
            jp = os.path.join(d, "c.json")
            r = subprocess.run([args.c_bench, "--log2", "", "--quick", "--json", jp],
                               capture_output=True, text=True, timeout=300)
            if r.returncode == 0:
                with open(jp) as f:
                    c_bench = [x for x in json.load(f)["results"] if x.get("kind") == "launch"]
                for x in c_bench:
                    print("  C (fhjit_bench): %-30s %7.2f us (median %7.2f)"
                          % (x["variant"], x["host_us"], x["batched_median_us"]))
                cl = [x for x in c_bench if x["variant"] == "fhjit_cuda_launch"]
                if cl:
                    ratios["run_over_c_fhjit_cuda_launch"] = round(
                        run_us / cl[0]["batched_median_us"], 3)
            else:
                print("  fhjit_bench failed (%d): %s" % (r.returncode, r.stdout[-500:]))
    targets = {"run_under_10us": run_us < 10.0,
               "python_overhead_under_10us": ratios["python_overhead_us"] < 10.0}
    if triton_ok:
        targets["run_within_1.2x_triton"] = ratios["run_over_triton"] <= 1.2
    print("ratios:", json.dumps(ratios))
    print("targets:", json.dumps(targets))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": torch.cuda.get_device_name(), "torch": torch.__version__,
                       "triton": getattr(sys.modules.get("triton"), "__version__", None),
                       "fhjit": fhjit.version(), "python": sys.version.split()[0],
                       "count": args.count, "batch": BATCH, "results": results,
                       "c_bench": c_bench, "ratios": ratios, "targets": targets}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
