/* tables.c: the constant tables of SPEC section 7 (tables.h): sizes, the
 * words computed from the chain, the public builders (fhjit_bconv_table,
 * fhjit_rescale_table, fhjit_moddown_table, fhjit_input_table). Every
 * constant is stored in Montgomery form (x R mod q, canonical), the form in
 * which one REDC or one exact reduction of a sum of products gives SPEC's
 * representative (docs/section7.md). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/modarith.h"
#include "ir/tables.h"

static uint64_t mont(fhjit_radix radix, uint64_t x, uint64_t q) {
  return ir_mulmod(x % q, ir_mont_r1(q, ir_word_bits(radix)), q);
}

/* The moduli at positions a ++ b are pairwise coprime, else why. */
static const char *coprime_problem(const uint64_t *chain, const int32_t *a, int32_t na,
                                   const int32_t *b, int32_t nb, char *why, size_t size) {
  for (int32_t i = 0; i < na + nb; i++)
    for (int32_t k = 0; k < i; k++) {
      int32_t pi = i < na ? a[i] : b[i - na], pk = k < na ? a[k] : b[k - na];
      if (ir_gcd(chain[pi], chain[pk]) != 1) {
        snprintf(why, size,
                 "the moduli are not pairwise coprime: #%d = %llu and #%d = %llu share the "
                 "factor %llu",
                 (int)pk, (unsigned long long)chain[pk], (int)pi, (unsigned long long)chain[pi],
                 (unsigned long long)ir_gcd(chain[pi], chain[pk]));
        return why;
      }
    }
  return NULL;
}

/* h_i mod t: the product of the source moduli other than #i, reduced mod t. */
static uint64_t others_product(const uint64_t *chain, const int32_t *src, int32_t nsrc, int32_t i,
                               uint64_t t) {
  uint64_t h = 1 % t;
  for (int32_t k = 0; k < nsrc; k++)
    if (k != i) h = ir_mulmod(h, chain[src[k]] % t, t);
  return h;
}

const char *ir_bconv_words(fhjit_radix radix, const uint64_t *chain, const int32_t *src,
                           int32_t nsrc, const int32_t *dst, int32_t ndst, uint64_t *out,
                           char *why, size_t size) {
  const char *bad = coprime_problem(chain, src, nsrc, dst, ndst, why, size);
  if (bad) return bad;
  for (int32_t i = 0; i < nsrc; i++) {
    uint64_t s = chain[src[i]];
    out[i] = mont(radix, ir_invmod(others_product(chain, src, nsrc, i, s), s), s);
  }
  for (int32_t j = 0; j < ndst; j++) {
    uint64_t t = chain[dst[j]];
    for (int32_t i = 0; i < nsrc; i++)
      out[nsrc + (int64_t)j * nsrc + i] = mont(radix, others_product(chain, src, nsrc, i, t), t);
  }
  return NULL;
}

const char *ir_inverse_words(fhjit_radix radix, const uint64_t *chain, const int32_t *pos,
                             int32_t npos, const int32_t *div, int32_t ndiv, uint64_t *out,
                             char *why, size_t size) {
  const char *bad = coprime_problem(chain, pos, npos, div, ndiv, why, size);
  if (bad) return bad;
  for (int32_t i = 0; i < npos; i++) {
    uint64_t q = chain[pos[i]], m = 1 % q;
    for (int32_t k = 0; k < ndiv; k++) m = ir_mulmod(m, chain[div[k]] % q, q);
    out[i] = mont(radix, ir_invmod(m, q), q);
  }
  return NULL;
}

/* ------------------------------------------------------ per node */

int64_t ir_digit_rows(const fhjit_graph *g, fhjit_value v, int64_t j, int64_t *rows_out) {
  int32_t first, count;
  if (!ir_digit_group(g, j, &first, &count)) return 0;
  int64_t k = 0;
  for (int64_t r = 0; r < g->nodes[v].type.rows; r++) {
    int64_t p = ir_pos(g, v, r);
    if (p >= first && p < first + count) {
      if (rows_out) rows_out[k] = r;
      k++;
    }
  }
  return k;
}

