/* anchor_plan.c: the step plan of a graph with NTT anchors or SPEC section
 * 7 ops (anchor.c says how such graphs run). lw_anchor_build_plan walks the
 * live nodes in node order: a section 7 node gets its steps from mixsteps.c
 * (lw_steps_s7), an NTT a step of its own, its operand read in place,
 * materialised or fused as a prologue, with the epilogues chosen for it
 * beforehand (choose_epilogues); the results no step wrote go to final
 * pointwise steps. It sits above anchor.c's step builders and mixsteps.c,
 * which both use those builders, so that the planner's files reach only
 * downward; anchor_gpu.c and host.c take the plans it makes. */
#include <stdlib.h>
#include <string.h>

#include "lower/steps.h"

/* ----------------------------------------------------------- analysis */

static int is_live_anchor(const fhjit_graph *g, const char *live, fhjit_value v) {
  return live[v] && g->nodes[v].op == IR_NTT;
}

/* Live values: what the results depend on (NULL when out of memory). */
static char *live_values(const fhjit_graph *g) {
  char *live = calloc((size_t)(g->nnodes ? g->nnodes : 1), 1);
  if (!live) return NULL;
  for (int32_t k = 0; k < g->nresults; k++) live[g->results[k].value] = 1;
  for (int32_t v = g->nnodes - 1; v >= 0; v--)
    if (live[v])
      for (int a = 0; a < g->nodes[v].nargs; a++) live[g->nodes[v].args[a]] = 1;
  return live;
}

int lw_graph_has_anchor(const fhjit_graph *g) {
  if (!g || !g->bound) return 0;
  char *live = live_values(g);
  int any = 0;
  for (int32_t v = 0; v < g->nnodes && live && !any; v++)
    any = is_live_anchor(g, live, v) || (live[v] && lw_needs_steps(g, v));
  free(live);
  return any;
}

/* ----------------------------------------------------- epilogue choice */

/* Marks the cone of root in mark[]: root and what it depends on, stopping at
 * inputs and live anchors (marked, not entered); root itself is entered
 * even when it is an anchor only if enter_root. */
static void mark_cone(const an_build *B, fhjit_value root, char *mark, int enter_root) {
  const fhjit_graph *g = B->g;
  memset(mark, 0, (size_t)g->nnodes);
  mark[root] = 1;
  for (int32_t v = root; v >= 0; v--) {
    if (!mark[v]) continue;
    const ir_node *n = &g->nodes[v];
    if (n->op == IR_INPUT ||
        (lw_step_is_barrier(g, B->live, v) && !(v == root && enter_root)))
      continue;
    for (int a = 0; a < n->nargs; a++) mark[n->args[a]] = 1;
  }
}

/* Whether the cone a prologue of x would compute holds a coefficient-domain
 * automorphism not already in memory. Its per-lane loads put every lane of
 * a warp in a sector of its own (sources k^-1 apart), and an NTT's first
 * kernel loads a whole column of each row at once: fused there they cost
 * more than a pointwise pass writing the operand (H200, N = 2^16, Q's rows:
 * the forward NTT r62 35.2 -> 58.8 us, r32 20.2 -> 51.3 us, against 13.8
 * and 11.1 us for the automorphism alone). */
static int scattered_cone(const an_build *B, fhjit_value x, char *cone) {
  const fhjit_graph *g = B->g;
  mark_cone(B, x, cone, 0);
  for (fhjit_value w = 0; w <= x; w++)
    if (cone[w] && g->nodes[w].op == IR_AUTOMORPHISM && B->where[w].kind < 0 &&
        g->nodes[w].type.domain == FHJIT_DOMAIN_COEF)
      return 1;
  return 0;
}

/* The operand x of an NTT computed by a pointwise step into its result
 * buffer or scratch (the whole value an extract reads), for the NTT to
 * read in place, when its prologue would hold scattered loads (ntt_plan
 * autpro=1: fused anyway). 1 when it was. */
