/* test_diff_host.c: the host JIT (fhjit_run_host) against the reference
 * interpreter (fhjit_interpret), bit for bit, op by op: every pointwise op
 * and plaintext/compressed/key-switch/structural form, both radices, moduli
 * near the radix limits (2^30, 2^60) and far below, random lazy inputs with
 * the SPEC section 6 boundary pairs placed where each op reads them, and
 * dense, strided (gaps, offsets, interleaving), transposed and broadcast
 * (stride 0) layouts. Both are also checked against randgraph's independent
 * evaluator, inputs must come back untouched and every result word written.
 * Further cases: multi-output graphs with outputs that alias inputs, and a
 * large graph split across threads. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/ir.h"
#include "randgraph.h"
#include "testutil.h"

#define ROWS 3
#define N 16
#define U 8 /* compressed plaintext extent: repeat = 2 */

#define POISON_A UINT64_C(0x5555555555555555)
#define POISON_B UINT64_C(0x2AAAAAAAAAAAAAAA)
#define POISON_C UINT64_C(0x1111111111111111)

static uint64_t poison(fhjit_radix radix, uint64_t p) {
  return radix == FHJIT_R32 ? (p & 0xFFFFFFFFu) : p;
}

/* ------------------------------------------------------------- moduli */

enum { MODS_NEAR_LIMIT, MODS_FAR_BELOW, MODS_SPEC_AND_ODD, MODS_NUM };

/* Three moduli per set. Near the limit: the two largest NTT primes below
 * 2^30 / 2^60 (q = 1 mod 2^18) and the largest odd number below the limit.
 * Far below: 20-bit (r32) / 40-bit (r62) primes q = 1 mod 2^10, and 3.
 * SPEC: the reference library's primes and an odd composite. */
static void moduli_set(fhjit_radix radix, int set, uint64_t *out) {
  fhjit_context *ctx = fhjit_context_create();
  int bits = radix == FHJIT_R32 ? 30 : 60;
  uint64_t limit = UINT64_C(1) << bits;
  switch (set) {
  case MODS_NEAR_LIMIT:
    ck_assert_int_eq(fhjit_find_primes(ctx, bits, UINT64_C(1) << 18, 2, out), FHJIT_OK);
    out[2] = limit - 1;
    break;
  case MODS_FAR_BELOW:
    ck_assert_int_eq(fhjit_find_primes(ctx, bits == 30 ? 20 : 40, UINT64_C(1) << 10, 2, out),
                     FHJIT_OK);
    out[2] = 3;
    break;
  default:
    if (radix == FHJIT_R32) out[0] = 268369921, out[1] = 134176769, out[2] = 999999999;
    else
      out[0] = UINT64_C(1152921504606748673), out[1] = UINT64_C(576460752303423649),
      out[2] = UINT64_C(999999999999999999);
    break;
  }
  for (int i = 0; i < ROWS; i++)
    ck_assert_int_eq(fhjit_check_modulus(ctx, radix, out[i], 0), FHJIT_OK);
  fhjit_context_destroy(ctx);
}

/* ------------------------------------------------------------- layouts */

enum { L_DENSE, L_STRIDED, L_TRANSPOSED, L_BROADCAST, L_NUM };
static const char *const layout_names[L_NUM] = {"dense", "strided", "transposed", "broadcast"};

/* A layout of mode `mode` for concrete type t. Strided: natural nesting,
 * interleaved elements (index stride 2), a gap after every block, an offset.
 * Transposed: the index axis outermost and the component axis innermost.
 * Broadcast: like strided, but every component, batch and digit axis has
 * stride 0 (all views of one block). */
