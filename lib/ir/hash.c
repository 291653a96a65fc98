/* hash.c: the canonical 128-bit hash of a bound graph, the key of compile
 * caches. It covers what changes the generated code: radix, live ops and
 * their attributes, concrete types, canonical input layouts, the outputs'
 * structure, and for section 7's ops the domain and form their code
 * depends on. It ignores names, moduli, formatting and dead values. */
#include <stdlib.h>
#include <string.h>

#include "ir/ir.h"

/* Two independent 64-bit FNV-1a style lanes with a final avalanche. */
typedef struct hasher {
  uint64_t a, b;
} hasher;

static void mix(hasher *h, uint64_t x) {
  for (int i = 0; i < 8; i++) {
    uint8_t byte = (uint8_t)(x >> (8 * i));
    h->a = (h->a ^ byte) * UINT64_C(0x100000001b3);
    h->b = (h->b ^ byte) * UINT64_C(0x9e3779b97f4a7c15);
  }
}

static uint64_t finish(uint64_t x) {
  x ^= x >> 33;
  x *= UINT64_C(0xff51afd7ed558ccd);
  x ^= x >> 33;
  x *= UINT64_C(0xc4ceb9fe1a85ec53);
  x ^= x >> 33;
  return x;
}

static void mix_type(hasher *h, const fhjit_type *t) {
  mix(h, (uint64_t)t->kind);
  mix(h, (uint64_t)t->comps);
  mix(h, (uint64_t)t->nbatch);
  for (int a = 0; a < t->nbatch; a++) mix(h, (uint64_t)t->batch[a]);
  mix(h, (uint64_t)t->digits);
  mix(h, (uint64_t)t->rows);
  mix(h, (uint64_t)t->n);
}

/* Whether lowering op reads the ntt_plan option: the NTT itself, and every
 * op the step planner runs (limb mixing, row views, automorphisms), whose
 * kernels are NTTs with prologues and epilogues and whose fusions are
 * ntt_plan keys (ipfuse, mdrs, pminor, autpro, ...). Testing for IR_NTT
 * alone, a CKKS graph's hash ignored the option, so the disk cache served
 * one plan's cubin for another whose kernels had the same launch shape
 * (an A/B of pminor measured one plan twice). */
static int reads_ntt_plan(ir_op op) {
  ir_op_class c = ir_op_class_of(op);
  return c == IR_CLASS_ANCHOR || c == IR_CLASS_MIXING || c == IR_CLASS_ROWS || c == IR_CLASS_PERMUTE;
}

/* Which nodes of g are live (1): its inputs (ABI slots) and the cone of
 * its outputs; NULL when out of memory. The hash covers these only, so
 * whatever a cached kernel's facts are drawn from must be these too. */
unsigned char *ir_live_nodes(const fhjit_graph *g) {
  unsigned char *live = malloc((size_t)g->nnodes + 1);
  if (!live) return NULL;
  for (int32_t i = 0; i < g->nnodes; i++) live[i] = g->nodes[i].op == IR_INPUT;
  for (int32_t i = 0; i < g->noutputs; i++) live[g->outputs[i].value] = 1;
  for (int32_t i = g->nnodes - 1; i >= 0; i--)
    if (live[i])
      for (int k = 0; k < g->nodes[i].nargs; k++) live[g->nodes[i].args[k]] = 1;
  return live;
}

/* The hash of bound graph g's structure (what fhjit_bind caches); 0 when
 * out of memory (nothing recorded). *live_ntt: g's lowering reads the NTT
 * plan (reads_ntt_plan). */