static int materialise_scattered(an_build *B, fhjit_value x) {
  const fhjit_graph *g = B->g;
  if (B->tune.autpro > 0) return 0;
  char *cone = malloc((size_t)g->nnodes);
  if (!cone) {
    B->st = ir_error(g->ctx, FHJIT_ERR_MEMORY, "error: out of memory");
    return 0;
  }
  int scattered = scattered_cone(B, x, cone);
  free(cone);
  if (!scattered) return 0;
  lw_step_materialise(B, g->nodes[x].op == IR_EXTRACT ? g->nodes[x].args[0] : x);
  return !B->st;
}

/* How kernel 1 of a forward NTT reading a coefficient automorphism
 * reads its chunks' slots (lw_ntt_plan_aut's k1, the ntt_plan autcol
 * value): staged (1), directly at permuted positions (2) or in registers
 * (3). Default: direct at r62 (H200, cf2b4a3, 2^16 x 35, three runs:
 * +8.4-8.5% over the NTT alone against +9.8-9.9% staged; H100 62fa89c:
 * +7.5% against +8.7%), staged at r32 (+9.3-10.1% against +15.5-16.2%
 * direct). */
static int aut_k1_form(const an_build *B) {
  if (B->tune.autcol >= LW_AUT_STAGED) return B->tune.autcol;
  return B->g->radix == FHJIT_R62 ? LW_AUT_DIRECT : LW_AUT_STAGED;
}

/* Whether kernel 0 of such an NTT permutes the words of its first pass in
 * registers (ntt_plan autreg=1, the default) rather than staging them
 * through shared memory (0). H100, 45225d3, 2^16, two runs, over the NTT
 * alone: r62 (kernel 1 direct) +6.6 / +6.9% against +7.7 / +8.1%
 * staged, r32 (kernel 1 staged) +5.3 / +5.6% against +8.0 / +8.8%. */
static int aut_regs(const an_build *B) { return B->tune.autreg != 0; }

/* NTT anchor v's operand x as automorphism(a, k) in the coefficient
 * domain read straight from a's buffer (ntt_plan autcol: on by default,
 * aut_k1_form's form, unless autpro=1 asks for the prologue; 0 off): the
 * forward two-kernel plans compute it in their staged loads
 * (lw_ntt_plan_aut, ntt_emit_aut.c). k, with *buf, *view and *a set, when
 * they can; else 0. */
static int64_t aut_source(an_build *B, fhjit_value v, fhjit_value x, an_buf *buf,
                          fhjit_layout *view, fhjit_value *a) {
  const fhjit_graph *g = B->g;
  const ir_node *n = &g->nodes[v], *xn = &g->nodes[x];
  int on = B->tune.autcol > 0 || (B->tune.autcol < 0 && B->tune.autpro <= 0);
  if (!on || xn->op != IR_AUTOMORPHISM || xn->type.domain != FHJIT_DOMAIN_COEF ||
      B->where[x].kind >= 0 || !lw_step_source(B, xn->args[0], buf, view))
    return 0;
  lw_ntt_plan trial;
  int64_t batch_rows = fhjit_type_elements(&n->type) / n->type.n;
  if (lw_ntt_plan_make(g->ctx, g->radix, (ir_ntt_kind)n->attr[0], ir_ntt_log2(n->type.n),
                       n->type.rows, batch_rows, &trial) ||
      !lw_ntt_plan_aut(&trial, xn->attr[0], aut_k1_form(B), aut_regs(B)))
    return 0;
  *a = xn->args[0];
  return xn->attr[0];
}

/* Whether result value u (cone marked) can be computed in anchor v's last
 * kernel, element by element from v's value there: same rows, batch axes
 * and N; v read only at the element itself (no compressed operand, whose
 * expansion reads other indices); a v of several components read only
 * component-wise (element-wise ops of v's components, u of the same
 * components), so that the thread holding component c computes u's
 * component c. */
