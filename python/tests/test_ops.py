"""test_ops.py: every graph operation built through the package and run on
every backend there is: the host JIT bit-exact against the C interpreter,
and (conftest.py) the fake driver's and a real GPU's results bit-exact
against the host's. Both radices; SPEC section 6's boundary pairs in every
input. SPEC section 7's operations run on the compiled backends as soon as
the library lowers them (skipped while it answers FHJIT_ERR_UNSUPPORTED);
test_section7.py checks their interpreter against Python references."""
import numpy as np
import pytest

import fhjit
from conftest import fake_driver, graph_inputs, lazy, on_backend, primes, run_or_skip, torch_cuda

N = 64


def _pt(g, name, rows=2, n=N, batch=(), **facts):
    return g.input(name, fhjit.pt(list(batch), rows, n, **facts))


def _ct(g, name, comps=2, rows=2, n=N, batch=(), **facts):
    return g.input(name, fhjit.ct(comps, list(batch), rows, n, **facts))


def binary(op):
    def build(radix, rng):
        q = primes(radix, 2)
        g = fhjit.Graph(op, radix, moduli=q)
        a, b = _pt(g, "a"), _pt(g, "b")
        g.output(getattr(fhjit, op)(a, b), "r")
        return g, [lazy(rng, (2, N), q, radix), lazy(rng, (2, N), q, radix)], q, 0
    return build


def unary(op):
    def build(radix, rng):
        q = primes(radix, 2)
        g = fhjit.Graph(op, radix, moduli=q)
        g.output(getattr(fhjit, op)(_pt(g, "a")), "r")
        return g, [lazy(rng, (2, N), q, radix)], q, 0
    return build


def operators(radix, rng):
    q = primes(radix, 2)
    g = fhjit.Graph("operators", radix, moduli=q)
    a, b = _pt(g, "a"), _pt(g, "b")
    g.output((a + b) * a - b, "x")
    g.output(-a, "y")
    g.output(a.add_lazy(b).to_mont().from_mont(), "z")
    return g, [lazy(rng, (2, N), q, radix), lazy(rng, (2, N), q, radix)], q, 0


def mul_plain(radix, rng):
    q = primes(radix, 2)
    g = fhjit.Graph("mul_plain", radix, moduli=q)
    c = _ct(g, "c", batch=[3])
    p = _pt(g, "p", batch=[1])
    g.output(fhjit.mul_plain(c, p), "r")
    return g, [lazy(rng, (2, 3, 2, N), q, radix), lazy(rng, (1, 2, N), q, radix)], q, 0


def add_plain(radix, rng):
    q = primes(radix, 2)
    g = fhjit.Graph("add_plain", radix, moduli=q)
    c = _ct(g, "c", domain="ntt", form="mont")
    p = _pt(g, "p", domain="ntt", form="mont")
    g.output(fhjit.add_plain(c, p), "r")
    return g, [lazy(rng, (2, 2, N), q, radix), lazy(rng, (2, N), q, radix)], q, 0


