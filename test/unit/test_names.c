/* test_names.c: kernel and function symbols are unique by construction and
 * valid identifiers, whatever the graph is called. Graph names of 1 to 200
 * characters, of any bytes (quoted names), with NTT anchors whose epilogues
 * compute several results: the host path bit for bit against the
 * interpreter (a truncated name once made two epilogues share one
 * evaluator), the GPU program's kernels distinct, valid and present in the
 * PTX, the PTX of an anchored graph independent of its name, the
 * description the runtime checks cache entries against equal to the
 * compiled program, and the builders' refusal of a second symbol under one
 * name. Random anchored graphs cover the class. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <llvm-c/Core.h>

#include "lower/lw_llvm.h"
#include "lower/ntt.h"
#include "nttcheck.h"
#include "testutil.h"

/* ------------------------------------------------------------- helpers */

typedef struct env {
  fhjit_context *ctx;
  fhjit_radix radix;
  size_t ws;
  int rows;
  int64_t n;
  uint64_t q[2];
  void *params, *fwd, *inv;
} env;

static void env_init(env *e, fhjit_radix radix, int rows, int logn) {
  memset(e, 0, sizeof *e);
  e->ctx = fhjit_context_create();
  e->radix = radix;
  e->ws = radix == FHJIT_R32 ? 4 : 8;
  e->rows = rows;
  e->n = INT64_C(1) << logn;
  ck_assert_int_eq(fhjit_find_primes(NULL, radix == FHJIT_R32 ? 30 : 60, UINT64_C(1) << 18, 2, e->q),
                   FHJIT_OK);
  nttcheck_tables(e->ctx, radix, e->q, rows, e->n, &e->params, &e->fwd, &e->inv);
}

static void env_free(env *e) {
  free(e->params);
  free(e->fwd);
  free(e->inv);
  fhjit_context_destroy(e->ctx);
}

/* Dense inputs: twiddle inputs named "tf*" the forward table, "ti*" the
 * inverse one; the others random lazy words of their row. */
static void **make_inputs(env *e, fhjit_graph *g, uint64_t *seed) {
  int32_t ni = fhjit_num_inputs(g);
  void **in = calloc((size_t)ni + 1, sizeof *in);
  ck_assert_ptr_nonnull(in);
  for (int32_t i = 0; i < ni; i++) {
    fhjit_type t;
    fhjit_layout l;
    ck_assert_int_eq(fhjit_input_binding(g, i, &t, &l), FHJIT_OK);
    int64_t words = fhjit_type_elements(&t);
    in[i] = malloc(e->ws * (size_t)words);
    ck_assert_ptr_nonnull(in[i]);
    const char *name = fhjit_value_name(g, fhjit_input_value(g, i));
    for (int64_t w = 0; w < words; w++) {
      int64_t row = (w / t.n) % t.rows;
      if (t.kind == FHJIT_KIND_TWIDDLE)
        tu_set_word(e->ws, in[i], w, tu_word(e->ws, name[1] == 'f' ? e->fwd : e->inv, w));
      else
        tu_set_word(e->ws, in[i], w, tu_lazy(seed, e->q[row]));
    }
  }
  return in;
}

static void **make_results(env *e, fhjit_graph *g, int fill) {
  int32_t nr = fhjit_num_results(g);
  void **out = calloc((size_t)nr + 1, sizeof *out);
  ck_assert_ptr_nonnull(out);
  for (int32_t k = 0; k < nr; k++) {
    fhjit_type t;
    ck_assert_int_eq(fhjit_result_type(g, k, &t), FHJIT_OK);
    size_t bytes = e->ws * (size_t)fhjit_type_elements(&t);
    out[k] = malloc(bytes);
    ck_assert_ptr_nonnull(out[k]);
    memset(out[k], fill, bytes);
  }
  return out;
}

static void free_bufs(void **b, int32_t n) {
  for (int32_t i = 0; i < n; i++) free(b[i]);
  free(b);
}