static int compute(const fhjit_graph *g, uint64_t out[2], int *live_ntt) {
  /* Live nodes, renumbered densely; inputs are always live (ABI slots). */
  int32_t *canon = malloc(sizeof *canon * (size_t)(g->nnodes ? g->nnodes : 1));
  unsigned char *live = ir_live_nodes(g);
  if (!canon || !live) {
    free(canon);
    free(live);
    return 0;
  }
  int32_t next = 0;
  for (int32_t i = 0; i < g->nnodes; i++) canon[i] = live[i] ? next++ : -1;
  free(live);

  hasher h = {UINT64_C(0xcbf29ce484222325), UINT64_C(0x84222325cbf29ce4)};
  mix(&h, 0x66686a6974ULL); /* "fhjit" */
  mix(&h, (uint64_t)g->radix);
  if (g->nspecial || g->alpha) { /* the chain's split and digits (section 7) */
    mix(&h, (uint64_t)g->nmoduli);
    mix(&h, (uint64_t)g->nspecial);
    mix(&h, (uint64_t)g->alpha);
  }
  for (int32_t i = 0; i < g->nnodes; i++) {
    if (canon[i] < 0) continue;
    const ir_node *n = &g->nodes[i];
    mix(&h, (uint64_t)n->op);
    mix(&h, (uint64_t)n->nargs);
    for (int k = 0; k < n->nargs; k++) mix(&h, (uint64_t)canon[n->args[k]]);
    mix(&h, (uint64_t)n->attr[0]);
    mix(&h, (uint64_t)n->attr[1]);
    mix_type(&h, &n->type);
    /* section 7: only where stated, so graphs without bases hash as before */
    if (n->basis) {
      mix(&h, UINT64_C(0xba5e));
      for (int64_t r = 0; r < n->type.rows; r++) mix(&h, (uint64_t)n->basis[r]);
    }
    if (n->op != IR_INPUT && n->decl_basis)
      for (int32_t r = 0; r < n->decl_nbasis; r++) mix(&h, (uint64_t)n->decl_basis[r]);
    /* section 7's code depends on domain and form (the automorphism's
     * permutation, bconv's conversion of the form): mixed for these ops
     * only, so graphs without them hash as before */
    ir_op_class cls = ir_op_class_of(n->op);
    if (cls == IR_CLASS_ROWS || cls == IR_CLASS_PERMUTE || cls == IR_CLASS_MIXING) {
      mix(&h, (uint64_t)n->type.domain);
      mix(&h, (uint64_t)n->type.form);
    }
    if (n->op == IR_INPUT) {
      mix(&h, (uint64_t)n->input_index);
      const fhjit_layout *l = &n->layout;
      mix(&h, (uint64_t)l->offset);
      mix(&h, (uint64_t)l->comp_stride);
      for (int a = 0; a < FHJIT_MAX_BATCH; a++) mix(&h, (uint64_t)l->batch_stride[a]);
      mix(&h, (uint64_t)l->digit_stride);
      mix(&h, (uint64_t)l->row_stride);
      mix(&h, (uint64_t)l->index_stride);
    }
  }
  *live_ntt = 0;
  for (int32_t i = 0; i < g->nnodes; i++)
    if (canon[i] >= 0 && reads_ntt_plan(g->nodes[i].op)) *live_ntt = 1;
  mix(&h, (uint64_t)g->noutputs);
  for (int32_t i = 0; i < g->noutputs; i++) {
    const ir_output *o = &g->outputs[i];
    mix(&h, (uint64_t)canon[o->value]);
    mix(&h, (uint64_t)o->is_input_alias);
    mix(&h, (uint64_t)o->source);
    mix(&h, (uint64_t)(int64_t)o->component);
  }
  free(canon);
  out[0] = finish(h.a);
  out[1] = finish(h.b ^ h.a);
  return 1;
}

/* NTT schedules can be overridden for tuning (the context's ntt_plan
 * option or FHJIT_NTT_PLAN, read when the plan is chosen, at compile time):
 * a cached kernel of another schedule must not be taken for this one. Mixed
 * in at every call, after the cached structural hash, since the option may
 * change after fhjit_bind. */
static void mix_ntt_plan(const fhjit_context *ctx, uint64_t out[2], int live_ntt) {
  const char *ntt_plan = ir_option(ctx, IR_OPT_NTT_PLAN);
  /* and the schedule (ntt_schedule), separated from the keys by a byte no
   * key holds */
  const char *sched = ir_option(ctx, IR_OPT_NTT_SCHEDULE);
  int has_plan = ntt_plan && *ntt_plan, has_sched = sched && *sched && strcmp(sched, "auto");
  if (!live_ntt || (!has_plan && !has_sched)) return;
  hasher h = {out[0], out[1]};
  for (const char *c = has_plan ? ntt_plan : ""; *c; c++) mix(&h, (uint64_t)(unsigned char)*c);
  if (has_sched) {
    mix(&h, 0x100u);
    for (const char *c = sched; *c; c++) mix(&h, (uint64_t)(unsigned char)*c);
  }
  out[0] = finish(h.a);
  out[1] = finish(h.b ^ h.a);
}

void ir_cache_hash(fhjit_graph *g) {
  g->hash_valid = g->bound && compute(g, g->hash, &g->hash_live_ntt);
}

fhjit_status fhjit_graph_hash(const fhjit_graph *g, uint64_t out[2]) {
  if (!g) return FHJIT_ERR_ARGUMENT;
  if (!out) return ir_error(g->ctx, FHJIT_ERR_ARGUMENT, "fhjit_graph_hash: null output pointer");
  if (!g->bound)
    return ir_error(g->ctx, FHJIT_ERR_ARGUMENT,
                    "fhjit_graph_hash: graph @%s is not bound (call fhjit_bind)", g->name);
  int live_ntt = g->hash_live_ntt;
  if (g->hash_valid) out[0] = g->hash[0], out[1] = g->hash[1];
  else if (!compute(g, out, &live_ntt))
    return ir_error(g->ctx, FHJIT_ERR_MEMORY, "fhjit_graph_hash: out of memory");
  mix_ntt_plan(g->ctx, out, live_ntt);
  return FHJIT_OK;
}