static fhjit_layout make_layout(const fhjit_type *t, int mode) {
  fhjit_layout l;
  memset(&l, 0, sizeof l);
  if (mode == L_DENSE) {
    ck_assert_int_eq(fhjit_dense_layout(t, &l), FHJIT_OK);
    return l;
  }
  int64_t ext[8], *stride[8];
  int bcastable[8], k = 0;
  if (t->kind == FHJIT_KIND_KEY) ext[k] = t->digits, stride[k] = &l.digit_stride, bcastable[k++] = 1;
  if (t->comps > 0) ext[k] = t->comps, stride[k] = &l.comp_stride, bcastable[k++] = 1;
  for (int a = 0; a < t->nbatch; a++) ext[k] = t->batch[a], stride[k] = &l.batch_stride[a], bcastable[k++] = 1;
  ext[k] = t->rows, stride[k] = &l.row_stride, bcastable[k++] = 0;
  ext[k] = t->n, stride[k] = &l.index_stride, bcastable[k++] = 0;
  int64_t cur = mode == L_TRANSPOSED ? 1 : 2;
  for (int step = 0; step < k; step++) {
    int a = mode == L_TRANSPOSED ? step : k - 1 - step; /* innermost first */
    if (mode == L_BROADCAST && bcastable[a]) {
      *stride[a] = 0;
      continue;
    }
    *stride[a] = cur;
    cur = cur * ext[a] + 3;
  }
  l.offset = mode == L_TRANSPOSED ? 3 : mode == L_BROADCAST ? 2 : 5;
  return l;
}

/* ------------------------------------------------------------- graphs */

typedef enum op_kind {
  K_ADD, K_SUB, K_ADD_LAZY, K_MUL, K_NEG, K_TO_MONT, K_FROM_MONT, K_MUL_PLAIN, K_ADD_PLAIN,
  K_MUL_COMPRESSED, K_ADD_COMPRESSED_COEF, K_ADD_COMPRESSED_NTT, K_KS, K_EXTRACT, K_PACK,
  K_NUM
} op_kind;

static const char *const kind_names[K_NUM] = {
    "add", "sub", "add_lazy", "mul", "neg", "to_mont", "from_mont", "mul_plain", "add_plain",
    "mul_compressed", "add_compressed(coef)", "add_compressed(ntt)",
    "keyswitch_digit_product", "extract", "pack"};

static const int64_t batch23[] = {2, 3}, batch3[] = {3}, batch13[] = {1, 3}, batch21[] = {2, 1},
                     batch11[] = {1, 1};

static fhjit_value input(fhjit_graph *g, const char *name, fhjit_type t, int mode) {
  fhjit_value v = fhjit_input(g, name, &t);
  ck_assert_msg(v != FHJIT_NO_VALUE, "%s", fhjit_last_error(fhjit_graph_context(g)));
  fhjit_layout l = make_layout(&t, mode);
  ck_assert_msg(fhjit_bind_input(g, v, NULL, &l) == FHJIT_OK, "%s",
                fhjit_last_error(fhjit_graph_context(g)));
  return v;
}

static void output(fhjit_graph *g, fhjit_value v, const char *name) {
  ck_assert_msg(v != FHJIT_NO_VALUE, "building %s: %s", name,
                fhjit_last_error(fhjit_graph_context(g)));
  ck_assert_int_eq(fhjit_output(g, v, name), FHJIT_OK);
}

/* The single-op graph of `kind`. variant (0..3) varies the second operand's
 * shape (broadcasting), the compression layout, or the key slice. Input 0 is
 * always the first operand, input 1 the second, input 2 the implicit one. */
