"""test_section7.py: SPEC section 7 through the package: the table type,
bases on inputs and values, special primes and digits, the builder ops
(rows, concat, bconv, automorphism, rescale, modup, moddown), the constant
helpers against formulas computed here with Python integers, and the
interpreter's results against independent references (big-integer CRT:
bconv's sum, rescale's rounding, moddown's floor, modup's kept and converted
rows; the automorphism's index maps and their composition). The compiled
backends' runs of these graphs are test_ops.py's section 7 cases and
test_host.py's examples/s7."""
import numpy as np
import pytest

import fhjit
from conftest import graph_inputs

N = 64
RADICES = ["r32", "r62"]


def R(radix):
    return 1 << (32 if radix == "r32" else 62)


def word(radix):
    return np.uint32 if radix == "r32" else np.uint64


def chain(radix, count, ntt_n=N, low=False):
    """Distinct NTT-friendly primes: near the radix's limit, or far below."""
    bits = (30 if radix == "r32" else 60) - (8 if low else 0)
    return fhjit.find_primes(bits, 2 * ntt_n, count)


def prod(xs):
    out = 1
    for x in xs:
        out *= x
    return out


def rows_of(ints, moduli, radix):
    """[len(moduli), n] words: ints (Python integers) mod each modulus."""
    return np.array([[x % m for x in ints] for m in moduli], dtype=word(radix))


def crt(residues, moduli):
    """The integer in [0, prod) with the given residues."""
    M = prod(moduli)
    x = 0
    for r, m in zip(residues, moduli):
        h = M // m
        x += int(r) * h * pow(h, -1, m)
    return x % M


def edge_ints(rng, M, n, extra=()):
    """n integers in [0, M): edges first (0, 1, M-1, extra ones), then random."""
    vals = [0, 1, M - 1] + [int(e) % M for e in extra]
    while len(vals) < n:
        vals.append(int.from_bytes(rng.bytes(32), "little") % M)
    return vals[:n]


def interp(g, *ins, n=N):
    out = g.run(*ins, params=fhjit.param_table(g.moduli, g.radix, n=n), backend="interp")
    return out if isinstance(out, tuple) else (out,)


# --------------------------------------------------------------- types

def test_table_type():
    t = fhjit.Type.parse("table<12>")
    assert t.kind == "table" and t.n == 12 and t.rows == 1 and t.comps == 0
    assert str(t) == "table<12>" and t == fhjit.table(12)
    assert t.shape == (12,) and t.axes == ("index",)
    assert str(fhjit.table(None)) == "table<?>"
    for bad in ("table<3> ntt", "table<1, 2>", "table<[], 3>", "table<x>"):
        with pytest.raises(fhjit.FhjitError) as e:
            fhjit.Type.parse(bad)
        assert e.value.status == "FHJIT_ERR_PARSE", bad


def section7_graph(radix="r32"):
    q = chain(radix, 5)
    g = fhjit.Graph("s7", radix, moduli=q, special=2, digits=2)
    x = g.input("x", fhjit.ct(2, [], 3, N, domain="ntt", form="mont"))
    b = g.input("b", fhjit.ct(2, [], 2, N, domain="ntt", form="mont"), basis=[3, 4])
    c = g.input("c", "pt<[], 2, 64> coef std", basis=[2, 0])
    fw, iv = g.input("fw", fhjit.twiddles(5, N)), g.input("iv", fhjit.twiddles(5, N))
    tb = g.input("tb", fhjit.table(2 + 2 * 1))
    tr = g.input("tr", fhjit.table(2))
    tu = g.input("tu", fhjit.table(2 + 2 * 3))
    tm = g.input("tm", fhjit.table(2 + 2 * 3 + 3))
    vals = {
        "rows": fhjit.rows(x, 1, 2),
        "concat": fhjit.concat(x, b),
        "bconv": fhjit.bconv(c, tb, [4]),
        "aut": x.automorphism(2 * N - 1),
        "rescale": fhjit.rescale(x, fw, iv, tr),
        "modup": fhjit.modup(x[0], fw, iv, tu, digit=0),
    }
    vals["moddown"] = fhjit.moddown(vals["concat"], fw, iv, tm)
    for k, v in vals.items():
        g.output(v, k)
    return g, vals


