"""test_graph.py: building graphs with Python expressions, types, parsing
and printing, and the errors of building: one exception class carrying
fhjit's status name and its located message; closed contexts."""
import numpy as np
import pytest

import fhjit


def tensor_product():
    g = fhjit.Graph("tensor_product", "r62",
                    moduli=[1152921504606748673, 576460752303423649])
    a = g.input("a", fhjit.ct(2, [], 2, 4096, domain="ntt", form="mont"))
    b = g.input("b", "ct<2, [], 2, 4096> ntt mont")
    d0 = (a[0] * b[0]).rename("d0")
    x = (a[0] * b[1]).rename("x")
    y = (a[1] * b[0]).rename("y")
    d1 = fhjit.add_lazy(x, y).rename("d1")
    d2 = (a[1] * b[1]).rename("d2")
    g.output(fhjit.pack(d0, d1, d2).rename("r"))
    return g


def test_build_print_parse_round_trip():
    g = tensor_product()
    text = str(g)
    assert text.startswith("graph @tensor_product radix(r62) moduli(")
    assert "%d1 = add_lazy %x, %y" in text and "output %r" in text
    h = fhjit.parse(text)
    assert str(h) == text
    assert g.input_names == ["a", "b"] and g.output_names == ["r"]
    assert g.radix == "r62" and g.moduli == [1152921504606748673, 576460752303423649]
    assert len(g) == 16 and g["d1"].name == "d1" and g["%a"].type == fhjit.Type.parse(
        "ct<2, [], 2, 4096> ntt mont")
    assert "digraph" in g.dot()
    g.bind()
    h.bind()
    assert g.hash() == h.hash()
    assert [r.shape for r in g.results] == [(3, 2, 4096)]


def test_types():
    for text in ("ct<2, [], 2, 4096> ntt mont", "pt<[3, ?], ?, 16> coef", "key<3, 2, 4, 64>",
                 "twiddles<2, 1024>", "ct<1, [1], 1, 1> std"):
        t = fhjit.Type.parse(text)
        assert str(t) == text and fhjit.Type.parse(str(t)) == t
    assert fhjit.pt([3, None], None, 16).shape == (3, None, None, 16)
    assert fhjit.key(3, 4, 64).shape == (3, 2, 4, 64)
    for bad in ("ct<2, 2, 4096>", "pt<[], 2, 4096> foo", "key<3, 3, 4, 64>", "blob<1>",
                "ct<2, [], x, 4096>"):
        with pytest.raises(fhjit.FhjitError) as e:
            fhjit.Type.parse(bad)
        assert e.value.status == "FHJIT_ERR_PARSE"
    with pytest.raises(fhjit.FhjitError):
        fhjit.ct(2, [], 2, 16, domain="fourier")


def test_every_op_is_a_function_and_a_method():
    for op in fhjit.OPS:
        assert callable(getattr(fhjit, op.name))
        assert getattr(fhjit, op.name).__doc__
        if op.params[0].kind == "value":
            assert hasattr(fhjit.Value, op.name)


def test_operator_spellings():
    g = fhjit.Graph("ops", "r32", moduli=[268369921])
    a = g.input("a", "pt<[], 1, 16>")
    b = g.input("b", "pt<[], 1, 16>")
    g.output(a + b, "s").output("s2")
    g.output(a - b, "d")
    g.output(a * b, "m")
    g.output(-a, "n")
    text = str(g)
    for line in ("add %a, %b", "sub %a, %b", "mul %a, %b", "neg %a", "output %t2 as s2"):
        assert line in text
    with pytest.raises(TypeError):
        list(a)


def test_parse_error_is_located():
    src = "graph @g radix(r32) {\n  %a = input pt<[], 1, 16>\n  %b = mul %a, %zz\n}\n"
    with pytest.raises(fhjit.FhjitError) as e:
        fhjit.parse(src, "mine.fh")
    err = e.value
    assert err.status == "FHJIT_ERR_PARSE"
    assert "mine.fh:3:16: error: use of undefined value %zz" in err.message
    assert "^" in err.message and str(err).startswith("FHJIT_ERR_PARSE: mine.fh:3:16")