/* The host JIT against the interpreter, every word of every result. */
static void host_matches_interp(env *e, fhjit_graph *g, const char *what) {
  uint64_t seed = 1234;
  void **in = make_inputs(e, g, &seed);
  void **ri = make_results(e, g, 0x5A), **rh = make_results(e, g, 0xA5);
  fhjit_status st = fhjit_interpret(g, e->params, e->rows, (const void *const *)in, ri);
  ck_assert_msg(st == FHJIT_OK, "%s: interpret: %s", what, fhjit_last_error(e->ctx));
  st = fhjit_run_host(g, e->params, e->rows, (const void *const *)in, rh, 2);
  ck_assert_msg(st == FHJIT_OK, "%s: host: %s", what, fhjit_last_error(e->ctx));
  int32_t nr = fhjit_num_results(g);
  for (int32_t k = 0; k < nr; k++) {
    fhjit_type t;
    fhjit_result_type(g, k, &t);
    int64_t words = fhjit_type_elements(&t), bad = 0, first = -1;
    for (int64_t i = 0; i < words; i++)
      if (tu_word(e->ws, ri[k], i) != tu_word(e->ws, rh[k], i) && bad++ == 0) first = i;
    ck_assert_msg(!bad, "%s: result #%d: %lld of %lld words differ (first %lld: host %llu, interp %llu)",
                  what, (int)k, (long long)bad, (long long)words, (long long)first,
                  (unsigned long long)tu_word(e->ws, rh[k], first), (unsigned long long)tu_word(e->ws, ri[k], first));
  }
  free_bufs(ri, nr);
  free_bufs(rh, nr);
  free_bufs(in, fhjit_num_inputs(g));
}

/* A PTX identifier of fhjit's form: [A-Za-z_][A-Za-z0-9_]*, shorter than
 * LW_NAME_MAX. */
static int valid_symbol(const char *s) {
  size_t n = strlen(s);
  if (n == 0 || n >= LW_NAME_MAX || (s[0] >= '0' && s[0] <= '9')) return 0;
  for (size_t i = 0; i < n; i++) {
    char c = s[i];
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_'))
      return 0;
  }
  return 1;
}

static int same_kernel(const lw_kernel *a, const lw_kernel *b) {
  if (strcmp(a->name, b->name) || a->shared_bytes != b->shared_bytes || a->flags != b->flags ||
      a->nargs != b->nargs)
    return 0;
  for (int d = 0; d < 3; d++)
    if (a->grid[d] != b->grid[d] || a->block[d] != b->block[d]) return 0;
  for (int32_t i = 0; i < a->nargs; i++)
    if (a->args[i].kind != b->args[i].kind || a->args[i].index != b->args[i].index) return 0;
  return 1;
}

/* The GPU program of g: kernels distinct, valid, each an entry of the PTX,
 * and exactly what lw_describe_program says without compiling. Returns the
 * PTX (caller frees). */
static char *check_program(fhjit_graph *g, const char *what) {
  fhjit_context *ctx = fhjit_graph_context(g);
  lw_program p, d;
  ck_assert_msg(lw_compile_ptx(g, "sm_90", &p) == FHJIT_OK, "%s: %s", what, fhjit_last_error(ctx));
  ck_assert_msg(lw_describe_program(g, "sm_90", &d) == FHJIT_OK, "%s: %s", what,
                fhjit_last_error(ctx));
  ck_assert_int_eq(p.nkernels, d.nkernels);
  ck_assert_int_eq(p.nscratch, d.nscratch);
  ck_assert_ptr_null(d.ptx);
  for (int32_t s = 0; s < p.nscratch; s++) ck_assert_int_eq(p.scratch_bytes[s], d.scratch_bytes[s]);
  for (int32_t k = 0; k < p.nkernels; k++) {
    const char *name = p.kernels[k].name;
    ck_assert_msg(valid_symbol(name), "%s: kernel %d: '%s' is no identifier", what, (int)k, name);
    ck_assert_msg(same_kernel(&p.kernels[k], &d.kernels[k]), "%s: kernel %d (%s) differs from its "
                  "description (%s)", what, (int)k, name, d.kernels[k].name);
    for (int32_t j = 0; j < k; j++)
      ck_assert_msg(strcmp(name, p.kernels[j].name), "%s: kernels %d and %d are both %s", what,
                    (int)j, (int)k, name);
    char entry[LW_NAME_MAX + 16];
    snprintf(entry, sizeof entry, ".entry %s(", name);
    ck_assert_msg(strstr(p.ptx, entry), "%s: no '%s' in the PTX", what, entry);
  }
  char *ptx = p.ptx;
  p.ptx = NULL;
  lw_program_free(&p);
  return ptx;
}

