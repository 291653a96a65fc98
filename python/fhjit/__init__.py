"""fhjit: Python over libfhjit, the JIT compiler for RNS/FHE arithmetic graphs.

Pure Python (ctypes, standard library only); numpy for host arrays, torch
(or any __cuda_array_interface__ / __dlpack__ array) for the GPU.

    import numpy as np, fhjit
    q = fhjit.find_primes(60, 1 << 17, 2)
    g = fhjit.Graph("tp", "r62", moduli=q)
    a = g.input("a", "ct<2, [], 2, 4096> ntt mont")
    b = g.input("b", "ct<2, [], 2, 4096> ntt mont")
    g.output(fhjit.pack(a[0] * b[0], fhjit.add_lazy(a[0] * b[1], a[1] * b[0]), a[1] * b[1]), "d")
    d = g.run(x, y)                         # numpy in, numpy out (host JIT)
    d = g.run(xt, yt, params=P_t)           # torch CUDA tensors, current stream

Guide: docs/python.md.
"""
from . import graph as _graph
from ._lib import STATUS_NAMES, FhjitError
from ._lib import load as load_library
from .graph import (OPS, Context, Graph, Type, Value, View, ct, key, load, parse, pt, table,
                    twiddles)
from .rns import (bconv_table, check_modulus, find_primes, graph_constants, input_table,
                  is_prime, moddown_table, modup_table, ntt_psi, param_table, rescale_table,
                  to_torch, twiddle_tables, twiddle_use)

__version__ = "0.1.0"

# the graph operations (fhjit.add_lazy, ...), one per row of graph.OPS
for _op in OPS:
    globals()[_op.name] = getattr(_graph, _op.name)
del _op

__all__ = ["FhjitError", "STATUS_NAMES", "load_library", "OPS", "Context", "Graph", "Type",
           "Value", "View", "ct", "key", "load", "parse", "pt", "table", "twiddles",
           "check_modulus", "find_primes", "is_prime", "ntt_psi", "param_table", "to_torch",
           "twiddle_tables", "bconv_table", "rescale_table", "modup_table", "moddown_table",
           "input_table", "twiddle_use", "graph_constants",
           "version", "library_path", "cuda_available", "targets"] + [o.name for o in OPS]


def version():
    """The loaded libfhjit's version string."""
    return load_library().fhjit_version().decode()


def library_path():
    """The path libfhjit was loaded from."""
    return load_library().fhjit_loaded_from


def cuda_available():
    """True when a CUDA driver and device are usable (fhjit_cuda_available)."""
    from ._lib import lib
    with Context() as ctx:
        return bool(lib.fhjit_cuda_available(ctx.handle()))


def targets():
    """The GPU targets fhjit can emit ("sm_70", ...)."""
    from ._lib import lib
    p = lib.fhjit_targets()
    out, i = [], 0
    while p[i]:
        out.append(p[i].decode())
        i += 1
    return out