static int epilogue_ok(const an_build *B, fhjit_value u, fhjit_value v, const char *cone,
                       char *dep) {
  const fhjit_graph *g = B->g;
  const fhjit_type *tu = &g->nodes[u].type, *tv = &g->nodes[v].type;
  if (!lw_step_same_extents(tu, tv)) return 0;
  int cv = tv->comps > 1 ? tv->comps : 1, cu = tu->comps > 1 ? tu->comps : 1;
  if (cv > 1 && cu != cv) return 0;
  memset(dep, 0, (size_t)g->nnodes);
  dep[v] = 1;
  for (int32_t w = 0; w <= u; w++) {
    if (!cone[w] || lw_step_is_barrier(g, B->live, w) || g->nodes[w].op == IR_INPUT) continue;
    const ir_node *n = &g->nodes[w];
    ir_op_class cls = ir_op_class_of(n->op);
    /* a re-indexing op independent of v reads its operand from memory in
     * the epilogue's kernel as anywhere (lower.c, plan_bases): a computed
     * operand (not in a buffer yet) would be refused there, so the target
     * stays in the pointwise step, which materialises that operand first */
    if (cls == IR_CLASS_ROWS || cls == IR_CLASS_PERMUTE)
      for (int a = 0; a < n->nargs; a++)
        if (!lw_step_addressable(B, n->args[a])) return 0;
    if (w <= v) continue;
    for (int a = 0; a < n->nargs; a++) dep[w] |= dep[n->args[a]];
    if (!dep[w]) continue;
    /* re-indexing ops read their operands at other rows or indices */
    if (cls != IR_CLASS_POINTWISE && cls != IR_CLASS_VIEW) return 0;
    unsigned f = ir_op_info_of(n->op)->flags;
    if (f & IR_F_REMAPS_INDEX || !ir_op_is_elementwise(n->op)) return 0; /* rows, concat... */
    if (cv > 1 && !(f & IR_F_COMPONENTWISE)) return 0; /* extract, pack, key switch... */
    /* a plaintext operand is read at its component 0 by every component */
    if (cv > 1 && (f & IR_F_PLAIN_OPERAND) && dep[n->args[1]]) return 0;
    if (cv > 1 && (n->type.comps > 1 ? n->type.comps : 1) != cv) return 0;
  }
  return 1;
}

/* Chooses the epilogues (B->epi_of) and which anchors some step reads from
 * memory (B->in_memory). A computed result whose latest anchor is v goes
 * into v's epilogue when epilogue_ok; the others stay in the final
 * pointwise step. Operands of later NTTs are not epilogue targets: a
 * prologue computing them from what they read moves fewer words than an
 * epilogue storing them (a key switch's sum has two components per digit
 * transform it reads). */
static void choose_epilogues(an_build *B) {
  fhjit_graph *g = B->g;
  size_t nn = (size_t)(g->nnodes ? g->nnodes : 1);
  char *cone = malloc(nn), *dep = malloc(nn);
  int *count = calloc(nn, sizeof *count);
  if (!cone || !dep || !count) {
    B->st = ir_error(g->ctx, FHJIT_ERR_MEMORY, "error: out of memory");
    goto done;
  }
  for (int32_t k = 0; k < g->nresults; k++) {
    fhjit_value u = g->results[k].value;
    const ir_node *n = &g->nodes[u];
    if (n->op == IR_INPUT || lw_step_is_barrier(g, B->live, u) || B->epi_of[u] >= 0) continue;
    mark_cone(B, u, cone, 0);
    fhjit_value v = -1;
    for (int32_t w = 0; w < u; w++)
      if (cone[w] && lw_step_is_barrier(g, B->live, w)) v = w;
    if (v < 0 || !is_live_anchor(g, B->live, v) || count[v] == LW_NTT_MAX_EPI ||
        !epilogue_ok(B, u, v, cone, dep))
      continue;
    B->epi_of[u] = v;
    count[v]++;
  }
  /* what reads each anchor from memory: later NTT operands (read in place
   * or by a prologue), results outside epilogues, and epilogues of other
   * anchors */
  for (int32_t w = 0; w < g->nnodes; w++) {
    fhjit_value root = -1, own = -1;
    if (is_live_anchor(g, B->live, w)) {
      root = g->nodes[w].args[0];
    } else if (B->live[w] && lw_is_s7(g, w)) {
      root = w; /* its own steps read its operands from memory */
    } else if (g->result_of[w] >= 0 && B->live[w]) {
      root = w;
      own = B->epi_of[w];
    }
    if (root < 0) continue;
    mark_cone(B, root, cone, root == w && lw_is_s7(g, w));
    for (int32_t a = 0; a <= root; a++)
      if (cone[a] && is_live_anchor(g, B->live, a) && a != own) B->in_memory[a] = 1;
  }
done:
  free(cone);
  free(dep);
  free(count);
}