static fhjit_graph *build_op(fhjit_context *ctx, fhjit_radix radix, op_kind kind, int variant,
                             int mode) {
  fhjit_graph *g = fhjit_graph_create(ctx, kind_names[kind], radix);
  fhjit_type ct2 = tu_poly(2, 2, batch23, ROWS, N);
  switch (kind) {
  case K_ADD: case K_SUB: case K_ADD_LAZY: case K_MUL: case K_EXTRACT: {
    fhjit_type tb = variant == 0 ? ct2
                    : variant == 1 ? tu_poly(0, 1, batch3, ROWS, N)
                    : variant == 2 ? tu_poly(1, 2, batch13, ROWS, N)
                                   : tu_poly(2, 2, batch21, ROWS, N);
    fhjit_value a = input(g, "a", ct2, mode), b = input(g, "b", tb, mode), r;
    if (kind == K_ADD || kind == K_EXTRACT) r = fhjit_add(g, a, b);
    else if (kind == K_SUB) r = fhjit_sub(g, a, b);
    else if (kind == K_ADD_LAZY) r = fhjit_add_lazy(g, a, b);
    else r = fhjit_mul(g, a, b);
    if (kind == K_EXTRACT) {
      output(g, fhjit_extract(g, r, 1), "r1");                 /* of a computed value */
      output(g, fhjit_extract(g, a, variant % 2), "a_view");   /* of an input: an alias */
    } else {
      output(g, r, "r");
    }
    break;
  }
  case K_NEG: case K_TO_MONT: case K_FROM_MONT: {
    fhjit_type ta = variant % 2 ? tu_poly(0, 1, batch3, ROWS, N) : tu_poly(3, 2, batch23, ROWS, N);
    fhjit_value a = input(g, "a", ta, mode);
    output(g, kind == K_NEG ? fhjit_neg(g, a) : kind == K_TO_MONT ? fhjit_to_mont(g, a)
                                                                  : fhjit_from_mont(g, a),
           "r");
    break;
  }
  case K_MUL_PLAIN: case K_ADD_PLAIN: {
    fhjit_type tp = variant == 0 ? tu_poly(0, 2, batch23, ROWS, N)
                    : variant == 1 ? tu_poly(0, 1, batch3, ROWS, N)
                    : variant == 2 ? ct2 /* a plaintext with components: component 0 counts */
                                   : tu_poly(0, 2, batch11, ROWS, N);
    fhjit_value a = input(g, "ct", ct2, mode), p = input(g, "p", tp, mode);
    output(g, kind == K_MUL_PLAIN ? fhjit_mul_plain(g, a, p) : fhjit_add_plain(g, a, p), "r");
    break;
  }
  case K_MUL_COMPRESSED: case K_ADD_COMPRESSED_COEF: case K_ADD_COMPRESSED_NTT: {
    fhjit_compression layout = (fhjit_compression)(variant % 3);
    fhjit_value a = input(g, "ct", ct2, mode);
    fhjit_value p = input(g, "p", variant == 3 ? tu_poly(0, 1, batch3, ROWS, U)
                                               : tu_poly(0, 2, batch23, ROWS, U), mode);
    fhjit_value im = FHJIT_NO_VALUE;
    if (layout == FHJIT_STRIDED_SPARSE)
      im = input(g, "implicit", tu_poly(0, 2, batch13, ROWS, 1), mode);
    fhjit_value r = kind == K_MUL_COMPRESSED
                        ? fhjit_mul_compressed(g, a, p, layout, im)
                        : fhjit_add_compressed(g, a, p, layout, im,
                                               kind == K_ADD_COMPRESSED_COEF ? FHJIT_DOMAIN_COEF
                                                                             : FHJIT_DOMAIN_NTT);
    output(g, r, "r");
    break;
  }
  case K_KS: {
    fhjit_value d = input(g, "d", tu_poly(0, 2, batch23, ROWS, N), mode);
    fhjit_value key = input(g, "key", tu_key(3, ROWS + 2, N), mode);
    output(g, fhjit_keyswitch_digit_product(g, d, key, variant % 3, variant % 2 ? 2 : 0), "r");
    break;
  }
  case K_PACK: {
    fhjit_type tp = tu_poly(0, 2, batch23, ROWS, N);
    fhjit_value parts[3] = {input(g, "p0", tp, mode), input(g, "p1", tp, mode),
                            input(g, "p2", tp, mode)};
    fhjit_value three = fhjit_pack(g, 3, parts);
    output(g, three, "packed3");
    fhjit_value two = fhjit_pack(g, 2, parts + (variant % 2));
    fhjit_value ct = input(g, "ct", ct2, mode);
    output(g, fhjit_mul(g, two, ct), "mul_packed2");
    break;
  }
  default:
    break;
  }
  ck_assert_msg(fhjit_bind(g) == FHJIT_OK, "%s", fhjit_last_error(ctx));
  return g;
}

/* ------------------------------------------------------------ edge values */

