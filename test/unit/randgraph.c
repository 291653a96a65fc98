/* randgraph.c: the random graph generator, input/parameter set-up, the
 * independent reference evaluator and the result comparison of randgraph.h.
 *
 * Graphs are built through the public builder API only (so the generator
 * also exercises the builder's checks), but the reference evaluator and the
 * descriptions walk the internal node array (lib/ir/ir.h) to stay
 * independent of the text printer and of the interpreter. */
#include "randgraph.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/ir.h"
#include "testutil.h"

#define RG_MAX_POOL 512

static void rg_fail(char *err, size_t errsize, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void rg_fail(char *err, size_t errsize, const char *fmt, ...) {
  if (!err || !errsize) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err, errsize, fmt, ap);
  va_end(ap);
}

void rg_default_config(rg_config *cfg) {
  memset(cfg, 0, sizeof *cfg);
  cfg->min_ops = 1;
  cfg->max_ops = 40;
  cfg->radix = -1;
  cfg->max_rows = 4;
  cfg->max_batch_rank = 3;
  cfg->odd_n = 1;
  cfg->domain_facts = 25;
  cfg->strided_layouts = 70;
  cfg->op_mask = 0;
}

/* ---------------------------------------------------------------- moduli */

static int contains(const uint64_t *v, int32_t n, uint64_t x) {
  for (int32_t i = 0; i < n; i++)
    if (v[i] == x) return 1;
  return 0;
}

void rg_random_moduli(uint64_t *state, fhjit_radix radix, int32_t rows, uint64_t *out) {
  uint64_t limit = ir_modulus_limit(radix);
  int bits = radix == FHJIT_R32 ? 30 : 60;
  static const uint64_t spec32[] = {268369921u, 134176769u};
  static const uint64_t spec62[] = {UINT64_C(1152921504606748673), UINT64_C(576460752303423649)};
  static const uint64_t tiny[] = {3, 5, 7, 11, 13, 17, 97, 65537};
  for (int32_t r = 0; r < rows; r++) {
    uint64_t q = 0;
    while (q == 0 || contains(out, r, q)) {
      switch (tu_below(state, 6)) {
      case 0: { /* NTT-friendly primes near the limit (q = 1 mod 2^18) */
        uint64_t primes[8];
        fhjit_context *ctx = fhjit_context_create();
        if (ctx && fhjit_find_primes(ctx, bits, UINT64_C(1) << 18, 8, primes) == FHJIT_OK)
          q = primes[tu_below(state, 8)];
        else
          q = radix == FHJIT_R32 ? spec32[0] : spec62[0];
        fhjit_context_destroy(ctx);
        break;
      }
      case 1:
        q = radix == FHJIT_R32 ? spec32[tu_below(state, 2)] : spec62[tu_below(state, 2)];
        break;
      case 2: /* odd, within 2^12 of the limit: the largest representatives */
        q = (limit - 1 - 2 * tu_below(state, 2048)) | 1;
        break;
      case 3: /* odd, anywhere below the limit */
        q = tu_below(state, limit - 3) | 1;
        break;
      case 4: /* far below: 8 to 20 bits */
        q = (tu_below(state, UINT64_C(1) << (8 + tu_below(state, 13)))) | 1;
        break;
      default:
        q = tiny[tu_below(state, sizeof tiny / sizeof *tiny)];
        break;
      }
      if (q < 3 || q >= limit) q = 0;
    }
    out[r] = q;
  }
}

/* ------------------------------------------------------------- generator */

/* A basis (SPEC section 7): one distinct chain position per row. */
typedef struct bas {
  int n;
  int32_t pos[RG_MAX_ROWS];
} bas;

typedef struct pool_val {
  fhjit_value v;
  bas b;
  int comps;
  int nb;
  int64_t batch[FHJIT_MAX_BATCH];
  int64_t n; /* N for main values; u (compressed plaintexts) or 1 (implicit) otherwise */
  int is_input;
  int uses;
} pool_val;

typedef struct key_val {
  fhjit_value v;
  int64_t digits, rows;
} key_val;

typedef struct gen {
  fhjit_graph *g;
  uint64_t rng;
  const rg_config *cfg;
  int32_t rows;
  int64_t n;
  int nbg;
  int64_t gb[FHJIT_MAX_BATCH];
  pool_val vals[RG_MAX_POOL];
  int nvals;
  key_val keys[8];
  int nkeys;
  int ntt;                 /* NTT anchors allowed (n a power of two >= 16, NTT primes) */
  int32_t chain;           /* chain length M: rows, or Q_L (= rows) ++ P with mixing */
  int32_t nspecial, alpha; /* |P| and the digit size (mixing graphs), else 0 */
  /* forward and inverse tables by their row count, FHJIT_NO_VALUE until needed */
  fhjit_value twiddle[2][RG_MAX_ROWS + 1];
  char prefix[160];        /* value-name prefix (random_names), "" otherwise */
  int ops, target_ops;
  int ninputs;
  int failed;
  char *err;
  size_t errsize;
} gen;

static uint64_t rnd(gen *G, uint64_t bound) { return tu_below(&G->rng, bound); }
static int chance(gen *G, int percent) { return (int)rnd(G, 100) < percent; }

static void gen_fail(gen *G, const char *what) {
  if (G->failed) return;
  G->failed = 1;
  rg_fail(G->err, G->errsize, "randgraph: %s failed unexpectedly: %s", what,
          fhjit_last_error(fhjit_graph_context(G->g)));
}

/* Fills `l` with a random layout for concrete type t: a random nesting
 * order of the axes, gaps between blocks, interleaving, broadcast (stride 0)
 * axes, junk strides on extent-1 axes (bind canonicalises them), an offset. */
static void random_layout(gen *G, const fhjit_type *t, fhjit_layout *l) {
  memset(l, 0, sizeof *l);
  int64_t ext[8];
  int64_t *stride[8];
  int bcast_pct[8];
  int k = 0;
  if (t->kind == FHJIT_KIND_KEY) ext[k] = t->digits, stride[k] = &l->digit_stride, bcast_pct[k++] = 10;
  if (t->comps > 0) ext[k] = t->comps, stride[k] = &l->comp_stride, bcast_pct[k++] = 15;
  for (int a = 0; a < t->nbatch; a++)
    ext[k] = t->batch[a], stride[k] = &l->batch_stride[a], bcast_pct[k++] = 12;
  ext[k] = t->rows, stride[k] = &l->row_stride, bcast_pct[k++] = 5;
  ext[k] = t->n, stride[k] = &l->index_stride, bcast_pct[k++] = 4;
  int order[8];
  for (int i = 0; i < k; i++) order[i] = i;
  if (chance(G, 40))
    for (int i = k - 1; i > 0; i--) {
      int j = (int)rnd(G, (uint64_t)i + 1), tmp = order[i];
      order[i] = order[j];
      order[j] = tmp;
    }
  int64_t cur = chance(G, 25) ? 2 + (int64_t)rnd(G, 2) : 1;
  for (int pos = k - 1; pos >= 0; pos--) {
    int a = order[pos];
    if (ext[a] == 1) {
      *stride[a] = chance(G, 50) ? (int64_t)rnd(G, 100) : 0;
      continue;
    }
    if (chance(G, bcast_pct[a])) {
      *stride[a] = 0;
      continue;
    }
    *stride[a] = cur;
    cur = cur * ext[a] + (chance(G, 30) ? 1 + (int64_t)rnd(G, 5) : 0);
  }
  l->offset = chance(G, 50) ? (int64_t)rnd(G, 24) : 0;
}

/* Declares an input of type t (sometimes with open extents that binding
 * closes) and binds it, with a random layout per the configuration. In
 * mixing graphs a polynomial input states its basis b (so its rows are
 * known to the keyswitch composite, which needs them when it is built). */
static fhjit_value make_input(gen *G, const char *name, fhjit_type t, const bas *b) {
  fhjit_type decl = t;
  int open = chance(G, 20);
  if (open) {
    if (chance(G, 50)) decl.rows = FHJIT_UNKNOWN;
    if (chance(G, 50)) decl.n = FHJIT_UNKNOWN;
    for (int a = 0; a < decl.nbatch; a++)
      if (chance(G, 50)) decl.batch[a] = FHJIT_UNKNOWN;
    if (t.kind == FHJIT_KIND_KEY && chance(G, 50)) decl.digits = FHJIT_UNKNOWN;
  }
  fhjit_value v = fhjit_input(G->g, name, &decl);
  if (v == FHJIT_NO_VALUE) {
    gen_fail(G, "fhjit_input");
    return v;
  }
  if (b && G->nspecial > 0 && fhjit_input_basis(G->g, v, b->pos, b->n) != FHJIT_OK) {
    gen_fail(G, "fhjit_input_basis");
    return FHJIT_NO_VALUE;
  }
  int strided = chance(G, G->cfg->strided_layouts);
  if (open || strided) {
    fhjit_layout l;
    if (strided) random_layout(G, &t, &l);
    if (fhjit_bind_input(G->g, v, open ? &t : NULL, strided ? &l : NULL) != FHJIT_OK) {
      gen_fail(G, "fhjit_bind_input");
      return FHJIT_NO_VALUE;
    }
  }
  G->ninputs++;
  return v;
}

static void random_batch(gen *G, int *nb, int64_t *batch) {
  *nb = G->nbg == 0 ? 0 : chance(G, 60) ? G->nbg : (int)rnd(G, (uint64_t)G->nbg + 1);
  for (int a = 0; a < *nb; a++) {
    int64_t e = G->gb[G->nbg - *nb + a];
    batch[a] = (e > 1 && chance(G, 25)) ? 1 : e;
  }
}

static bas home_basis(const gen *G) {
  bas b = {.n = G->rows};
  for (int r = 0; r < G->rows; r++) b.pos[r] = r;
  return b;
}

/* A new polynomial input in the pool with the given domain and form facts
 * (0: not stated), or with facts, random ones as the configuration says
 * (drawn after the batch shape: seeds keep their graphs). shape_of >= 0
 * copies that value's batch shape; b: its basis (NULL: [0, rows)). */
static int poly_input(gen *G, int comps, int64_t n, int shape_of, int facts, fhjit_domain domain,
                      fhjit_form form, const bas *b) {
  if (G->nvals >= RG_MAX_POOL) {
    G->failed = 1;
    rg_fail(G->err, G->errsize, "randgraph: value pool overflow");
    return -1;
  }
  pool_val *p = &G->vals[G->nvals];
  memset(p, 0, sizeof *p);
  if (shape_of >= 0) {
    p->nb = G->vals[shape_of].nb;
    memcpy(p->batch, G->vals[shape_of].batch, sizeof p->batch);
  } else {
    random_batch(G, &p->nb, p->batch);
  }
  p->comps = comps;
  p->n = n;
  p->is_input = 1;
  p->b = b ? *b : home_basis(G);
  fhjit_type t = {.kind = FHJIT_KIND_POLY, .comps = comps, .nbatch = p->nb, .rows = p->b.n,
                  .n = n, .domain = domain, .form = form};
  memcpy(t.batch, p->batch, sizeof t.batch);
  if (facts && chance(G, G->cfg->domain_facts)) {
    t.domain = (fhjit_domain)rnd(G, 3);
    t.form = (fhjit_form)rnd(G, 3);
  }
  char name[200];
  snprintf(name, sizeof name, "%sx%d", G->prefix, G->ninputs);
  p->v = make_input(G, name, t, &p->b);
  if (p->v == FHJIT_NO_VALUE) return -1;
  return G->nvals++;
}

/* A new polynomial input in the pool. shape_of >= 0 copies that value's
 * batch shape; facts: may state a domain and form; b: basis (NULL: home). */
static int new_poly_input(gen *G, int comps, int64_t n, int shape_of, int facts, const bas *b) {
  return poly_input(G, comps, n, shape_of, facts, FHJIT_DOMAIN_ANY, FHJIT_FORM_ANY, b);
}

/* A key input of `digits` digits and `rows` rows appended to the key list
 * (which has room): its index, or -1. */
static int add_key(gen *G, int64_t digits, int64_t rows) {
  key_val *k = &G->keys[G->nkeys];
  k->digits = digits;
  k->rows = rows;
  fhjit_type t = {.kind = FHJIT_KIND_KEY, .comps = 2, .digits = digits, .rows = rows, .n = G->n};
  char name[200];
  snprintf(name, sizeof name, "%skey%d", G->prefix, G->nkeys);
  k->v = make_input(G, name, t, NULL);
  if (k->v == FHJIT_NO_VALUE) return -1;
  return G->nkeys++;
}

static int new_key(gen *G, int64_t min_rows) {
  if (G->nkeys == (int)(sizeof G->keys / sizeof *G->keys)) {
    for (int i = 0; i < G->nkeys; i++)
      if (G->keys[i].rows >= min_rows) return i;
  }
  if (G->nkeys == (int)(sizeof G->keys / sizeof *G->keys)) return -1;
  int64_t digits = 1 + (int64_t)rnd(G, 3);
  return add_key(G, digits, min_rows + (int64_t)rnd(G, 3));
}

static fhjit_type type_of(gen *G, int idx) {
  fhjit_type t;
  memset(&t, 0, sizeof t);
  if (fhjit_value_type(G->g, G->vals[idx].v, &t) != FHJIT_OK) gen_fail(G, "fhjit_value_type");
  return t;
}

static int domains_compatible(fhjit_domain a, fhjit_domain b) { return !a || !b || a == b; }
static int forms_compatible(fhjit_form a, fhjit_form b) { return !a || !b || a == b; }

/* What an operand must satisfy. */
typedef struct req {
  int64_t n;
  int comps_lo, comps_hi;
  int with;          /* pool index whose component count it must broadcast with, or -1 */
  int with_form;     /* forms must be compatible with `with` */
  int with_domain;   /* pool index whose domain it must be compatible with, or -1 */
  fhjit_domain avoid; /* a stated domain it must not have (0: none) */
  int same_shape;    /* pool index whose batch shape it must equal, or -1 */
  int basis_of;      /* pool index whose basis it must be on, or -1 (any) */
} req;

static req any_main(gen *G) {
  return (req){.n = G->n, .comps_lo = 0, .comps_hi = 3, .with = -1, .with_domain = -1,
               .same_shape = -1, .basis_of = -1};
}

static int same_basis(const bas *a, const bas *b) {
  return a->n == b->n && memcmp(a->pos, b->pos, sizeof *a->pos * (size_t)a->n) == 0;
}

static int satisfies(gen *G, int idx, const req *r) {
  const pool_val *p = &G->vals[idx];
  if (p->n != r->n || p->comps < r->comps_lo || p->comps > r->comps_hi) return 0;
  fhjit_type t = type_of(G, idx);
  if (r->avoid && t.domain == r->avoid) return 0;
  if (r->with >= 0) {
    const pool_val *w = &G->vals[r->with];
    if (!(p->comps <= 1 || w->comps <= 1 || p->comps == w->comps)) return 0;
    if (r->with_form && !forms_compatible(t.form, type_of(G, r->with).form)) return 0;
  }
  if (r->with_domain >= 0 && !domains_compatible(t.domain, type_of(G, r->with_domain).domain))
    return 0;
  if (r->same_shape >= 0) {
    const pool_val *s = &G->vals[r->same_shape];
    if (p->nb != s->nb || memcmp(p->batch, s->batch, sizeof p->batch) != 0) return 0;
  }
  if (r->basis_of >= 0 && !same_basis(&p->b, &G->vals[r->basis_of].b)) return 0;
  return 1;
}