def test_bases_header_and_text_round_trip():
    g, vals = section7_graph()
    assert g.special == 2 and g.digits == 2
    text = str(g)
    assert " special(2) digits(2) {" in text.splitlines()[0]
    for line in ("%b = input ct<2, [], 2, 64> ntt mont basis(3, 4)",
                 "%c = input pt<[], 2, 64> coef std basis(2, 0)", "%tb = input table<4>",
                 "rows %x start(1) count(2)", "concat %x, %b", "bconv %c, %tb basis(4)",
                 "automorphism %x galois(127)", "rescale %x, %fw, %iv, %tr",
                 "modup %t", "%fw, %iv, %tu digit(0)", "moddown %t"):
        assert line in text, line
    h = fhjit.parse(text)
    assert str(h) == text and h.special == 2 and h.digits == 2
    with pytest.raises(fhjit.FhjitError) as e:
        vals["rows"].basis  # bases are the bound graph's
    assert e.value.status == "FHJIT_ERR_ARGUMENT" and "not bound" in e.value.message
    g.bind()
    h.bind()
    assert g.hash() == h.hash()
    assert g["x"].basis == [0, 1, 2] and g["b"].basis == [3, 4] and g["c"].basis == [2, 0]
    want = {"rows": [1, 2], "concat": [0, 1, 2, 3, 4], "bconv": [4], "aut": [0, 1, 2],
            "rescale": [0, 1], "modup": [0, 1, 2, 3, 4], "moddown": [0, 1, 2]}
    for k, v in vals.items():
        assert v.basis == want[k], k
        assert h[v.name].basis == want[k], k
    with pytest.raises(fhjit.FhjitError) as e:
        g["tb"].basis
    assert "table" in e.value.message
    # a stated default basis is the default: same hash, same numbers
    a1 = fhjit.Graph("d", "r32", moduli=chain("r32", 2))
    a1.output(-a1.input("a", "pt<[], 2, 64>"))
    a2 = fhjit.Graph("d", "r32", moduli=chain("r32", 2))
    a2.output(-a2.input("a", "pt<[], 2, 64>", basis=[0, 1]))
    assert a1.bind().hash() == a2.bind().hash()


def test_every_section7_op_is_a_function_and_a_method():
    for name in ("rows", "concat", "bconv", "automorphism", "rescale", "modup", "moddown"):
        assert name in [op.name for op in fhjit.OPS]
        assert callable(getattr(fhjit, name)) and getattr(fhjit, name).__doc__
        assert hasattr(fhjit.Value, name)
    import inspect
    assert list(inspect.signature(fhjit.modup).parameters) == ["d", "fwd", "inv", "table",
                                                                "digit"]
    assert list(inspect.signature(fhjit.bconv).parameters) == ["x", "table", "basis"]


# -------------------------------------------------------------- tables