/* ---------------------------------------------- the epilogue collision */

/* f = ntt_fwd(x); results from f in its last kernel (the epilogue):
 * variant 0: add(f, f), sub(f, y) (evaluators of different signatures);
 * 1: add(f, y), sub(f, y) (the same signature); 2: four targets, the most
 * an NTT takes; 3: two NTTs, a prologue (the inverse's operand is
 * computed), epilogues on both and a result left to a pointwise step. */
static fhjit_graph *epilogue_graph(env *e, const char *name, int variant) {
  fhjit_graph *g = fhjit_graph_create(e->ctx, name, e->radix);
  ck_assert_ptr_nonnull(g);
  fhjit_type xt = tu_poly(0, 0, NULL, e->rows, e->n);
  fhjit_type tt = {.kind = FHJIT_KIND_TWIDDLE, .rows = e->rows, .n = e->n};
  fhjit_value x = fhjit_input(g, "x", &xt), y = fhjit_input(g, "y", &xt);
  fhjit_value tf = fhjit_input(g, "tf", &tt), ti = fhjit_input(g, "ti", &tt);
  fhjit_value f = fhjit_ntt(g, x, tf, FHJIT_NTT_COEF_STD_TO_NTT);
  fhjit_value outs[6];
  int nout = 0;
  if (variant == 0) {
    outs[nout++] = fhjit_add(g, f, f);
    outs[nout++] = fhjit_sub(g, f, y);
  } else if (variant == 1 || variant == 2) {
    outs[nout++] = fhjit_add(g, f, y);
    outs[nout++] = fhjit_sub(g, f, y);
    if (variant == 2) {
      outs[nout++] = fhjit_mul(g, f, y);
      outs[nout++] = fhjit_neg(g, f);
    }
  } else {
    fhjit_value v = fhjit_ntt(g, fhjit_mul(g, f, y), ti, FHJIT_NTT_TO_COEF_STD);
    outs[nout++] = fhjit_add(g, f, y);
    outs[nout++] = fhjit_sub(g, f, f);
    outs[nout++] = fhjit_add(g, v, x);
    outs[nout++] = fhjit_sub(g, v, y);
    outs[nout++] = fhjit_add(g, x, y);
  }
  for (int i = 0; i < nout; i++) {
    ck_assert_int_ne(outs[i], FHJIT_NO_VALUE);
    ck_assert_int_eq(fhjit_output(g, outs[i], NULL), FHJIT_OK);
  }
  ck_assert_msg(fhjit_bind(g) == FHJIT_OK, "%s", fhjit_last_error(e->ctx));
  return g;
}

/* Names of 1 to 200 characters around the 63-character symbol limit, and
 * names no identifier allows. */
static void test_name(int i, char *buf, size_t size) {
  static const int lengths[] = {1, 50, 51, 52, 57, 58, 63, 64, 120, 200};
  const int nlen = (int)(sizeof lengths / sizeof *lengths);
  if (i < nlen) {
    int n = lengths[i];
    for (int k = 0; k < n; k++) buf[k] = (char)('a' + k % 3);
    buf[n] = 0;
  } else if (i == nlen) {
    snprintf(buf, size, "odd name \"q\" .-/\\ %s", "\x01\x7f\xc3\xa9");
  } else {
    memset(buf, 0, size);
    for (int k = 0; k < 180; k++) buf[k] = (char)(1 + (k * 37) % 255); /* every byte but NUL */
  }
}

