#!/usr/bin/env python3
"""python_overhead_local.py: the Python package's own cost per GPU launch,
measured without a GPU, against the fake libcuda (test/unit/fake_cuda),
whose launch is nearly free, so what g.run adds over a bare ctypes call of
fhjit_cuda_launch_kernel / fhjit_cuda_launch on the same prepared arguments
shows directly. bench/python_launch.py measures the same on a real GPU.

The graph is python_launch.py's (mul r32 over 256 elements). Arrays are
  cai    objects with a __cuda_array_interface__ (v3, no stream) dict
  torch  tensors of a stand-in torch module (data_ptr/shape/stride/
         get_device and torch._C._cuda_getCurrentRawStream: the attributes
         the package's torch path reads), so the torch path runs here too;
         its attribute reads are Python functions, slower than real torch's.

  FHJIT_LIBRARY=build/debug/libfhjit.so \
  FHJIT_LIBCUDA=build/debug/test/unit/fake_cuda/libfake_cuda.so \
  FHJIT_CACHE_DIR=build/pytest-fhjit-cache \
      /usr/bin/python3 bench/python_overhead_local.py [--count N] [--profile] [--json F]
"""
import argparse
import ctypes
import json
import os
import statistics
import sys
import time
import types

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "python"))

BATCH = 64
E = 256