int ir_conversion_bases(const fhjit_graph *g, const ir_node *n, int32_t **src, int32_t *nsrc,
                        int32_t **dst, int32_t *ndst) {
  fhjit_value a = n->args[0];
  int64_t rows = g->nodes[a].type.rows, K = g->nspecial;
  int32_t *s = malloc(sizeof *s * (size_t)(rows + K + 1)),
          *d = malloc(sizeof *d * (size_t)(rows + K + n->decl_nbasis + 1));
  if (!s || !d) {
    free(s);
    free(d);
    return 0;
  }
  *nsrc = *ndst = 0;
  if (n->op == IR_BCONV) {
    for (int64_t r = 0; r < rows; r++) s[(*nsrc)++] = (int32_t)ir_pos(g, a, r);
    for (int32_t j = 0; j < n->decl_nbasis; j++) d[(*ndst)++] = n->decl_basis[j];
  } else if (n->op == IR_MODUP) {
    int32_t first = 0, count = 0;
    ir_digit_group(g, n->attr[0], &first, &count);
    for (int64_t r = 0; r < rows; r++) {
      int32_t p = (int32_t)ir_pos(g, a, r);
      if (p >= first && p < first + count) s[(*nsrc)++] = p;
      else d[(*ndst)++] = p;
    }
    for (int32_t k = g->nmoduli - g->nspecial; k < g->nmoduli; k++) d[(*ndst)++] = k;
  } else if (n->op == IR_MODDOWN) {
    for (int64_t r = 0; r < rows; r++)
      if (r < rows - K) d[(*ndst)++] = (int32_t)ir_pos(g, a, r);
      else s[(*nsrc)++] = (int32_t)ir_pos(g, a, r);
  }
  *src = s;
  *dst = d;
  return 1;
}

int64_t ir_table_len(const fhjit_graph *g, const ir_node *n) {
  int64_t rows = g->nodes[n->args[0]].type.rows, K = g->nspecial;
  switch (n->op) {
  case IR_BCONV: return rows * (1 + n->decl_nbasis);
  case IR_RESCALE: return rows - 1;
  case IR_MODUP: {
    int64_t dj = ir_digit_rows(g, n->args[0], n->attr[0], NULL);
    return dj * (1 + rows + K - dj);
  }
  case IR_MODDOWN: return K + K * (rows - K) + (rows - K);
  default: return 0;
  }
}

fhjit_status ir_node_table(fhjit_graph *g, const ir_node *n, const uint64_t *chain,
                           uint64_t **out) {
  int64_t len = ir_table_len(g, n);
  uint64_t *w = malloc(sizeof *w * (size_t)(len ? len : 1));
  int32_t *src = NULL, *dst = NULL, nsrc = 0, ndst = 0;
  if (!w || !ir_conversion_bases(g, n, &src, &nsrc, &dst, &ndst)) {
    free(w);
    return ir_error(g->ctx, FHJIT_ERR_MEMORY, "graph @%s: out of memory", g->name);
  }
  char why[256];
  const char *bad = NULL;
  if (n->op == IR_RESCALE) {
    int64_t l = g->nodes[n->args[0]].type.rows - 1;
    int32_t *pos = src; /* rows + 1 slots: room for the basis */
    for (int64_t r = 0; r < l; r++) pos[r] = (int32_t)ir_pos(g, n->args[0], r);
    int32_t last = (int32_t)ir_pos(g, n->args[0], l);
    bad = ir_inverse_words(g->radix, chain, pos, (int32_t)l, &last, 1, w, why, sizeof why);
  } else {
    bad = ir_bconv_words(g->radix, chain, src, nsrc, dst, ndst, w, why, sizeof why);
    if (!bad && n->op == IR_MODDOWN)
      bad = ir_inverse_words(g->radix, chain, dst, ndst, src, nsrc,
                             w + nsrc + (int64_t)nsrc * ndst, why, sizeof why);
  }
  free(src);
  free(dst);
  if (bad) {
    free(w);
    return ir_error_at(g, n->loc, FHJIT_ERR_MODULUS, "%%%s = %s: %s", n->name,
                       ir_op_name(n->op), bad);
  }
  *out = w;
  return FHJIT_OK;
}