/* Builds the epilogue sub-graphs of NTT step s (anchor v, its buffer set in
 * where[v]). */
static void add_epilogues(an_build *B, an_step *s, fhjit_value v) {
  fhjit_graph *g = B->g;
  for (int32_t k = 0; k < g->nresults && !B->st; k++) {
    fhjit_value u = g->results[k].value;
    if (B->epi_of[u] != v || B->where[u].kind >= 0) continue;
    int t = s->nepi;
    char name[LW_STEP_NAME_SIZE];
    lw_step_name(name, "epi", B->p->nsteps - 1, t);
    s->epi_sub[t] = lw_step_sub(B, name, &u, 1, &s->epi_in[t]);
    s->nepi++;
    if (B->st) return;
    s->epi_reg[t] = -1;
    for (int32_t i = 0; i < s->epi_sub[t]->ninputs; i++)
      if (s->epi_in[t][i].kind == s->dst.kind && s->epi_in[t][i].index == s->dst.index) s->epi_reg[t] = i;
    if (s->epi_reg[t] < 0) {
      B->st = ir_error(g->ctx, FHJIT_ERR_UNSUPPORTED,
                       "error: graph @%s: internal: an epilogue without its transform", g->name);
      return;
    }
    s->epi_out[t] = (an_buf){LW_ARG_RESULT, k};
  }
  /* after every target's sub-graph: none reads another's buffer */
  for (int t = 0; t < s->nepi; t++) B->where[g->results[s->epi_out[t].index].value] = s->epi_out[t];
  s->skip_store = g->result_of[v] < 0 && !B->in_memory[v];
}

/* ------------------------------------------------------------ the plan */

/* A program runs at most LW_MAX_KERNELS steps, one per live anchor and one
 * pointwise; every result is written by an anchor (itself or one of its
 * LW_NTT_MAX_EPI epilogue targets) or by the pointwise step (a kernel of at
 * most LW_MAX_ARGS pointers). A graph past these bounds could not compile:
 * it is refused before the passes that visit the nodes once per result and
 * per anchor, which stay linear in the nodes below them. */
static fhjit_status check_plan_size(const an_build *B) {
  fhjit_graph *g = B->g;
  int32_t anchors = 0;
  for (int32_t v = 0; v < g->nnodes; v++) anchors += is_live_anchor(g, B->live, v);
  if (anchors > LW_MAX_KERNELS)
    return ir_error(g->ctx, FHJIT_ERR_UNSUPPORTED,
                    "error: graph @%s has %d NTTs, and a program runs at most %d kernels; "
                    "split it into several graphs",
                    g->name, (int)anchors, LW_MAX_KERNELS);
  int64_t most = (int64_t)anchors * (1 + LW_NTT_MAX_EPI) + LW_MAX_ARGS - 2;
  if (g->nresults > most)
    return ir_error(g->ctx, FHJIT_ERR_UNSUPPORTED,
                    "error: graph @%s has %d results, but its %d NTT%s and one pointwise "
                    "kernel write at most %lld; split it into several graphs",
                    g->name, (int)g->nresults, (int)anchors, anchors == 1 ? "" : "s",
                    (long long)most);
  return FHJIT_OK;
}

static void free_aliases(an_build *B) {
  for (int32_t v = 0; B->alias && v < B->g->nnodes; v++) free(B->alias[v]);
  free(B->alias);
  /* a shared inverse NTT's record: freed once, by its first member; the
   * other members' pointers are dropped first (the record is read to tell
   * them apart, so before anything is freed) */
  for (int32_t v = 0; B->intt && v < B->g->nnodes; v++)
    if (B->intt[v] && B->intt[v]->first != v) B->intt[v] = NULL;
  for (int32_t v = 0; B->intt && v < B->g->nnodes; v++)
    if (B->intt[v]) {
      free(B->intt[v]->member);
      free(B->intt[v]->urow);
      free(B->intt[v]->ucols);
      free(B->intt[v]);
    }
  free(B->intt);
  /* moddown groups: owned by their first member; as for the inverse NTT's
   * records, the other members' pointers are dropped before anything is
   * freed (a later member's record would be read after its free) */
  for (int32_t v = 0; B->mdg && v < B->g->nnodes; v++)
    if (B->mdg[v] && B->mdg[v]->first != v) B->mdg[v] = NULL;
  for (int32_t v = 0; B->mdg && v < B->g->nnodes; v++) free(B->mdg[v]);
  free(B->mdg);
  lw_ipntt_free(B);
  free(B->where_off);
  free(B->mdrs);
}