/* The lazy boundary pairs of SPEC section 6, as functions of q. */
static void edge_pair(int p, uint64_t q, uint64_t *a, uint64_t *b) {
  static const int64_t pairs[6][2][2] = {
      /* {multiple of q, constant} for a and b */
      {{0, 0}, {2, -1}}, {{1, -1}, {1, 0}}, {{1, 0}, {1, -1}},
      {{2, -1}, {0, 1}}, {{2, -1}, {2, -1}}, {{0, 0}, {0, 0}}};
  *a = (uint64_t)pairs[p][0][0] * q + (uint64_t)pairs[p][0][1];
  *b = (uint64_t)pairs[p][1][0] * q + (uint64_t)pairs[p][1][1];
}

/* Sets element (comp, batch 0..., row, i) of input `index`; returns 1 when
 * stored (a broadcast slot shared with a smaller modulus may refuse). */
static int set_elem(rg_case *c, int32_t index, int64_t comp, int64_t row, int64_t i, uint64_t v) {
  int64_t zero[FHJIT_MAX_BATCH] = {0};
  return rg_set_word(c, index, rg_input_offset(c, index, comp, zero, row, i), v);
}

/* Places the boundary pairs where the op reads its two operands together.
 * Returns how many pairs were stored. */
static int place_edges(rg_case *c, op_kind kind, int variant) {
  int placed = 0;
  for (int64_t r = 0; r < ROWS; r++) {
    uint64_t q = c->moduli[r];
    for (int p = 0; p < 6; p++) {
      uint64_t a, b;
      edge_pair(p, q, &a, &b);
      switch (kind) {
      case K_NEG: case K_TO_MONT: case K_FROM_MONT: {
        const uint64_t singles[7] = {0, 1, q - 1, q, q + 1, 2 * q - 2, 2 * q - 1};
        placed += set_elem(c, 0, 0, r, p, singles[p]);
        if (p == 5) placed += set_elem(c, 0, 0, r, 6, singles[6]);
        break;
      }
      case K_MUL_COMPRESSED: case K_ADD_COMPRESSED_COEF: case K_ADD_COMPRESSED_NTT: {
        /* the dense index that reads p[p]: cyclic i = p, otherwise i = p * repeat */
        int64_t i = (variant % 3) == FHJIT_CYCLIC ? p : p * (N / U);
        placed += set_elem(c, 0, 0, r, i, a) & set_elem(c, 1, 0, r, p, b);
        if ((variant % 3) == FHJIT_STRIDED_SPARSE && p == 0)
          placed += set_elem(c, 2, 0, r, 0, r == 0 ? 2 * q - 1 : r == 1 ? q : 0);
        break;
      }
      case K_KS: {
        int64_t digit = variant % 3, rs = variant % 2 ? 2 : 0;
        placed += set_elem(c, 0, 0, r, p, a) & set_elem(c, 1, digit * 2 + 0, rs + r, p, b) &
                  set_elem(c, 1, digit * 2 + 1, rs + r, p, a);
        break;
      }
      case K_PACK: /* mul_packed2 multiplies part (variant % 2) with input 3 */
        placed += set_elem(c, variant % 2, 0, r, p, a) & set_elem(c, 3, 0, r, p, b);
        break;
      default: /* binary ops and plaintext forms: same coordinates */
        placed += set_elem(c, 0, 0, r, p, a) & set_elem(c, 1, 0, r, p, b);
        break;
      }
    }
  }
  rg_case_snapshot(c);
  return placed;
}

/* ------------------------------------------------------------- running */

/* Runs g on the interpreter, the host JIT (threads) and the independent
 * reference; everything must agree and the inputs stay untouched. */