def test_builder_errors():
    g = fhjit.Graph("errs", "r62")
    a = g.input("a", "ct<2, [], 2, 16> coef")
    p = g.input("p", "pt<[], 2, 16> coef")
    with pytest.raises(fhjit.FhjitError) as e:
        fhjit.add_plain(a, p)  # NTT domain only
    assert e.value.status == "FHJIT_ERR_TYPE" and "coef" in e.value.message
    with pytest.raises(fhjit.FhjitError) as e:
        a[5]
    assert e.value.status == "FHJIT_ERR_SHAPE"
    with pytest.raises(fhjit.FhjitError) as e:
        fhjit.mul_compressed(a, p, layout="zigzag")
    assert e.value.status == "FHJIT_ERR_ARGUMENT" and "cyclic" in e.value.message
    with pytest.raises(fhjit.FhjitError) as e:
        fhjit.mul_compressed(a, p)  # layout is required
    assert e.value.status == "FHJIT_ERR_ARGUMENT" and "layout" in e.value.message
    with pytest.raises(fhjit.FhjitError) as e:
        fhjit.pack(p)
    assert e.value.status in ("FHJIT_ERR_ARGUMENT", "FHJIT_ERR_TYPE")
    with pytest.raises(fhjit.FhjitError) as e:
        g.input("a", "pt<[], 2, 16>")  # redefinition
    other = fhjit.Graph("other", "r62")
    o = other.input("o", "pt<[], 2, 16>")
    with pytest.raises(fhjit.FhjitError) as e:
        fhjit.add(p, o)
    assert "belongs to graph @other" in e.value.message
    with pytest.raises(fhjit.FhjitError) as e:
        g.set_moduli([4])
    assert e.value.status == "FHJIT_ERR_MODULUS"
    with pytest.raises(fhjit.FhjitError) as e:
        fhjit.Graph("bad", "r64")
    assert "radix" in e.value.message
    with pytest.raises(fhjit.FhjitError) as e:
        fhjit.keyswitch_digit_product(p, o, digit="x", row_start=0)


def test_bind_error_is_located():
    g = fhjit.parse("graph @b radix(r32) {\n  %a = input pt<[], 2, 16>\n"
                    "  %c = input pt<[], 2, 32>\n  %s = add %a, %c\n  output %s\n}\n", "b.fh")
    with pytest.raises(fhjit.FhjitError) as e:
        g.bind()
    assert e.value.status == "FHJIT_ERR_SHAPE" and e.value.message.startswith("b.fh:4:")


def test_closed_context():
    ctx = fhjit.Context()
    g = fhjit.Graph("c", "r32", moduli=[268369921], context=ctx)
    h = fhjit.Graph("d", "r32", context=ctx)
    a = g.input("a", "pt<[], 1, 16>")
    g.output(a + a)
    x = np.zeros((1, 16), np.uint32)
    assert np.array_equal(g.run(x), x)
    ctx.close()
    assert ctx.closed
    for fn in (lambda: g.run(x), lambda: str(g), lambda: a.name, lambda: a + a,
               lambda: h.input("b", "pt<[], 1, 16>"), lambda: g.bind(),
               lambda: fhjit.Graph("e", "r32", context=ctx)):
        with pytest.raises(fhjit.FhjitError) as e:
            fn()
        assert e.value.status == "FHJIT_ERR_ARGUMENT" and "closed" in e.value.message
    assert "closed" in repr(g) and "closed" in repr(ctx)
    ctx.close()  # twice is fine
    with fhjit.Context() as c2:
        fhjit.Graph("f", "r62", context=c2)
    assert c2.closed


def test_context_options():
    ctx = fhjit.Context()
    g = fhjit.Graph("o", "r32", moduli=[268369921], context=ctx)
    a = g.input("a", "pt<[], 1, 16>")
    g.output(a * a + a)
    x = np.arange(16, dtype=np.uint32).reshape(1, 16)
    want = g.run(x)
    with pytest.raises(fhjit.FhjitError) as e:
        ctx.set_option("no_such_option", "1")
    assert e.value.status == "FHJIT_ERR_ARGUMENT" and "unknown option" in e.value.message
    with pytest.raises(fhjit.FhjitError) as e:
        ctx.set_option("max_values", "0")
    assert e.value.status == "FHJIT_ERR_ARGUMENT" and 'max_values="0"' in e.value.message
    ctx.set_option("max_values", 1)  # a bound every kernel exceeds
    g2 = fhjit.Graph("o2", "r32", moduli=[268369921], context=ctx)
    b = g2.input("a", "pt<[], 1, 16>")
    g2.output(b * b + b)
    with pytest.raises(fhjit.FhjitError) as e:
        g2.run(x)
    assert e.value.status == "FHJIT_ERR_UNSUPPORTED" and "more than 1 values" in e.value.message
    ctx.set_option("max_values", None)
    assert np.array_equal(g2.run(x), want)
    ctx.set_option("pw_plan", "V=1")
    ctx.close()


def test_graph_close_and_private_contexts():
    g = fhjit.Graph("p", "r32")
    ctx = g.context
    g.close()
    assert ctx.closed
    with pytest.raises(fhjit.FhjitError):
        g.text()
    shared = fhjit.Context()
    a = fhjit.Graph("a", "r32", context=shared)
    b = fhjit.Graph("b", "r32", context=shared)
    a.close()
    assert not shared.closed and str(b).startswith("graph @b")
    shared.close()


def test_names_and_unknown_keys():
    g = fhjit.Graph("names", "r32")
    a = g.input("a", "pt<[], 1, 16>")
    with pytest.raises(KeyError):
        g["nothing"]
    assert repr(a) == "<fhjit.Value %a: pt<[], 1, 16>>"
    assert "@names r32" in repr(g)