START_TEST(test_epilogue_names) {
  TU_SAMPLED(_i);
  fhjit_radix radix = _i & 1 ? FHJIT_R62 : FHJIT_R32;
  int variant = _i >> 1;
  env e;
  env_init(&e, radix, 2, 4);
  fhjit_graph *ref = epilogue_graph(&e, "s", variant);
  char *ref_ptx = check_program(ref, "short name");
  for (int i = 0; i < 12; i++) {
    char name[256], what[64];
    test_name(i, name, sizeof name);
    snprintf(what, sizeof what, "%s variant %d name #%d (%zu chars)", ir_radix_name(radix),
             variant, i, strlen(name));
    fhjit_graph *g = epilogue_graph(&e, name, variant);
    host_matches_interp(&e, g, what);
    char *ptx = check_program(g, what);
    /* symbols come from the structure alone: the same module */
    ck_assert_msg(!strcmp(ptx, ref_ptx), "%s: the PTX depends on the graph's name", what);
    free(ptx);
    fhjit_graph_destroy(g);
  }
  free(ref_ptx);
  fhjit_graph_destroy(ref);
  env_free(&e);
}
END_TEST

/* A quoted name from the text format, any bytes but NUL. */
START_TEST(test_quoted_name) {
  env e;
  env_init(&e, FHJIT_R62, 2, 4);
  char text[2048], name[160];
  memset(name, 0, sizeof name);
  for (int k = 0; k < 120; k++) name[k] = "a.b-c d\\\"e\x01\xff"[k % 12] ;
  char quoted[512];
  size_t o = 0;
  for (size_t k = 0; name[k]; k++) {
    unsigned char c = (unsigned char)name[k];
    if (c == '"' || c == '\\') o += (size_t)snprintf(quoted + o, sizeof quoted - o, "\\%c", c);
    else if (c < 0x20 || c >= 0x7f) o += (size_t)snprintf(quoted + o, sizeof quoted - o, "\\x%02x", c);
    else quoted[o++] = (char)c;
  }
  quoted[o] = 0;
  snprintf(text, sizeof text,
           "graph @\"%s\" radix(r62) {\n"
           "  %%x  = input pt<[], 2, 16> coef std\n"
           "  %%y  = input pt<[], 2, 16>\n"
           "  %%tf = input twiddles<2, 16>\n"
           "  %%f  = ntt_fwd %%x, %%tf mode(std)\n"
           "  %%s  = add %%f, %%y\n"
           "  %%d  = sub %%f, %%f\n"
           "  output %%s\n  output %%d\n}\n",
           quoted);
  fhjit_graph *g = fhjit_parse(e.ctx, text, strlen(text), "quoted.fh");
  ck_assert_msg(g, "%s", fhjit_last_error(e.ctx));
  ck_assert_msg(fhjit_bind(g) == FHJIT_OK, "%s", fhjit_last_error(e.ctx));
  host_matches_interp(&e, g, "quoted name");
  free(check_program(g, "quoted name"));
  /* a pointwise graph under that name: one kernel, "fhjit_" + the name
   * made an identifier and cut to LW_NAME_MAX - 1 characters */
  fhjit_graph *pw = fhjit_graph_create(e.ctx, name, FHJIT_R62);
  fhjit_type t = tu_poly(0, 0, NULL, 2, 16);
  fhjit_value a = fhjit_input(pw, "a", &t), b = fhjit_input(pw, "b", &t);
  ck_assert_int_eq(fhjit_output(pw, fhjit_add(pw, a, b), NULL), FHJIT_OK);
  ck_assert_int_eq(fhjit_bind(pw), FHJIT_OK);
  host_matches_interp(&e, pw, "pointwise, quoted name");
  char *ptx = check_program(pw, "pointwise, quoted name");
  char want[LW_NAME_MAX];
  lw_graph_symbol(name, want);
  ck_assert_int_eq(strlen(want), LW_NAME_MAX - 1);
  ck_assert_str_eq(want, "fhjit_a_b_c_d__e__a_b_c_d__e__a_b_c_d__e__a_b_c_d__e__a_b_c_d__");
  ck_assert_ptr_nonnull(strstr(ptx, want));
  free(ptx);
  fhjit_graph_destroy(pw);
  fhjit_graph_destroy(g);
  env_free(&e);
}
END_TEST

