"""test_threads.py: several threads building, compiling and running graphs
at once (their own graphs, and one graph shared by all of them), every
result bit-exact against the interpreter. ctypes releases the GIL in every
call into libfhjit, so compiles really overlap; each context's lock keeps a
shared graph to one thread at a time."""
import threading

import numpy as np

import fhjit
from conftest import lazy, primes

THREADS = 6
ROUNDS = 4


def build(i):
    radix = ("r32", "r62")[i % 2]
    n = 64 << (i % 3)
    q = primes(radix, 2, ntt_n=n)
    g = fhjit.Graph("t%d" % i, radix, moduli=q)
    a = g.input("a", fhjit.ct(2, [i % 3 + 1], 2, n))
    b = g.input("b", fhjit.pt([1], 2, n))
    r = fhjit.mul_plain(a, b)
    for _ in range(i % 4):
        r = fhjit.add_lazy(r, a) * a
    if i % 3 == 0:  # some with NTTs: several kernels, anchors
        tw = g.input("tw", fhjit.twiddles(2, n))
        r = fhjit.ntt_fwd(r[0], tw, mode="mont")
    g.output(r, "r")
    return g, q, radix, n


def inputs(g, q, radix, n, seed):
    rng = np.random.default_rng(seed)
    out = [lazy(rng, v.type.shape, q, radix) if v.type.kind != "twiddles" else None
           for v in g.inputs]
    if out[-1] is None:
        out[-1] = fhjit.twiddle_tables(q, n, radix)[0]
    return out


def run_threads(fn):
    errors = []
    barrier = threading.Barrier(THREADS)

    def wrap(i):
        try:
            barrier.wait()
            fn(i)
        except Exception as e:  # reported by the main thread
            errors.append("thread %d: %r" % (i, e))
    ts = [threading.Thread(target=wrap, args=(i,)) for i in range(THREADS)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(120)
    assert not errors, errors


def test_threads_build_compile_and_run_their_own_graphs():
    def work(i):
        for k in range(ROUNDS):
            g, q, radix, n = build(i)  # a new graph: a new compile each round
            ins = inputs(g, q, radix, n, seed=100 * i + k)
            got = g.run(*ins, params=fhjit.param_table(q, radix, n=n))
            want = g.run(*ins, params=fhjit.param_table(q, radix, n=n), backend="interp")
            assert np.array_equal(got, want)
    run_threads(work)


def test_threads_share_one_graph():
    g, q, radix, n = build(1)
    P = fhjit.param_table(q, radix, n=n)

    def work(i):
        for k in range(ROUNDS):
            ins = inputs(g, q, radix, n, seed=7 * i + k)
            if k % 2:  # another binding: a strided view (rebinds, recompiles)
                ins[0] = np.ascontiguousarray(np.concatenate([ins[0], ins[0]], -1))[..., :n]
            got = g.run(*ins, params=P)
            want = g.run(*[np.ascontiguousarray(x) for x in ins], params=P, backend="interp")
            assert np.array_equal(got, want)
    run_threads(work)


def test_threads_with_a_shared_context():
    ctx = fhjit.Context()

    def work(i):
        text = str(build(i)[0])
        g = fhjit.parse(text, context=ctx)
        q = g.moduli
        n = g.inputs[0].type.n
        ins = inputs(g, q, g.radix, n, seed=i)
        P = fhjit.param_table(q, g.radix, n=n)
        assert np.array_equal(g.run(*ins, params=P), g.run(*ins, params=P, backend="interp"))
    run_threads(work)
    ctx.close()