static void run_and_compare(rg_case *c, const char *what, int threads) {
  char report[1 << 15];
  fhjit_context *ctx = fhjit_graph_context(c->g);
  void **itp = rg_alloc_results(c, poison(c->radix, POISON_A));
  void **host = rg_alloc_results(c, poison(c->radix, POISON_B));
  void **ref = rg_alloc_results(c, poison(c->radix, POISON_C));
  fhjit_status st = fhjit_interpret(c->g, c->params, c->pstride, (const void *const *)c->inputs, itp);
  ck_assert_msg(st == FHJIT_OK, "%s: fhjit_interpret: %s", what, fhjit_last_error(ctx));
  st = fhjit_run_host(c->g, c->params, c->pstride, (const void *const *)c->inputs, host, threads);
  ck_assert_msg(st == FHJIT_OK, "%s: fhjit_run_host: %s: %s", what, fhjit_status_name(st),
                fhjit_last_error(ctx));
  ck_assert_msg(rg_reference(c, ref, report, sizeof report) == 0, "%s: %s", what, report);
  if (rg_compare(c, host, "host", itp, "interpreter", report, sizeof report)) {
    fprintf(stderr, "%s:\n%s\n", what, report);
    ck_abort_msg("%s: host != interpreter (report on stderr)", what);
  }
  if (rg_compare(c, itp, "interpreter", ref, "reference", report, sizeof report)) {
    fprintf(stderr, "%s:\n%s\n", what, report);
    ck_abort_msg("%s: interpreter != independent reference (report on stderr)", what);
  }
  ck_assert_msg(rg_check_inputs(c, "a backend", report, sizeof report) == 0, "%s: %s", what, report);
  rg_free_results(c, itp);
  rg_free_results(c, host);
  rg_free_results(c, ref);
}

static void ops_for_radix(fhjit_radix radix) {
  fhjit_context *ctx = fhjit_context_create();
  char err[4096], what[256];
  int graphs = 0;
  for (int set = 0; set < MODS_NUM; set++) {
    uint64_t moduli[ROWS];
    moduli_set(radix, set, moduli);
    for (int mode = 0; mode < L_NUM; mode++)
      for (int kind = 0; kind < K_NUM; kind++) {
        /* every variant under the dense layout; rotating ones otherwise */
        int nvar = mode == L_DENSE ? 4 : 1;
        for (int vi = 0; vi < nvar; vi++) {
          int variant = mode == L_DENSE ? vi : (set + mode + kind) % 4;
          snprintf(what, sizeof what, "%s radix %s, moduli set %d, %s layout, variant %d",
                   kind_names[kind], radix == FHJIT_R32 ? "r32" : "r62", set, layout_names[mode],
                   variant);
          fhjit_graph *g = build_op(ctx, radix, (op_kind)kind, variant, mode);
          rg_case c;
          ck_assert_msg(rg_case_init(&c, g, moduli, (uint64_t)(graphs + 1) * 7919, 15, err,
                                     sizeof err) == 0,
                        "%s: %s", what, err);
          int placed = place_edges(&c, (op_kind)kind, variant);
          if (mode == L_DENSE) ck_assert_msg(placed >= 6 * ROWS, "%s: %d edge pairs placed", what, placed);
          run_and_compare(&c, what, graphs % 3);
          rg_case_free(&c);
          fhjit_graph_destroy(g);
          graphs++;
        }
      }
  }
  fhjit_context_destroy(ctx);
}

START_TEST(test_ops_r32) { ops_for_radix(FHJIT_R32); }
END_TEST

START_TEST(test_ops_r62) { ops_for_radix(FHJIT_R62); }
END_TEST

/* Several outputs of every kind in one graph: computed values, an
 * intermediate that also feeds others, an input output as itself, extracts
 * of an input and of a computed value, one value under two names. The alias
 * outputs must be views of the input (no result buffer). */