/* Picks an operand: usually a recent value (deep DAGs), sometimes any; a
 * fresh input when nothing fits or by chance. */
static int pick(gen *G, const req *r) {
  int cand[RG_MAX_POOL], nc = 0;
  for (int i = 0; i < G->nvals; i++)
    if (satisfies(G, i, r)) cand[nc++] = i;
  if (G->failed) return -1;
  if (nc == 0 || chance(G, 12)) {
    int comps = r->comps_lo + (int)rnd(G, (uint64_t)(r->comps_hi - r->comps_lo + 1));
    if (r->with >= 0 && comps > 1 && G->vals[r->with].comps > 1) comps = G->vals[r->with].comps;
    return new_poly_input(G, comps, r->n, r->same_shape, 0,
                          r->basis_of >= 0 ? &G->vals[r->basis_of].b : NULL);
  }
  if (nc > 4 && chance(G, 55)) return cand[nc - 1 - (int)rnd(G, 4)];
  return cand[rnd(G, (uint64_t)nc)];
}

static void merge_shape(const pool_val *a, const pool_val *b, pool_val *out) {
  int nb = a->nb > b->nb ? a->nb : b->nb;
  int64_t merged[FHJIT_MAX_BATCH] = {0};
  for (int i = 0; i < nb; i++) {
    int ia = i - (nb - a->nb), ib = i - (nb - b->nb);
    int64_t ea = ia >= 0 ? a->batch[ia] : 1, eb = ib >= 0 ? b->batch[ib] : 1;
    merged[i] = ea > eb ? ea : eb;
  }
  out->nb = nb;
  memcpy(out->batch, merged, sizeof merged);
}

/* Records a new computed value; shape from `shape_a` merged with `shape_b`. */
static int push_value(gen *G, fhjit_value v, const char *what, int comps, int64_t n,
                      int shape_a, int shape_b) {
  if (v == FHJIT_NO_VALUE) {
    gen_fail(G, what);
    return -1;
  }
  if (G->nvals >= RG_MAX_POOL) {
    G->failed = 1;
    rg_fail(G->err, G->errsize, "randgraph: value pool overflow");
    return -1;
  }
  pool_val *p = &G->vals[G->nvals];
  memset(p, 0, sizeof *p);
  p->v = v;
  p->comps = comps;
  p->n = n;
  p->b = G->vals[shape_a].b; /* the ops that move to another basis set theirs after */
  if (shape_b >= 0) merge_shape(&G->vals[shape_a], &G->vals[shape_b], p);
  else {
    p->nb = G->vals[shape_a].nb;
    memcpy(p->batch, G->vals[shape_a].batch, sizeof p->batch);
  }
  G->ops++;
  return G->nvals++;
}

static void use(gen *G, int idx) {
  if (idx >= 0) G->vals[idx].uses++;
}

static int max_i(int a, int b) { return a > b ? a : b; }

/* A compressed plaintext of last extent u, or an implicit operand (u = 1):
 * usually an input, sometimes computed from inputs of that extent. */
static int plain_world_value(gen *G, int64_t u, int ct) {
  req r = {.n = u, .comps_lo = 0, .comps_hi = chance(G, 80) ? 0 : 2, .with = -1,
           .with_domain = ct, .same_shape = -1, .basis_of = ct};
  if (G->ops + 2 < G->target_ops && chance(G, 20)) {
    int a = pick(G, &r);
    if (a < 0) return -1;
    req rb = r;
    rb.with = a;
    rb.with_form = 1;
    rb.with_domain = a;
    int b = pick(G, &rb);
    if (b < 0) return -1;
    if (!domains_compatible(type_of(G, b).domain, type_of(G, ct).domain)) return a;
    fhjit_value v;
    const char *what;
    switch (rnd(G, 3)) {
    case 0: v = fhjit_add(G->g, G->vals[a].v, G->vals[b].v), what = "add"; break;
    case 1: v = fhjit_mul(G->g, G->vals[a].v, G->vals[b].v), what = "mul"; break;
    default: v = fhjit_neg(G->g, G->vals[a].v), what = "neg", b = -1; break;
    }
    use(G, a);
    use(G, b);
    return push_value(G, v, what, b >= 0 ? max_i(G->vals[a].comps, G->vals[b].comps) : G->vals[a].comps,
                      u, a, b);
  }
  return pick(G, &r);
}

static const ir_op all_ops[] = {IR_ADD, IR_SUB, IR_NEG, IR_ADD_LAZY, IR_MUL, IR_TO_MONT,
                                IR_FROM_MONT, IR_MUL_PLAIN, IR_ADD_PLAIN, IR_MUL_COMPRESSED,
                                IR_ADD_COMPRESSED, IR_KS_DIGIT_PRODUCT, IR_EXTRACT, IR_PACK};

/* ------------------------------------------------- section 7's re-indexing */

/* A Galois element for N: 1, 2N - 1 (conjugation), 5^r mod 2N (a rotation)
 * or any odd k < 2N. */
static int64_t random_galois(gen *G, int64_t n) {
  switch (rnd(G, 4)) {
  case 0: return 1;
  case 1: return 2 * n - 1;
  case 2: {
    int64_t k = 1;
    for (uint64_t r = 1 + rnd(G, 8); r > 0; r--) k = k * 5 % (2 * n);
    return k;
  }
  default: return 2 * (int64_t)rnd(G, (uint64_t)n) + 1;
  }
}

/* An operand an automorphism may read: a stated domain (the builder's
 * rule), n a power of two. Usually an input (read as a remapped load),
 * sometimes an extract of one, sometimes any value with a stated domain
 * (a computed one: the step planner materialises it, the pointwise
 * lowering refuses it). */
static int automorphism_operand(gen *G) {
  int roll = (int)rnd(G, 100);
  if (roll < 20) {
    int cand[RG_MAX_POOL], nc = 0;
    for (int i = 0; i < G->nvals; i++)
      if (G->vals[i].n == G->n && type_of(G, i).domain != FHJIT_DOMAIN_ANY) cand[nc++] = i;
    if (nc > 0) return cand[rnd(G, (uint64_t)nc)];
  }
  fhjit_domain d = chance(G, 50) ? FHJIT_DOMAIN_COEF : FHJIT_DOMAIN_NTT;
  fhjit_form f = (fhjit_form)rnd(G, 3);
  if (roll < 40) {
    int a = poly_input(G, 2 + (int)rnd(G, 2), G->n, -1, 0, d, f, NULL);
    if (a < 0) return -1;
    fhjit_value v = fhjit_extract(G->g, G->vals[a].v, (int32_t)rnd(G, (uint64_t)G->vals[a].comps));
    use(G, a);
    return push_value(G, v, "extract", 0, G->n, a, -1);
  }
  return poly_input(G, (int)rnd(G, 3), G->n, -1, 0, d, f, NULL);
}

/* rows of two inputs joined back to the graph's basis by concat: rows
 * [0, s) of one and [s, rows) of another (of one shape, domain and form),
 * or one input's rows in full; sometimes with an automorphism on top (a
 * remapped load through the address chain). */
static int rows_concat(gen *G) {
  int comps = (int)rnd(G, 3);
  fhjit_domain d = (fhjit_domain)rnd(G, 3);
  fhjit_form f = (fhjit_form)rnd(G, 3);
  int a = poly_input(G, comps, G->n, -1, 0, d, f, NULL);
  if (a < 0) return -1;
  if (G->rows < 2 || chance(G, 15)) {
    fhjit_value v = fhjit_rows(G->g, G->vals[a].v, 0, G->rows);
    use(G, a);
    return push_value(G, v, "rows", comps, G->n, a, -1);
  }
  int b = poly_input(G, comps, G->n, a, 0, d, f, NULL);
  if (b < 0) return -1;
  int64_t split = 1 + (int64_t)rnd(G, (uint64_t)G->rows - 1);
  fhjit_value lo = fhjit_rows(G->g, G->vals[a].v, 0, split);
  fhjit_value hi = fhjit_rows(G->g, G->vals[b].v, split, G->rows - split);
  if (lo == FHJIT_NO_VALUE || hi == FHJIT_NO_VALUE) {
    gen_fail(G, "rows");
    return -1;
  }
  fhjit_value v = fhjit_concat(G->g, lo, hi);
  use(G, a);
  use(G, b);
  return push_value(G, v, "concat", comps, G->n, a, -1);
}

/* One of SPEC section 7's re-indexing ops (rows, concat, automorphism),
 * n a power of two for the automorphism. */
static void random_reindex(gen *G) {
  int pow2 = (G->n & (G->n - 1)) == 0;
  if (!pow2 || chance(G, 40)) {
    int c = rows_concat(G);
    if (c < 0 || !pow2 || !chance(G, 30) || type_of(G, c).domain == FHJIT_DOMAIN_ANY) return;
    fhjit_value v = fhjit_automorphism(G->g, G->vals[c].v, random_galois(G, G->n));
    use(G, c);
    push_value(G, v, "automorphism", G->vals[c].comps, G->n, c, -1);
    return;
  }
  int x = automorphism_operand(G);
  if (x < 0) return;
  fhjit_value v = fhjit_automorphism(G->g, G->vals[x].v, random_galois(G, G->n));
  use(G, x);
  push_value(G, v, "automorphism", G->vals[x].comps, G->n, x, -1);
}


/* ------------------------------------------------- section 7's limb mixing */

/* Mixing graphs: the chain is Q_L = [0, rows) (the home basis of the other
 * ops' inputs) ++ P = [rows, chain); digits of G->alpha positions group
 * Q_L. Operands come from the pool when one fits (a computed value: an NTT,
 * another mixing op, pointwise work) or are made on a random basis. */

static fhjit_value twiddle_input(gen *G, int inverse, int32_t rows);

static int is_default_basis(const bas *b) {
  for (int r = 0; r < b->n; r++)
    if (b->pos[r] != r) return 0;
  return 1;
}

/* The twiddle rows an NTT of a value on b needs: on the default basis the
 * table's rows equal the value's (the binding rule), otherwise a row per
 * chain position. */
static int32_t twiddle_rows(const gen *G, const bas *b) {
  return is_default_basis(b) ? b->n : G->chain;
}

static void shuffle(gen *G, int32_t *v, int n) {
  for (int i = n - 1; i > 0; i--) {
    int j = (int)rnd(G, (uint64_t)i + 1);
    int32_t t = v[i];
    v[i] = v[j];
    v[j] = t;
  }
}

/* `count` of the positions from[0..nfrom), in random order. */
static bas random_basis(gen *G, const int32_t *from, int nfrom, int count) {
  int32_t v[RG_MAX_ROWS];
  memcpy(v, from, sizeof *v * (size_t)nfrom);
  shuffle(G, v, nfrom);
  bas b = {.n = count};
  memcpy(b.pos, v, sizeof *v * (size_t)count);
  return b;
}

static bas range_basis(int32_t first, int count) {
  bas b = {.n = count};
  for (int r = 0; r < count; r++) b.pos[r] = first + r;
  return b;
}

static void append_basis(bas *b, const bas *more) {
  memcpy(b->pos + b->n, more->pos, sizeof *b->pos * (size_t)more->n);
  b->n += more->n;
}

/* Chain positions not in b, ascending. */
static int complement(const gen *G, const bas *b, int32_t *out) {
  int k = 0;
  for (int32_t p = 0; p < G->chain; p++) {
    int in = 0;
    for (int r = 0; r < b->n; r++) in |= b->pos[r] == p;
    if (!in) out[k++] = p;
  }
  return k;
}

static int in_q(const gen *G, const bas *b) {
  for (int r = 0; r < b->n; r++)
    if (b->pos[r] >= G->rows) return 0;
  return 1;
}

static int num_digits(const gen *G) { return (G->rows + G->alpha - 1) / G->alpha; }

/* Rows of b in digit j (their count); *consecutive: they are adjacent rows,
 * which the lowering needs of a modup's digit. */
static int digit_rows(const gen *G, const bas *b, int j, int *consecutive) {
  int first = -1, last = -1, count = 0;
  for (int r = 0; r < b->n; r++)
    if (b->pos[r] < G->rows && b->pos[r] / G->alpha == j) {
      if (first < 0) first = r;
      last = r;
      count++;
    }
  *consecutive = count > 0 && last - first + 1 == count;
  return count;
}

/* A basis of Q_L on which every digit's rows are adjacent: a level [0, l),
 * or its digits' blocks in random order, each block shuffled. */
static bas digit_basis(gen *G) {
  int l = 1 + (int)rnd(G, (uint64_t)G->rows);
  if (chance(G, 50)) return range_basis(0, l);
  int32_t order[RG_MAX_ROWS];
  int nd = (l + G->alpha - 1) / G->alpha;
  for (int j = 0; j < nd; j++) order[j] = j;
  shuffle(G, order, nd);
  bas b = {.n = 0};
  for (int j = 0; j < nd; j++) {
    int first = order[j] * G->alpha, count = l - first < G->alpha ? l - first : G->alpha;
    bas blk = range_basis(first, count);
    blk = random_basis(G, blk.pos, count, count);
    append_basis(&b, &blk);
  }
  return b;
}

typedef int (*basis_rule)(const gen *G, const bas *b);

static int fits_bconv(const gen *G, const bas *b) { return b->n < G->chain; }
static int fits_rescale(const gen *G, const bas *b) { (void)G; return b->n >= 2; }

static int fits_modup(const gen *G, const bas *b) {
  int ok = 0, consecutive;
  for (int j = 0; in_q(G, b) && j < num_digits(G); j++)
    ok |= digit_rows(G, b, j, &consecutive) > 0 && consecutive;
  return ok;
}

/* The keyswitch composite raises every digit that has rows. */
static int fits_keyswitch(const gen *G, const bas *b) {
  int consecutive;
  if (!in_q(G, b)) return 0;
  for (int j = 0; j < num_digits(G); j++)
    if (digit_rows(G, b, j, &consecutive) > 0 && !consecutive) return 0;
  return 1;
}

/* Q ++ P with P last, in order, and Q not empty. */
static int fits_moddown(const gen *G, const bas *b) {
  int l = b->n - G->nspecial;
  if (l < 1) return 0;
  for (int k = 0; k < G->nspecial; k++)
    if (b->pos[l + k] != G->rows + k) return 0;
  for (int r = 0; r < l; r++)
    if (b->pos[r] >= G->rows) return 0;
  return 1;
}

/* An operand of a mixing op in domain d and form f (FHJIT_FORM_ANY: either,
 * but stated) with at most max_comps components: half the time a value of
 * the pool whose basis `fits`, else one made on basis b: an input, or (a
 * computed operand) the sum or difference of two inputs. */
