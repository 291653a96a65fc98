"""test_ckks.py: SPEC section 7's whole operations through the package
(docs/ckks.md): keyswitch, ckks_relinearize, ckks_rescale,
ckks_mul_relin_rescale, ckks_rotate, ckks_rotate_hoisted. Each composite's
result equals, word for word, the same composition written here from the
primitive builders the way SPEC states it (modup per non-empty digit,
keyswitch_digit_product, add_lazy, moddown and rescale per component,
extract, pack, automorphism): through the interpreter on four chains (Q 4 +
P 2, digits of 2, N 2^4 .. 2^6, both radices, a level below the top with a
short digit, a stated permuted basis), and through the compiled backends
(the host path; the fake driver and torch where they can) on one graph of
all six per radix. Random lazy inputs and keys (conftest.graph_inputs, with
SPEC section 6's boundary pairs). Plus the table inputs' names and filling,
the plan, the text form, the Graph/Value/function spellings, and the
errors (the library's messages; nothing added)."""
import inspect

import numpy as np
import pytest

import fhjit
from conftest import fake_driver, graph_inputs, on_backend, primes, run_or_skip, torch_cuda

WHOLE = ["keyswitch", "ckks_relinearize", "ckks_rescale", "ckks_mul_relin_rescale",
         "ckks_rotate", "ckks_rotate_hoisted"]
M, K, ALPHA = 6, 2, 2  # chain Q 4 + P 2, digits {0, 1}, {2, 3}
NDIG = 2