@pytest.mark.parametrize("radix", RADICES)
@pytest.mark.parametrize("low", [False, True], ids=["near_limit", "far_below"])
def test_constant_tables_match_their_formulas(radix, low):
    q = chain(radix, 6, low=low)
    r = R(radix)
    src, dst = [4, 0, 2], [5, 1]
    s = [q[i] for i in src]
    S = prod(s)
    want = [pow(S // si, -1, si) * r % si for si in s]
    want += [(S // si) % q[j] * r % q[j] for j in dst for si in s]
    got = fhjit.bconv_table(q, src, dst, radix)
    assert got.dtype == word(radix) and got.shape == (len(want),)
    assert [int(x) for x in got] == want
    assert fhjit.bconv_table(q, [3], [0, 1], radix).shape == (1 + 2,)
    # rescale on basis (3, 1, 5): divides out q5
    got = fhjit.rescale_table(q, [3, 1, 5], radix)
    assert [int(x) for x in got] == [pow(q[5], -1, q[i]) * r % q[i] for i in (3, 1)]
    # moddown of Q = (0, 1, 2) ++ P = (4, 5)
    P = q[4] * q[5]
    got = fhjit.moddown_table(q, [0, 1, 2], [4, 5], radix)
    tail = [pow(P, -1, q[i]) * r % q[i] for i in (0, 1, 2)]
    assert [int(x) for x in got] == \
        [int(x) for x in fhjit.bconv_table(q, [4, 5], [0, 1, 2], radix)] + tail
    # modup: M = 6, K = 2, alpha = 3: Q_L = [0, 4), digits {0, 1, 2}, {3}
    assert np.array_equal(fhjit.modup_table(q, [0, 1, 3], 0, 2, 3, radix),
                          fhjit.bconv_table(q, [0, 1], [3, 4, 5], radix))
    assert np.array_equal(fhjit.modup_table(q, [0, 1, 3], 1, 2, 3, radix),
                          fhjit.bconv_table(q, [3], [0, 1, 4, 5], radix))


def test_input_tables_and_twiddle_use_of_a_graph():
    g, vals = section7_graph("r62")
    g.bind()
    q = g.moduli
    assert np.array_equal(g.input_table("tb"), fhjit.bconv_table(q, [2, 0], [4], "r62"))
    assert np.array_equal(fhjit.input_table(g, g["tr"]), fhjit.rescale_table(q, [0, 1, 2], "r62"))
    assert np.array_equal(g.input_table("%tu"), fhjit.modup_table(q, [0, 1, 2], 0, 2, 2, "r62"))
    assert np.array_equal(g.input_table(g.input_names.index("tm")),
                          fhjit.moddown_table(q, [0, 1, 2], [3, 4], "r62"))
    assert [g.twiddle_use(k) for k in ("x", "fw", "iv", "tb")] == [None, "forward", "inverse",
                                                                   None]
    c = g.constants()
    assert sorted(c) == ["fw", "iv", "tb", "tm", "tr", "tu"]
    fwd, inv = fhjit.twiddle_tables(q, N, "r62")
    assert np.array_equal(c["fw"], fwd) and np.array_equal(c["iv"], inv)
    for bad in ("nope", "x"):
        with pytest.raises(fhjit.FhjitError) as e:
            g.input_table(bad)
        assert e.value.status == "FHJIT_ERR_ARGUMENT"
    # an ntt_fwd's table and an ntt_inv's; one table read both ways
    h = fhjit.Graph("tw", "r32", moduli=chain("r32", 2))
    x = h.input("x", "pt<[], 2, 64>")
    t1, t2, t3 = (h.input(k, fhjit.twiddles(2, N)) for k in ("t1", "t2", "t3"))
    h.output(fhjit.ntt_inv(fhjit.ntt_fwd(x, t1), t2), "y")
    h.bind()
    assert [h.twiddle_use(k) for k in ("t1", "t2", "t3")] == ["forward", "inverse", None]
    assert sorted(h.constants()) == ["t1", "t2"]
    h.output(fhjit.ntt_fwd(x, t2), "z")
    h.bind()
    assert h.twiddle_use("t2") == "both"
    with pytest.raises(fhjit.FhjitError) as e:
        h.constants()
    assert "both" in e.value.message


# ------------------------------------------- interpreter vs references

@pytest.mark.parametrize("radix", RADICES)
@pytest.mark.parametrize("form", ["std", "mont"])
@pytest.mark.parametrize("src", [[4], [2, 0, 4]], ids=["one_row", "three_rows"])
def test_bconv(radix, form, src, rng):
    """y_j = (sum_i V_i h_i) mod t_j, V_i = X_i h_i^-1 mod s_i (SPEC 7),
    canonical, in x's form; = (X + e S*) mod t_j with 0 <= e < l; exactly
    X mod t_j from one row."""
    q = chain(radix, 6)
    r = R(radix)
    dst = [3, 1, 5]
    g = fhjit.Graph("bconv", radix, moduli=q)
    x = g.input("x", fhjit.pt([], len(src), N, domain="coef", form=form), basis=src)
    t = g.input("t", fhjit.table(len(src) * (1 + len(dst))))
    g.output(fhjit.bconv(x, t, dst), "y")
    g.bind()
    s = [q[i] for i in src]
    S = prod(s)
    # lazy words [0, 2s) with each row's edges 0, s-1, s, 2s-1
    data = np.stack([rng.integers(0, 2 * si, size=N, dtype=np.uint64) for si in s])
    for k, si in enumerate(s):
        data[k, :4] = [0, si - 1, si, 2 * si - 1]
    data = data.astype(word(radix))
    (y,) = interp(g, data, g.input_table("t"))
    assert y.shape == (len(dst), N)
    for c in range(N):
        X_i = [int(data[k, c]) % si if form == "std" else int(data[k, c]) * pow(r, -1, si) % si
               for k, si in enumerate(s)]
        V = [X_i[k] * pow(S // si, -1, si) % si for k, si in enumerate(s)]
        total = sum(v * (S // si) for v, si in zip(V, s))
        X = crt(X_i, s)
        e = (total - X) // S
        assert (total - X) % S == 0 and 0 <= e < len(s)
        if len(s) == 1:
            assert e == 0
        for j, tj in enumerate(dst):
            m = q[tj]
            got = int(y[j, c])
            assert got < m  # canonical
            want = total % m if form == "std" else total % m * r % m
            assert got == want, (c, j)


def automorphism_index(i, k, n):
    e = i * k % (2 * n)
    return (e, False) if e < n else (e - n, True)


def bit_reverse(j, bits):
    return int(format(j, "0%db" % bits)[::-1], 2) if bits else 0


@pytest.mark.parametrize("radix", RADICES)
def test_automorphism_coef_and_ntt_maps(radix, rng):
    q = chain(radix, 4)
    g = fhjit.Graph("aut", radix, moduli=q)
    c = g.input("c", fhjit.pt([], 2, N, domain="coef", form="std"), basis=[3, 1])
    v = g.input("v", fhjit.pt([], 2, N, domain="ntt", form="mont"))
    ks = [5, 2 * N - 1, 1, 25]
    for k in ks:
        g.output(c.automorphism(k), "c%d" % k)
        g.output(v.automorphism(k), "v%d" % k)
    g.bind()
    cd, vd = graph_inputs(g, rng)
    outs = dict(zip(g.output_names, interp(g, cd, vd)))
    bits = N.bit_length() - 1
    for k in ks:
        oc, ov = outs["c%d" % k], outs["v%d" % k]
        for r, m in enumerate([q[3], q[1]]):
            want = [None] * N
            for i in range(N):
                e, neg = automorphism_index(i, k, N)
                a = int(cd[r, i]) % m
                want[e] = (m - a) % m if neg else a
            assert [int(x) for x in oc[r]] == want, (k, r)
        for r in range(2):
            want = [int(vd[r, bit_reverse((k * (2 * bit_reverse(j, bits) + 1) % (2 * N) - 1) // 2,
                                          bits)]) for j in range(N)]
            assert [int(x) for x in ov[r]] == want, (k, r)


@pytest.mark.parametrize("radix", RADICES)
def test_automorphisms_compose_and_agree_through_the_ntt(radix, rng):
    q = chain(radix, 3)
    k1, k2 = 5, 2 * N - 3
    k12 = k1 * k2 % (2 * N)
    g = fhjit.Graph("compose", radix, moduli=q)
    c = g.input("c", fhjit.pt([], 3, N, domain="coef", form="std"))
    tw = g.input("tw", fhjit.twiddles(3, N))
    g.output(c.automorphism(k1).automorphism(k2), "cc")
    g.output(c.automorphism(k12), "c12")
    C = fhjit.ntt_fwd(c, tw)
    g.output(C.automorphism(k1).automorphism(k2), "nn")
    g.output(C.automorphism(k12), "n12")
    g.output(fhjit.ntt_fwd(c.automorphism(k1), tw), "via_coef")
    g.output(C.automorphism(k1), "via_ntt")
    g.bind()
    o = dict(zip(g.output_names, interp(g, *graph_inputs(g, rng))))
    assert np.array_equal(o["cc"], o["c12"])
    assert np.array_equal(o["nn"], o["n12"])
    qs = np.array(q, dtype=np.uint64)[:, None]
    assert np.array_equal(o["via_coef"].astype(np.uint64) % qs,
                          o["via_ntt"].astype(np.uint64) % qs)


def ntt_graph(name, radix, q, special=None, digits=None):
    return fhjit.Graph(name, radix, moduli=q, special=special, digits=digits)


@pytest.mark.parametrize("radix", RADICES)
def test_rescale_rounds(radix, rng):
    """Coefficients X (Python integers, edges: X mod q_last = h, h + 1, 0,
    q - 1), through ntt_fwd, rescale, ntt_inv: exactly round(X / q_last)
    mod Q' (X mod q = h rounds down)."""
    q = chain(radix, 4)
    g = ntt_graph("rescale", radix, q)
    x = g.input("x", fhjit.pt([], 4, N, domain="coef", form="std"))
    fw, iv = g.input("fw", fhjit.twiddles(4, N)), g.input("iv", fhjit.twiddles(4, N))
    iv3 = g.input("iv3", fhjit.twiddles(3, N))
    t = g.input("t", fhjit.table(3))
    y = fhjit.rescale(fhjit.ntt_fwd(x, fw), fw, iv, t)
    g.output(fhjit.ntt_inv(y, iv3, mode="std"), "y")
    g.bind()
    Q, ql = prod(q), q[3]
    h = ql // 2
    base = 123456789 * ql
    X = edge_ints(rng, Q, N, extra=[base + h, base + h + 1, base, base + ql - 1, h, h + 1,
                                    Q - 1 - h, Q - ql + h + 1])
    c = graph_inputs(g, rng)
    ins = [rows_of(X, q, radix)] + c[1:]
    (out,) = interp(g, *ins)
    Qp = prod(q[:3])
    for i, Xi in enumerate(X):
        Y = (Xi + h) // ql % Qp
        assert [int(out[r, i]) for r in range(3)] == [Y % m for m in q[:3]], i


@pytest.mark.parametrize("radix", RADICES)
def test_moddown_floors(radix, rng):
    """A on Q ++ P through ntt_fwd, moddown, ntt_inv: floor(A / P*) - e',
    0 <= e' < K, mod Q; exactly A / P* when P* divides A."""
    q = chain(radix, 5)
    g = ntt_graph("moddown", radix, q, special=2)
    a = g.input("a", fhjit.pt([], 5, N, domain="coef", form="std"))
    fw, iv = g.input("fw", fhjit.twiddles(5, N)), g.input("iv", fhjit.twiddles(5, N))
    iv3 = g.input("iv3", fhjit.twiddles(3, N))
    t = g.input("t", fhjit.table(2 + 2 * 3 + 3))
    g.output(fhjit.ntt_inv(fhjit.moddown(fhjit.ntt_fwd(a, fw), fw, iv, t), iv3, mode="std"),
             "y")
    g.bind()
    Qs, P = prod(q[:3]), q[3] * q[4]
    exact = [P * b for b in edge_ints(rng, Qs, N // 2)]
    A = exact + edge_ints(rng, Qs * P, N - N // 2, extra=[P - 1, P, P + 1])
    ins = [rows_of(A, q, radix)] + graph_inputs(g, rng)[1:]
    (out,) = interp(g, *ins)
    for i, Ai in enumerate(A):
        Y = crt([int(out[r, i]) for r in range(3)], q[:3])
        ep = (Ai // P - Y) % Qs
        assert 0 <= ep < 2, (i, ep)
        if i < N // 2:
            assert ep == 0 and Y == Ai // P, i


@pytest.mark.parametrize("radix", RADICES)
def test_modup_keeps_and_converts(radix, rng):
    """d on Q = [0, 3) (special(2) digits(2): digits {0, 1} and {2}) through
    ntt_fwd, modup, ntt_inv on Q ++ P: the digit's rows are d's, every other
    row is bconv's exact sum from the digit's rows."""
    q = chain(radix, 5)
    g = ntt_graph("modup", radix, q, special=2, digits=2)
    d = g.input("d", fhjit.pt([], 3, N, domain="coef", form="std"))
    fw3 = g.input("fw3", fhjit.twiddles(3, N))
    fw, iv = g.input("fw", fhjit.twiddles(5, N)), g.input("iv", fhjit.twiddles(5, N))
    t0 = g.input("t0", fhjit.table(2 + 2 * 3))
    t1 = g.input("t1", fhjit.table(1 + 1 * 4))
    D = fhjit.ntt_fwd(d, fw3)
    for j, t in ((0, t0), (1, t1)):
        g.output(fhjit.ntt_inv(fhjit.modup(D, fw, iv, t, digit=j), iv, mode="std"), "u%d" % j)
    g.bind()
    assert g.twiddle_use("iv") == "inverse" and g.twiddle_use("fw3") == "forward"
    X = edge_ints(rng, prod(q[:3]), N)
    ins = [rows_of(X, q[:3], radix)] + graph_inputs(g, rng)[1:]
    outs = interp(g, *ins)
    for (j, digit_rows), out in zip(((0, [0, 1]), (1, [2])), outs):
        assert out.shape == (5, N)
        s = [q[p] for p in digit_rows]
        S = prod(s)
        for i, Xi in enumerate(X):
            V = [Xi % si * pow(S // si, -1, si) % si for si in s]
            total = sum(v * (S // si) for v, si in zip(V, s))
            for p in range(5):
                want = Xi % q[p] if p in digit_rows else total % q[p]
                assert int(out[p, i]) == want, (j, i, p)


# ---------------------------------------------------------------- errors

def test_section7_errors(rng):
    q = chain("r62", 5)
    g = fhjit.Graph("errs", "r62", moduli=q, special=2, digits=2)
    x = g.input("x", "ct<2, [], 3, 64> coef mont", basis=[2, 0, 1])
    # a basis repeating a position, past the chain, of the wrong length:
    # refused before the input exists
    for basis, text in (([1, 1], "position 1 repeats"), ([1, 9], "past the chain"),
                        ([1, 2, 3], "3 positions")):
        with pytest.raises(fhjit.FhjitError) as e:
            g.input("y", "pt<[], 2, 64> coef", basis=basis)
        assert e.value.status == "FHJIT_ERR_TYPE" and text in e.value.message
        assert "basis [" in e.value.message
    assert g.input_names == ["x"]
    with pytest.raises(fhjit.FhjitError) as e:
        g.input("y", "pt<[], 2, 64>", basis="01")
    assert e.value.status == "FHJIT_ERR_ARGUMENT"
    with pytest.raises(fhjit.FhjitError) as e:
        g.input("k", fhjit.twiddles(2, 64), basis=[0, 1])
    assert e.value.status == "FHJIT_ERR_ARGUMENT" and "not a polynomial input" in \
        e.value.message
    # digits out of range
    d = g.input("d", "pt<[], 3, 64> ntt mont")
    fw, iv = g.input("fw", fhjit.twiddles(5, N)), g.input("iv", fhjit.twiddles(5, N))
    tu = g.input("tu", fhjit.table(8))
    for j in (2, -1):
        with pytest.raises(fhjit.FhjitError) as e:
            fhjit.modup(d, fw, iv, tu, digit=j)
        assert e.value.status == "FHJIT_ERR_SHAPE" and "digit %d is out of range" % j in \
            e.value.message
    with pytest.raises(fhjit.FhjitError) as e:
        fhjit.modup(d, fw, iv, tu)
    assert e.value.status == "FHJIT_ERR_ARGUMENT" and "digit" in e.value.message
    with pytest.raises(fhjit.FhjitError) as e:
        fhjit.modup_table(q, [0, 1, 2], 2, 2, 2)
    assert e.value.status == "FHJIT_ERR_ARGUMENT" and "out of range" in e.value.message
    with pytest.raises(fhjit.FhjitError) as e:
        fhjit.modup_table(q, [0, 1], 1, 2, 2)
    assert e.value.status == "FHJIT_ERR_ARGUMENT" and "holds no row" in e.value.message
    # Galois elements
    for k in (4, 128, 0):
        with pytest.raises(fhjit.FhjitError) as e:
            fhjit.automorphism(x, k)
        assert e.value.status == "FHJIT_ERR_ARGUMENT" and "odd" in e.value.message
    # special primes and digits
    with pytest.raises(fhjit.FhjitError) as e:
        fhjit.Graph("h", "r62", special=1)
    assert e.value.status == "FHJIT_ERR_ARGUMENT" and "set the moduli first" in e.value.message
    with pytest.raises(fhjit.FhjitError) as e:
        fhjit.Graph("h", "r62", moduli=q, special=2, digits=4)
    assert e.value.status == "FHJIT_ERR_ARGUMENT" and "digit size" in e.value.message
    # helpers: a repeated position, outside the chain, moduli not coprime
    for args, status, text in (((q, [0, 0], [1]), "FHJIT_ERR_ARGUMENT", "position 0 repeats"),
                               ((q, [0, 1], [1]), "FHJIT_ERR_ARGUMENT", "position 1 repeats"),
                               ((q, [0], [9]), "FHJIT_ERR_ARGUMENT", "not in the chain"),
                               ((q + [q[0]], [0, 5], [1]), "FHJIT_ERR_MODULUS", "coprime")):
        with pytest.raises(fhjit.FhjitError) as e:
            fhjit.bconv_table(*args)
        assert e.value.status == status and text in e.value.message, e.value
    with pytest.raises(fhjit.FhjitError) as e:
        fhjit.rescale_table(q, [3])
    assert e.value.status == "FHJIT_ERR_ARGUMENT"
    with pytest.raises(fhjit.FhjitError) as e:
        fhjit.moddown_table(q, [0, 1], [])
    assert e.value.status == "FHJIT_ERR_ARGUMENT"


def bconv_graph(table_len, target=(3, 4)):
    q = chain("r62", 5)
    g = fhjit.Graph("bc", "r62", moduli=q)
    x = g.input("x", "ct<2, [], 3, 64> coef mont", basis=[2, 0, 1])
    t = g.input("t", fhjit.table(table_len))
    g.output(fhjit.bconv(x, t, list(target)), "y")
    return g


def test_table_errors(rng):
    # a table declared of the wrong length, a target sharing a position
    for g, status, text in ((bconv_graph(12), "FHJIT_ERR_SHAPE", "has 12 words; this op reads 9"),
                            (bconv_graph(9, (3, 0)), "FHJIT_ERR_TYPE", "share position 0")):
        with pytest.raises(fhjit.FhjitError) as e:
            g.bind()
        assert e.value.status == status and text in e.value.message, e.value
    g = bconv_graph(9)
    g.bind()
    x = graph_inputs(g, rng)[0]
    t = g.input_table("t")
    # an array of the wrong length or rank, before anything runs
    for arr, text in ((t[:8], "declared table<9>"), (t[None, :], "1 dimensions [index]")):
        with pytest.raises(fhjit.FhjitError) as e:
            g.run(x, arr, backend="interp")
        assert e.value.status == "FHJIT_ERR_SHAPE" and text in e.value.message, e.value
    g.bind()
    # words that are not the chain's: the interpreter names the word
    bad = t.copy()
    bad[5] += 1
    with pytest.raises(fhjit.FhjitError) as e:
        g.run(x, bad, backend="interp")
    assert e.value.status == "FHJIT_ERR_ARGUMENT" and "word 5" in e.value.message
    # strided table views bind as they are
    wide = np.zeros(18, np.uint64)
    wide[::2] = t
    assert np.array_equal(g.run(x, wide[::2], backend="interp"), g.run(x, t, backend="interp"))


def test_parameter_columns_follow_chain_positions(rng):
    """A graph on positions up to 4 reads 5 parameter columns though no
    value has more than 3 rows: a narrower table is refused before any run."""
    q = chain("r32", 5)
    g = fhjit.Graph("cols", "r32", moduli=q)
    a = g.input("a", fhjit.pt([], 2, N), basis=[4, 1])
    g.output(a + a, "y")
    g.bind()
    ins = graph_inputs(g, rng)
    P = fhjit.param_table(q, "r32")
    with pytest.raises(fhjit.FhjitError) as e:
        g.run(*ins, params=P[:, :4], backend="interp")
    assert e.value.status == "FHJIT_ERR_SHAPE" and "uses 5 rows" in e.value.message
    (y,) = interp(g, *ins)
    for r, m in enumerate((q[4], q[1])):
        assert [int(v) for v in y[r]] == [(2 * int(v)) % m for v in ins[0][r]]