static int mix_operand(gen *G, fhjit_domain d, fhjit_form f, basis_rule fits, const bas *b,
                       int max_comps) {
  if (chance(G, 50)) {
    int cand[RG_MAX_POOL], nc = 0;
    for (int i = 0; i < G->nvals; i++) {
      const pool_val *p = &G->vals[i];
      if (p->n != G->n || p->comps > max_comps || !fits(G, &p->b)) continue;
      fhjit_type t = type_of(G, i);
      if (t.domain == d && t.form && (!f || t.form == f)) cand[nc++] = i;
    }
    if (nc > 0) return cand[rnd(G, (uint64_t)nc)];
  }
  fhjit_form form = f ? f : chance(G, 50) ? FHJIT_FORM_STD : FHJIT_FORM_MONT;
  int comps = (int)rnd(G, (uint64_t)max_comps + 1);
  int a = poly_input(G, comps, G->n, -1, 0, d, form, b);
  if (a < 0 || !chance(G, 30)) return a;
  int c = poly_input(G, comps, G->n, a, 0, d, form, b);
  if (c < 0) return -1;
  int sub = chance(G, 50);
  fhjit_value va = G->vals[a].v, vc = G->vals[c].v;
  fhjit_value v = sub ? fhjit_sub(G->g, va, vc) : fhjit_add(G->g, va, vc);
  use(G, a);
  use(G, c);
  return push_value(G, v, sub ? "sub" : "add", comps, G->n, a, c);
}

/* A constant-table input of len words (filled by rg_case_init), sometimes
 * bound at an offset. Not with an index stride other than 1: the lowering
 * refuses such a table (rescale miscompiled it until randgraph found it:
 * test/lit/codegen/rescale_strided_table.fh). */
static fhjit_value table_input(gen *G, int64_t len) {
  fhjit_type t = {.kind = FHJIT_KIND_TABLE, .rows = 1, .n = len};
  char name[200];
  snprintf(name, sizeof name, "%stab%d", G->prefix, G->ninputs);
  fhjit_value v = fhjit_input(G->g, name, &t);
  if (v == FHJIT_NO_VALUE) {
    gen_fail(G, "fhjit_input (table)");
    return v;
  }
  if (chance(G, G->cfg->strided_layouts / 2)) {
    fhjit_layout l = {.offset = 1 + (int64_t)rnd(G, 8), .index_stride = 1};
    if (fhjit_bind_input(G->g, v, NULL, &l) != FHJIT_OK) {
      gen_fail(G, "fhjit_bind_input (table)");
      return FHJIT_NO_VALUE;
    }
  }
  G->ninputs++;
  return v;
}

/* Sometimes a reader right after a mixing op's result y (whose domain and
 * form are stated): an automorphism, an NTT (to the other domain, in a
 * kind its form allows), or a product with another value on its basis. */
static void mix_reader(gen *G, int y) {
  fhjit_type t = type_of(G, y);
  fhjit_value v = G->vals[y].v, r;
  const char *what;
  int roll = (int)rnd(G, 100), b = -1;
  if (roll < 35) {
    r = fhjit_automorphism(G->g, v, random_galois(G, G->n)), what = "automorphism";
  } else if (roll < 70 && G->ntt) {
    fhjit_ntt_kind kind = t.domain == FHJIT_DOMAIN_NTT
                              ? (chance(G, 50) ? FHJIT_NTT_TO_COEF_MONT : FHJIT_NTT_TO_COEF_STD)
                          : t.form == FHJIT_FORM_STD ? FHJIT_NTT_COEF_STD_TO_NTT
                                                     : FHJIT_NTT_COEF_MONT_TO_NTT;
    fhjit_value tw =
        twiddle_input(G, kind >= FHJIT_NTT_TO_COEF_MONT, twiddle_rows(G, &G->vals[y].b));
    if (tw == FHJIT_NO_VALUE) return;
    r = fhjit_ntt(G->g, v, tw, kind), what = "ntt";
  } else {
    req rb = any_main(G);
    rb.with = y;
    rb.with_domain = y;
    rb.basis_of = y;
    if ((b = pick(G, &rb)) < 0) return;
    r = fhjit_mul(G->g, v, G->vals[b].v), what = "mul";
  }
  use(G, y);
  use(G, b);
  push_value(G, r, what, b >= 0 ? max_i(G->vals[y].comps, G->vals[b].comps) : G->vals[y].comps,
             G->n, y, b);
}

/* Records a mixing op's result, on basis b; sometimes a reader of it. */
static void push_mixed(gen *G, fhjit_value v, const char *what, int x, const bas *b, int comps) {
  use(G, x);
  int idx = push_value(G, v, what, comps, G->n, x, -1);
  if (idx < 0) return;
  G->vals[idx].b = *b;
  if (chance(G, 40)) mix_reader(G, idx);
}

static void mix_bconv(gen *G) {
  int32_t all[RG_MAX_ROWS];
  for (int32_t p = 0; p < G->chain; p++) all[p] = p;
  int most = G->chain - 1 < 4 ? G->chain - 1 : 4;
  bas s = chance(G, 30) ? home_basis(G)
                        : random_basis(G, all, G->chain, 1 + (int)rnd(G, (uint64_t)most));
  int x = mix_operand(G, FHJIT_DOMAIN_COEF, FHJIT_FORM_ANY, fits_bconv, &s, 2);
  if (x < 0) return;
  int32_t rest[RG_MAX_ROWS];
  int nr = complement(G, &G->vals[x].b, rest);
  bas t = random_basis(G, rest, nr, 1 + (int)rnd(G, (uint64_t)nr));
  int64_t l = G->vals[x].b.n;
  fhjit_value tab = table_input(G, l + l * t.n);
  if (tab == FHJIT_NO_VALUE) return;
  fhjit_value v = fhjit_bconv(G->g, G->vals[x].v, tab, t.pos, t.n);
  push_mixed(G, v, "bconv", x, &t, G->vals[x].comps);
}

/* The twiddle tables by chain position and a constant table of len words:
 * 0, or -1 (failed). */
static int mix_tables(gen *G, fhjit_value *fwd, fhjit_value *inv, fhjit_value *tab, int64_t len) {
  *fwd = twiddle_input(G, 0, G->chain);
  *inv = twiddle_input(G, 1, G->chain);
  *tab = table_input(G, len);
  return *fwd == FHJIT_NO_VALUE || *inv == FHJIT_NO_VALUE || *tab == FHJIT_NO_VALUE ? -1 : 0;
}

static void mix_rescale(gen *G) {
  int32_t all[RG_MAX_ROWS];
  for (int32_t p = 0; p < G->chain; p++) all[p] = p;
  bas b = G->rows >= 2 && chance(G, 40)
              ? home_basis(G)
              : random_basis(G, all, G->chain, 2 + (int)rnd(G, (uint64_t)G->chain - 1));
  int x = mix_operand(G, FHJIT_DOMAIN_NTT, FHJIT_FORM_MONT, fits_rescale, &b, 2);
  if (x < 0) return;
  bas out = G->vals[x].b;
  out.n--;
  fhjit_value fwd, inv, tab;
  if (mix_tables(G, &fwd, &inv, &tab, out.n)) return;
  fhjit_value v = fhjit_rescale(G->g, G->vals[x].v, fwd, inv, tab);
  push_mixed(G, v, "rescale", x, &out, G->vals[x].comps);
}

static void mix_modup(gen *G) {
  int32_t q[RG_MAX_ROWS];
  for (int32_t p = 0; p < G->rows; p++) q[p] = p;
  bas b = random_basis(G, q, G->rows, 1 + (int)rnd(G, (uint64_t)G->rows));
  if (chance(G, 70) || !fits_modup(G, &b)) b = digit_basis(G);
  int x = mix_operand(G, FHJIT_DOMAIN_NTT, FHJIT_FORM_MONT, fits_modup, &b, 2);
  if (x < 0) return;
  const bas *xb = &G->vals[x].b;
  int digits[RG_MAX_ROWS], count[RG_MAX_ROWS], nd = 0, consecutive;
  for (int j = 0; j < num_digits(G); j++) {
    int c = digit_rows(G, xb, j, &consecutive);
    if (consecutive) digits[nd] = j, count[nd++] = c;
  }
  if (nd == 0) return; /* fits_modup promised one */
  int pick_d = (int)rnd(G, (uint64_t)nd);
  int64_t nrows = count[pick_d], out_rows = xb->n + G->nspecial;
  bas out = *xb, p = range_basis(G->rows, G->nspecial);
  append_basis(&out, &p);
  fhjit_value fwd, inv, tab;
  if (mix_tables(G, &fwd, &inv, &tab, nrows + nrows * (out_rows - nrows))) return;
  fhjit_value v = fhjit_modup(G->g, G->vals[x].v, digits[pick_d], fwd, inv, tab);
  push_mixed(G, v, "modup", x, &out, G->vals[x].comps);
}

/* concat(a value on q, an input on P): an operand for moddown. */
static int concat_operand(gen *G, const bas *q) {
  int lo = mix_operand(G, FHJIT_DOMAIN_NTT, FHJIT_FORM_MONT, in_q, q, 2);
  if (lo < 0) return -1;
  bas p = range_basis(G->rows, G->nspecial);
  int hi = poly_input(G, G->vals[lo].comps, G->n, lo, 0, FHJIT_DOMAIN_NTT, FHJIT_FORM_MONT, &p);
  if (hi < 0) return -1;
  fhjit_value v = fhjit_concat(G->g, G->vals[lo].v, G->vals[hi].v);
  use(G, lo);
  use(G, hi);
  bas full = G->vals[lo].b;
  append_basis(&full, &p);
  int idx = push_value(G, v, "concat", G->vals[lo].comps, G->n, lo, -1);
  if (idx >= 0) G->vals[idx].b = full;
  return idx;
}

static void mix_moddown(gen *G) {
  int32_t qp[RG_MAX_ROWS];
  for (int32_t p = 0; p < G->rows; p++) qp[p] = p;
  bas q = chance(G, 50) ? digit_basis(G)
                        : random_basis(G, qp, G->rows, 1 + (int)rnd(G, (uint64_t)G->rows));
  bas full = q, p = range_basis(G->rows, G->nspecial);
  append_basis(&full, &p);
  int x = chance(G, 25) ? concat_operand(G, &q)
                        : mix_operand(G, FHJIT_DOMAIN_NTT, FHJIT_FORM_MONT, fits_moddown, &full, 2);
  if (x < 0) return;
  bas out = G->vals[x].b;
  out.n -= G->nspecial;
  int64_t K = G->nspecial, l = out.n;
  fhjit_value fwd, inv, tab;
  if (mix_tables(G, &fwd, &inv, &tab, K + K * l + l)) return;
  fhjit_value v = fhjit_moddown(G->g, G->vals[x].v, fwd, inv, tab);
  push_mixed(G, v, "moddown", x, &out, G->vals[x].comps);
}

/* A key for the keyswitch composite: a digit per digit of Q_L, a row per
 * chain position. -1 when the key list is full of others. */
static int ks_key(gen *G) {
  int ndig = num_digits(G);
  for (int i = 0; i < G->nkeys; i++)
    if (G->keys[i].digits >= ndig && G->keys[i].rows >= G->chain && chance(G, 60)) return i;
  if (G->nkeys == (int)(sizeof G->keys / sizeof *G->keys)) return -1;
  return add_key(G, ndig + (int64_t)rnd(G, 2), G->chain);
}

/* SPEC section 7's hybrid key switch (fhjit_keyswitch: modup per digit,
 * digit products, add_lazy, moddown of both components, its own tables). */
static void mix_keyswitch(gen *G) {
  bas b = digit_basis(G);
  int x = mix_operand(G, FHJIT_DOMAIN_NTT, FHJIT_FORM_MONT, fits_keyswitch, &b, 0);
  if (x < 0) return;
  int k = ks_key(G);
  if (k < 0) return;
  fhjit_value fwd = twiddle_input(G, 0, G->chain), inv = twiddle_input(G, 1, G->chain);
  if (fwd == FHJIT_NO_VALUE || inv == FHJIT_NO_VALUE) return;
  fhjit_value v = fhjit_keyswitch(G->g, G->vals[x].v, G->keys[k].v, fwd, inv);
  push_mixed(G, v, "keyswitch", x, &G->vals[x].b, 2);
}

/* One limb-mixing op; without NTT primes only bconv. */
static void random_mix(gen *G) {
  switch (G->ntt ? rnd(G, 10) : 0) {
  case 0: case 1: mix_bconv(G); break;
  case 2: case 3: mix_rescale(G); break;
  case 4: case 5: mix_modup(G); break;
  case 6: case 7: mix_moddown(G); break;
  default: mix_keyswitch(G); break;
  }
}

/* Adds one random op (and whatever inputs it needs). */
static void random_ntt(gen *G);