def mul_compressed(layout):
    def build(radix, rng):
        q = primes(radix, 2)
        g = fhjit.Graph("mulc_" + layout, radix, moduli=q)
        c = _ct(g, "c")
        p = _pt(g, "p", n=N // 4)
        ins = [lazy(rng, (2, 2, N), q, radix), lazy(rng, (2, N // 4), q, radix)]
        imp = None
        if layout == "strided_sparse":
            imp = _pt(g, "i", n=1)
            ins.append(lazy(rng, (2, 1), q, radix))
        g.output(fhjit.mul_compressed(c, p, layout=layout, implicit=imp), "r")
        return g, ins, q, 0
    return build


def add_compressed(layout, domain):
    def build(radix, rng):
        q = primes(radix, 2)
        g = fhjit.Graph("addc_%s_%s" % (layout, domain), radix, moduli=q)
        c = _ct(g, "c", domain=domain)
        p = _pt(g, "p", n=N // 8, form="mont")
        ins = [lazy(rng, (2, 2, N), q, radix), lazy(rng, (2, N // 8), q, radix)]
        imp = None
        if layout == "strided_sparse":
            imp = _pt(g, "i", n=1, form="mont")
            ins.append(lazy(rng, (2, 1), q, radix))
        g.output(fhjit.add_compressed(c, p, layout=layout, domain=domain, implicit=imp), "r")
        return g, ins, q, 0
    return build


def keyswitch(radix, rng):
    q = primes(radix, 4)
    g = fhjit.Graph("keyswitch", radix, moduli=q)
    d0, d1 = _pt(g, "d0", rows=2), _pt(g, "d1", rows=2)
    k = g.input("key", fhjit.key(3, 4, N))
    p0 = fhjit.keyswitch_digit_product(d0, k, digit=0, row_start=0)
    p1 = fhjit.keyswitch_digit_product(d1, k, digit=2, row_start=2)
    g.output(fhjit.add_lazy(p0, p1), "acc")
    return g, [lazy(rng, (2, N), q, radix), lazy(rng, (2, N), q, radix),
               lazy(rng, (3, 2, 4, N), q[:2], radix, row_axis=None)], q[:2], 0


def tensor_product(radix, rng):
    q = primes(radix, 2)
    g = fhjit.Graph("tensor_product", radix, moduli=q)
    a = _ct(g, "a", domain="ntt", form="mont")
    b = _ct(g, "b", domain="ntt", form="mont")
    g.output(fhjit.pack(a[0] * b[0], fhjit.add_lazy(a[0] * b[1], a[1] * b[0]), a[1] * b[1]),
             "d")
    return g, [lazy(rng, (2, 2, N), q, radix), lazy(rng, (2, 2, N), q, radix)], q, 0


def views(radix, rng):
    """Outputs that alias an input, extract a computed value, repeat."""
    q = primes(radix, 2)
    g = fhjit.Graph("views", radix, moduli=q)
    a = _ct(g, "a")
    b = _pt(g, "b")
    r = fhjit.mul_plain(a, b)
    g.output(r, "r")
    g.output(a[1], "a1")
    g.output(r[0], "r0")
    g.output(a, "a_again")
    return g, [lazy(rng, (2, 2, N), q, radix), lazy(rng, (2, N), q, radix)], q, 0


def ntt(direction, mode):
    def build(radix, rng):
        q = primes(radix, 2, ntt_n=N)
        fwd, inv = fhjit.twiddle_tables(q, N, radix)
        g = fhjit.Graph("ntt_%s_%s" % (direction, mode), radix, moduli=q)
        x = _pt(g, "x")
        tw = g.input("tw", fhjit.twiddles(2, N))
        op = fhjit.ntt_fwd if direction == "fwd" else fhjit.ntt_inv
        g.output(op(x, tw, mode=mode), "y")
        return g, [lazy(rng, (2, N), q, radix), fwd if direction == "fwd" else inv], q, N
    return build


def ntt_chain(radix, rng):
    """forward NTTs, a product and an add (fused), the inverse NTT."""
    q = primes(radix, 2, ntt_n=N)
    fwd, inv = fhjit.twiddle_tables(q, N, radix)
    g = fhjit.Graph("ntt_chain", radix, moduli=q)
    x, y = _pt(g, "x", batch=[2]), _pt(g, "y", batch=[2])
    tf = g.input("tf", fhjit.twiddles(2, N))
    ti = g.input("ti", fhjit.twiddles(2, N))
    X, Y = fhjit.ntt_fwd(x, tf), fhjit.ntt_fwd(y, tf)
    g.output(fhjit.ntt_inv(fhjit.add_lazy(X * Y, X), ti, mode="std"), "z")
    return g, [lazy(rng, (2, 2, N), q, radix), lazy(rng, (2, 2, N), q, radix), fwd, inv], q, N


# ---- SPEC section 7: graphs on stated bases, built bound, with their
# tables and twiddles from the graph (conftest.graph_inputs)

def _s7(name, radix, nmod, build, special=None, digits=None):
    q = primes(radix, nmod, ntt_n=N)
    g = fhjit.Graph(name, radix, moduli=q, special=special, digits=digits)
    build(g)
    g.bind()
    return g


def s7_case(name, build, nmod=5, special=None, digits=None):
    def case(radix, rng):
        g = _s7(name, radix, nmod, build, special, digits)
        return g, graph_inputs(g, rng), g.moduli, N
    return case


def _rows(g):
    x = _ct(g, "x", rows=4)
    y = g.input("y", fhjit.ct(2, [], 2, N), basis=[1, 2])
    g.output(fhjit.rows(x, 1, 2) + y, "r")
    g.output(x.rows(3, 1), "last")  # a view of an input


def _concat(g):
    a = g.input("a", fhjit.ct(2, [], 2, N), basis=[0, 1])
    b = g.input("b", fhjit.ct(2, [], 2, N), basis=[4, 2])
    c = g.input("c", fhjit.ct(2, [], 4, N), basis=[0, 1, 4, 2])
    g.output(fhjit.concat(a, b) * c, "r")


def _bconv(g):
    x = g.input("x", fhjit.ct(2, [], 3, N, domain="coef", form="mont"), basis=[2, 0, 4])
    t = g.input("t", fhjit.table(3 + 3 * 2))
    g.output(fhjit.bconv(x, t, [3, 1]), "y")


def _automorphism(domain):
    def build(g):
        x = g.input("x", fhjit.ct(2, [], 3, N, domain=domain, form="std"), basis=[3, 0, 1])
        g.output(fhjit.automorphism(x, 2 * N - 1), "conj")
        g.output(x.automorphism(5), "rot")
    return build


def _twiddles(g, rows):
    return g.input("fw", fhjit.twiddles(rows, N)), g.input("iv", fhjit.twiddles(rows, N))


def _rescale(g):
    x = _ct(g, "x", rows=4, domain="ntt", form="mont")
    fw, iv = _twiddles(g, 5)
    t = g.input("t", fhjit.table(3))
    g.output(fhjit.rescale(x, fw, iv, t), "y")


def _modup(g):  # special(2) digits(2): Q = [0, 3), digits {0, 1}, {2}
    d = _pt(g, "d", rows=3, domain="ntt", form="mont")
    fw, iv = _twiddles(g, 5)
    t0 = g.input("t0", fhjit.table(2 + 2 * 3))
    t1 = g.input("t1", fhjit.table(1 + 1 * 4))
    g.output(fhjit.modup(d, fw, iv, t0, digit=0), "u0")
    g.output(d.modup(fw, iv, t1, digit=1), "u1")


def _moddown(g):  # special(2): a on Q ++ P = [0, 1, 2] ++ [3, 4]
    a = _ct(g, "a", rows=5, domain="ntt", form="mont")
    fw, iv = _twiddles(g, 5)
    t = g.input("t", fhjit.table(2 + 2 * 3 + 3))
    g.output(fhjit.moddown(a, fw, iv, t), "y")


S7_CASES = {
    "rows": s7_case("rows", _rows), "concat": s7_case("concat", _concat),
    "bconv": s7_case("bconv", _bconv),
    "automorphism_coef": s7_case("automorphism_coef", _automorphism("coef")),
    "automorphism_ntt": s7_case("automorphism_ntt", _automorphism("ntt")),
    "rescale": s7_case("rescale", _rescale),
    "modup": s7_case("modup", _modup, special=2, digits=2),
    "moddown": s7_case("moddown", _moddown, special=2),
}
# their graphs run as kernels of their own (the conversion kernel; NTTs),
# whose arguments are not the graph's inputs and results in order: the fake
# driver's executor, which runs the whole graph per launch from the fused
# pointwise kernel's arguments, cannot run them (the host backend and a
# real GPU do)
S7_MULTI_KERNEL = ("bconv", "rescale", "modup", "moddown")

CASES = {
    "add": binary("add"), "sub": binary("sub"), "add_lazy": binary("add_lazy"),
    "mul": binary("mul"), "neg": unary("neg"), "to_mont": unary("to_mont"),
    "from_mont": unary("from_mont"), "operators": operators, "mul_plain": mul_plain,
    "add_plain": add_plain,
    "mul_compressed_cyclic": mul_compressed("cyclic"),
    "mul_compressed_contiguous": mul_compressed("contiguous"),
    "mul_compressed_strided_sparse": mul_compressed("strided_sparse"),
    "add_compressed_cyclic_ntt": add_compressed("cyclic", "ntt"),
    "add_compressed_sparse_coef": add_compressed("strided_sparse", "coef"),
    "add_compressed_contiguous_coef": add_compressed("contiguous", "coef"),
    "keyswitch_digit_product": keyswitch, "tensor_product": tensor_product,
    "views": views,
    "ntt_fwd_std": ntt("fwd", "std"), "ntt_fwd_mont": ntt("fwd", "mont"),
    "ntt_inv_std": ntt("inv", "std"), "ntt_inv_mont": ntt("inv", "mont"),
    "ntt_chain": ntt_chain,
}
CASES.update(S7_CASES)


def test_every_op_has_a_case():
    # SPEC section 7's whole operations run on every backend in
    # test_ckks.py (one graph of all six: one compile instead of twelve)
    from test_ckks import WHOLE
    names = {op.name for op in fhjit.OPS} - set(WHOLE)
    covered = set()
    for case in CASES:
        for n in names:
            if case.startswith(n) or n in ("extract", "pack"):
                covered.add(n)
    assert covered == names


def _backends():
    out = ["host"]
    out.append(pytest.param("fake", marks=pytest.mark.skipif(
        fake_driver() is None, reason="the fake libcuda is not in use")))
    out.append(pytest.param("torch", marks=pytest.mark.skipif(
        torch_cuda() is None, reason="needs torch with a CUDA GPU")))
    return out


@pytest.mark.parametrize("backend", _backends())
@pytest.mark.parametrize("radix", ["r32", "r62"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_op(case, radix, backend, rng):
    if backend == "fake" and case.startswith(("ntt",) + S7_MULTI_KERNEL):
        pytest.skip("the fake driver's executor runs fused pointwise kernels only")
    g, ins, q, n = CASES[case](radix, rng)
    params = fhjit.param_table(q, radix, n=n)
    want = on_backend("interp", g, ins, params)
    got = run_or_skip(on_backend, backend, g, ins, params, fake=fake_driver(),
                      torch=torch_cuda())
    assert len(got) == len(want) == len(g.output_names)
    for name, w, x in zip(g.output_names, want, got):
        assert x.shape == w.shape, name
        assert x.dtype == w.dtype, name
        assert np.array_equal(x, w), "%s: output %s differs at %d elements" % (
            case, name, int((x != w).sum()))


@pytest.mark.parametrize("radix", ["r32", "r62"])
def test_ntt_round_trip(radix, rng):
    q = primes(radix, 3, ntt_n=256)
    fwd, inv = fhjit.twiddle_tables(q, 256, radix)
    g = fhjit.Graph("rt", radix, moduli=q)
    x = g.input("x", fhjit.pt([], 3, 256, domain="coef", form="std"))
    tf, ti = g.input("tf", fhjit.twiddles(3, 256)), g.input("ti", fhjit.twiddles(3, 256))
    g.output(fhjit.ntt_inv(fhjit.ntt_fwd(x, tf), ti), "back")
    data = np.stack([rng.integers(0, qq, size=256, dtype=np.uint64) for qq in q])
    data = data.astype(np.uint32 if radix == "r32" else np.uint64)
    back = g.run(data, fwd, inv)
    assert np.array_equal(back, data)


def test_ntt_matches_direct_evaluation(rng):
    """Forward output j is A(psi^(2 br(j) + 1)) * R mod q (SPEC section 5)."""
    n, radix = 64, "r62"
    q = primes(radix, 1, ntt_n=n)
    fwd, _ = fhjit.twiddle_tables(q, n, radix)
    g = fhjit.Graph("direct", radix, moduli=q)
    x = g.input("x", fhjit.pt([], 1, n))
    g.output(fhjit.ntt_fwd(x, g.input("tw", fhjit.twiddles(1, n))), "X")
    coef = rng.integers(0, q[0], size=(1, n), dtype=np.uint64)
    X = g.run(coef, fwd)
    psi, qq, R = fhjit.ntt_psi(q[0], n), q[0], 1 << 62
    bits = n.bit_length() - 1
    for j in (0, 1, 5, n - 1):
        br = int(format(j, "0%db" % bits)[::-1], 2)
        w = pow(psi, 2 * br + 1, qq)
        want = sum(int(c) * pow(w, i, qq) for i, c in enumerate(coef[0])) * R % qq
        assert int(X[0, j]) % qq == want