/* --------------------------------------------------- random anchored graphs */

/* A random graph of NTTs and pointwise ops over three inputs, several
 * outputs, named `name`: many fused prologues and epilogues. */
static fhjit_graph *random_graph(env *e, uint64_t seed, const char *name) {
  fhjit_graph *g = fhjit_graph_create(e->ctx, name, e->radix);
  fhjit_type xt = tu_poly(0, 0, NULL, e->rows, e->n);
  fhjit_type tt = {.kind = FHJIT_KIND_TWIDDLE, .rows = e->rows, .n = e->n};
  fhjit_value pool[40];
  int np = 0;
  pool[np++] = fhjit_input(g, "x0", &xt);
  pool[np++] = fhjit_input(g, "x1", &xt);
  pool[np++] = fhjit_input(g, "x2", &xt);
  fhjit_value tw[2] = {fhjit_input(g, "tf", &tt), fhjit_input(g, "ti", &tt)};
  int first_op = np, steps = 6 + (int)tu_below(&seed, 10);
  for (int s = 0; s < steps && np < 40; s++) {
    fhjit_value a = pool[tu_below(&seed, (uint64_t)np)], b = pool[tu_below(&seed, (uint64_t)np)];
    fhjit_value v;
    switch (tu_below(&seed, 8)) {
    case 0: case 1: {
      int kind = (int)tu_below(&seed, 4);
      v = fhjit_ntt(g, a, tw[kind >= 2], (fhjit_ntt_kind)kind);
      break;
    }
    case 2: v = fhjit_add(g, a, b); break;
    case 3: v = fhjit_sub(g, a, b); break;
    case 4: v = fhjit_mul(g, a, b); break;
    case 5: v = fhjit_add_lazy(g, a, b); break;
    default: v = fhjit_neg(g, a); break;
    }
    if (v != FHJIT_NO_VALUE) pool[np++] = v; /* else a domain or form rule said no */
  }
  for (int i = first_op; i < np; i++)
    if (i == np - 1 || tu_below(&seed, 2)) ck_assert_int_eq(fhjit_output(g, pool[i], NULL), FHJIT_OK);
  if (np == first_op || fhjit_bind(g) != FHJIT_OK) {
    fhjit_graph_destroy(g);
    return NULL;
  }
  return g;
}

/* NTT last kernels with two epilogue outputs or more. */
static int multi_epilogue_kernels(fhjit_graph *g) {
  lw_program d;
  ck_assert_int_eq(lw_describe_program(g, "sm_90", &d), FHJIT_OK);
  int count = 0;
  for (int32_t k = 0; k < d.nkernels; k++) {
    if (strncmp(d.kernels[k].name, "fhjit_ntt", 9)) continue;
    int outs = 0;
    for (int32_t a = 5; a < d.kernels[k].nargs; a++)
      outs += d.kernels[k].args[a].kind == LW_ARG_RESULT;
    count += outs >= 2;
  }
  return count;
}

START_TEST(test_random_graphs) {
  int graphs = 0, multi = 0;
  for (uint64_t seed = 1; seed <= 40; seed++) {
    uint64_t s = seed * 7919;
    env e;
    env_init(&e, seed & 1 ? FHJIT_R62 : FHJIT_R32, 1 + (int)tu_below(&s, 2),
             tu_below(&s, 6) == 0 ? 13 : 4 + (int)tu_below(&s, 2));
    char name[256];
    size_t len = 1 + tu_below(&s, 200);
    for (size_t k = 0; k < len; k++) name[k] = (char)(k % 3 ? 'a' + tu_below(&s, 26) : 1 + tu_below(&s, 255));
    name[len] = 0;
    fhjit_graph *g = random_graph(&e, seed, name);
    if (g && lw_graph_has_anchor(g)) {
      char what[64];
      snprintf(what, sizeof what, "random graph %llu", (unsigned long long)seed);
      graphs++;
      multi += multi_epilogue_kernels(g) > 0;
      host_matches_interp(&e, g, what);
      char *ptx = check_program(g, what);
      if (seed % 4 == 0) { /* the same graph under another name: the same PTX */
        fhjit_graph *h = random_graph(&e, seed, "h");
        char *other = check_program(h, what);
        ck_assert_msg(!strcmp(ptx, other), "%s: the PTX depends on the graph's name", what);
        free(other);
        fhjit_graph_destroy(h);
      }
      free(ptx);
    }
    if (g) fhjit_graph_destroy(g);
    env_free(&e);
  }
  ck_assert_int_ge(graphs, 25);
  ck_assert_int_ge(multi, 8);
}
END_TEST