START_TEST(test_outputs_and_aliases) {
  fhjit_context *ctx = fhjit_context_create();
  char err[4096];
  for (int radix = 0; radix < 2; radix++)
    for (int mode = 0; mode < L_NUM; mode++) {
      fhjit_graph *g = fhjit_graph_create(ctx, "outputs", (fhjit_radix)radix);
      fhjit_value a = input(g, "a", tu_poly(2, 2, batch23, ROWS, N), mode);
      fhjit_value b = input(g, "b", tu_poly(0, 1, batch3, ROWS, N), mode);
      fhjit_value s = fhjit_add_lazy(g, a, b);   /* escapes and feeds m */
      fhjit_value m = fhjit_mul(g, s, a);
      fhjit_value e = fhjit_extract(g, m, 1);
      fhjit_value n = fhjit_neg(g, e);
      output(g, s, "s");
      output(g, m, "m");
      output(g, e, "m1");          /* view of m's result */
      output(g, n, "neg_m1");
      output(g, a, "a_again");     /* alias of input a */
      output(g, fhjit_extract(g, a, 1), "a1"); /* alias of a component of a */
      output(g, b, "b_again");
      output(g, n, "neg_m1_twice");
      ck_assert_msg(fhjit_bind(g) == FHJIT_OK, "%s", fhjit_last_error(ctx));
      ck_assert_int_eq(fhjit_num_results(g), 3); /* s, m, n */
      fhjit_output_info info;
      ck_assert_int_eq(fhjit_output_info_get(g, 4, &info), FHJIT_OK);
      ck_assert(info.is_input_alias && info.source == 0 && info.component == -1);
      fhjit_layout la;
      fhjit_input_binding(g, 0, NULL, &la);
      ck_assert_int_eq(info.layout.offset, la.offset);
      ck_assert_int_eq(fhjit_output_info_get(g, 5, &info), FHJIT_OK);
      ck_assert(info.is_input_alias && info.source == 0 && info.component == 1);
      ck_assert_int_eq(info.layout.offset, la.offset + la.comp_stride);
      ck_assert_int_eq(fhjit_output_info_get(g, 2, &info), FHJIT_OK);
      ck_assert(!info.is_input_alias && info.component == 1);
      rg_case c;
      ck_assert_msg(rg_case_init(&c, g, NULL, 99 + (uint64_t)mode, 20, err, sizeof err) != 0,
                    "graph without moduli accepted");
      uint64_t moduli[ROWS];
      moduli_set((fhjit_radix)radix, mode % MODS_NUM, moduli);
      ck_assert_msg(rg_case_init(&c, g, moduli, 99 + (uint64_t)mode, 20, err, sizeof err) == 0, "%s", err);
      place_edges(&c, K_ADD, 1);
      run_and_compare(&c, layout_names[mode], mode);
      rg_case_free(&c);
      fhjit_graph_destroy(g);
    }
  fhjit_context_destroy(ctx);
}
END_TEST

/* A graph large enough for the host path to split the index space across
 * threads: every thread count gives the interpreter's words. */
START_TEST(test_large_threaded) {
  fhjit_context *ctx = fhjit_context_create();
  char err[4096];
  static const int64_t big_batch[] = {3};
  for (int radix = 0; radix < 2; radix++) {
    fhjit_graph *g = fhjit_graph_create(ctx, "large", (fhjit_radix)radix);
    fhjit_value a = input(g, "a", tu_poly(2, 1, big_batch, 4, 4096), L_STRIDED);
    fhjit_value b = input(g, "b", tu_poly(0, 1, big_batch, 4, 4096), L_DENSE);
    fhjit_value t = fhjit_mul(g, fhjit_add_lazy(g, a, b), a);
    output(g, fhjit_sub(g, t, fhjit_to_mont(g, b)), "r");
    output(g, t, "t");
    ck_assert_int_eq(fhjit_bind(g), FHJIT_OK);
    uint64_t moduli[4];
    fhjit_find_primes(ctx, radix == FHJIT_R32 ? 30 : 60, UINT64_C(1) << 18, 4, moduli);
    rg_case c;
    ck_assert_msg(rg_case_init(&c, g, moduli, 5, 5, err, sizeof err) == 0, "%s", err);
    for (int threads = 0; threads <= 4; threads++) run_and_compare(&c, "large graph", threads);
    rg_case_free(&c);
    fhjit_graph_destroy(g);
  }
  fhjit_context_destroy(ctx);
}
END_TEST

int main(void) {
  Suite *s = suite_create("diff_host");
  TCase *tc = tcase_create("core");
  tcase_set_timeout(tc, 600);
  tcase_add_test(tc, test_ops_r32);
  tcase_add_test(tc, test_ops_r62);
  tcase_add_test(tc, test_outputs_and_aliases);
  tcase_add_test(tc, test_large_threaded);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