/* ------------------------------------------------------ public helpers */

static void put_word(fhjit_radix radix, void *buf, int64_t i, uint64_t x) {
  if (radix == FHJIT_R32) ((uint32_t *)buf)[i] = (uint32_t)x;
  else ((uint64_t *)buf)[i] = x;
}

int64_t fhjit_bconv_table_size(int32_t nsrc, int32_t ndst) {
  if (nsrc < 1 || ndst < 1) return -1;
  return (int64_t)nsrc * (1 + (int64_t)ndst); /* 1 + ndst in 64 bits: ndst may be INT32_MAX */
}

/* Checks a chain (each modulus fit for the radix) and lists of positions
 * into it (distinct, in range; a and b disjoint). */
static fhjit_status check_lists(fhjit_context *ctx, const char *fn, fhjit_radix radix,
                                const uint64_t *chain, int32_t nchain, const int32_t *a,
                                int32_t na, const int32_t *b, int32_t nb) {
  if (radix != FHJIT_R32 && radix != FHJIT_R62)
    return ir_error(ctx, FHJIT_ERR_ARGUMENT, "%s: unknown radix %d", fn, (int)radix);
  if (!chain || nchain < 1 || !a || na < 1 || (nb > 0 && !b) || nb < 0)
    return ir_error(ctx, FHJIT_ERR_ARGUMENT, "%s: empty or null chain or position list", fn);
  for (int32_t i = 0; i < nchain; i++) {
    fhjit_status st = fhjit_check_modulus(ctx, radix, chain[i], 0);
    if (st) return st;
  }
  for (int32_t i = 0; i < na + nb; i++) {
    int32_t p = i < na ? a[i] : b[i - na];
    if (p < 0 || p >= nchain)
      return ir_error(ctx, FHJIT_ERR_ARGUMENT, "%s: position %d is not in the chain of %d moduli",
                      fn, (int)p, (int)nchain);
    for (int32_t k = 0; k < i; k++)
      if ((k < na ? a[k] : b[k - na]) == p)
        return ir_error(ctx, FHJIT_ERR_ARGUMENT,
                        "%s: position %d repeats (a basis, and the two bases together, hold "
                        "distinct positions)",
                        fn, (int)p);
  }
  return FHJIT_OK;
}

static fhjit_status emit_words(fhjit_context *ctx, const char *fn, fhjit_radix radix,
                               const char *bad, const uint64_t *w, int64_t len, void *out) {
  if (bad) return ir_error(ctx, FHJIT_ERR_MODULUS, "%s: %s", fn, bad);
  for (int64_t i = 0; i < len; i++) put_word(radix, out, i, w[i]);
  return FHJIT_OK;
}

fhjit_status fhjit_bconv_table(fhjit_context *ctx, fhjit_radix radix, const uint64_t *chain,
                               int32_t nchain, const int32_t *src, int32_t nsrc,
                               const int32_t *dst, int32_t ndst, void *out) {
  const char *fn = "fhjit_bconv_table";
  fhjit_status st = check_lists(ctx, fn, radix, chain, nchain, src, nsrc, dst, ndst);
  if (st) return st;
  if (!out || ndst < 1) return ir_error(ctx, FHJIT_ERR_ARGUMENT, "%s: null output or empty target", fn);
  int64_t len = fhjit_bconv_table_size(nsrc, ndst);
  uint64_t *w = malloc(sizeof *w * (size_t)len);
  if (!w) return ir_error(ctx, FHJIT_ERR_MEMORY, "%s: out of memory", fn);
  char why[256];
  const char *bad = ir_bconv_words(radix, chain, src, nsrc, dst, ndst, w, why, sizeof why);
  st = emit_words(ctx, fn, radix, bad, w, len, out);
  free(w);
  return st;
}