def timed(fn, count):
    for _ in range(200):
        fn()
    per = []
    for _ in range(max(1, count // BATCH)):
        t0 = time.perf_counter()
        for _ in range(BATCH):
            fn()
        per.append((time.perf_counter() - t0) * 1e6 / BATCH)
    return statistics.fmean(per), statistics.median(per)


class CaiArray:
    """A CUDA array object as cheap as one can be: the interface is a
    plain dict (CuPy and numba build theirs per access)."""

    def __init__(self, ptr, shape, typestr):
        item = int(typestr[2:])
        st, acc = [], item
        for e in reversed(shape):
            st.insert(0, acc)
            acc *= e
        self.__cuda_array_interface__ = {"data": (ptr, False), "shape": tuple(shape),
                                         "strides": tuple(st), "typestr": typestr,
                                         "version": 3}


def stand_in_torch():
    """A module named torch with a Tensor class and the stream hook."""
    torch = types.ModuleType("torch")
    torch.int32, torch.int64 = "torch.int32", "torch.int64"

    class Tensor:
        __slots__ = ("_ptr", "shape", "_stride", "dtype", "is_cuda")

        def __init__(self, ptr, shape, dtype):
            self._ptr, self.shape, self.dtype, self.is_cuda = ptr, tuple(shape), dtype, True
            st, acc = [], 1
            for e in reversed(shape):
                st.insert(0, acc)
                acc *= e
            self._stride = tuple(st)

        def data_ptr(self):
            return self._ptr

        def stride(self):
            return self._stride

        def get_device(self):
            return 0
    torch.Tensor = Tensor
    torch._C = types.SimpleNamespace(_cuda_getCurrentRawStream=lambda dev: 0)
    torch.cuda = types.SimpleNamespace(current_device=lambda: 0)
    torch.device = lambda kind, index: (kind, index)
    return torch


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--count", type=int, default=64 * 400, help="launches per variant")
    ap.add_argument("--rounds", type=int, default=3, help="rounds (best median kept)")
    ap.add_argument("--profile", action="store_true", help="cProfile g.run (cai and torch)")
    ap.add_argument("--json", help="write the figures here")
    args = ap.parse_args()
    if "fake_cuda" not in os.environ.get("FHJIT_LIBCUDA", ""):
        print("set FHJIT_LIBCUDA to the fake libcuda (see the docstring)")
        return 2

    import fhjit
    from fhjit import _lib
    lib = _lib.load()
    ctx = fhjit.Context()

    def alloc(nbytes):
        p = ctypes.c_uint64()
        ctx.check(lib.fhjit_cuda_alloc(ctx.handle(), nbytes, ctypes.byref(p)))
        return p.value

    q = [268369921]
    g = fhjit.Graph("mul", "r32", moduli=q)
    a_, b_ = g.input("a", "pt<[], 1, 256>"), g.input("b", "pt<[], 1, 256>")
    g.output(a_ * b_, "c")
    pa, pb, pc, pp = (alloc(E * 4) for _ in range(4))
    cai = [CaiArray(x, s, "<u4") for x, s in ((pa, (1, E)), (pb, (1, E)), (pc, (1, E)),
                                                 (pp, (8, 1)))]
    a, b, c, P = cai
    fake_torch = stand_in_torch()
    real_torch = sys.modules.get("torch")
    sys.modules["torch"] = fake_torch
    T = fake_torch.Tensor
    ta, tb, tc, tP = (T(x, s, "torch.int32") for x, s in ((pa, (1, E)), (pb, (1, E)),
                                                          (pc, (1, E)), (pp, (8, 1))))
    g.run(a, b, params=P, out=c)  # compiles; the bare calls use its kernel
    g.run(ta, tb, params=tP, out=tc)
    plan = next(iter(g._plans.values()))
    kern = next(iter(plan.kernels.values()))
    cargs = _lib.CudaArgs()
    ins = (ctypes.c_uint64 * 2)(pa, pb)
    res = (ctypes.c_uint64 * 1)(pc)
    cargs.params, cargs.pstride = pp, 1
    cargs.inputs, cargs.ninputs = ctypes.addressof(ins), 2
    cargs.results, cargs.nresults = ctypes.addressof(res), 1
    cargs.stream = 0
    addr = ctypes.addressof(cargs)
    launch_kernel, launch = lib.fhjit_cuda_launch_kernel, lib.fhjit_cuda_launch
    kh, gh = kern.handle, g.handle()
    empty = lib.fhjit_is_prime
    g.bind(a, b)

    variants = [
        ("ctypes: an empty call (fhjit_is_prime)", lambda: empty(3)),
        ("ctypes: fhjit_cuda_launch_kernel", lambda: launch_kernel(kh, addr)),
        ("ctypes: fhjit_cuda_launch", lambda: launch(gh, addr)),
        ("fhjit: g.run, __cuda_array_interface__", lambda: g.run(a, b, params=P, out=c)),
        ("fhjit: g.run, stand-in torch tensors", lambda: g.run(ta, tb, params=tP, out=tc)),
        ("fhjit: g.run, torch, pointer_checks=False",
         lambda: g.run(ta, tb, params=tP, out=tc, pointer_checks=False)),
    ]
    for name, fn in variants[1:3]:
        assert fn() == 0, name
    for (name, fn), o in zip(variants[3:], (c, tc, tc)):
        assert fn() is o, name
    n0 = lib.fhjit_cuda_driver_proc(ctx.handle(), b"fake_cuda_launches")
    nlaunch = ctypes.CFUNCTYPE(ctypes.c_int)(n0)
    before = nlaunch()
    g.run(ta, tb, params=tP, out=tc)
    assert nlaunch() == before + 1, "g.run did not launch"

    if args.profile:
        import cProfile
        import pstats
        for name, fn in variants[3:5]:
            pr = cProfile.Profile()
            pr.enable()
            for _ in range(20000):
                fn()
            pr.disable()
            print("== profile:", name)
            pstats.Stats(pr).sort_stats("tottime").print_stats(14)

    best = {}
    for r in range(args.rounds):
        for name, fn in variants:
            mean, med = timed(fn, args.count)
            if name not in best or med < best[name][1]:
                best[name] = (mean, med)
    print("host time per launch on the fake libcuda, best median of %d rounds of %d launches:"
          % (args.rounds, args.count))
    for name, _ in variants:
        print("  %-46s %7.2f us (mean %7.2f)" % (name, best[name][1], best[name][0]))
    med = {k: v[1] for k, v in best.items()}
    lk = med["ctypes: fhjit_cuda_launch_kernel"]
    over = {
        "cai_over_launch_kernel_us": round(med["fhjit: g.run, __cuda_array_interface__"] - lk,
                                           3),
        "torch_over_launch_kernel_us": round(med["fhjit: g.run, stand-in torch tensors"] - lk,
                                             3),
        "torch_over_launch_us": round(med["fhjit: g.run, stand-in torch tensors"] -
                                      med["ctypes: fhjit_cuda_launch"], 3),
    }
    print("python overhead:", json.dumps(over))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"count": args.count, "rounds": args.rounds,
                       "results": [{"variant": k, "batched_median_us": round(v[1], 3),
                                    "batched_mean_us": round(v[0], 3)}
                                   for k, v in best.items()], "overhead": over}, f, indent=1)
    if real_torch is not None:
        sys.modules["torch"] = real_torch
    else:
        del sys.modules["torch"]
    return 0


if __name__ == "__main__":
    sys.exit(main())