class Shape:
    def __init__(self, radix, logn, rows, basis=None):
        self.radix, self.n, self.rows, self.basis = radix, 1 << logn, rows, basis
        self.id = "%s-N%d-l%d%s" % (radix, self.n, rows, "-perm" if basis else "")

    def digit_rows(self):
        """Rows of each digit of Q_L in the operands' basis (0: skipped)."""
        pos = self.basis or list(range(self.rows))
        return [sum(1 for p in pos if p // ALPHA == j) for j in range(NDIG)]


SHAPES = [Shape("r62", 4, 4), Shape("r32", 5, 4),
          Shape("r62", 6, 3),                # level [0, 3): digit 1 has one row
          Shape("r32", 6, 4, [2, 3, 0, 1])]  # digits in other rows of the operand


def user_inputs(g, s):
    """The inputs every test graph declares first, in this order."""
    def poly(name, comps):
        t = fhjit.Type("poly", comps, [], s.rows, s.n, domain="ntt", form="mont")
        return g.input(name, t, basis=s.basis)
    x = {k: poly(k, c) for k, c in (("a", 2), ("b", 2), ("c3", 3), ("d", 0))}
    for k in ("k1", "k2"):
        x[k] = g.input(k, fhjit.key(NDIG, M, s.n, domain="ntt", form="mont"))
    x["fw"], x["iv"] = g.input("fw", fhjit.twiddles(M, s.n)), g.input("iv", fhjit.twiddles(M, s.n))
    return x


def graph(s, name):
    return fhjit.Graph(name, s.radix, moduli=primes(s.radix, M, ntt_n=s.n), special=K,
                       digits=ALPHA)


def galois(s, full):
    """Rotation by 3 slots (5^3), conjugation, and the hoisted set (full:
    four rotations, two keys each used twice; else two)."""
    two_n = 2 * s.n
    return 125 % two_n, two_n - 1, ([5, 25 % two_n, two_n - 1, 125 % two_n] if full
                                    else [25 % two_n, two_n - 1])


def hoisted_keys(x, full):
    return [x["k1"], x["k2"], x["k1"], x["k2"]] if full else [x["k2"], x["k1"]]


def build_composites(g, s, x, full):
    rot, conj, hoisted = galois(s, full)
    out = {
        "ks": g.keyswitch(x["d"], x["k1"], x["fw"], x["iv"]),
        "relin": fhjit.ckks_relinearize(x["c3"], x["k1"], x["fw"], x["iv"]),
        "rs": x["a"].ckks_rescale(x["fw"], x["iv"]),
        "hmul": g.ckks_mul_relin_rescale(x["a"], x["b"], x["k1"], x["fw"], x["iv"]),
        "rot": g.ckks_rotate(x["a"], rot, x["k2"], x["fw"], x["iv"]),
    }
    if full:
        out["conj"] = x["b"].ckks_rotate(conj, x["k1"], x["fw"], x["iv"])
    hs = g.ckks_rotate_hoisted(x["a"], hoisted, hoisted_keys(x, full), x["fw"], x["iv"])
    assert isinstance(hs, list) and len(hs) == len(hoisted)
    out.update(("h%d" % i, v) for i, v in enumerate(hs))
    for k, v in out.items():
        g.output(v, k)
    return out


# ------------------------------------------------- by hand, SPEC's way

def ks_by_hand(g, s, d, key, fw, iv, tag):
    """keyswitch(d, key) = pack(moddown(acc_0), moddown(acc_1)), acc the
    add_lazy sum over the non-empty digits j of the products of modup(d, j)."""
    l, drows = s.rows, s.digit_rows()
    tabs = {j: g.input("%s.t%d" % (tag, j), fhjit.table(r * (1 + l + K - r)))
            for j, r in enumerate(drows) if r}
    md = g.input(tag + ".md", fhjit.table(K + K * l + l))
    acc = None
    for j in tabs:
        p = fhjit.keyswitch_digit_product(fhjit.modup(d, fw, iv, tabs[j], digit=j), key,
                                          digit=j, row_start=0)
        acc = p if acc is None else fhjit.add_lazy(acc, p)
    return fhjit.pack(fhjit.moddown(acc[0], fw, iv, md), fhjit.moddown(acc[1], fw, iv, md))


def rescale_by_hand(g, s, ct, fw, iv, tag):
    t = g.input(tag + ".rs", fhjit.table(s.rows - 1))
    return fhjit.pack(fhjit.rescale(ct[0], fw, iv, t), fhjit.rescale(ct[1], fw, iv, t))


def rotate_by_hand(g, s, ct, k, key, fw, iv, tag):
    ks = ks_by_hand(g, s, ct[1].automorphism(k), key, fw, iv, tag)
    return fhjit.pack(ct[0].automorphism(k) + ks[0], ks[1])


def build_by_hand(g, s, x, full):
    fw, iv = x["fw"], x["iv"]
    rot, conj, hoisted = galois(s, full)
    a, b, c3 = x["a"], x["b"], x["c3"]
    out = {"ks": ks_by_hand(g, s, x["d"], x["k1"], fw, iv, "ks")}
    out["relin"] = fhjit.pack(c3[0], c3[1]) + ks_by_hand(g, s, c3[2], x["k1"], fw, iv, "rl")
    out["rs"] = rescale_by_hand(g, s, a, fw, iv, "rs")
    d0 = a[0] * b[0]
    d1 = fhjit.add_lazy(a[0] * b[1], a[1] * b[0])
    kk = ks_by_hand(g, s, a[1] * b[1], x["k1"], fw, iv, "hm")
    t = g.input("hm.rs", fhjit.table(s.rows - 1))
    out["hmul"] = fhjit.pack(fhjit.rescale(d0 + kk[0], fw, iv, t),
                             fhjit.rescale(d1 + kk[1], fw, iv, t))
    out["rot"] = rotate_by_hand(g, s, a, rot, x["k2"], fw, iv, "rot")
    if full:
        out["conj"] = rotate_by_hand(g, s, b, conj, x["k1"], fw, iv, "conj")
    # hoisted: one modup of c1 per digit, permuted per rotation
    l, drows = s.rows, s.digit_rows()
    ups = {j: fhjit.modup(a[1], fw, iv, g.input("hr.t%d" % j, fhjit.table(r * (1 + l + K - r))),
                          digit=j) for j, r in enumerate(drows) if r}
    md = g.input("hr.md", fhjit.table(K + K * l + l))
    for i, (k, key) in enumerate(zip(hoisted, hoisted_keys(x, full))):
        acc = None
        for j, u in ups.items():
            p = fhjit.keyswitch_digit_product(u.automorphism(k), key, digit=j, row_start=0)
            acc = p if acc is None else fhjit.add_lazy(acc, p)
        r0 = a[0].automorphism(k) + fhjit.moddown(acc[0], fw, iv, md)
        out["h%d" % i] = fhjit.pack(r0, fhjit.moddown(acc[1], fw, iv, md))
    for k, v in out.items():
        g.output(v, k)
    return out


def pair(s, rng, full=True):
    """(composite graph, hand graph, their inputs in each one's order): the
    user inputs shared, each graph's tables from its own chain."""
    gc, gh = graph(s, "whole"), graph(s, "by_hand")
    build_composites(gc, s, user_inputs(gc, s), full)
    build_by_hand(gh, s, user_inputs(gh, s), full)
    gc.bind()
    gh.bind()
    user = dict(zip(gc.input_names, graph_inputs(gc, rng)))
    ins = []
    for g in (gc, gh):
        c = g.constants()
        ins.append([c[n] if n in c else user[n] for n in g.input_names])
    return gc, gh, ins[0], ins[1]


def same(got, want, names, what):
    assert len(got) == len(want) == len(names)
    for name, x, w in zip(names, got, want):
        assert x.shape == w.shape and x.dtype == w.dtype, (what, name)
        assert np.array_equal(x, w), "%s: output %s differs at %d of %d words" % (
            what, name, int((x != w).sum()), x.size)


# ----------------------------------------------------------------- tests

@pytest.mark.parametrize("s", SHAPES, ids=[s.id for s in SHAPES])
def test_composites_equal_the_primitives_interpreted(s, rng):
    gc, gh, ic, ih = pair(s, rng)
    assert gc.output_names == gh.output_names
    params = fhjit.param_table(gc.moduli, s.radix, n=s.n)
    want = on_backend("interp", gh, ih, params)
    same(on_backend("interp", gc, ic, params), want, gc.output_names, s.id)
    # the results are on Q (rescale: Q minus its last row)
    rows = {n: v.shape[-2] for n, v in zip(gc.output_names, want)}
    assert rows["rs"] == rows["hmul"] == s.rows - 1
    assert all(rows[n] == s.rows for n in rows if n not in ("rs", "hmul"))
    # and the words are not trivial: the key switch moved them
    assert not np.array_equal(want[0][0], want[0][1])


def _backends():
    return ["host",
            pytest.param("fake", marks=pytest.mark.skipif(
                fake_driver() is None, reason="the fake libcuda is not in use")),
            pytest.param("torch", marks=pytest.mark.skipif(
                torch_cuda() is None, reason="needs torch with a CUDA GPU"))]


@pytest.mark.parametrize("backend", _backends())
@pytest.mark.parametrize("s", SHAPES[:2], ids=[s.id for s in SHAPES[:2]])
def test_composites_equal_the_primitives_compiled(s, backend, rng):
    """All six composites in one graph (one compile per radix; the host
    compile is the cost: no conjugation, two hoisted rotations): the
    compiled backend's words are the hand composition's, interpreted."""
    if backend == "fake":
        # as test_ops.py's S7_MULTI_KERNEL: NTT and conversion kernels take
        # arguments the executor (one graph per fused pointwise launch)
        # cannot map back to the graph's inputs and results
        pytest.skip("the fake driver's executor runs fused pointwise kernels only")
    gc, gh, ic, ih = pair(s, rng, full=False)
    params = fhjit.param_table(gc.moduli, s.radix, n=s.n)
    want = on_backend("interp", gh, ih, params)
    got = run_or_skip(on_backend, backend, gc, ic, params, fake=fake_driver(),
                      torch=torch_cuda())
    same(got, want, gc.output_names, "%s %s" % (backend, s.id))


def test_table_inputs_names_order_and_filling(rng):
    s = SHAPES[2]  # level 3: digits 0 (rows 0, 1) and 1 (row 2)
    g = graph(s, "t")
    x = user_inputs(g, s)
    n0 = len(g)
    nuser = len(g.inputs)
    ks = g.keyswitch(x["d"], x["k1"], x["fw"], x["iv"])
    p = "ks%d" % n0
    assert ks.name == p and ks.type.comps == 2
    assert g.input_names[nuser:] == [p + ".modup0.table", p + ".modup1.table",
                                     p + ".moddown.table"]
    r = g.ckks_rescale(x["a"], x["fw"], x["iv"])
    assert g.input_names[-1] == r.name + ".rescale.table"
    g.output(ks, "ks")
    g.output(r, "rs")
    g.bind()
    q = g.moduli
    c = g.constants()
    assert sorted(c) == sorted(["fw", "iv"] + g.input_names[nuser:])
    assert np.array_equal(c[p + ".modup0.table"],
                          fhjit.modup_table(q, [0, 1, 2], 0, K, ALPHA, s.radix))
    assert np.array_equal(c[p + ".modup1.table"],
                          fhjit.modup_table(q, [0, 1, 2], 1, K, ALPHA, s.radix))
    assert np.array_equal(c[p + ".moddown.table"],
                          fhjit.moddown_table(q, [0, 1, 2], [4, 5], s.radix))
    assert np.array_equal(c[r.name + ".rescale.table"],
                          fhjit.rescale_table(q, [0, 1, 2], s.radix))
    assert ks.basis == [0, 1, 2] and r.basis == [0, 1]
    # a run by name with the constants spread in
    user = {v.name: a for v, a in zip(g.inputs, graph_inputs(g, rng)) if v.name not in c}
    out = g.run({**user, **c}, backend="interp")
    assert out[0].shape == (2, 3, s.n) and out[1].shape == (2, 2, s.n)


def test_plan_and_text_of_a_composite():
    s = SHAPES[0]
    g = graph(s, "p")
    x = user_inputs(g, s)
    g.output(g.keyswitch(x["d"], x["k1"], x["fw"], x["iv"]), "ks")
    g.bind()
    plan = g.emit("plan")
    assert plan.startswith("plan @p (sm_90): ")
    for part in ("ntt_inv", "bconv 2 -> 4 rows", "ntt_fwd", "keyswitch_digit_product"):
        assert part in plan, part
    # the canonical text is the expansion; it parses back to the same graph
    text = str(g)
    assert "keyswitch %" not in text and "modup %d" in text
    h = fhjit.parse(text)
    assert str(h) == text and h.bind().hash() == g.hash()
    # the text form (the user's inputs, then `keyswitch`) builds the same graph
    lines = text.splitlines()
    src = [lines[0]] + [ln for ln in lines if "= input" in ln and ".table = input" not in ln]
    src += ["  %ks = keyswitch %d, %k1, %fw, %iv", "  output %ks", "}"]
    t = fhjit.parse("\n".join(src) + "\n")
    assert "%ks.modup0.table = input" in str(t)
    assert t.bind().hash() == g.hash()


def test_text_of_hoisted_rotations():
    """The one statement with a value per Galois element (docs/ckks.md,
    "Text"): the builder's graph, the shared values named after the first
    result and each rotation's after its own; a count that differs is the
    parser's located error."""
    s = SHAPES[0]
    g = graph(s, "hp")
    x = user_inputs(g, s)
    rs = g.ckks_rotate_hoisted(x["a"], [5, 25], [x["k1"], x["k2"]], x["fw"], x["iv"])
    for i, r in enumerate(rs):
        g.output(r, "r%d" % i)
    g.bind()
    lines = str(g).splitlines()
    head = [lines[0]] + [ln for ln in lines if "= input" in ln and ".table = input" not in ln]

    def text(statement):
        return "\n".join(head + [statement, "  output %r0", "  output %r1", "}"]) + "\n"
    t = fhjit.parse(text("  %r0, %r1 = ckks_rotate_hoisted %a, %k1, %k2, %fw, %iv galois(5, 25)"))
    printed = str(t)
    for part in ("%r0.modup0 = modup %r0.c1in", "%r1.ks = moddown %r1.sum1",
                 "%r1 = pack %r1.c0, %r1.k1", "%r0.moddown.table = input"):
        assert part in printed, part
    assert t.bind().hash() == g.hash()
    with pytest.raises(fhjit.FhjitError) as e:
        fhjit.parse(text("  %r0, %r1 = ckks_rotate_hoisted %a, %k1, %fw, %iv galois(5, 25)"))
    assert e.value.status == "FHJIT_ERR_PARSE"
    assert "with 2 Galois elements takes 5 operands" in e.value.message, e.value


def test_spellings():
    for name in WHOLE:
        assert name in [op.name for op in fhjit.OPS]
        assert getattr(fhjit, name).__doc__ and hasattr(fhjit.Value, name)
        assert hasattr(fhjit.Graph, name)
    assert list(inspect.signature(fhjit.keyswitch).parameters) == ["d", "key", "fwd", "inv"]
    assert list(inspect.signature(fhjit.ckks_rotate).parameters) == ["ct", "k", "gk", "fwd",
                                                                     "inv"]
    assert list(inspect.signature(fhjit.Graph.ckks_rotate_hoisted).parameters) == \
        ["self", "ct", "ks", "keys", "fwd", "inv"]
    # every OPS row is a Graph method too, building in that graph
    g = fhjit.Graph("m", "r32", moduli=primes("r32", 2))
    a = g.input("a", "pt<[], 2, 16>")
    g.output(g.add(a, g.neg(a)), "y")
    assert "neg %a" in str(g)
    h = fhjit.Graph("other", "r32", moduli=primes("r32", 2))
    with pytest.raises(fhjit.FhjitError) as e:
        h.neg(a)
    assert e.value.status == "FHJIT_ERR_ARGUMENT" and "belongs to graph @m" in e.value.message


def refused(g, fn, status, text):
    """fn() raises the library's error, and the graph is as before."""
    n, names = len(g), g.input_names
    with pytest.raises(fhjit.FhjitError) as e:
        fn()
    assert e.value.status == status and text in e.value.message, e.value
    assert len(g) == n and g.input_names == names


def test_errors():
    s = SHAPES[0]
    g = graph(s, "err")
    x = user_inputs(g, s)
    a, d, c3, k1, k2, fw, iv = (x[k] for k in ("a", "d", "c3", "k1", "k2", "fw", "iv"))
    # wrong components
    refused(g, lambda: g.keyswitch(a, k1, fw, iv), "FHJIT_ERR_TYPE",
            "keyswitch: %a has 2 components; the key switch takes one polynomial")
    refused(g, lambda: g.ckks_relinearize(a, k1, fw, iv), "FHJIT_ERR_TYPE",
            "ckks_relinearize: the operand %a has 2 components; ckks_relinearize takes a "
            "ciphertext of 3")
    refused(g, lambda: g.ckks_mul_relin_rescale(a, c3, k1, fw, iv), "FHJIT_ERR_TYPE",
            "the second operand %c3 has 3 components")
    refused(g, lambda: g.ckks_rotate_hoisted(c3, [5], [k1], fw, iv), "FHJIT_ERR_TYPE",
            "%c3 has 3 components")
    # bad keys
    refused(g, lambda: fhjit.keyswitch(d, d, fw, iv), "FHJIT_ERR_TYPE",
            "keyswitch: the key operand %d is a polynomial value, expected a key table")
    refused(g, lambda: a.ckks_rotate(5, fw, fw, iv), "FHJIT_ERR_TYPE",
            "the Galois key operand %fw is a twiddle table")
    refused(g, lambda: g.ckks_mul_relin_rescale(a, a, d, fw, iv), "FHJIT_ERR_TYPE",
            "the relinearisation key operand %d is a polynomial value")
    refused(g, lambda: g.ckks_rotate_hoisted(a, [5, 25], [k1, a], fw, iv), "FHJIT_ERR_TYPE",
            "Galois key 1's operand %a")
    refused(g, lambda: g.keyswitch(d, k1, d, iv), "FHJIT_ERR_TYPE",
            "the forward twiddle operand %d is a polynomial value")
    # even, zero and too large Galois elements
    for k in (4, 0, 2 * s.n + 1):
        refused(g, lambda: g.ckks_rotate(a, k, k2, fw, iv), "FHJIT_ERR_ARGUMENT",
                "ckks_rotate: the Galois element k = %d of %%a must be odd with 1 <= k < 2N" % k)
    refused(g, lambda: g.ckks_rotate_hoisted(a, [5, 6], [k1, k2], fw, iv), "FHJIT_ERR_ARGUMENT",
            "k = 6")
    # hoisted: no rotation; as many keys as Galois elements; types of the lists
    refused(g, lambda: g.ckks_rotate_hoisted(a, [], [], fw, iv), "FHJIT_ERR_ARGUMENT",
            "ckks_rotate_hoisted: 0 rotations")
    refused(g, lambda: g.ckks_rotate_hoisted(a, [5, 25], [k1], fw, iv), "FHJIT_ERR_ARGUMENT",
            "ckks_rotate_hoisted: 1 keys for 2 ks")
    refused(g, lambda: g.ckks_rotate_hoisted(a, 5, [k1], fw, iv), "FHJIT_ERR_ARGUMENT",
            "ks must be a sequence")
    refused(g, lambda: g.ckks_rotate_hoisted(a, [5], k1, fw, iv), "FHJIT_ERR_ARGUMENT",
            "keys must be a sequence")
    refused(g, lambda: g.ckks_rotate_hoisted(a, [5.5], [k1], fw, iv), "FHJIT_ERR_ARGUMENT",
            "ks must be an integer")
    refused(g, lambda: g.ckks_rotate(a, 1 << 70, k1, fw, iv), "FHJIT_ERR_ARGUMENT",
            "does not fit 64 bits")
    # any iterables: a numpy array of Galois elements, a generator of keys
    two = fhjit.ckks_rotate_hoisted(a, np.array([5, 25]), (k for k in (k1, k2)), fw, iv)
    assert [v.type.comps for v in two] == [2, 2]
    # rescale of one row; an operand with a row of P
    one = g.input("one", fhjit.Type("poly", 2, [], 1, s.n, domain="ntt", form="mont"))
    refused(g, lambda: one.ckks_rescale(fw, iv), "FHJIT_ERR_SHAPE",
            "ckks_rescale: %one has 1 row; rescale divides by the last of at least two")
    dp = g.input("dp", "pt<[], 4, %d> ntt mont" % s.n, basis=[0, 1, 4, 3])
    refused(g, lambda: g.keyswitch(dp, k1, fw, iv), "FHJIT_ERR_TYPE",
            "which holds position 4 of the special primes P; Q and P must be disjoint")
    # another graph's operand
    h = graph(s, "other")
    y = user_inputs(h, s)
    refused(g, lambda: g.keyswitch(y["d"], k1, fw, iv), "FHJIT_ERR_ARGUMENT",
            "keyswitch: value %d belongs to graph @other, not @err")
    refused(g, lambda: g.ckks_rotate_hoisted(a, [5], [y["k1"]], fw, iv), "FHJIT_ERR_ARGUMENT",
            "belongs to graph @other")
    # a graph without special primes
    p = fhjit.Graph("plain", s.radix, moduli=primes(s.radix, M, ntt_n=s.n))
    z = user_inputs(p, s)
    refused(p, lambda: p.keyswitch(z["d"], z["k1"], z["fw"], z["iv"]), "FHJIT_ERR_TYPE",
            "graph @plain states no special primes")
    # the graph is still good: a key switch after all these builds and binds
    g.output(g.keyswitch(d, k1, fw, iv), "ks")
    g.output(two[1], "h1")
    g.bind()