void lw_anchor_plan_free(an_plan *p) {
  if (!p) return;
  for (int s = 0; s < p->nsteps; s++) {
    free(p->steps[s].in);
    free(p->steps[s].out);
    free(p->steps[s].out_off);
    free(p->steps[s].pro_in);
    for (int t = 0; t < p->steps[s].nepi; t++) free(p->steps[s].epi_in[t]);
    lw_ntt_host_destroy(p->host[s]);
    lw_bconv_host_destroy(p->bhost[s]);
  }
  for (int i = 0; i < p->ncols; i++) free(p->cols[i]);
  free(p->cols);
  fhjit_context_destroy(p->sctx);
  free(p);
}

/* ntt_plan's pdlmix (an_plan.pdl_mix) unless it is given. Measured on the
 * H200 at N = 2^16 (ckks_bench --fused-only, SPEC 7's sets, same runs;
 * 2026-12-04, bench/RESULTS.md): conversions as dependent launches take
 * the r32 key switch from 225.1 to 221.5 us, HMult + relin + rescale from
 * 258.9 to 254.9, and leave 8 hoisted rotations as they were (1071 /
 * 1069), while at r62 the key switch lost (564.0 -> 569.0 us). Pointwise
 * kernels as dependents too lose at both radices: 8 hoisted rotations r32
 * 1071 -> 1120 us, r62 2211 -> 2272, whether or not their arguments keep
 * noalias; why is not yet known (pdlmix=2 keeps the form for that study). */
static int mix_default(const fhjit_graph *g, int given) {
  if (given >= 0) return given;
  return g->radix == FHJIT_R32 ? 1 : 0;
}

/* What an NTT step reads: its source buffer and view (read: the value
 * whose view it is), a coefficient automorphism applied in its loads
 * (aut_k, 0 for none), or a prologue computing it (pro_sub, its inputs
 * pro_in, and the component pro_comp of a multi-component value, or -1). */
typedef struct ntt_operand {
  an_buf src;
  fhjit_layout view;
  fhjit_value read;
  int64_t aut_k;
  fhjit_graph *pro_sub;
  an_buf *pro_in;
  int pro_comp;
} ntt_operand;

/* NTT anchor v's operand: read in place, else materialised (a computed
 * value, or the whole value an extract reads) into its result buffer when
 * it is an output, else into scratch, or computed in the NTT's first
 * kernel (a prologue). Errors in B->st. */
static void ntt_operand_of(an_build *B, int32_t v, ntt_operand *o) {
  fhjit_graph *g = B->g;
  fhjit_value x = g->nodes[v].args[0];
  *o = (ntt_operand){.read = x, .pro_comp = -1};
  int in_memory = lw_step_source(B, x, &o->src, &o->view);
  o->aut_k = in_memory ? 0 : aut_source(B, v, x, &o->src, &o->view, &o->read);
  if (o->aut_k) in_memory = 1;
  if (!in_memory && materialise_scattered(B, x)) in_memory = lw_step_source(B, x, &o->src, &o->view);
  if (B->st || in_memory) return;
  /* computed: fused into the NTT's first kernel (prologue) */
  fhjit_value m = x;
  if (g->nodes[x].op == IR_EXTRACT) m = g->nodes[x].args[0], o->pro_comp = (int)g->nodes[x].attr[0];
  char name[LW_STEP_NAME_SIZE];
  lw_step_name(name, "pro", B->p->nsteps, -1);
  o->pro_sub = lw_step_sub(B, name, &m, 1, &o->pro_in);
  o->src = (an_buf){-1, 0};
  fhjit_dense_layout(&g->nodes[x].type, &o->view);
}

/* Step s's NTT plan for anchor v (reading o, its table tw): the schedule
 * for its shape, the source view, the automorphism's loads, the table's
 * layout. Errors in B->st. */