/* ------------------------------------------------------ the builders' check */

/* A second evaluator or kernel under a name the module holds is refused (an
 * internal error), never renamed by LLVM behind the lookup's back. */
START_TEST(test_duplicate_refused) {
  fhjit_context *ctx = fhjit_context_create();
  fhjit_graph *g = fhjit_graph_create(ctx, "dup", FHJIT_R62);
  fhjit_type t = tu_poly(0, 0, NULL, 2, 16);
  fhjit_value a = fhjit_input(g, "a", &t), b = fhjit_input(g, "b", &t);
  ck_assert_int_eq(fhjit_output(g, fhjit_add(g, a, b), NULL), FHJIT_OK);
  ck_assert_int_eq(fhjit_bind(g), FHJIT_OK);
  lw_plan pl;
  ck_assert_int_eq(lw_plan_graph(g, &pl), FHJIT_OK);
  ck_assert_str_eq(pl.name, "fhjit_dup");
  pl.vec = 1;
  pl.groups = pl.work;
  LLVMContextRef c = LLVMContextCreate();
  LLVMModuleRef m = LLVMModuleCreateWithNameInContext("dup", c);
  int64_t values = 0;
  ck_assert_int_eq(lw_symbol_taken(m, "fhjit_dup.eval0"), 0);
  ck_assert_int_eq(lw_build_eval(g, &pl, LW_GPU, c, m, &values), FHJIT_OK);
  ck_assert_int_eq(lw_symbol_taken(m, "fhjit_dup.eval0"), 1);
  ck_assert_int_eq(lw_build_eval(g, &pl, LW_GPU, c, m, &values), FHJIT_ERR_LLVM);
  ck_assert(tu_contains(fhjit_last_error(ctx), "fhjit_dup.eval0 defined twice"));
  ck_assert_ptr_null(LLVMGetNamedFunction(m, "fhjit_dup.eval0.1"));
  LLVMDisposeModule(m);
  /* an NTT's kernels under a prefix the module holds already */
  lw_ntt_plan np;
  ck_assert_int_eq(lw_ntt_plan_make(ctx, FHJIT_R62, IR_NTT_STD_TO_NTT, 4, 2, 2, &np), FHJIT_OK);
  m = LLVMModuleCreateWithNameInContext("dup", c);
  ck_assert_int_eq(lw_ntt_build(ctx, &np, NULL, LW_GPU, "fhjit_x", c, m), FHJIT_OK);
  ck_assert_int_eq(lw_ntt_build(ctx, &np, NULL, LW_GPU, "fhjit_x", c, m), FHJIT_ERR_LLVM);
  ck_assert(tu_contains(fhjit_last_error(ctx), "fhjit_x_k0 defined twice"));
  LLVMDisposeModule(m);
  LLVMContextDispose(c);
  fhjit_context_destroy(ctx);
}
END_TEST

int main(void) {
  Suite *s = suite_create("names");
  TCase *tc = tcase_create("names");
  tcase_set_timeout(tc, 900);
  tcase_add_test(tc, test_duplicate_refused);
  tcase_add_test(tc, test_quoted_name);
  tcase_add_loop_test(tc, test_epilogue_names, 0, 8);
  tcase_add_test(tc, test_random_graphs);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