static void random_op(gen *G) {
  if (G->ntt && chance(G, 20)) {
    random_ntt(G);
    return;
  }
  if (G->cfg->reindex_percent > 0 && chance(G, G->cfg->reindex_percent)) {
    random_reindex(G);
    return;
  }
  if (G->cfg->mix_percent > 0 && chance(G, G->cfg->mix_percent)) {
    random_mix(G);
    return;
  }
  ir_op ops[sizeof all_ops / sizeof *all_ops];
  int nops = 0;
  for (size_t i = 0; i < sizeof all_ops / sizeof *all_ops; i++)
    if (!G->cfg->op_mask || (G->cfg->op_mask & (1u << all_ops[i]))) ops[nops++] = all_ops[i];
  if (nops == 0) ops[nops++] = IR_ADD;
  ir_op op = ops[rnd(G, (uint64_t)nops)];
  req r = any_main(G);
  switch (op) {
  case IR_ADD: case IR_SUB: case IR_ADD_LAZY: case IR_MUL: {
    int a = pick(G, &r);
    if (a < 0) return;
    req rb = r;
    rb.with = a;
    rb.with_form = op != IR_MUL;
    rb.with_domain = a;
    rb.basis_of = a;
    int b = pick(G, &rb);
    if (b < 0) return;
    if (chance(G, 50)) {
      int t = a;
      a = b;
      b = t;
    }
    fhjit_value va = G->vals[a].v, vb = G->vals[b].v, v;
    if (op == IR_ADD) v = fhjit_add(G->g, va, vb);
    else if (op == IR_SUB) v = fhjit_sub(G->g, va, vb);
    else if (op == IR_ADD_LAZY) v = fhjit_add_lazy(G->g, va, vb);
    else v = fhjit_mul(G->g, va, vb);
    use(G, a);
    use(G, b);
    push_value(G, v, ir_op_name(op), max_i(G->vals[a].comps, G->vals[b].comps), G->n, a, b);
    return;
  }
  case IR_NEG: case IR_TO_MONT: case IR_FROM_MONT: {
    int a = pick(G, &r);
    if (a < 0) return;
    fhjit_value v = op == IR_NEG       ? fhjit_neg(G->g, G->vals[a].v)
                    : op == IR_TO_MONT ? fhjit_to_mont(G->g, G->vals[a].v)
                                       : fhjit_from_mont(G->g, G->vals[a].v);
    use(G, a);
    push_value(G, v, ir_op_name(op), G->vals[a].comps, G->n, a, -1);
    return;
  }
  case IR_MUL_PLAIN: case IR_ADD_PLAIN: {
    if (op == IR_ADD_PLAIN) r.avoid = FHJIT_DOMAIN_COEF;
    int ct = pick(G, &r);
    if (ct < 0) return;
    req rp = r;
    rp.with_domain = ct;
    rp.basis_of = ct;
    if (chance(G, 70)) rp.comps_hi = 0;
    int pt = pick(G, &rp);
    if (pt < 0) return;
    fhjit_value v = op == IR_MUL_PLAIN ? fhjit_mul_plain(G->g, G->vals[ct].v, G->vals[pt].v)
                                       : fhjit_add_plain(G->g, G->vals[ct].v, G->vals[pt].v);
    use(G, ct);
    use(G, pt);
    push_value(G, v, ir_op_name(op), G->vals[ct].comps, G->n, ct, pt);
    return;
  }
  case IR_MUL_COMPRESSED: case IR_ADD_COMPRESSED: {
    fhjit_domain dom = chance(G, 50) ? FHJIT_DOMAIN_COEF : FHJIT_DOMAIN_NTT;
    if (op == IR_ADD_COMPRESSED) r.avoid = dom == FHJIT_DOMAIN_COEF ? FHJIT_DOMAIN_NTT : FHJIT_DOMAIN_COEF;
    int ct = pick(G, &r);
    if (ct < 0) return;
    /* u: a divisor of n (n itself sometimes: repeat 1) */
    int64_t divs[64];
    int nd = 0;
    for (int64_t d = 1; d <= G->n && nd < 64; d++)
      if (G->n % d == 0 && (d < G->n || G->n == 1 || chance(G, 15))) divs[nd++] = d;
    int64_t u = divs[rnd(G, (uint64_t)nd)];
    fhjit_compression layout = (fhjit_compression)rnd(G, 3);
    int pt = plain_world_value(G, u, ct);
    if (pt < 0) return;
    if (op == IR_ADD_COMPRESSED && dom == FHJIT_DOMAIN_NTT &&
        type_of(G, pt).domain == FHJIT_DOMAIN_COEF)
      dom = FHJIT_DOMAIN_ANY; /* decided below: fall back to a coef-domain add */
    int im = -1;
    if (layout == FHJIT_STRIDED_SPARSE) {
      im = plain_world_value(G, 1, ct);
      if (im < 0) return;
    }
    fhjit_value imv = im >= 0 ? G->vals[im].v : FHJIT_NO_VALUE, v;
    if (op == IR_MUL_COMPRESSED) {
      v = fhjit_mul_compressed(G->g, G->vals[ct].v, G->vals[pt].v, layout, imv);
    } else {
      if (dom == FHJIT_DOMAIN_ANY) {
        if (type_of(G, ct).domain == FHJIT_DOMAIN_NTT) { /* neither domain fits: plain mul */
          v = fhjit_mul_compressed(G->g, G->vals[ct].v, G->vals[pt].v, layout, imv);
          op = IR_MUL_COMPRESSED;
        } else {
          dom = FHJIT_DOMAIN_COEF;
          v = fhjit_add_compressed(G->g, G->vals[ct].v, G->vals[pt].v, layout, imv, dom);
        }
      } else {
        v = fhjit_add_compressed(G->g, G->vals[ct].v, G->vals[pt].v, layout, imv, dom);
      }
    }
    use(G, ct);
    use(G, pt);
    use(G, im);
    int idx = push_value(G, v, ir_op_name(op), G->vals[ct].comps, G->n, ct, pt);
    if (idx >= 0 && im >= 0) merge_shape(&G->vals[idx], &G->vals[im], &G->vals[idx]);
    return;
  }
  case IR_KS_DIGIT_PRODUCT: {
    r.comps_hi = 0;
    int d = pick(G, &r);
    if (d < 0) return;
    /* key row row_start + basis[r] (SPEC section 7): rows past the largest position */
    int64_t need = 0;
    for (int i = 0; i < G->vals[d].b.n; i++)
      if (G->vals[d].b.pos[i] + 1 > need) need = G->vals[d].b.pos[i] + 1;
    int k = -1;
    for (int i = 0; i < G->nkeys && k < 0; i++)
      if (G->keys[i].rows >= need && chance(G, 70)) k = i;
    if (k < 0) k = new_key(G, need);
    if (k < 0) return;
    const key_val *kv = &G->keys[k];
    int64_t digit = (int64_t)rnd(G, (uint64_t)kv->digits);
    int64_t row_start = (int64_t)rnd(G, (uint64_t)(kv->rows - need + 1));
    fhjit_value v = fhjit_keyswitch_digit_product(G->g, G->vals[d].v, kv->v, digit, row_start);
    use(G, d);
    push_value(G, v, "keyswitch_digit_product", 2, G->n, d, -1);
    return;
  }
  case IR_EXTRACT: {
    r.comps_lo = 1;
    int a = pick(G, &r);
    if (a < 0) return;
    int32_t j = (int32_t)rnd(G, (uint64_t)G->vals[a].comps);
    fhjit_value v = fhjit_extract(G->g, G->vals[a].v, j);
    use(G, a);
    push_value(G, v, "extract", 0, G->n, a, -1);
    return;
  }
  case IR_PACK: {
    r.comps_hi = 0;
    int parts[3];
    int count = chance(G, 60) ? 2 : 3;
    parts[0] = pick(G, &r);
    if (parts[0] < 0) return;
    for (int i = 1; i < count; i++) {
      req rp = r;
      rp.same_shape = parts[0];
      rp.basis_of = parts[0];
      parts[i] = -1;
      for (int tries = 0; tries < 4 && parts[i] < 0; tries++) {
        int c = pick(G, &rp);
        if (c < 0) return;
        int ok = 1;
        for (int j = 0; j < i; j++)
          ok &= domains_compatible(type_of(G, c).domain, type_of(G, parts[j]).domain);
        if (ok) parts[i] = c;
      }
      if (parts[i] < 0) parts[i] = new_poly_input(G, 0, G->n, parts[0], 0, &G->vals[parts[0]].b);
      if (parts[i] < 0) return;
    }
    fhjit_value vs[3];
    for (int i = 0; i < count; i++) vs[i] = G->vals[parts[i]].v, use(G, parts[i]);
    fhjit_value v = fhjit_pack(G->g, count, vs);
    push_value(G, v, "pack", count, G->n, parts[0], -1);
    return;
  }
  default:
    return;
  }
}

/* ------------------------------------------------------------- NTT anchors */

/* The forward (0) or inverse (1) twiddle table input of `rows` rows (chain
 * positions 0 .. rows-1), declared once, dense. */
static fhjit_value twiddle_input(gen *G, int inverse, int32_t rows) {
  if (G->twiddle[inverse][rows] != FHJIT_NO_VALUE) return G->twiddle[inverse][rows];
  fhjit_type t = {.kind = FHJIT_KIND_TWIDDLE, .rows = rows, .n = G->n};
  char name[200];
  snprintf(name, sizeof name, "%stw_%s", G->prefix, inverse ? "inv" : "fwd");
  if (rows != G->rows) snprintf(name, sizeof name, "%stw_%s%d", G->prefix, inverse ? "inv" : "fwd",
                                (int)rows);
  fhjit_value v = fhjit_input(G->g, name, &t);
  if (v == FHJIT_NO_VALUE) gen_fail(G, "fhjit_input (twiddles)");
  else G->ninputs++;
  return G->twiddle[inverse][rows] = v;
}


/* A transform of a random value whose domain and form fit a random kind;
 * half the time its result gets two consumers (add and sub of one operand,
 * both soon outputs): the multi-output epilogue of issue 20's finding 1. */
static void random_ntt(gen *G) {
  fhjit_ntt_kind kind = (fhjit_ntt_kind)rnd(G, 4);
  int forward = kind <= FHJIT_NTT_COEF_MONT_TO_NTT;
  fhjit_form want = kind == FHJIT_NTT_COEF_STD_TO_NTT ? FHJIT_FORM_STD : FHJIT_FORM_MONT;
  req r = any_main(G);
  r.avoid = forward ? FHJIT_DOMAIN_NTT : FHJIT_DOMAIN_COEF;
  int a = pick(G, &r);
  if (a < 0) return;
  fhjit_type ta = type_of(G, a);
  if (ta.form && ta.form != want) return; /* no transform reads it in this kind */
  fhjit_value tw = twiddle_input(G, !forward, twiddle_rows(G, &G->vals[a].b));
  if (tw == FHJIT_NO_VALUE) return;
  fhjit_value v = fhjit_ntt(G->g, G->vals[a].v, tw, kind);
  use(G, a);
  int y = push_value(G, v, "ntt", G->vals[a].comps, G->n, a, -1);
  if (y < 0 || !chance(G, 50)) return;
  req rb = any_main(G);
  rb.with = y;
  rb.with_form = 1;
  rb.with_domain = y;
  rb.basis_of = y;
  int b = pick(G, &rb);
  if (b < 0) return;
  fhjit_value vy = G->vals[y].v, vb = G->vals[b].v;
  int comps = max_i(G->vals[y].comps, G->vals[b].comps);
  use(G, y);
  use(G, b);
  use(G, b);
  push_value(G, fhjit_add(G->g, vy, vb), "add (epilogue)", comps, G->n, y, b);
  push_value(G, fhjit_sub(G->g, vy, vb), "sub (epilogue)", comps, G->n, y, b);
}

/* `count` distinct primes q = 1 mod 2N of random sizes (near the radix
 * limit and far below it), for graphs with transforms of length N. */
static void ntt_moduli(gen *G, fhjit_radix radix, int32_t rows, int64_t n, uint64_t *out) {
  int top = radix == FHJIT_R32 ? 30 : 60, low = radix == FHJIT_R32 ? 18 : 30;
  fhjit_context *ctx = fhjit_context_create();
  for (int32_t r = 0; r < rows && !G->failed; r++) {
    uint64_t primes[8];
    int bits = chance(G, 50) ? top : low + (int)rnd(G, (uint64_t)(top - low + 1));
    if (!ctx || fhjit_find_primes(ctx, bits, 2 * (uint64_t)n, 8, primes) != FHJIT_OK) {
      G->failed = 1;
      rg_fail(G->err, G->errsize, "randgraph: fhjit_find_primes(%d bits, m = %lld) failed",
              bits, (long long)(2 * n));
      break;
    }
    do out[r] = primes[rnd(G, 8)];
    while (contains(out, r, out[r]));
  }
  fhjit_context_destroy(ctx);
}

static uint64_t gcd_u64(uint64_t a, uint64_t b) {
  while (b) {
    uint64_t t = a % b;
    a = b;
    b = t;
  }
  return a;
}

/* rg_random_moduli's mix, drawn one at a time until each is coprime to
 * the earlier ones (bconv's constants need pairwise coprime moduli). */
static void coprime_moduli(gen *G, fhjit_radix radix, int32_t rows, uint64_t *out) {
  for (int32_t r = 0; r < rows; r++) {
    int ok = 0;
    while (!ok) {
      rg_random_moduli(&G->rng, radix, 1, &out[r]);
      ok = 1;
      for (int32_t k = 0; k < r; k++) ok &= gcd_u64(out[k], out[r]) == 1;
    }
  }
}

/* A graph name of 1..300 arbitrary non-NUL bytes (the API takes any), and a
 * value-name prefix of up to 150 name characters. */