static void ntt_step_plan(an_build *B, an_step *s, int32_t v, const ntt_operand *o, const ir_node *tw) {
  fhjit_graph *g = B->g;
  const ir_node *n = &g->nodes[v];
  int64_t batch_rows = fhjit_type_elements(&n->type) / n->type.n;
  if (lw_ntt_plan_make(g->ctx, g->radix, (ir_ntt_kind)n->attr[0], ir_ntt_log2(n->type.n), n->type.rows,
                       batch_rows, &s->plan)) {
    B->st = FHJIT_ERR_UNSUPPORTED;
    return;
  }
  lw_step_set_source(&s->plan, &g->nodes[o->read].type, &o->view);
  if (o->aut_k && !lw_ntt_plan_aut(&s->plan, o->aut_k, aut_k1_form(B), aut_regs(B))) {
    B->st = ir_error(g->ctx, FHJIT_ERR_UNSUPPORTED,
                     "internal: the NTT plan of %%%s cannot read the automorphism", n->name);
    return;
  }
  /* kernel 0's staged load one word a thread at both radices (r32,
   * H100 f6328b8, 2^16 x 48: +8.7% over the NTT alone against
   * +9.9-10.0% with vectors; r62 with the direct kernel 1, H200
   * cf2b4a3, 2^16 x 35: +8.4-8.5% against +8.4-9.0%) */
  s->plan.aut_scalar = o->aut_k && (B->tune.autvec >= 0 ? B->tune.autvec == 0 : 1);
  s->plan.aut_scalar1 = o->aut_k && B->tune.autvec1 == 0;
  s->plan.cols = n->basis; /* columns and twiddle rows by chain position */
  s->plan.tw_offset = tw->layout.offset;
  s->plan.tw_row_stride = tw->type.rows > 1 ? tw->layout.row_stride : 0;
}

/* The step of NTT anchor v: its operand, its table (dense rows of words
 * from some offset), its destination (its result buffer, or scratch), its
 * plan and its epilogues. Errors in B->st. */
static void ntt_anchor_step(an_build *B, int32_t v) {
  fhjit_graph *g = B->g;
  const ir_node *n = &g->nodes[v];
  ntt_operand o;
  ntt_operand_of(B, v, &o);
  const ir_node *tw = &g->nodes[n->args[1]];
  if (!B->st && tw->type.n > 1 && tw->layout.index_stride != 1)
    B->st = ir_error_at(g, n->loc, FHJIT_ERR_UNSUPPORTED,
                        "%%%s = ntt: the twiddle table %%%s must have index stride 1 (it has %lld)",
                        n->name, tw->name, (long long)tw->layout.index_stride);
  an_step *s = B->st ? NULL : lw_step_new(B);
  if (!s) {
    free(o.pro_in);
    return;
  }
  *s = (an_step){.is_ntt = 1, .ntt_type = n->type, .src = o.src, .pro_sub = o.pro_sub,
                 .pro_in = o.pro_in, .pro_comp = o.pro_comp, .tw = {LW_ARG_INPUT, tw->input_index}};
  /* a member of an ipntt group: kernel 0 alone, into the group's buffer
   * (anchor_ipntt.c); no buffer holds v */
  int head = lw_ipntt_head(B, v, &s->dst, &s->dst_off);
  if (B->st) return;
  if (!head && g->result_of[v] >= 0) {
    s->dst = (an_buf){LW_ARG_RESULT, g->result_of[v]};
  } else if (!head) {
    int sc = lw_step_scratch(B, &n->type);
    if (sc < 0) return;
    s->dst = (an_buf){LW_ARG_SCRATCH, sc};
  }
  if (!head) B->where[v] = s->dst;
  ntt_step_plan(B, s, v, &o, tw);
  if (!B->st && head) lw_ipntt_head_done(B, s, v);
  else if (!B->st) add_epilogues(B, s, v);
}

/* B's per-value arrays, its plan and the plan's sub-graph context (with
 * g's options), and the ntt_plan keys the steps' choices read; 0, or
 * nonzero with the error recorded on g's context. */