fhjit_status fhjit_rescale_table(fhjit_context *ctx, fhjit_radix radix, const uint64_t *chain,
                                 int32_t nchain, const int32_t *basis, int32_t nbasis,
                                 void *out) {
  const char *fn = "fhjit_rescale_table";
  fhjit_status st = check_lists(ctx, fn, radix, chain, nchain, basis, nbasis, NULL, 0);
  if (st) return st;
  if (!out || nbasis < 2)
    return ir_error(ctx, FHJIT_ERR_ARGUMENT, "%s: null output or a basis of fewer than 2 rows", fn);
  uint64_t w[1];
  uint64_t *words = nbasis - 1 > 1 ? malloc(sizeof *words * (size_t)(nbasis - 1)) : w;
  if (!words) return ir_error(ctx, FHJIT_ERR_MEMORY, "%s: out of memory", fn);
  char why[256];
  const char *bad = ir_inverse_words(radix, chain, basis, nbasis - 1, basis + nbasis - 1, 1,
                                     words, why, sizeof why);
  st = emit_words(ctx, fn, radix, bad, words, nbasis - 1, out);
  if (words != w) free(words);
  return st;
}

fhjit_status fhjit_moddown_table(fhjit_context *ctx, fhjit_radix radix, const uint64_t *chain,
                                 int32_t nchain, const int32_t *q, int32_t nq, const int32_t *p,
                                 int32_t np, void *out) {
  const char *fn = "fhjit_moddown_table";
  fhjit_status st = check_lists(ctx, fn, radix, chain, nchain, q, nq, p, np);
  if (st) return st;
  if (!out || np < 1) return ir_error(ctx, FHJIT_ERR_ARGUMENT, "%s: null output or empty P", fn);
  int64_t len = np + (int64_t)np * nq + nq;
  uint64_t *w = malloc(sizeof *w * (size_t)len);
  if (!w) return ir_error(ctx, FHJIT_ERR_MEMORY, "%s: out of memory", fn);
  char why[256];
  const char *bad = ir_bconv_words(radix, chain, p, np, q, nq, w, why, sizeof why);
  if (!bad)
    bad = ir_inverse_words(radix, chain, q, nq, p, np, w + np + (int64_t)np * nq, why, sizeof why);
  st = emit_words(ctx, fn, radix, bad, w, len, out);
  free(w);
  return st;
}

fhjit_status fhjit_input_table(fhjit_graph *g, int32_t index, void *out, int64_t *len) {
  if (!g) return FHJIT_ERR_ARGUMENT;
  const char *fn = "fhjit_input_table";
  if (!len) return ir_error(g->ctx, FHJIT_ERR_ARGUMENT, "%s: graph @%s: null len", fn, g->name);
  if (!g->bound)
    return ir_error(g->ctx, FHJIT_ERR_ARGUMENT, "%s: graph @%s is not bound (fhjit_bind first)", fn,
                    g->name);
  if (index < 0 || index >= g->ninputs)
    return ir_error(g->ctx, FHJIT_ERR_ARGUMENT, "%s: graph @%s has no input %d (it has %d)", fn,
                    g->name, (int)index, (int)g->ninputs);
  fhjit_value v = g->inputs[index];
  const ir_node *user = NULL;
  for (int32_t i = 0; i < g->nnodes && !user; i++)
    for (int k = 0; k < g->nodes[i].nargs; k++)
      if (g->nodes[i].args[k] == v && g->nodes[v].type.kind == FHJIT_KIND_TABLE)
        user = &g->nodes[i];
  if (!user)
    return ir_error(g->ctx, FHJIT_ERR_ARGUMENT, "%s: input %%%s is not a table any op reads", fn,
                    g->nodes[v].name);
  if (g->nmoduli == 0)
    return ir_error(g->ctx, FHJIT_ERR_ARGUMENT,
                    "%s: graph @%s states no moduli; its tables are built from the chain", fn,
                    g->name);
  int64_t n = ir_table_len(g, user);
  if (!out) {
    *len = n;
    return FHJIT_OK;
  }
  uint64_t *w = NULL;
  fhjit_status st = ir_node_table(g, user, g->moduli, &w);
  if (st) return st; /* *len and out untouched */
  *len = n;
  for (int64_t i = 0; i < n; i++) put_word(g->radix, out, i, w[i]);
  free(w);
  return FHJIT_OK;
}