static void random_names(gen *G, char *gname, size_t size) {
  size_t len = 1 + (size_t)rnd(G, 300);
  if (len >= size) len = size - 1;
  for (size_t i = 0; i < len; i++)
    gname[i] = chance(G, 70) ? "abcdefghijklmnopqrstuvwxyz_.0123456789"[rnd(G, 38)]
                             : (char)(1 + rnd(G, 255));
  gname[len] = 0;
  static const char cs[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.";
  size_t plen = chance(G, 50) ? 0 : (size_t)rnd(G, 150);
  for (size_t i = 0; i < plen; i++) G->prefix[i] = cs[rnd(G, sizeof cs - 1)];
  G->prefix[plen] = 0;
}

static void add_output(gen *G, int idx, int *nout) {
  char name[200];
  snprintf(name, sizeof name, "%sout%d", G->prefix, *nout);
  if (fhjit_output(G->g, G->vals[idx].v, name) != FHJIT_OK) {
    gen_fail(G, "fhjit_output");
    return;
  }
  (*nout)++;
}

fhjit_graph *rg_random_graph(fhjit_context *ctx, uint64_t seed, const rg_config *cfg,
                             char *err, size_t errsize) {
  rg_config def;
  if (!cfg) {
    rg_default_config(&def);
    cfg = &def;
  }
  gen *G = calloc(1, sizeof *G);
  if (!G) {
    rg_fail(err, errsize, "randgraph: out of memory");
    return NULL;
  }
  G->rng = seed * UINT64_C(0x9E3779B97F4A7C15) + 0x1234567;
  G->cfg = cfg;
  G->err = err;
  G->errsize = errsize;
  fhjit_radix radix = cfg->radix >= 0 ? (fhjit_radix)cfg->radix : (fhjit_radix)rnd(G, 2);
  for (int r = 0; r <= RG_MAX_ROWS; r++) G->twiddle[0][r] = G->twiddle[1][r] = FHJIT_NO_VALUE;
  char gname[320];
  snprintf(gname, sizeof gname, "rand%llu", (unsigned long long)seed);
  if (cfg->random_names) random_names(G, gname, sizeof gname);
  G->g = fhjit_graph_create(ctx, gname, radix);
  if (!G->g) {
    rg_fail(err, errsize, "randgraph: fhjit_graph_create: %s", fhjit_last_error(ctx));
    free(G);
    return NULL;
  }
  int max_rows = cfg->max_rows < 1 ? 1 : cfg->max_rows > RG_MAX_ROWS ? RG_MAX_ROWS : cfg->max_rows;
  if (cfg->mix_percent > 0 && max_rows > RG_MAX_ROWS - 2) max_rows = RG_MAX_ROWS - 2; /* P's room */
  G->rows = 1 + (int32_t)rnd(G, (uint64_t)max_rows);
  static const int64_t pow2_n[] = {1, 2, 4, 8, 16, 32};
  static const int64_t odd_n[] = {3, 6, 12, 24};
  G->n = (cfg->odd_n && chance(G, 20)) ? odd_n[rnd(G, 4)] : pow2_n[rnd(G, 6)];
  G->ntt = chance(G, cfg->ntt_percent);
  if (G->ntt) G->n = INT64_C(16) << rnd(G, 3);
  /* the conversion kernel (bconv) refuses other lengths than 2^4 .. 2^17 */
  else if (cfg->mix_percent > 0) G->n = INT64_C(16) << rnd(G, 3);
  int max_rank = cfg->max_batch_rank < 0 ? 0 : cfg->max_batch_rank > 3 ? 3 : cfg->max_batch_rank;
  G->nbg = (int)rnd(G, (uint64_t)max_rank + 1);
  for (int a = 0; a < G->nbg; a++) G->gb[a] = 1 + (int64_t)rnd(G, 3);

  G->chain = G->rows;
  if (cfg->mix_percent > 0) { /* Q_L = [0, rows) ++ P: 1 or 2 special primes */
    G->nspecial = 1 + (int32_t)rnd(G, 2);
    G->alpha = 1 + (int32_t)rnd(G, (uint64_t)G->rows);
    G->chain = G->rows + G->nspecial;
  }
  uint64_t moduli[RG_MAX_ROWS];
  if (G->ntt) ntt_moduli(G, radix, G->chain, G->n, moduli);
  else if (cfg->mix_percent > 0) coprime_moduli(G, radix, G->chain, moduli);
  else rg_random_moduli(&G->rng, radix, G->rows, moduli);
  if (fhjit_graph_set_moduli(G->g, moduli, G->chain) != FHJIT_OK)
    gen_fail(G, "fhjit_graph_set_moduli");
  if (G->nspecial > 0 && (fhjit_graph_set_special(G->g, G->nspecial) != FHJIT_OK ||
                          fhjit_graph_set_digits(G->g, G->alpha) != FHJIT_OK))
    gen_fail(G, "fhjit_graph_set_special / set_digits");

  int min_ops = cfg->min_ops < 1 ? 1 : cfg->min_ops;
  int max_ops = cfg->max_ops < min_ops ? min_ops : cfg->max_ops;
  /* Small graphs are the common case in a differential test: favour them. */
  int span = max_ops - min_ops + 1;
  G->target_ops = min_ops + (int)(chance(G, 50) ? rnd(G, (uint64_t)(span < 8 ? span : 8))
                                                : rnd(G, (uint64_t)span));
  int reserve = G->target_ops >= 4 ? 2 : 0; /* room for output extracts */
  for (int i = 0, n0 = 1 + (int)rnd(G, 3); i < n0 && !G->failed; i++)
    new_poly_input(G, (int)rnd(G, 4), G->n, -1, 1, NULL);
  while (!G->failed && G->ops < G->target_ops - reserve) random_op(G);

  /* Outputs: extracts of inputs and of computed values, then (after the
   * last ops) every sink, some intermediates, input aliases, and one value
   * under two names. */
  int nout = 0;
  int is_output[RG_MAX_POOL] = {0};
  for (int want_input = 1; want_input >= 0 && !G->failed; want_input--) {
    if (G->ops >= max_ops || !chance(G, 30)) continue;
    int cands[RG_MAX_POOL], nc = 0;
    for (int i = 0; i < G->nvals; i++)
      if (G->vals[i].is_input == want_input && G->vals[i].comps > 0 && G->vals[i].n == G->n)
        cands[nc++] = i;
    if (!nc) continue;
    int a = cands[rnd(G, (uint64_t)nc)];
    fhjit_value v = fhjit_extract(G->g, G->vals[a].v, (int32_t)rnd(G, (uint64_t)G->vals[a].comps));
    int idx = push_value(G, v, "extract", 0, G->n, a, -1);
    if (idx >= 0) {
      add_output(G, idx, &nout);
      is_output[idx] = 1;
    }
  }
  while (!G->failed && G->ops < G->target_ops) random_op(G);
  for (int i = 0; i < G->nvals && !G->failed; i++) {
    const pool_val *p = &G->vals[i];
    if (p->is_input || p->n != G->n || is_output[i]) continue;
    if (p->uses == 0 || chance(G, 15)) add_output(G, i, &nout);
  }
  if (!G->failed && chance(G, 30)) {
    int ins[RG_MAX_POOL], ni = 0;
    for (int i = 0; i < G->nvals; i++)
      if (G->vals[i].is_input && G->vals[i].n == G->n) ins[ni++] = i;
    if (ni) add_output(G, ins[rnd(G, (uint64_t)ni)], &nout);
  }
  if (!G->failed && nout > 0 && chance(G, 30)) {
    char name[200];
    snprintf(name, sizeof name, "%sout%d", G->prefix, nout++);
    /* the value of a random earlier output, again */
    int32_t k = (int32_t)rnd(G, (uint64_t)fhjit_num_outputs(G->g));
    fhjit_value v = G->g->outputs[k].value;
    if (fhjit_output(G->g, v, name) != FHJIT_OK) gen_fail(G, "fhjit_output (twice)");
  }
  if (!G->failed && nout == 0) add_output(G, 0, &nout);
  if (!G->failed && fhjit_bind(G->g) != FHJIT_OK) gen_fail(G, "fhjit_bind");
  fhjit_graph *g = G->g;
  int failed = G->failed;
  free(G);
  if (failed) {
    fhjit_graph_destroy(g);
    return NULL;
  }
  return g;
}

/* ------------------------------------------------------ element iteration */

/* Axes of a concrete type in storage order (outermost first), with their
 * role, so that loops can find the row of each element. */
enum { AX_DIGIT, AX_COMP, AX_BATCH, AX_ROW, AX_INDEX };

typedef struct axes {
  int k;
  int64_t ext[8], stride[8];
  int role[8];
} axes;

static void axes_of(const fhjit_type *t, const fhjit_layout *l, axes *ax) {
  int k = 0;
  if (t->kind == FHJIT_KIND_KEY) {
    ax->ext[k] = t->digits, ax->stride[k] = l->digit_stride, ax->role[k++] = AX_DIGIT;
    ax->ext[k] = 2, ax->stride[k] = l->comp_stride, ax->role[k++] = AX_COMP;
  } else {
    if (t->comps > 0) ax->ext[k] = t->comps, ax->stride[k] = l->comp_stride, ax->role[k++] = AX_COMP;
    for (int a = 0; a < t->nbatch; a++)
      ax->ext[k] = t->batch[a], ax->stride[k] = l->batch_stride[a], ax->role[k++] = AX_BATCH;
  }
  ax->ext[k] = t->rows, ax->stride[k] = l->row_stride, ax->role[k++] = AX_ROW;
  ax->ext[k] = t->n, ax->stride[k] = l->index_stride, ax->role[k++] = AX_INDEX;
  ax->k = k;
}

static int64_t axes_words(const axes *ax, int64_t offset) {
  int64_t w = offset + 1;
  for (int i = 0; i < ax->k; i++) w += (ax->ext[i] - 1) * ax->stride[i];
  return w;
}

/* Calls fn(offset, row, ctx) for every logical element. */
static void for_each(const axes *ax, int64_t offset,
                     void (*fn)(int64_t off, int64_t row, void *arg), void *arg) {
  int64_t idx[8] = {0};
  int64_t total = 1;
  for (int i = 0; i < ax->k; i++) total *= ax->ext[i];
  for (int64_t e = 0; e < total; e++) {
    int64_t off = offset, row = 0;
    for (int i = 0; i < ax->k; i++) {
      off += idx[i] * ax->stride[i];
      if (ax->role[i] == AX_ROW) row = idx[i];
    }
    fn(off, row, arg);
    for (int i = ax->k - 1; i >= 0; i--) {
      if (++idx[i] < ax->ext[i]) break;
      idx[i] = 0;
    }
  }
}

/* ---------------------------------------------------------------- cases */

static uint64_t poison_word(fhjit_radix radix) {
  return radix == FHJIT_R32 ? UINT64_C(0x7EADBEEF) : UINT64_C(0x7EADBEEFDEADBEEF);
}

static void put(fhjit_radix radix, void *buf, int64_t i, uint64_t x) {
  if (radix == FHJIT_R32) ((uint32_t *)buf)[i] = (uint32_t)x;
  else ((uint64_t *)buf)[i] = x;
}

static uint64_t get(fhjit_radix radix, const void *buf, int64_t i) {
  return radix == FHJIT_R32 ? ((const uint32_t *)buf)[i] : ((const uint64_t *)buf)[i];
}

typedef struct bound_arg {
  uint64_t *bound;
  const uint64_t *row_bound; /* 2q of the limb each row is read with */
} bound_arg;

static void note_bound(int64_t off, int64_t row, void *arg) {
  bound_arg *b = arg;
  uint64_t want = b->row_bound[row];
  if (b->bound[off] == 0 || want < b->bound[off]) b->bound[off] = want;
}

void rg_case_free(rg_case *c) {
  if (!c) return;
  for (int32_t i = 0; i < c->ninputs; i++) {
    if (c->inputs) free(c->inputs[i]);
    if (c->slot_bound) free(c->slot_bound[i]);
    if (c->input_copy) free(c->input_copy[i]);
  }
  free(c->inputs);
  free(c->slot_bound);
  free(c->input_copy);
  free(c->input_words);
  free(c->result_words);
  free(c->params);
  memset(c, 0, sizeof *c);
}

void rg_case_snapshot(rg_case *c) {
  size_t word = ir_word_size(c->radix);
  for (int32_t i = 0; i < c->ninputs; i++)
    memcpy(c->input_copy[i], c->inputs[i], word * (size_t)c->input_words[i]);
}

/* Twiddle input i: the forward or inverse table of fhjit_twiddle_tables,
 * whichever the transforms reading it need (they all need the same one). */
static int fill_twiddles(rg_case *c, int32_t i, const fhjit_type *t, const fhjit_layout *l,
                         char *err, size_t errsize) {
  fhjit_graph *g = c->g;
  fhjit_value tv = fhjit_input_value(g, i);
  int inverse = -1;
  for (int32_t v = 0; v < g->nnodes; v++) {
    const ir_node *n = &g->nodes[v];
    if (n->op == IR_NTT && n->args[1] == tv) inverse = n->attr[0] >= FHJIT_NTT_TO_COEF_MONT;
    if (n->op == IR_RESCALE || n->op == IR_MODUP || n->op == IR_MODDOWN) {
      if (n->args[1] == tv) inverse = 0;
      if (n->args[2] == tv) inverse = 1;
    }
  }
  if (inverse < 0) return 0; /* read by nothing: random words do */
  size_t word = ir_word_size(c->radix);
  void *table = malloc(word * (size_t)(t->rows * t->n));
  if (!table) {
    rg_fail(err, errsize, "rg_case_init: out of memory");
    return -1;
  }
  fhjit_context *ctx = fhjit_graph_context(g);
  if (fhjit_twiddle_tables(ctx, c->radix, c->moduli, (int32_t)t->rows, t->n,
                           inverse ? NULL : table, inverse ? table : NULL) != FHJIT_OK) {
    rg_fail(err, errsize, "rg_case_init: fhjit_twiddle_tables: %s", fhjit_last_error(ctx));
    free(table);
    return -1;
  }
  for (int64_t r = 0; r < t->rows; r++)
    for (int64_t k = 0; k < t->n; k++)
      put(c->radix, c->inputs[i], l->offset + r * l->row_stride + k * l->index_stride,
          get(c->radix, table, r * t->n + k));
  free(table);
  return 0;
}

/* Constant-table input i (SPEC section 7): fhjit_input_table's words, at
 * the input's layout (the interpreter refuses any other table). */
static int fill_table(rg_case *c, int32_t i, const fhjit_type *t, const fhjit_layout *l,
                      char *err, size_t errsize) {
  size_t word = ir_word_size(c->radix);
  void *table = malloc(word * (size_t)t->n);
  int64_t len = 0;
  if (!table) {
    rg_fail(err, errsize, "rg_case_init: out of memory");
    return -1;
  }
  if (fhjit_input_table(c->g, i, table, &len) != FHJIT_OK || len != t->n) {
    rg_fail(err, errsize, "rg_case_init: fhjit_input_table(%d): %s", (int)i,
            fhjit_last_error(fhjit_graph_context(c->g)));
    free(table);
    return -1;
  }
  for (int64_t k = 0; k < len; k++)
    put(c->radix, c->inputs[i], l->offset + k * l->index_stride, get(c->radix, table, k));
  free(table);
  return 0;
}

/* Chain position of each row of polynomial input i (its bound basis). */
static void input_positions(const rg_case *c, int32_t i, int64_t rows, int32_t *pos) {
  int32_t count = 0;
  for (int64_t r = 0; r < rows; r++) pos[r] = (int32_t)r;
  if (fhjit_value_basis(c->g, fhjit_input_value(c->g, i), pos, (int32_t)rows, &count) != FHJIT_OK)
    for (int64_t r = 0; r < rows; r++) pos[r] = (int32_t)r;
}

int rg_case_init(rg_case *c, fhjit_graph *g, const uint64_t *moduli, uint64_t seed,
                 int edge_percent, char *err, size_t errsize) {
  memset(c, 0, sizeof *c);
  fhjit_context *ctx = fhjit_graph_context(g);
  if (!fhjit_is_bound(g)) {
    rg_fail(err, errsize, "rg_case_init: graph @%s is not bound", fhjit_graph_name(g));
    return -1;
  }
  c->g = g;
  c->radix = fhjit_graph_radix(g);
  c->ninputs = fhjit_num_inputs(g);
  c->nresults = fhjit_num_results(g);
  /* rows and n: those of the polynomial inputs and results (largest n:
   * compressed plaintexts and implicit operands are narrower) */
  for (int32_t i = 0; i < c->ninputs; i++) {
    fhjit_type t;
    fhjit_input_binding(g, i, &t, NULL);
    if (t.kind == FHJIT_KIND_POLY) {
      if (t.rows > c->rows) c->rows = (int32_t)t.rows;
      if (t.n > c->n) c->n = t.n;
    }
  }
  for (int32_t i = 0; i < c->nresults; i++) {
    fhjit_type t;
    fhjit_result_type(g, i, &t);
    if (t.rows > c->rows) c->rows = (int32_t)t.rows;
    if (t.n > c->n) c->n = t.n;
  }
  /* a chain longer than any value's basis (section 7): its moduli all count */
  if (!moduli && fhjit_graph_num_moduli(g) > c->rows) c->rows = fhjit_graph_num_moduli(g);
  if (c->rows < 1 || c->rows > RG_MAX_ROWS) {
    rg_fail(err, errsize, "rg_case_init: %d rows is outside 1..%d", (int)c->rows, RG_MAX_ROWS);
    return -1;
  }
  if (!moduli) {
    if (fhjit_graph_num_moduli(g) != c->rows) {
      rg_fail(err, errsize, "rg_case_init: graph has %d moduli for %d rows",
              (int)fhjit_graph_num_moduli(g), (int)c->rows);
      return -1;
    }
    moduli = fhjit_graph_moduli(g);
  }
  memcpy(c->moduli, moduli, sizeof *moduli * (size_t)c->rows);
  uint64_t rng = seed * UINT64_C(0xD1B54A32D192ED03) + 77;
  size_t word = ir_word_size(c->radix);

  /* A parameter table with a row stride wider than rows, padding poisoned. */
  c->pstride = c->rows + (int64_t)tu_below(&rng, 3);
  c->params = malloc(word * 8 * (size_t)c->pstride);
  c->inputs = calloc((size_t)c->ninputs + 1, sizeof *c->inputs);
  c->slot_bound = calloc((size_t)c->ninputs + 1, sizeof *c->slot_bound);
  c->input_copy = calloc((size_t)c->ninputs + 1, sizeof *c->input_copy);
  c->input_words = calloc((size_t)c->ninputs + 1, sizeof *c->input_words);
  c->result_words = calloc((size_t)c->nresults + 1, sizeof *c->result_words);
  if (!c->params || !c->inputs || !c->slot_bound || !c->input_copy || !c->input_words ||
      !c->result_words)
    goto oom;
  for (int64_t i = 0; i < 8 * c->pstride; i++) put(c->radix, c->params, i, poison_word(c->radix));
  int64_t table_n = (c->n & (c->n - 1)) == 0 ? c->n : 0; /* row 7 needs N^-1: unused here */
  if (fhjit_param_table(ctx, c->radix, c->moduli, c->rows, table_n, 0, 1, c->params,
                        c->pstride) != FHJIT_OK) {
    rg_fail(err, errsize, "rg_case_init: fhjit_param_table: %s", fhjit_last_error(ctx));
    rg_case_free(c);
    return -1;
  }
  uint64_t min2q = UINT64_MAX;
  for (int32_t r = 0; r < c->rows; r++)
    if (2 * c->moduli[r] < min2q) min2q = 2 * c->moduli[r];

  for (int32_t i = 0; i < c->ninputs; i++) {
    fhjit_type t;
    fhjit_layout l;
    fhjit_input_binding(g, i, &t, &l);
    axes ax;
    axes_of(&t, &l, &ax);
    int64_t words = axes_words(&ax, l.offset);
    c->input_words[i] = words;
    c->inputs[i] = malloc(word * (size_t)words);
    c->input_copy[i] = malloc(word * (size_t)words);
    c->slot_bound[i] = calloc((size_t)words, sizeof **c->slot_bound);
    uint64_t *row_bound = malloc(sizeof *row_bound * (size_t)(t.rows > 0 ? t.rows : 1));
    if (!c->inputs[i] || !c->input_copy[i] || !c->slot_bound[i] || !row_bound) {
      free(row_bound);
      goto oom;
    }
    int32_t pos[RG_MAX_ROWS];
    if (t.kind == FHJIT_KIND_POLY && t.rows <= RG_MAX_ROWS) input_positions(c, i, t.rows, pos);
    for (int64_t r = 0; r < t.rows; r++) {
      int64_t p = t.kind == FHJIT_KIND_POLY && t.rows <= RG_MAX_ROWS ? pos[r] : r;
      row_bound[r] = t.kind == FHJIT_KIND_KEY ? 0 : 2 * c->moduli[p < c->rows ? p : 0];
    }
    if (t.kind == FHJIT_KIND_KEY) {
      /* key row row_start + basis[r] is read with that position's modulus by
       * each digit product (SPEC section 7; [0, rows) without bases) */
      fhjit_value kv = fhjit_input_value(g, i);
      for (int32_t v = 0; v < g->nnodes; v++) {
        const ir_node *n = &g->nodes[v];
        if (n->op != IR_KS_DIGIT_PRODUCT || n->args[1] != kv) continue;
        int64_t rs = n->attr[1], dr = g->nodes[n->args[0]].type.rows;
        int32_t dpos[RG_MAX_ROWS], count = 0;
        for (int64_t r = 0; r < dr && r < RG_MAX_ROWS; r++) dpos[r] = (int32_t)r;
        fhjit_value_basis(g, n->args[0], dpos, RG_MAX_ROWS, &count);
        for (int64_t r = 0; r < dr && r < RG_MAX_ROWS && rs + dpos[r] < t.rows; r++) {
          uint64_t b = 2 * c->moduli[dpos[r]];
          if (row_bound[rs + dpos[r]] == 0 || b < row_bound[rs + dpos[r]])
            row_bound[rs + dpos[r]] = b;
        }
      }
      for (int64_t r = 0; r < t.rows; r++)
        if (row_bound[r] == 0) row_bound[r] = min2q;
    }
    bound_arg ba = {c->slot_bound[i], row_bound};
    for_each(&ax, l.offset, note_bound, &ba);
    free(row_bound);
    for (int64_t w = 0; w < words; w++) {
      uint64_t b = c->slot_bound[i][w], x;
      if (b == 0) x = poison_word(c->radix);
      else if ((int)tu_below(&rng, 100) < edge_percent) {
        uint64_t q = b / 2;
        const uint64_t edges[] = {0, 1, q - 1, q, q + 1, 2 * q - 2, 2 * q - 1};
        x = edges[tu_below(&rng, 7)];
      } else {
        x = tu_below(&rng, b);
      }
      put(c->radix, c->inputs[i], w, x);
    }
    if ((t.kind == FHJIT_KIND_TWIDDLE && fill_twiddles(c, i, &t, &l, err, errsize)) ||
        (t.kind == FHJIT_KIND_TABLE && fill_table(c, i, &t, &l, err, errsize))) {
      rg_case_free(c);
      return -1;
    }
  }
  for (int32_t k = 0; k < c->nresults; k++) {
    fhjit_type t;
    fhjit_result_type(g, k, &t);
    c->result_words[k] = fhjit_type_elements(&t);
  }
  rg_case_snapshot(c);
  return 0;
oom:
  rg_fail(err, errsize, "rg_case_init: out of memory");
  rg_case_free(c);
  return -1;
}

int64_t rg_input_offset(const rg_case *c, int32_t index, int64_t comp, const int64_t *batch,
                        int64_t row, int64_t i) {
  fhjit_type t;
  fhjit_layout l;
  fhjit_input_binding(c->g, index, &t, &l);
  if (t.kind == FHJIT_KIND_KEY)
    return l.offset + (comp / 2) * l.digit_stride + (comp % 2) * l.comp_stride +
           row * l.row_stride + i * l.index_stride;
  int64_t zero[FHJIT_MAX_BATCH] = {0};
  return ir_layout_offset(&l, t.nbatch, comp, batch ? batch : zero, row, i);
}

int rg_set_word(rg_case *c, int32_t index, int64_t offset, uint64_t value) {
  uint64_t b = c->slot_bound[index][offset];
  if (b == 0 || value >= b) return 0;
  put(c->radix, c->inputs[index], offset, value);
  return 1;
}

uint64_t rg_get_word(const rg_case *c, int32_t index, int64_t offset) {
  return get(c->radix, c->inputs[index], offset);
}

void **rg_alloc_results(const rg_case *c, uint64_t poison) {
  void **res = calloc((size_t)c->nresults + 1, sizeof *res);
  if (!res) return NULL;
  size_t word = ir_word_size(c->radix);
  for (int32_t k = 0; k < c->nresults; k++) {
    res[k] = malloc(word * (size_t)c->result_words[k]);
    if (!res[k]) {
      rg_free_results(c, res);
      return NULL;
    }
    for (int64_t i = 0; i < c->result_words[k]; i++) put(c->radix, res[k], i, poison);
  }
  return res;
}

void rg_free_results(const rg_case *c, void **results) {
  if (!results) return;
  for (int32_t k = 0; k < c->nresults; k++) free(results[k]);
  free(results);
}

/* ------------------------------------------------------ reference evaluator */

/* Per-limb constants, computed here from q alone. */
typedef struct ref_mod {
  uint64_t q, k, r2;
} ref_mod;

static ref_mod ref_mod_make(fhjit_radix radix, uint64_t q) {
  int w = ir_word_bits(radix);
  /* q^-1 mod 2^64 by Newton's iteration (6 steps: 3 -> 96 correct bits) */
  uint64_t inv = q;
  for (int i = 0; i < 6; i++) inv *= 2 - q * inv;
  uint64_t mask = (UINT64_C(1) << w) - 1;
  uint64_t r1 = (uint64_t)(((unsigned __int128)1 << w) % q);
  return (ref_mod){q, (0 - inv) & mask, (uint64_t)(((unsigned __int128)r1 * r1) % q)};
}

static uint64_t ref_redc(fhjit_radix radix, const ref_mod *m, unsigned __int128 t) {
  if (radix == FHJIT_R32) {
    uint64_t mm = ((uint64_t)t * m->k) & 0xFFFFFFFFu;
    uint64_t u = (uint64_t)((t + (unsigned __int128)mm * m->q) >> 32);
    return u >= m->q ? u - m->q : u;
  }
  uint64_t mm = ((uint64_t)t * m->k) & ((UINT64_C(1) << 62) - 1);
  return (uint64_t)((t + (unsigned __int128)mm * m->q) >> 62);
}

static uint64_t ref_mul(fhjit_radix radix, const ref_mod *m, uint64_t a, uint64_t b) {
  return ref_redc(radix, m, (unsigned __int128)a * b);
}

static uint64_t ref_add(const ref_mod *m, uint64_t a, uint64_t b) {
  uint64_t s = a + b;
  if (s >= 2 * m->q) s -= 2 * m->q;
  if (s >= m->q) s -= m->q;
  return s;
}

static uint64_t ref_add_lazy(const ref_mod *m, uint64_t a, uint64_t b) {
  uint64_t s = a + b;
  return s >= 2 * m->q ? s - 2 * m->q : s;
}

static uint64_t ref_sub(const ref_mod *m, uint64_t a, uint64_t b) {
  int64_t d = (int64_t)a - (int64_t)b;
  if (d < 0) d += (int64_t)(2 * m->q);
  if (d >= (int64_t)m->q) d -= (int64_t)m->q;
  return (uint64_t)d;
}

static uint64_t ref_neg(const ref_mod *m, uint64_t a) {
  uint64_t c = a >= m->q ? a - m->q : a;
  return c == 0 ? 0 : m->q - c;
}

typedef struct ref_state {
  const rg_case *c;
  fhjit_graph *g;
  rg_mutation mut;
  ref_mod mods[RG_MAX_ROWS]; /* by chain position */
  uint64_t **val;       /* per node: dense tensor of its type */
  fhjit_layout *dense;  /* per node */
  int32_t **pos;        /* per polynomial node: the chain position of each row */
  uint64_t *tw[2][RG_MAX_ROWS]; /* SPEC section 5's tables, computed here, by position */
  int64_t tw_n[2][RG_MAX_ROWS];
} ref_state;

static int32_t ref_pos(const ref_state *s, fhjit_value v, int64_t row) {
  return s->pos[v] ? s->pos[v][row] : (int32_t)row;
}

/* Operand v as read by a consumer element (c, bidx[nb], row, i), broadcast
 * per SPEC section 3. */
static uint64_t ref_read(const ref_state *s, fhjit_value v, int64_t c, const int64_t *bidx,
                         int nb, int64_t row, int64_t i) {
  const fhjit_type *t = &s->g->nodes[v].type;
  int64_t b[FHJIT_MAX_BATCH] = {0};
  for (int a = 0; a < t->nbatch; a++) b[a] = t->batch[a] == 1 ? 0 : bidx[a + nb - t->nbatch];
  return s->val[v][ir_layout_offset(&s->dense[v], t->nbatch, t->comps > 1 ? c : 0, b, row, i)];
}

static uint64_t ref_bitrev(uint64_t x, int bits) {
  uint64_t r = 0;
  for (int b = 0; b < bits; b++) r |= ((x >> b) & 1) << (bits - 1 - b);
  return r;
}

static int ref_log2(int64_t n) {
  int bits = 0;
  while ((INT64_C(1) << bits) < n) bits++;
  return bits;
}

/* SPEC section 7's automorphism at element i, by its definition: in the
 * NTT domain slot i holds the value at psi^(2 br(i) + 1), so it reads the
 * slot whose exponent is k times that (mod 2N); in the coefficient domain
 * X^j -> X^(jk) sends coefficient j to jk mod 2N, negated past N, so
 * output i reads the j with jk = i or i + N (mod 2N), searched for here
 * rather than through k^-1. Row `row` is at chain position p. */
static uint64_t ref_automorphism(const ref_state *s, const ir_node *n, int32_t p, int64_t c,
                                 const int64_t *bidx, int64_t row, int64_t i) {
  int64_t N = n->type.n, k = n->attr[0];
  int nb = n->type.nbatch, bits = ref_log2(N);
  if (n->type.domain == FHJIT_DOMAIN_NTT) {
    int64_t e = (2 * (int64_t)ref_bitrev((uint64_t)i, bits) + 1) * k % (2 * N);
    return ref_read(s, n->args[0], c, bidx, nb, row, (int64_t)ref_bitrev((uint64_t)(e - 1) / 2, bits));
  }
  const ref_mod *m = &s->mods[p];
  for (int64_t j = 0; j < N; j++) {
    int64_t e = j * k % (2 * N);
    if (e != i && e != i + N) continue;
    uint64_t x = ref_read(s, n->args[0], c, bidx, nb, row, j);
    uint64_t canon = x >= m->q ? x - m->q : x;
    return e == i ? canon : ref_neg(m, canon);
  }
  return 0; /* k odd: some j maps to i or i + N */
}

static uint64_t ref_elem(const ref_state *s, fhjit_value v, int64_t c, const int64_t *bidx,
                         int64_t row, int64_t i) {
  const ir_node *n = &s->g->nodes[v];
  fhjit_radix radix = s->c->radix;
  int32_t p = ref_pos(s, v, row); /* the row's chain position: its modulus */
  const ref_mod *m = &s->mods[p];
  int nb = n->type.nbatch;
  /* re-indexing ops read their operands elsewhere than (row, i) */
  switch (n->op) {
  case IR_ROWS: return ref_read(s, n->args[0], c, bidx, nb, row + n->attr[0], i);
  case IR_CONCAT: {
    int64_t ra = s->g->nodes[n->args[0]].type.rows;
    return row < ra ? ref_read(s, n->args[0], c, bidx, nb, row, i)
                    : ref_read(s, n->args[1], c, bidx, nb, row - ra, i);
  }
  case IR_AUTOMORPHISM: return ref_automorphism(s, n, p, c, bidx, row, i);
  default: break;
  }
  uint64_t x = n->nargs > 0 ? ref_read(s, n->args[0], c, bidx, nb, row, i) : 0;
  switch (n->op) {
  case IR_ADD: return ref_add(m, x, ref_read(s, n->args[1], c, bidx, nb, row, i));
  case IR_SUB: return ref_sub(m, x, ref_read(s, n->args[1], c, bidx, nb, row, i));
  case IR_ADD_LAZY: return ref_add_lazy(m, x, ref_read(s, n->args[1], c, bidx, nb, row, i));
  case IR_MUL: return ref_mul(radix, m, x, ref_read(s, n->args[1], c, bidx, nb, row, i));
  case IR_NEG: return ref_neg(m, x);
  case IR_TO_MONT: return ref_mul(radix, m, x, m->r2);
  case IR_FROM_MONT: return ref_mul(radix, m, x, 1);
  case IR_MUL_PLAIN: return ref_mul(radix, m, x, ref_read(s, n->args[1], 0, bidx, nb, row, i));
  case IR_ADD_PLAIN:
    return c == 0 ? ref_add_lazy(m, x, ref_read(s, n->args[1], 0, bidx, nb, row, i)) : x;
  case IR_MUL_COMPRESSED: case IR_ADD_COMPRESSED: {
    int64_t u = s->g->nodes[n->args[1]].type.n, repeat = n->type.n / u, e;
    uint64_t ev;
    switch ((fhjit_compression)n->attr[0]) {
    case FHJIT_CYCLIC: e = i % u; ev = ref_read(s, n->args[1], 0, bidx, nb, row, e); break;
    case FHJIT_CONTIGUOUS: e = i / repeat; ev = ref_read(s, n->args[1], 0, bidx, nb, row, e); break;
    default:
      ev = i % repeat == 0 ? ref_read(s, n->args[1], 0, bidx, nb, row, i / repeat)
                           : ref_read(s, n->args[2], 0, bidx, nb, row, 0);
      break;
    }
    if (n->op == IR_MUL_COMPRESSED) return ref_mul(radix, m, x, ev);
    if (c != 0) return x;
    if (n->attr[1] == FHJIT_DOMAIN_COEF) return ref_add(m, x, ref_mul(radix, m, ev, 1));
    return ref_add(m, x, ev);
  }
  case IR_KS_DIGIT_PRODUCT: { /* key row row_start + the row's chain position */
    fhjit_value kv = n->args[1];
    const fhjit_layout *kl = &s->dense[kv];
    uint64_t kx = s->val[kv][n->attr[0] * kl->digit_stride + c * kl->comp_stride +
                             (n->attr[1] + p) * kl->row_stride + i * kl->index_stride];
    return ref_mul(radix, m, x, kx);
  }
  case IR_EXTRACT: return ref_read(s, n->args[0], n->attr[0], bidx, nb, row, i);
  case IR_PACK: return ref_read(s, n->args[c], 0, bidx, nb, row, i);
  default: return 0;
  }
}

/* ------------------------------------- reference: NTTs and limb mixing */

/* Plain modular arithmetic in 128 bits, for the constants below: none of
 * it comes from fhjit's tables. */
static uint64_t ref_mulmod(uint64_t a, uint64_t b, uint64_t q) {
  return (uint64_t)((unsigned __int128)a * b % q);
}

static uint64_t ref_powmod(uint64_t a, uint64_t e, uint64_t q) {
  uint64_t r = 1 % q;
  for (a %= q; e; e >>= 1, a = ref_mulmod(a, a, q))
    if (e & 1) r = ref_mulmod(r, a, q);
  return r;
}

/* a^-1 mod q (gcd(a, q) = 1): the extended Euclidean algorithm. */
static uint64_t ref_invmod(uint64_t a, uint64_t q) {
  __int128 t = 0, nt = 1, r = q, nr = a % q;
  while (nr != 0) {
    __int128 k = r / nr, x = t - k * nt;
    t = nt;
    nt = x;
    x = r - k * nr;
    r = nr;
    nr = x;
  }
  return (uint64_t)(t < 0 ? t + q : t);
}

static uint64_t ref_rmod(const ref_state *s, uint64_t q) {
  return (uint64_t)(((unsigned __int128)1 << ir_word_bits(s->c->radix)) % q);
}

/* The integer a word stands for (SPEC section 7's X_r): mod q, times R^-1
 * for the Montgomery form. */
static uint64_t ref_integer(const ref_state *s, uint64_t w, fhjit_form form, uint64_t q) {
  uint64_t x = w % q;
  return form == FHJIT_FORM_MONT ? ref_mulmod(x, ref_invmod(ref_rmod(s, q), q), q) : x;
}

static uint64_t ref_lazyadd(uint64_t q, uint64_t a, uint64_t b) {
  uint64_t x = a + b;
  return x >= 2 * q ? x - 2 * q : x;
}

/* SPEC section 5's psi: the first c^((q-1)/2N), c = 2, 3, ..., whose N-th
 * power is not 1. */
static uint64_t ref_psi(uint64_t q, int64_t n) {
  for (uint64_t c = 2;; c++) {
    uint64_t r = ref_powmod(c, (q - 1) / (2 * (uint64_t)n), q);
    if (ref_powmod(r, (uint64_t)n, q) != 1) return r;
  }
}

/* The forward (psi^br(k)) or inverse (psi^-br(k)) table of position p in
 * Montgomery form, REDC(x (R^2 mod q)) as SPEC states (lazy for r62). */
static const uint64_t *ref_twiddles(ref_state *s, int inverse, int32_t p, int64_t n) {
  if (s->tw[inverse][p] && s->tw_n[inverse][p] == n) return s->tw[inverse][p];
  free(s->tw[inverse][p]);
  uint64_t *tw = s->tw[inverse][p] = malloc(sizeof *tw * (size_t)n);
  if (!tw) return NULL;
  s->tw_n[inverse][p] = n;
  const ref_mod *m = &s->mods[p];
  uint64_t psi = ref_psi(m->q, n);
  if (inverse) psi = ref_invmod(psi, m->q);
  int bits = ref_log2(n);
  for (int64_t k = 0; k < n; k++) {
    uint64_t e = s->mut == RG_MUT_NTT ? (uint64_t)k : ref_bitrev((uint64_t)k, bits);
    tw[k] = ref_mul(s->c->radix, m, ref_powmod(psi, e, m->q), m->r2);
  }
  return tw;
}

/* Section 5's butterflies, word for word. */
static void ref_butterflies(const ref_state *s, const ref_mod *m, const uint64_t *tw, int inverse,
                            uint64_t *x, int64_t n) {
  int logn = ref_log2(n);
  uint64_t q = m->q;
  for (int st = 0; st < logn; st++) {
    int64_t t = inverse ? INT64_C(1) << st : n >> (st + 1);
    for (int64_t j = 0; j < n / 2; j++) {
      int64_t g = j / t, lo = 2 * g * t + j % t, hi = lo + t;
      uint64_t a = x[lo], b = x[hi];
      if (!inverse) {
        uint64_t p = ref_mul(s->c->radix, m, tw[(INT64_C(1) << st) + g], b);
        x[lo] = ref_lazyadd(q, a, p);
        x[hi] = ref_lazyadd(q, a, 2 * q - p);
      } else {
        x[lo] = ref_lazyadd(q, a, b);
        x[hi] = ref_mul(s->c->radix, m, tw[(n >> (st + 1)) + g], ref_lazyadd(q, a, 2 * q - b));
      }
    }
  }
}

/* One of section 5's four transforms of a row at chain position p. */
static int ref_transform(ref_state *s, fhjit_ntt_kind kind, int32_t p, uint64_t *x, int64_t n) {
  const ref_mod *m = &s->mods[p];
  fhjit_radix radix = s->c->radix;
  int inverse = kind >= FHJIT_NTT_TO_COEF_MONT;
  const uint64_t *tw = ref_twiddles(s, inverse, p, n);
  if (!tw) return -1;
  if (kind == FHJIT_NTT_COEF_STD_TO_NTT)
    for (int64_t i = 0; i < n; i++) x[i] = ref_mul(radix, m, x[i], m->r2);
  ref_butterflies(s, m, tw, inverse, x, n);
  if (!inverse) return 0;
  uint64_t ninv = ref_mulmod(ref_invmod((uint64_t)n % m->q, m->q), ref_rmod(s, m->q), m->q);
  for (int64_t i = 0; i < n; i++) {
    x[i] = ref_mul(radix, m, x[i], ninv);
    if (kind == FHJIT_NTT_TO_COEF_STD) {
      x[i] = ref_mul(radix, m, x[i], 1);
      if (x[i] >= m->q) x[i] -= m->q;
    }
  }
  return 0;
}

/* SPEC section 7's fast conversion of the integers X ([l, n], source
 * positions sp) to position tp: Y = (sum_i [X_i h_i^-1]_{s_i} h_i) mod t,
 * h_i = prod_{k != i} s_k, its residues computed here. `wrong`: the
 * mutation that forgets h_i^-1. */
static void ref_convert(const ref_state *s, const uint64_t *X, const int32_t *sp, int l,
                        int32_t tp, int64_t n, int wrong, uint64_t *Y) {
  const uint64_t *q = s->c->moduli;
  uint64_t t = q[tp], hinv[RG_MAX_ROWS], ht[RG_MAX_ROWS];
  for (int i = 0; i < l; i++) {
    uint64_t si = q[sp[i]], hs = 1, h_t = 1;
    for (int k = 0; k < l; k++)
      if (k != i) hs = ref_mulmod(hs, q[sp[k]], si), h_t = ref_mulmod(h_t, q[sp[k]], t);
    hinv[i] = wrong ? 1 : ref_invmod(hs, si);
    ht[i] = h_t;
  }
  for (int64_t k = 0; k < n; k++) {
    unsigned __int128 acc = 0; /* l < 2^3 products below 2^120 */
    for (int i = 0; i < l; i++)
      acc += (unsigned __int128)ref_mulmod(X[i * n + k], hinv[i], q[sp[i]]) * ht[i];
    Y[k] = (uint64_t)(acc % t);
  }
}

/* The polynomial (component c, batch entry bidx) a slice op works on: its
 * operand's rows in `in` and its result rows in `out`, [rows, n] each. */
typedef struct ref_slice {
  int64_t n, rows_in, rows_out;
  uint64_t *in, *out, *tmp; /* tmp: [rows_in + 1, n] */
} ref_slice;

static int ref_ntt_op(ref_state *s, fhjit_value v, ref_slice *sl) {
  const ir_node *n = &s->g->nodes[v];
  memcpy(sl->out, sl->in, sizeof *sl->out * (size_t)(sl->rows_out * sl->n));
  for (int64_t r = 0; r < sl->rows_out; r++)
    if (ref_transform(s, (fhjit_ntt_kind)n->attr[0], ref_pos(s, v, r), sl->out + r * sl->n, sl->n))
      return -1;
  return 0;
}

static int ref_bconv_op(ref_state *s, fhjit_value v, ref_slice *sl) {
  const ir_node *n = &s->g->nodes[v];
  fhjit_form form = n->type.form;
  int32_t sp[RG_MAX_ROWS];
  for (int64_t r = 0; r < sl->rows_in; r++) {
    sp[r] = ref_pos(s, n->args[0], r);
    for (int64_t i = 0; i < sl->n; i++)
      sl->tmp[r * sl->n + i] = ref_integer(s, sl->in[r * sl->n + i], form, s->c->moduli[sp[r]]);
  }
  for (int64_t j = 0; j < sl->rows_out; j++) {
    int32_t tp = ref_pos(s, v, j);
    uint64_t *y = sl->out + j * sl->n, t = s->c->moduli[tp];
    ref_convert(s, sl->tmp, sp, (int)sl->rows_in, tp, sl->n, s->mut == RG_MUT_BCONV, y);
    if (form == FHJIT_FORM_MONT)
      for (int64_t i = 0; i < sl->n; i++) y[i] = ref_mulmod(y[i], ref_rmod(s, t), t);
  }
  return 0;
}

/* out = mul(sub(x, u), k) on a row at position p (rescale, moddown). */
static void ref_sub_mul(const ref_state *s, int32_t p, const uint64_t *x, const uint64_t *u,
                        uint64_t k, int64_t n, uint64_t *out) {
  const ref_mod *m = &s->mods[p];
  for (int64_t i = 0; i < n; i++) out[i] = ref_mul(s->c->radix, m, ref_sub(m, x[i], u[i]), k);
}

/* SPEC section 7's rescale: the last row to coefficient-standard, centred
 * by h; each other row minus its lift, times (q^-1 mod q_i) R. */
static int ref_rescale_op(ref_state *s, fhjit_value v, ref_slice *sl) {
  fhjit_value a = s->g->nodes[v].args[0];
  int64_t l = sl->rows_in - 1, n = sl->n;
  int32_t plast = ref_pos(s, a, l);
  uint64_t q = s->c->moduli[plast], h = s->mut == RG_MUT_RESCALE ? 0 : q / 2;
  uint64_t *c = sl->tmp, *u = sl->tmp + n;
  memcpy(c, sl->in + l * n, sizeof *c * (size_t)n);
  if (ref_transform(s, FHJIT_NTT_TO_COEF_STD, plast, c, n)) return -1;
  for (int64_t i = 0; i < n; i++) c[i] = c[i] + h >= q ? c[i] + h - q : c[i] + h;
  for (int64_t r = 0; r < l; r++) {
    int32_t p = ref_pos(s, a, r);
    uint64_t qi = s->c->moduli[p], hq = h % qi;
    for (int64_t i = 0; i < n; i++) u[i] = (c[i] % qi + qi - hq) % qi;
    if (ref_transform(s, FHJIT_NTT_COEF_STD_TO_NTT, p, u, n)) return -1;
    uint64_t k = ref_mulmod(ref_invmod(q % qi, qi), ref_rmod(s, qi), qi);
    ref_sub_mul(s, p, sl->in + r * n, u, k, n, sl->out + r * n);
  }
  return 0;
}

/* Rows src[0..ns) of the operand through NTT -> coefficient-Montgomery,
 * then their integers (from Montgomery form; the mutation reads them as
 * standard) into X; their positions into sp. */
static int ref_to_integers(ref_state *s, fhjit_value a, const ref_slice *sl, const int64_t *src,
                           int ns, int wrong, int32_t *sp, uint64_t *X) {
  for (int k = 0; k < ns; k++) {
    uint64_t *y = X + k * sl->n;
    sp[k] = ref_pos(s, a, src[k]);
    memcpy(y, sl->in + src[k] * sl->n, sizeof *y * (size_t)sl->n);
    if (ref_transform(s, FHJIT_NTT_TO_COEF_MONT, sp[k], y, sl->n)) return -1;
    for (int64_t i = 0; i < sl->n; i++)
      y[i] = ref_integer(s, y[i], wrong ? FHJIT_FORM_STD : FHJIT_FORM_MONT, s->c->moduli[sp[k]]);
  }
  return 0;
}

/* The conversion of X to position tp in Montgomery form, transformed to
 * the NTT domain: modup's and moddown's converted rows. */
static int ref_raise(ref_state *s, const uint64_t *X, const int32_t *sp, int ns, int32_t tp,
                     int64_t n, uint64_t *row) {
  uint64_t t = s->c->moduli[tp];
  ref_convert(s, X, sp, ns, tp, n, 0, row);
  for (int64_t i = 0; i < n; i++) row[i] = ref_mulmod(row[i], ref_rmod(s, t), t);
  return ref_transform(s, FHJIT_NTT_COEF_MONT_TO_NTT, tp, row, n);
}

/* modup(d, j): the digit's rows (chain positions in G_j) unchanged, every
 * other row of d's basis ++ P converted from them. */
static int ref_modup_op(ref_state *s, fhjit_value v, ref_slice *sl) {
  const ir_node *n = &s->g->nodes[v];
  int32_t alpha = fhjit_graph_digit_size(s->g), ql = s->c->rows - fhjit_graph_num_special(s->g);
  int64_t src[RG_MAX_ROWS];
  int32_t sp[RG_MAX_ROWS];
  int ns = 0, in_digit[RG_MAX_ROWS] = {0};
  for (int64_t r = 0; r < sl->rows_in; r++) {
    int32_t p = ref_pos(s, n->args[0], r);
    if (p < ql && p / alpha == n->attr[0]) src[ns++] = r, in_digit[r] = 1;
  }
  if (ref_to_integers(s, n->args[0], sl, src, ns, s->mut == RG_MUT_MODUP, sp, sl->tmp)) return -1;
  for (int64_t o = 0; o < sl->rows_out; o++) {
    uint64_t *row = sl->out + o * sl->n;
    if (o < sl->rows_in && in_digit[o])
      memcpy(row, sl->in + o * sl->n, sizeof *row * (size_t)sl->n);
    else if (ref_raise(s, sl->tmp, sp, ns, ref_pos(s, v, o), sl->n, row))
      return -1;
  }
  return 0;
}

/* moddown(a): Q's rows minus P's converted to them, times (P*^-1 mod q_i) R. */
static int ref_moddown_op(ref_state *s, fhjit_value v, ref_slice *sl) {
  fhjit_value a = s->g->nodes[v].args[0];
  int K = fhjit_graph_num_special(s->g);
  int64_t l = sl->rows_in - K, n = sl->n, src[RG_MAX_ROWS];
  int32_t sp[RG_MAX_ROWS];
  for (int k = 0; k < K; k++) src[k] = l + k;
  uint64_t *u = sl->tmp + K * n;
  if (ref_to_integers(s, a, sl, src, K, 0, sp, sl->tmp)) return -1;
  for (int64_t r = 0; r < l; r++) {
    int32_t p = ref_pos(s, a, r);
    uint64_t qi = s->c->moduli[p], pstar = 1;
    if (ref_raise(s, sl->tmp, sp, K, p, n, u)) return -1;
    for (int k = 0; k < K; k++) pstar = ref_mulmod(pstar, s->c->moduli[sp[k]], qi);
    uint64_t rq = s->mut == RG_MUT_MODDOWN ? 1 : ref_rmod(s, qi); /* R mod q_i */
    uint64_t k = ref_mulmod(ref_invmod(pstar, qi), rq, qi);
    ref_sub_mul(s, p, sl->in + r * n, u, k, n, sl->out + r * n);
  }
  return 0;
}

static int is_slice_op(ir_op op) {
  return op == IR_NTT || op == IR_BCONV || op == IR_RESCALE || op == IR_MODUP || op == IR_MODDOWN;
}

/* A slice op of node v: per component and batch entry, its operand's rows
 * read (broadcast), the op on them, the rows stored. */
static int ref_slices(ref_state *s, fhjit_value v) {
  const ir_node *n = &s->g->nodes[v];
  const fhjit_type *t = &n->type;
  ref_slice sl = {.n = t->n, .rows_in = s->g->nodes[n->args[0]].type.rows, .rows_out = t->rows};
  int64_t big = (sl.rows_in > sl.rows_out ? sl.rows_in : sl.rows_out) + 1;
  sl.in = malloc(sizeof *sl.in * (size_t)(big * t->n));
  sl.out = malloc(sizeof *sl.out * (size_t)(big * t->n));
  sl.tmp = malloc(sizeof *sl.tmp * (size_t)(big * t->n));
  int rc = !sl.in || !sl.out || !sl.tmp ? -1 : 0;
  int64_t comps = t->comps > 0 ? t->comps : 1, nbe = 1;
  for (int a = 0; a < t->nbatch; a++) nbe *= t->batch[a];
  for (int64_t cc = 0; cc < comps && !rc; cc++)
    for (int64_t be = 0; be < nbe && !rc; be++) {
      int64_t bidx[FHJIT_MAX_BATCH] = {0}, rest = be;
      for (int a = t->nbatch - 1; a >= 0; a--) bidx[a] = rest % t->batch[a], rest /= t->batch[a];
      for (int64_t r = 0; r < sl.rows_in; r++)
        for (int64_t i = 0; i < t->n; i++)
          sl.in[r * t->n + i] = ref_read(s, n->args[0], cc, bidx, t->nbatch, r, i);
      switch (n->op) {
      case IR_NTT: rc = ref_ntt_op(s, v, &sl); break;
      case IR_BCONV: rc = ref_bconv_op(s, v, &sl); break;
      case IR_RESCALE: rc = ref_rescale_op(s, v, &sl); break;
      case IR_MODUP: rc = ref_modup_op(s, v, &sl); break;
      default: rc = ref_moddown_op(s, v, &sl); break;
      }
      for (int64_t r = 0; r < sl.rows_out && !rc; r++)
        for (int64_t i = 0; i < t->n; i++)
          s->val[v][ir_layout_offset(&s->dense[v], t->nbatch, cc, bidx, r, i)] =
              sl.out[r * t->n + i];
    }
  free(sl.in);
  free(sl.out);
  free(sl.tmp);
  return rc;
}

typedef struct copy_arg {
  const rg_case *c;
  const void *src;
  uint64_t *dst;
  int64_t next;
} copy_arg;

static void copy_in(int64_t off, int64_t row, void *arg) {
  (void)row;
  copy_arg *a = arg;
  a->dst[a->next++] = get(a->c->radix, a->src, off);
}

/* Node v's value: an input's words, a slice op, or element by element. */
static int ref_node(ref_state *s, fhjit_value v) {
  const ir_node *n = &s->g->nodes[v];
  const fhjit_type *t = &n->type;
  if (n->op == IR_INPUT) { /* dense copy, in the row-major order of the dense layout */
    axes ax;
    axes_of(t, &n->layout, &ax);
    copy_arg a = {s->c, s->c->inputs[n->input_index], s->val[v], 0};
    for_each(&ax, n->layout.offset, copy_in, &a);
    return 0;
  }
  if (is_slice_op(n->op)) return ref_slices(s, v);
  int64_t comps = t->comps > 0 ? t->comps : 1, nbe = 1;
  for (int a = 0; a < t->nbatch; a++) nbe *= t->batch[a];
  for (int64_t cc = 0; cc < comps; cc++)
    for (int64_t be = 0; be < nbe; be++) {
      int64_t bidx[FHJIT_MAX_BATCH] = {0}, rest = be;
      for (int a = t->nbatch - 1; a >= 0; a--) bidx[a] = rest % t->batch[a], rest /= t->batch[a];
      for (int64_t r = 0; r < t->rows; r++)
        for (int64_t i = 0; i < t->n; i++)
          s->val[v][ir_layout_offset(&s->dense[v], t->nbatch, cc, bidx, r, i)] =
              ref_elem(s, v, cc, bidx, r, i);
    }
  return 0;
}

/* Allocates node v's dense value and, for a polynomial on a stated basis,
 * its chain positions. */
static int ref_alloc(ref_state *s, fhjit_value v) {
  const fhjit_type *t = &s->g->nodes[v].type;
  int64_t count = fhjit_type_elements(t);
  s->val[v] = malloc(sizeof **s->val * (size_t)(count > 0 ? count : 1));
  if (!s->val[v] || fhjit_dense_layout(t, &s->dense[v]) != FHJIT_OK) return -1;
  if (t->kind != FHJIT_KIND_POLY || t->rows > RG_MAX_ROWS) return 0;
  int32_t *pos = malloc(sizeof *pos * (size_t)t->rows), nb = 0;
  if (!pos || fhjit_value_basis(s->g, v, pos, (int32_t)t->rows, &nb) != FHJIT_OK) {
    free(pos);
    return -1;
  }
  s->pos[v] = pos;
  return 0;
}

int rg_reference_mutant(const rg_case *c, void *const *results, rg_mutation mutation,
                        char *err, size_t errsize) {
  fhjit_graph *g = c->g;
  ref_state s = {.c = c, .g = g, .mut = mutation};
  for (int32_t r = 0; r < c->rows; r++) s.mods[r] = ref_mod_make(c->radix, c->moduli[r]);
  s.val = calloc((size_t)g->nnodes, sizeof *s.val);
  s.dense = calloc((size_t)g->nnodes, sizeof *s.dense);
  s.pos = calloc((size_t)g->nnodes, sizeof *s.pos);
  int rc = 0;
  if (!s.val || !s.dense || !s.pos) {
    rc = -1;
    rg_fail(err, errsize, "rg_reference: out of memory");
  }
  for (int32_t v = 0; v < g->nnodes && rc == 0; v++) {
    if (ref_alloc(&s, v)) {
      rc = -1;
      rg_fail(err, errsize, "rg_reference: cannot allocate value %%%s", g->nodes[v].name);
    } else if (ref_node(&s, v)) {
      rc = -1;
      rg_fail(err, errsize, "rg_reference: out of memory evaluating %%%s", g->nodes[v].name);
    }
  }
  for (int32_t k = 0; k < c->nresults && rc == 0; k++) {
    fhjit_value v = g->results[k].value;
    for (int64_t i = 0; i < c->result_words[k]; i++) put(c->radix, results[k], i, s.val[v][i]);
  }
  for (int32_t v = 0; s.val && v < g->nnodes; v++) free(s.val[v]);
  for (int32_t v = 0; s.pos && v < g->nnodes; v++) free(s.pos[v]);
  for (int d = 0; d < 2; d++)
    for (int p = 0; p < RG_MAX_ROWS; p++) free(s.tw[d][p]);
  free(s.val);
  free(s.dense);
  free(s.pos);
  return rc;
}

int rg_reference(const rg_case *c, void *const *results, char *err, size_t errsize) {
  return rg_reference_mutant(c, results, RG_MUT_NONE, err, errsize);
}


/* -------------------------------------------------------------- reports */

static void describe_type(sp_buf *b, const fhjit_type *t) {
  if (t->kind == FHJIT_KIND_KEY) {
    sp_buf_printf(b, "key<%lld, 2, %lld, %lld>", (long long)t->digits, (long long)t->rows,
                  (long long)t->n);
    return;
  }
  sp_buf_printf(b, "%s<", t->comps ? "ct" : "pt");
  if (t->comps) sp_buf_printf(b, "%d, ", t->comps);
  sp_buf_printf(b, "[");
  for (int a = 0; a < t->nbatch; a++) sp_buf_printf(b, "%s%lld", a ? ", " : "", (long long)t->batch[a]);
  sp_buf_printf(b, "], %lld, %lld>", (long long)t->rows, (long long)t->n);
  if (t->domain || t->form)
    sp_buf_printf(b, " %s %s", ir_domain_name(t->domain), ir_form_name(t->form));
}

/* " basis [..]" for a polynomial value on another basis than [0, rows). */
static void describe_basis(sp_buf *b, const fhjit_graph *g, fhjit_value v) {
  int32_t pos[RG_MAX_ROWS], count = 0, plain = 1;
  const fhjit_type *t = &g->nodes[v].type;
  if (t->kind != FHJIT_KIND_POLY || t->rows > RG_MAX_ROWS ||
      fhjit_value_basis(g, v, pos, RG_MAX_ROWS, &count) != FHJIT_OK)
    return;
  for (int32_t r = 0; r < count; r++) plain &= pos[r] == r;
  if (plain) return;
  sp_buf_printf(b, " basis [");
  for (int32_t r = 0; r < count; r++) sp_buf_printf(b, "%s%d", r ? " " : "", (int)pos[r]);
  sp_buf_printf(b, "]");
}

char *rg_describe(const rg_case *c) {
  fhjit_graph *g = c->g;
  sp_buf b = {0};
  const char *text = fhjit_print(g);
  fhjit_clear_error(fhjit_graph_context(g));
  sp_buf_printf(&b, "graph @%s, radix %s, rows %d, n %lld, moduli", g->name,
                ir_radix_name(c->radix), (int)c->rows, (long long)c->n);
  for (int32_t r = 0; r < c->rows; r++) sp_buf_printf(&b, " %llu", (unsigned long long)c->moduli[r]);
  sp_buf_printf(&b, ", pstride %lld\n", (long long)c->pstride);
  if (text) sp_buf_printf(&b, "%s", text);
  sp_buf_printf(&b, "nodes:\n");
  for (int32_t v = 0; v < g->nnodes; v++) {
    const ir_node *n = &g->nodes[v];
    sp_buf_printf(&b, "  %%%s = %s", n->name, ir_op_name(n->op));
    for (int a = 0; a < n->nargs; a++) sp_buf_printf(&b, "%s%%%s", a ? ", " : " ", g->nodes[n->args[a]].name);
    if (n->op == IR_MUL_COMPRESSED || n->op == IR_ADD_COMPRESSED)
      sp_buf_printf(&b, " [%s%s%s]", ir_compression_name((fhjit_compression)n->attr[0]),
                    n->op == IR_ADD_COMPRESSED ? " " : "",
                    n->op == IR_ADD_COMPRESSED ? ir_domain_name((fhjit_domain)n->attr[1]) : "");
    if (n->op == IR_KS_DIGIT_PRODUCT)
      sp_buf_printf(&b, " [digit %lld, row_start %lld]", (long long)n->attr[0], (long long)n->attr[1]);
    if (n->op == IR_EXTRACT) sp_buf_printf(&b, " [%lld]", (long long)n->attr[0]);
    if (n->op == IR_MODUP) sp_buf_printf(&b, " [digit %lld]", (long long)n->attr[0]);
    sp_buf_printf(&b, " : ");
    describe_type(&b, &n->type);
    describe_basis(&b, g, v);
    if (n->op == IR_INPUT) {
      const fhjit_layout *l = &n->layout;
      sp_buf_printf(&b, " layout{off %lld, comp %lld, digit %lld, batch [%lld %lld %lld %lld], "
                        "row %lld, index %lld}",
                    (long long)l->offset, (long long)l->comp_stride, (long long)l->digit_stride,
                    (long long)l->batch_stride[0], (long long)l->batch_stride[1],
                    (long long)l->batch_stride[2], (long long)l->batch_stride[3],
                    (long long)l->row_stride, (long long)l->index_stride);
    }
    if (g->result_of && g->result_of[v] >= 0) sp_buf_printf(&b, " (result #%d)", (int)g->result_of[v]);
    sp_buf_printf(&b, "\n");
  }
  for (int32_t o = 0; o < g->noutputs; o++)
    sp_buf_printf(&b, "  output %s = %%%s\n", g->outputs[o].name, g->nodes[g->outputs[o].value].name);
  if (!b.data) return NULL;
  return b.data;
}

int64_t rg_compare(const rg_case *c, void *const *a, const char *a_name, void *const *b,
                   const char *b_name, char *report, size_t size) {
  int64_t bad = 0;
  int32_t first_k = -1;
  int64_t first_i = 0;
  for (int32_t k = 0; k < c->nresults; k++)
    for (int64_t i = 0; i < c->result_words[k]; i++)
      if (get(c->radix, a[k], i) != get(c->radix, b[k], i)) {
        if (first_k < 0) first_k = k, first_i = i;
        bad++;
      }
  if (bad == 0 || !report || !size) return bad;
  const fhjit_graph *g = c->g;
  const ir_result *res = &g->results[first_k];
  const fhjit_type *t = &res->type;
  int64_t rest = first_i, i = rest % t->n, row;
  rest /= t->n;
  row = rest % t->rows;
  rest /= t->rows;
  int64_t bidx[FHJIT_MAX_BATCH] = {0};
  for (int x = t->nbatch - 1; x >= 0; x--) bidx[x] = rest % t->batch[x], rest /= t->batch[x];
  char coords[160];
  int used = snprintf(coords, sizeof coords, "[");
  if (t->comps) used += snprintf(coords + used, sizeof coords - (size_t)used, "c=%lld, ", (long long)rest);
  for (int x = 0; x < t->nbatch; x++)
    used += snprintf(coords + used, sizeof coords - (size_t)used, "b%d=%lld, ", x, (long long)bidx[x]);
  snprintf(coords + used, sizeof coords - (size_t)used, "row=%lld, i=%lld]", (long long)row, (long long)i);
  char *desc = rg_describe(c);
  snprintf(report, size,
           "%lld of the result words differ between %s and %s; first: result #%d (value %%%s) "
           "element %s (word %lld): %s %llu, %s %llu (q = %llu)\n%s",
           (long long)bad, a_name, b_name, (int)first_k, g->nodes[res->value].name, coords,
           (long long)first_i, a_name, (unsigned long long)get(c->radix, a[first_k], first_i),
           b_name, (unsigned long long)get(c->radix, b[first_k], first_i),
           (unsigned long long)c->moduli[row], desc ? desc : "");
  free(desc);
  return bad;
}

int rg_check_inputs(const rg_case *c, const char *backend, char *err, size_t errsize) {
  size_t word = ir_word_size(c->radix);
  for (int32_t i = 0; i < c->ninputs; i++)
    if (memcmp(c->inputs[i], c->input_copy[i], word * (size_t)c->input_words[i]) != 0) {
      rg_fail(err, errsize, "%s modified input #%d (%%%s) of graph @%s", backend, (int)i,
              fhjit_value_name(c->g, fhjit_input_value(c->g, i)), fhjit_graph_name(c->g));
      return -1;
    }
  return 0;
}