static int build_init(an_build *B) {
  fhjit_graph *g = B->g;
  size_t nv = (size_t)(g->nnodes ? g->nnodes : 1);
  B->p = calloc(1, sizeof *B->p);
  B->live = live_values(g);
  B->where = malloc(sizeof *B->where * nv);
  B->epi_of = malloc(sizeof *B->epi_of * nv);
  B->in_memory = calloc(nv, 1);
  B->alias = calloc(nv, sizeof *B->alias);
  B->intt = calloc(nv, sizeof *B->intt);
  B->mdg = calloc(nv, sizeof *B->mdg);
  B->ipg = calloc(nv, sizeof *B->ipg);
  B->where_off = calloc(nv, sizeof *B->where_off);
  B->mdrs = calloc(nv, 1);
  if (B->p) B->p->sctx = fhjit_context_create();
  /* the sub-graphs' lowering reads the options of g's context */
  if (!B->p || !B->live || !B->where || !B->epi_of || !B->in_memory || !B->alias || !B->intt ||
      !B->mdg || !B->ipg || !B->where_off || !B->mdrs || !B->p->sctx || ir_options_copy(B->p->sctx, g->ctx)) {
    ir_error(g->ctx, FHJIT_ERR_MEMORY, "error: out of memory");
    return 1;
  }
  for (int32_t v = 0; v < g->nnodes; v++) B->where[v] = (an_buf){-1, 0}, B->epi_of[v] = -1;
  if (check_plan_size(B)) return 1;
  /* ntt_plan (FHJIT_NTT_PLAN), read once for the steps' choices (a
   * malformed value is reported when the first plan is made); epi=0 turns
   * epilogues off (comparisons) */
  lw_ntt_tuning_default(&B->tune);
  lw_ntt_tuning_parse(NULL, ir_option(g->ctx, IR_OPT_NTT_PLAN), &B->tune);
  B->p->bc_rev = B->tune.bcrev;
  B->p->pdl_mix = B->tune.pdl != 0 && B->tune.entry != 0 ? mix_default(g, B->tune.pdlmix) : 0;
  return 0;
}

/* The results no step wrote, in one final pointwise step. */
static void final_results_step(an_build *B) {
  fhjit_graph *g = B->g;
  fhjit_value *targets = malloc(sizeof *targets * (size_t)(g->nresults + 1));
  an_buf *dests = malloc(sizeof *dests * (size_t)(g->nresults + 1));
  int nt = 0;
  if (!targets || !dests) B->st = ir_error(g->ctx, FHJIT_ERR_MEMORY, "error: out of memory");
  for (int32_t k = 0; k < g->nresults && !B->st; k++) {
    fhjit_value v = g->results[k].value;
    if (B->where[v].kind == LW_ARG_RESULT) continue;
    targets[nt] = v;
    dests[nt++] = (an_buf){LW_ARG_RESULT, k};
  }
  lw_step_grouped(B, targets, dests, nt);
  free(targets);
  free(dests);
}

/* B's own arrays (not its plan). */
static void build_free(an_build *B) {
  free(B->live);
  free(B->where);
  free(B->epi_of);
  free(B->in_memory);
  free_aliases(B);
}

an_plan *lw_anchor_build_plan(fhjit_graph *g) {
  an_build B = {.g = g};
  if (build_init(&B)) goto fail;
  if (B.tune.epi != 0) choose_epilogues(&B);
  for (int32_t v = 0; v < g->nnodes && !B.st; v++) {
    if (B.live[v] && lw_is_s7(g, v))
      lw_steps_s7(&B, v); /* mixsteps.c: the section 7 ops' steps */
    else if (is_live_anchor(g, B.live, v))
      ntt_anchor_step(&B, v);
  }
  if (!B.st) final_results_step(&B);
  if (B.st) goto fail;
  lw_mix_chain_steps(&B); /* mixsteps_ipchain.c: moddown's inverse NTT started in the reduce kernel */
  lw_mix_sync_steps(&B);  /* mixsteps_ipsync.c: its wait for the reduce kernel per row */
  lw_steps_l2pf(&B);      /* steps_l2pf.c: no prefetch of what the step before writes */
  lw_scratch_assign(B.p); /* scratch.c: buffers never in use at one time share memory */
  build_free(&B);
  return B.p;
fail:
  build_free(&B);
  lw_anchor_plan_free(B.p);
  return NULL;
}

