/* compile.c: from a bound graph to kernels loaded in a CUDA context. The
 * per-fhjit-context state holds the loaded kernels (the in-memory cache,
 * keyed by graph hash and name, target and CUDA context); a miss tries the
 * disk cache (a cubin, loaded in microseconds; keyed by, and checked
 * against, the graph's program as lw_describe_program plans it), then
 * compiles: lw_compile_ptx, the driver's JIT linker (its error log becomes
 * the message), cuModuleLoadData. A mutex per fhjit context makes compiles
 * from several threads safe. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fhjit_codegen_id.h" /* generated: cmake/source_id.cmake */
#include "runtime/runtime.h"

#ifndef FHJIT_LLVM_VERSION
#define FHJIT_LLVM_VERSION "unknown"
#endif

rt_lower_fn rt_lower = lw_compile_ptx;
rt_lower_fn rt_describe = lw_describe_program;

/* ------------------------------------------------------------------- state */

static pthread_mutex_t state_create_lock = PTHREAD_MUTEX_INITIALIZER;

rt_state *rt_state_get(fhjit_context *ctx) {
  pthread_mutex_lock(&state_create_lock);
  rt_state *st = ctx->runtime;
  if (!st && (st = calloc(1, sizeof *st))) {
    pthread_mutex_init(&st->lock, NULL);
    ctx->runtime = st;
    ctx->release_runtime = rt_context_release;
  }
  pthread_mutex_unlock(&state_create_lock);
  return st;
}

/* Unloads a kernel's module and scratch in its own context. Skipped when the
 * context is gone (its handles died with it). */
static void kernel_free(fhjit_cuda_kernel *k, const rt_driver *d) {
  if (d && (k->module || k->scratch_arena)) {
    unsigned long long id = 0;
    if (d->cuCtxGetId(k->cuctx, &id) == CUDA_SUCCESS && id == k->cuctx_id &&
        d->cuCtxPushCurrent(k->cuctx) == CUDA_SUCCESS) {
      if (k->module) d->cuModuleUnload(k->module);
      if (k->scratch_arena) d->cuMemFree(k->scratch_arena);
      CUcontext popped;
      d->cuCtxPopCurrent(&popped);
    }
  }
  rt_kernel_free_abi(k);
  free(k->prog.ptx);
  pthread_mutex_destroy(&k->seen_lock);
  free(k);
}

/* The driver without recording anything: release paths run after errors. */
static const rt_driver *driver_quiet(void) {
  fhjit_context scratch = {0};
  const rt_driver *d = rt_driver_get(&scratch, "release");
  sp_err_clear(&scratch.err);
  return d;
}

void rt_context_release(fhjit_context *ctx) {
  rt_state *st = ctx ? ctx->runtime : NULL;
  if (!st) return;
  const rt_driver *d = st->kernels ? driver_quiet() : NULL;
  while (st->kernels) {
    fhjit_cuda_kernel *k = st->kernels;
    st->kernels = k->next;
    kernel_free(k, d);
  }
  pthread_mutex_destroy(&st->lock);
  free(st);
  ctx->runtime = NULL;
}

fhjit_status fhjit_cuda_release_context(fhjit_context *ctx, fhjit_cuda_context cuctx) {
  if (!ctx) return FHJIT_ERR_ARGUMENT;
  if (!cuctx)
    return ir_error(ctx, FHJIT_ERR_ARGUMENT, "fhjit_cuda_release_context: null CUDA context");
  rt_free_generation_bump(); /* the context's memory is about to go */
  rt_state *st = ctx->runtime;
  if (!st) return FHJIT_OK;
  /* nothing loaded (a failed compile still makes the state): a no-op,
   * driver or not */
  fhjit_status s = FHJIT_OK;
  pthread_mutex_lock(&st->lock);
  const rt_driver *d = st->kernels ? rt_driver_get(ctx, "fhjit_cuda_release_context") : NULL;
  if (st->kernels && !d) s = FHJIT_ERR_NO_DRIVER;
  for (fhjit_cuda_kernel **p = &st->kernels; d && *p;) {
    fhjit_cuda_kernel *k = *p;
    if (k->cuctx == (CUcontext)cuctx) {
      *p = k->next;
      kernel_free(k, d);
    } else {
      p = &k->next;
    }
  }
  pthread_mutex_unlock(&st->lock);
  return s;
}

/* --------------------------------------------------------------------- ABI */

/* Element span [lo, hi) of a bound input from its base (fhjit_layout_span).
 * 0 on overflow. */
static int layout_span(const fhjit_type *t, const fhjit_layout *l, int64_t *lo, int64_t *hi) {
  *lo = l->offset;
  *hi = fhjit_layout_span(t, l);
  return *hi >= 0;
}

static int layout_equal(const fhjit_layout *a, const fhjit_layout *b) {
  if (a->offset != b->offset || a->comp_stride != b->comp_stride ||
      a->digit_stride != b->digit_stride || a->row_stride != b->row_stride ||
      a->index_stride != b->index_stride)
    return 0;
  for (int i = 0; i < FHJIT_MAX_BATCH; i++)
    if (a->batch_stride[i] != b->batch_stride[i]) return 0;
  return 1;
}

static int graph_usable(fhjit_graph *g, const char *what) {
  if (!g) return 0;
  if (!g->bound) {
    ir_error(g->ctx, FHJIT_ERR_ARGUMENT, "%s: graph @%s is not bound (call fhjit_bind)", what,
             g->name);
    return 0;
  }
  return 1;
}

fhjit_status fhjit_cuda_input_bytes(const fhjit_graph *g, int32_t index, size_t *bytes) {
  if (!g || !bytes) return FHJIT_ERR_ARGUMENT;
  if (!graph_usable((fhjit_graph *)g, "fhjit_cuda_input_bytes")) return FHJIT_ERR_ARGUMENT;
  if (index < 0 || index >= g->ninputs)
    return ir_error(g->ctx, FHJIT_ERR_ARGUMENT,
                    "fhjit_cuda_input_bytes: graph @%s has no input #%d (it has %d)", g->name,
                    (int)index, (int)g->ninputs);
  const ir_node *n = &g->nodes[g->inputs[index]];
  int64_t lo, hi;
  if (!layout_span(&n->type, &n->layout, &lo, &hi) ||
      (uint64_t)hi > SIZE_MAX / ir_word_size(g->radix))
    return ir_error(g->ctx, FHJIT_ERR_SHAPE, "fhjit_cuda_input_bytes: input %%%s spans too many bytes",
                    n->name);
  *bytes = (size_t)hi * ir_word_size(g->radix);
  return FHJIT_OK;
}

fhjit_status fhjit_cuda_result_bytes(const fhjit_graph *g, int32_t index, size_t *bytes) {
  if (!g || !bytes) return FHJIT_ERR_ARGUMENT;
  if (!graph_usable((fhjit_graph *)g, "fhjit_cuda_result_bytes")) return FHJIT_ERR_ARGUMENT;
  if (index < 0 || index >= g->nresults)
    return ir_error(g->ctx, FHJIT_ERR_ARGUMENT,
                    "fhjit_cuda_result_bytes: graph @%s has no result #%d (it has %d)", g->name,
                    (int)index, (int)g->nresults);
  int64_t e = fhjit_type_elements(&g->results[index].type);
  if (e < 1 || (uint64_t)e > SIZE_MAX / ir_word_size(g->radix))
    return ir_error(g->ctx, FHJIT_ERR_SHAPE, "fhjit_cuda_result_bytes: result #%d is too large",
                    (int)index);
  *bytes = (size_t)e * ir_word_size(g->radix);
  return FHJIT_OK;
}

/* Ops whose result element depends only on the operands' elements at the
 * same coordinates (ops.def's pointwise and view classes): a thread that
 * reads its elements (every component) before it writes may then overwrite
 * an input it alone reads. Anchors forbid in-place. */
static int op_pointwise(ir_op op) {
  return op == IR_INPUT || ir_op_is_elementwise(op);
}

void rt_result_label(const fhjit_graph *g, int32_t r, char *buf, size_t size) {
  const char *value = g->nodes[g->results[r].value].name;
  for (int32_t i = 0; i < g->noutputs; i++) {
    const ir_output *o = &g->outputs[i];
    if (o->is_input_alias || o->source != r) continue;
    if (strcmp(o->name, value)) {
      snprintf(buf, size, "%%%s, output %s", value, o->name);
      return;
    }
    break;
  }
  snprintf(buf, size, "%%%s", value);
}

void rt_kernel_free_abi(fhjit_cuda_kernel *k) {
  for (int32_t i = 0; k->inputs && i < k->ninputs; i++) free(k->inputs[i].name);
  for (int32_t i = 0; k->results && i < k->nresults; i++) {
    free(k->results[i].name);
    free(k->results[i].reads);
  }
  free(k->inputs);
  free(k->results);
  free(k->graph_name);
  k->inputs = k->results = NULL;
  k->graph_name = NULL;
}

fhjit_status rt_describe_abi(fhjit_graph *g, fhjit_cuda_kernel *k) {
  size_t ws = ir_word_size(g->radix);
  k->radix = g->radix;
  k->ninputs = g->ninputs;
  k->nresults = g->nresults;
  k->inputs = calloc((size_t)g->ninputs + 1, sizeof *k->inputs);
  k->results = calloc((size_t)g->nresults + 1, sizeof *k->results);
  k->graph_name = strdup(g->name);
  if (!k->inputs || !k->results || !k->graph_name) goto oom;
  k->param_rows = 1;
  for (int32_t i = 0; i < g->ninputs; i++) {
    const ir_node *n = &g->nodes[g->inputs[i]];
    rt_buffer *b = &k->inputs[i];
    int64_t lo, hi;
    if (!(b->name = strdup(n->name))) goto oom;
    if (!layout_span(&n->type, &n->layout, &lo, &hi) || (uint64_t)hi > UINT64_MAX / ws)
      return ir_error_at(g, n->loc, FHJIT_ERR_SHAPE, "input %%%s: its layout spans too many bytes",
                         n->name);
    b->lo = (uint64_t)lo * ws;
    b->hi = (uint64_t)hi * ws;
    b->type = n->type;
    fhjit_layout dense;
    b->inplace_ok = n->type.kind == FHJIT_KIND_POLY &&
                    fhjit_dense_layout(&n->type, &dense) == FHJIT_OK &&
                    layout_equal(&dense, &n->layout);
    if (n->type.kind == FHJIT_KIND_POLY && n->type.rows > k->param_rows)
      k->param_rows = n->type.rows;
  }
  unsigned char *cone = malloc((size_t)g->nnodes + 1);
  if (!cone) goto oom;
  for (int32_t r = 0; r < g->nresults; r++) {
    rt_buffer *b = &k->results[r];
    b->type = g->results[r].type;
    char label[160];
    rt_result_label(g, r, label, sizeof label);
    b->name = strdup(label);
    b->reads = calloc((size_t)g->ninputs + 1, 1);
    if (!b->name || !b->reads) {
      free(cone);
      goto oom;
    }
    /* operands precede their users: one backward sweep finds the cone */
    memset(cone, 0, (size_t)g->nnodes);
    cone[g->results[r].value] = 1;
    for (int32_t v = g->results[r].value; v >= 0; v--)
      if (cone[v])
        for (int a = 0; a < g->nodes[v].nargs; a++) cone[g->nodes[v].args[a]] = 1;
    for (int32_t i = 0; i < g->ninputs; i++) b->reads[i] = cone[g->inputs[i]];
    int64_t e = fhjit_type_elements(&b->type);
    if (e < 1 || (uint64_t)e > UINT64_MAX / ws) {
      free(cone);
      return ir_error(g->ctx, FHJIT_ERR_SHAPE, "result %%%s is too large", b->name);
    }
    b->lo = 0;
    b->hi = (uint64_t)e * ws;
    if (b->type.rows > k->param_rows) k->param_rows = b->type.rows;
  }
  free(cone);
  /* stated bases (SPEC section 7) read columns by chain position */
  int64_t columns = ir_param_columns(g);
  if (columns > k->param_rows) k->param_rows = columns;
  /* over live nodes, as the hash and the lowering see the graph: a dead
   * NTT neither makes a kernel anchored nor keys the cache, so it must not
   * decide the in-place rule of the kernel graphs of this hash share */
  unsigned char *live = ir_live_nodes(g);
  if (!live) goto oom;
  k->pointwise = 1;
  for (int32_t i = 0; i < g->nnodes; i++)
    if (live[i] && !op_pointwise(g->nodes[i].op)) k->pointwise = 0;
  free(live);
  return FHJIT_OK;
oom:
  return ir_error(g->ctx, FHJIT_ERR_MEMORY, "graph @%s: out of memory", g->name);
}

/* Checks a program against the graph's ABI before anything launches it: a
 * stale or hostile cache entry must not index out of the argument arrays. */
static const char *program_problem(const fhjit_cuda_kernel *k, const lw_program *p) {
  if (p->nkernels < 0 || p->nkernels > LW_MAX_KERNELS) return "a bad kernel count";
  if (p->nscratch < 0 || p->nscratch > LW_MAX_KERNELS) return "a bad scratch count";
  for (int32_t i = 0; i < p->nkernels; i++) {
    const lw_kernel *kd = &p->kernels[i];
    if (!memchr(kd->name, 0, sizeof kd->name) || !kd->name[0]) return "a kernel without a name";
    if (kd->nargs < 0 || kd->nargs > LW_MAX_ARGS) return "a bad argument count";
    for (int d = 0; d < 3; d++)
      if (!kd->grid[d] || !kd->block[d]) return "an empty launch grid or block";
    for (int32_t a = 0; a < kd->nargs; a++) {
      int32_t idx = kd->args[a].index;
      switch (kd->args[a].kind) {
      case LW_ARG_PARAMS: case LW_ARG_PSTRIDE: break;
      case LW_ARG_INPUT: if (idx < 0 || idx >= k->ninputs) return "an input index out of range"; break;
      case LW_ARG_RESULT: if (idx < 0 || idx >= k->nresults) return "a result index out of range"; break;
      case LW_ARG_SCRATCH: if (idx < 0 || idx >= p->nscratch) return "a scratch index out of range"; break;
      case LW_ARG_OWN: break;
      default: return "an unknown argument kind";
      }
    }
  }
  if (p->scratch_arena < 0 || (p->scratch_arena > 0) != (p->nscratch > 0))
    return "a bad scratch arena";
  for (int32_t s = 0; s < p->nscratch; s++) {
    if (p->scratch_bytes[s] < 1) return "an empty scratch buffer";
    if (p->scratch_offset[s] < 0 || p->scratch_offset[s] % 256 ||
        p->scratch_bytes[s] > p->scratch_arena - p->scratch_offset[s])
      return "a scratch buffer outside its arena";
  }
  return NULL;
}

/* ------------------------------------------------------------------ target */

/* "sm_90" -> 90, "sm_90a" -> 90 with *suffix = 'a'; 0 when malformed. */
static int parse_sm(const char *t, char *suffix) {
  if (strncmp(t, "sm_", 3) != 0) return 0;
  const char *p = t + 3;
  int cc = 0, digits = 0;
  while (*p >= '0' && *p <= '9' && digits < 4) cc = cc * 10 + (*p++ - '0'), digits++;
  if (digits < 2 || cc < 10) return 0;
  *suffix = 0;
  if (*p == 'a' || *p == 'f') *suffix = *p++;
  return *p ? 0 : cc;
}

static void list_targets(char *buf, size_t size, const char *const *ts) {
  size_t used = 0;
  buf[0] = 0;
  for (int i = 0; ts[i] && used < size; i++)
    used += (size_t)snprintf(buf + used, size - used, "%s%s", i ? ", " : "", ts[i]);
}

/* The PTX target: the caller's, or the device's, or the newest supported
 * one the device can run (PTX is forward-compatible; 'a' targets are not). */
static fhjit_status choose_target(fhjit_context *ctx, const char *what, const char *asked,
                                  int dev_cc, char out[16]) {
  const char *const *ts = fhjit_targets();
  int nts = 0;
  while (ts && ts[nts]) nts++;
  char list[512];
  if (nts) list_targets(list, sizeof list, ts);
  if (asked) {
    char suffix;
    int cc = parse_sm(asked, &suffix);
    if (!cc || strlen(asked) >= 16)
      return ir_error(ctx, FHJIT_ERR_TARGET, "%s: target \"%s\" is not of the form sm_XX", what,
                      asked);
    int listed = !nts;
    for (int i = 0; i < nts; i++) listed |= !strcmp(ts[i], asked);
    if (!listed)
      return ir_error(ctx, FHJIT_ERR_TARGET, "%s: target %s is not supported (fhjit_targets: %s)",
                      what, asked, list);
    if (cc > dev_cc || (suffix && cc != dev_cc))
      return ir_error(ctx, FHJIT_ERR_TARGET,
                      "%s: target %s cannot run on the device, which is sm_%d", what, asked,
                      dev_cc);
    snprintf(out, 16, "%s", asked);
    return FHJIT_OK;
  }
  char own[16];
  snprintf(own, sizeof own, "sm_%d", dev_cc);
  int best = -1, best_cc = 0;
  for (int i = 0; i < nts; i++) {
    char suffix;
    int cc = parse_sm(ts[i], &suffix);
    if (!strcmp(ts[i], own)) {
      best = i;
      break;
    }
    if (cc && !suffix && cc <= dev_cc && cc > best_cc) best = i, best_cc = cc;
  }
  if (!nts) { /* fhjit_targets() lists nothing: let the lowering judge */
    snprintf(out, 16, "%s", own);
    return FHJIT_OK;
  }
  if (best < 0)
    return ir_error(ctx, FHJIT_ERR_TARGET,
                    "%s: the device is %s, older than every target fhjit supports (%s)", what, own,
                    list);
  snprintf(out, 16, "%s", ts[best]);
  return FHJIT_OK;
}

/* ------------------------------------------------------------------ module */

static fhjit_status link_ptx(fhjit_context *ctx, const rt_driver *d, const char *what,
                             const char *gname, const char *target, const char *ptx,
                             void **cubin_out, size_t *cubin_size) {
  char errlog[16384] = "", infolog[4096] = "";
  CUjit_option opts[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
                         CU_JIT_INFO_LOG_BUFFER, CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES};
  void *vals[] = {errlog, (void *)(uintptr_t)sizeof errlog, infolog,
                  (void *)(uintptr_t)sizeof infolog};
  CUlinkState link = NULL;
  CUresult r = d->cuLinkCreate(4, opts, vals, &link);
  if (r != CUDA_SUCCESS)
    return rt_cuda_error(ctx, d, r, "cuLinkCreate_v2", "%s: graph @%s", what, gname);
  const char *call = "cuLinkAddData_v2";
  r = d->cuLinkAddData(link, CU_JIT_INPUT_PTX, (void *)ptx, strlen(ptx) + 1, gname, 0, NULL, NULL);
  void *cubin = NULL;
  size_t size = 0;
  if (r == CUDA_SUCCESS) {
    call = "cuLinkComplete";
    r = d->cuLinkComplete(link, &cubin, &size);
  }
  fhjit_status s = FHJIT_OK;
  if (r != CUDA_SUCCESS) {
    char why[256];
    errlog[sizeof errlog - 1] = 0;
    rt_cuda_describe(d, r, why, sizeof why);
    s = ir_error(ctx, r == CUDA_ERROR_OUT_OF_MEMORY ? FHJIT_ERR_MEMORY : FHJIT_ERR_CUDA,
                 "%s: the CUDA driver could not compile the PTX of graph @%s for %s: %s failed: "
                 "%s%s%s",
                 what, gname, target, call, why, errlog[0] ? "\ndriver log:\n" : "", errlog);
  } else if (!cubin || !size || !(*cubin_out = malloc(size))) {
    s = ir_error(ctx, FHJIT_ERR_MEMORY, "%s: graph @%s: no memory for the cubin", what, gname);
  } else {
    memcpy(*cubin_out, cubin, size);
    *cubin_size = size;
  }
  d->cuLinkDestroy(link);
  return s;
}

/* Kernels that use shared memory (the NTT's) ask for the largest shared
 * carveout: the driver's default left room for one 32 KB block per SM, so
 * occupancy was capped at one block whatever the registers allowed. A hint:
 * a driver that refuses it leaves the kernel correct, only slower. */
static void prefer_shared_memory(const rt_driver *d, CUfunction f, const lw_kernel *kd) {
  int static_bytes = 0;
  if (d->cuFuncGetAttribute(&static_bytes, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, f) != CUDA_SUCCESS)
    static_bytes = 0;
  if (static_bytes > 0 || kd->shared_bytes > 0)
    (void)d->cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT, 100);
}

/* Loads the cubin into the current context: module, functions, scratch. On
 * failure everything loaded so far is released. */
static fhjit_status load_module(fhjit_context *ctx, const rt_driver *d, const char *what,
                                const char *gname, fhjit_cuda_kernel *k, const void *cubin) {
  CUresult r = d->cuModuleLoadData(&k->module, cubin);
  if (r != CUDA_SUCCESS) {
    k->module = NULL;
    return rt_cuda_error(ctx, d, r, "cuModuleLoadData", "%s: graph @%s: cannot load the cubin",
                         what, gname);
  }
  fhjit_status s = FHJIT_OK;
  for (int32_t i = 0; i < k->prog.nkernels && s == FHJIT_OK; i++) {
    const lw_kernel *kd = &k->prog.kernels[i];
    for (int32_t j = 0; j < kd->nargs; j++)
      if (kd->args[j].kind == LW_ARG_OWN) k->has_own = 1;
    r = d->cuModuleGetFunction(&k->funcs[i], k->module, kd->name);
    if (r != CUDA_SUCCESS) {
      s = rt_cuda_error(ctx, d, r, "cuModuleGetFunction", "%s: graph @%s: kernel %s", what, gname,
                        kd->name);
      continue;
    }
    prefer_shared_memory(d, k->funcs[i], kd);
    if (kd->shared_bytes > 48 * 1024) {
      r = d->cuFuncSetAttribute(k->funcs[i], CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                (int)kd->shared_bytes);
      if (r != CUDA_SUCCESS)
        s = rt_cuda_error(ctx, d, r, "cuFuncSetAttribute",
                          "%s: graph @%s: kernel %s needs %u bytes of shared memory", what, gname,
                          kd->name, kd->shared_bytes);
    }
    /* clusters of more than 8 blocks (sm_90's portable limit) need the
     * driver's consent; the launch then says whether the device has them */
    if (s == FHJIT_OK && lw_kernel_cluster_size(kd) > 8) {
      r = d->cuFuncSetAttribute(k->funcs[i], CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1);
      if (r != CUDA_SUCCESS)
        s = rt_cuda_error(ctx, d, r, "cuFuncSetAttribute",
                          "%s: graph @%s: kernel %s needs clusters of %u blocks", what, gname,
                          kd->name, lw_kernel_cluster_size(kd));
    }
  }
  /* the scratch buffers: one arena, each buffer at its offset */
  if (k->prog.scratch_arena && s == FHJIT_OK) {
    r = d->cuMemAlloc(&k->scratch_arena, (size_t)k->prog.scratch_arena);
    if (r != CUDA_SUCCESS) {
      k->scratch_arena = 0;
      s = rt_cuda_error(ctx, d, r, "cuMemAlloc_v2",
                        "%s: graph @%s: cannot allocate the scratch arena of %lld bytes", what,
                        gname, (long long)k->prog.scratch_arena);
    }
    for (int32_t i = 0; i < k->prog.nscratch && s == FHJIT_OK; i++)
      k->scratch[i] = k->scratch_arena + (CUdeviceptr)k->prog.scratch_offset[i];
  }
  if (s != FHJIT_OK) {
    if (k->scratch_arena) d->cuMemFree(k->scratch_arena), k->scratch_arena = 0;
    memset(k->scratch, 0, sizeof k->scratch);
    d->cuModuleUnload(k->module);
    k->module = NULL;
  }
  return s;
}

/* ------------------------------------------------------------ disk cache */

/* The disk cache's part of one compile. */
typedef struct disk_use {
  char *dir;      /* NULL: not used */
  char key[512];
  lw_program want; /* the graph's program without code (rt_describe) */
} disk_use;

/* Appends a sentence to ci->disk_note ("; " between two). */
static void note(fhjit_cuda_compile_info *ci, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void note(fhjit_cuda_compile_info *ci, const char *fmt, ...) {
  size_t used = strlen(ci->disk_note);
  if (used && used + 2 < sizeof ci->disk_note) memcpy(ci->disk_note + used, "; ", 3), used += 2;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(ci->disk_note + used, sizeof ci->disk_note - used, fmt, ap);
  va_end(ap);
}

/* The first field in which a cached description differs from the graph's
 * own (NULL: none): a tampered or stale entry must not be launched with
 * another grid, other arguments or another program's kernels. */
static const char *desc_difference(const lw_program *a, const lw_program *b) {
  if (a->nkernels != b->nkernels) return "its kernel count";
  if (a->nscratch != b->nscratch) return "its scratch buffer count";
  for (int32_t s = 0; s < a->nscratch; s++)
    if (a->scratch_bytes[s] != b->scratch_bytes[s] || a->scratch_offset[s] != b->scratch_offset[s])
      return "a scratch buffer's size or offset";
  if (a->scratch_arena != b->scratch_arena) return "its scratch arena";
  for (int32_t i = 0; i < a->nkernels; i++) {
    const lw_kernel *x = &a->kernels[i], *y = &b->kernels[i];
    if (strncmp(x->name, y->name, sizeof x->name)) return "a kernel's name";
    for (int d = 0; d < 3; d++)
      if (x->grid[d] != y->grid[d] || x->block[d] != y->block[d]) return "a kernel's grid or block";
    if (x->shared_bytes != y->shared_bytes || x->flags != y->flags)
      return "a kernel's shared memory or flags";
    if (memcmp(x->cluster, y->cluster, sizeof x->cluster)) return "a kernel's cluster";
    if (x->nargs != y->nargs) return "a kernel's argument count";
    for (int32_t j = 0; j < x->nargs; j++)
      if (x->args[j].kind != y->args[j].kind || x->args[j].index != y->args[j].index)
        return "a kernel's arguments";
  }
  return NULL;
}

/* The directory, the graph's program and the key; u->dir stays NULL when
 * the cache is off, its directory unsafe (noted) or the program cannot be
 * described (the lowering will then say why). The key names everything the
 * module depends on: versions, target, the graph's hash, and a hash of its
 * program's description, which holds the kernel names (a fused kernel's
 * name comes from the graph's; an anchored program's do not). */
static void disk_begin(disk_use *u, fhjit_graph *g, const fhjit_cuda_options *o,
                       const rt_driver *d, const char *target, int dev_cc, const uint64_t hash[2],
                       fhjit_cuda_compile_info *ci) {
  memset(u, 0, sizeof *u);
  if (o && (o->flags & FHJIT_CUDA_NO_DISK_CACHE)) return;
  char why[384];
  if (rt_disk_option_problem(g->ctx, why, sizeof why)) {
    note(ci, "disk cache not used: %s", why);
    return;
  }
  char *dir = rt_disk_dir(g->ctx);
  if (!dir) return;
  if (rt_disk_dir_problem(dir, why, sizeof why)) {
    note(ci, "disk cache not used: %s", why);
    free(dir);
    return;
  }
  sp_buf desc = {0};
  if (rt_describe(g, target, &u->want) != FHJIT_OK) {
    fhjit_clear_error(g->ctx);
    free(dir);
    return;
  }
  rt_desc_write(&desc, &u->want);
  uint64_t h0 = rt_checksum(3, desc.data, desc.len), h1 = rt_checksum(4, desc.data, desc.len);
  int failed = desc.failed;
  sp_buf_free(&desc);
  if (failed) {
    free(dir);
    return;
  }
  snprintf(u->key, sizeof u->key,
           "fhjit-kernel 2|fhjit %s code %s|llvm %s|driver %d|target %s|device sm_%d|graph "
           "%016llx%016llx|program %016llx%016llx",
           FHJIT_VERSION_STRING, FHJIT_CODEGEN_ID, FHJIT_LLVM_VERSION, d->version, target, dev_cc,
           (unsigned long long)hash[0], (unsigned long long)hash[1], (unsigned long long)h0,
           (unsigned long long)h1);
  u->dir = dir;
}

/* Loads the graph's entry into k when there is a sound one: 1 when loaded.
 * Refused entries are noted (ci->disk_rejected) and never loaded. */
static int disk_load(disk_use *u, fhjit_context *ctx, const rt_driver *d, const char *what,
                     fhjit_graph *g, fhjit_cuda_kernel *k, fhjit_cuda_compile_info *ci) {
  double td = rt_now_ms();
  rt_disk_entry e;
  rt_disk_result dr = rt_disk_load(u->dir, u->key, &e);
  ci->disk_ms += rt_now_ms() - td;
  const char *bad = dr == RT_DISK_HIT ? program_problem(k, &e.desc) : NULL;
  const char *differs = dr == RT_DISK_HIT && !bad ? desc_difference(&e.desc, &u->want) : NULL;
  int loaded = 0;
  if (dr == RT_DISK_CORRUPT) {
    note(ci, "cache entry refused: %s", e.why);
  } else if (bad) {
    note(ci, "cache entry refused: its description has %s", bad);
  } else if (differs) {
    note(ci, "cache entry refused: %s differs from the graph's program", differs);
  } else if (dr == RT_DISK_HIT) {
    k->prog = e.desc;
    double tl = rt_now_ms();
    loaded = load_module(ctx, d, what, g->name, k, e.cubin) == FHJIT_OK;
    ci->load_ms += rt_now_ms() - tl;
    if (!loaded) { /* checksummed but unloadable (a changed driver?) */
      note(ci, "cache entry refused: %s", fhjit_last_error(ctx));
      fhjit_clear_error(ctx);
    }
  }
  ci->disk_rejected = dr != RT_DISK_MISS && !loaded;
  if (loaded) ci->source = FHJIT_CUDA_FROM_DISK;
  rt_disk_entry_free(&e);
  return loaded;
}

/* Writes the new entry; a cache that cannot be written only costs time. A
 * program that differs from its description would be refused at every
 * load: not written (an internal inconsistency, noted). */
static void disk_store(disk_use *u, const lw_program *prog, const void *cubin, size_t cubin_size,
                       fhjit_cuda_compile_info *ci) {
  const char *bad = desc_difference(prog, &u->want);
  if (bad) {
    note(ci, "not written to the disk cache: %s differs from its description (internal)", bad);
    return;
  }
  char why[512];
  double tk = rt_now_ms();
  ci->disk_written = rt_disk_store(u->dir, u->key, prog->ptx, strlen(prog->ptx), cubin, cubin_size,
                                   prog, why, sizeof why);
  ci->disk_ms += rt_now_ms() - tk;
  if (!ci->disk_written) note(ci, "not written to the disk cache: %s", why);
}

/* Lowers, links and loads g's program into k, and writes it to the disk
 * cache (when u->dir). */
static fhjit_status compile_fresh(fhjit_cuda_kernel *k, fhjit_graph *g, const rt_driver *d,
                                  const char *what, const char *target, disk_use *u,
                                  fhjit_cuda_compile_info *ci) {
  fhjit_context *ctx = g->ctx;
  memset(&k->prog, 0, sizeof k->prog);
  double tl = rt_now_ms();
  lw_program prog;
  memset(&prog, 0, sizeof prog);
  fhjit_status s = rt_lower(g, target, &prog);
  ci->lower_ms = rt_now_ms() - tl;
  const char *problem = s ? NULL : program_problem(k, &prog);
  if (!s && !problem && prog.nkernels > 0 && !prog.ptx) problem = "kernels but no PTX";
  if (problem)
    s = ir_error(ctx, FHJIT_ERR_LLVM, "%s: graph @%s: the lowering produced %s", what, g->name,
                 problem);
  if (s != FHJIT_OK) {
    lw_program_free(&prog);
    return s;
  }
  k->prog = prog;
  k->prog.ptx = NULL; /* ownership of the text stays with `prog` below */
  void *cubin = NULL;
  size_t cubin_size = 0;
  if (prog.nkernels > 0) {
    double tk = rt_now_ms();
    s = link_ptx(ctx, d, what, g->name, target, prog.ptx, &cubin, &cubin_size);
    ci->link_ms = rt_now_ms() - tk;
    if (s == FHJIT_OK) {
      tk = rt_now_ms();
      s = load_module(ctx, d, what, g->name, k, cubin);
      ci->load_ms = rt_now_ms() - tk;
    }
    if (s == FHJIT_OK && u->dir) disk_store(u, &prog, cubin, cubin_size, ci);
  }
  free(cubin);
  lw_program_free(&prog);
  if (s == FHJIT_OK) ci->source = FHJIT_CUDA_COMPILED;
  return s;
}

/* ----------------------------------------------------------------- compile */

/* Whether kernel k is graph g's: the same hash (FHJIT_PW_PLAN folded in)
 * and the same name, whose symbols the module may hold (a fused kernel is
 * named after its graph) and which its messages give. */
static int same_graph(const fhjit_cuda_kernel *k, const fhjit_graph *g, const uint64_t hash[2]) {
  return k->hash[0] == hash[0] && k->hash[1] == hash[1] && !strcmp(k->graph_name, g->name);
}

static fhjit_cuda_kernel *from_memory(fhjit_cuda_kernel *k, fhjit_cuda_compile_info *info,
                                      double t0) {
  if (info) {
    *info = k->info;
    info->source = FHJIT_CUDA_FROM_MEMORY;
    info->disk_rejected = info->disk_written = 0;
    info->disk_note[0] = 0;
    info->lower_ms = info->link_ms = info->load_ms = info->disk_ms = 0;
    info->total_ms = rt_now_ms() - t0;
  }
  return k;
}

static fhjit_status plan_refused(fhjit_context *ctx, ir_opt opt, const char *text,
                                 const char *why) {
  return ir_error(ctx, FHJIT_ERR_ARGUMENT, "error: %s=\"%s\": %s", ir_option_label(ctx, opt), text,
                  why);
}

/* Kernels of another pw_plan (FHJIT_PW_PLAN) or bconv_plan
 * (FHJIT_BCONV_PLAN) are other code: other cache entries, the plan folded
 * into the graph's hash. A malformed plan is refused here, as the
 * lowering refuses it: folded in as "no plan", it found the default
 * plan's kernel in memory and the launch went on, where a new context
 * reported the error. */
static fhjit_status fold_plans(fhjit_context *ctx, uint64_t hash[2]) {
  lw_pw_plan pw;
  char why[160];
  const char *text = ir_option(ctx, IR_OPT_PW_PLAN);
  int set = lw_pw_plan_parse(text, &pw, why, sizeof why);
  if (set < 0) return plan_refused(ctx, IR_OPT_PW_PLAN, text, why);
  if (set > 0)
    hash[1] ^= rt_checksum(hash[0], &(int64_t[4]){pw.vec, pw.per_thread, pw.block, pw.aut}, 32);
  lw_bconv_tuning bt;
  text = ir_option(ctx, IR_OPT_BCONV_PLAN);
  set = lw_bconv_tuning_parse(text, &bt, why, sizeof why);
  if (set < 0) return plan_refused(ctx, IR_OPT_BCONV_PLAN, text, why);
  if (set > 0)
    hash[0] ^= rt_checksum(hash[1], &(int64_t[5]){bt.vec, bt.threads, bt.split, bt.unroll, bt.mma},
                           40);
  return FHJIT_OK;
}

static fhjit_cuda_kernel *compile_locked(rt_state *st, fhjit_graph *g, const rt_driver *d,
                                         const fhjit_cuda_options *o, CUcontext cuctx,
                                         const char *what, fhjit_cuda_compile_info *info) {
  fhjit_context *ctx = g->ctx;
  double t0 = rt_now_ms();
  unsigned long long id = 0;
  CUresult r = d->cuCtxGetId(cuctx, &id);
  if (r != CUDA_SUCCESS) {
    rt_cuda_error(ctx, d, r, "cuCtxGetId", "%s: cannot identify the current CUDA context", what);
    return NULL;
  }
  uint64_t hash[2];
  if (fhjit_graph_hash(g, hash) != FHJIT_OK || fold_plans(ctx, hash) != FHJIT_OK) return NULL;
  char asked[16];
  snprintf(asked, sizeof asked, "%s", o && o->target ? o->target : "");

  /* The hit of repeated launches: no device queries, no target choice. */
  for (fhjit_cuda_kernel *k = st->kernels; k; k = k->next)
    if (k->cuctx == cuctx && k->cuctx_id == id && same_graph(k, g, hash) &&
        !strcmp(k->asked, asked) && (!o || !o->target || strlen(o->target) < sizeof asked))
      return from_memory(k, info, t0);

  CUdevice dev;
  int major = 0, minor = 0;
  if ((r = d->cuCtxGetDevice(&dev)) != CUDA_SUCCESS ||
      (r = d->cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev)) !=
          CUDA_SUCCESS ||
      (r = d->cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev)) !=
          CUDA_SUCCESS) {
    rt_cuda_error(ctx, d, r, "cuDeviceGetAttribute", "%s: cannot read the device's compute capability",
                  what);
    return NULL;
  }
  int dev_cc = major * 10 + minor;
  char target[16];
  if (choose_target(ctx, what, o ? o->target : NULL, dev_cc, target) != FHJIT_OK) return NULL;

  for (fhjit_cuda_kernel **p = &st->kernels; *p;) {
    fhjit_cuda_kernel *k = *p;
    if (k->cuctx == cuctx && k->cuctx_id != id) { /* a destroyed context's address reused */
      *p = k->next;
      kernel_free(k, NULL);
      continue;
    }
    if (k->cuctx == cuctx && same_graph(k, g, hash) && !strcmp(k->target, target))
      return from_memory(k, info, t0);
    p = &k->next;
  }

  fhjit_cuda_kernel *k = calloc(1, sizeof *k);
  if (!k) {
    ir_error(ctx, FHJIT_ERR_MEMORY, "%s: out of memory", what);
    return NULL;
  }
  k->ctx = ctx;
  pthread_mutex_init(&k->seen_lock, NULL);
  k->hash[0] = hash[0], k->hash[1] = hash[1];
  snprintf(k->target, sizeof k->target, "%s", target);
  snprintf(k->asked, sizeof k->asked, "%s", asked);
  k->cuctx = cuctx;
  k->cuctx_id = id;
  fhjit_cuda_compile_info ci = {0};
  snprintf(ci.target, sizeof ci.target, "%s", target);
  if (rt_describe_abi(g, k) != FHJIT_OK) goto fail;

  disk_use u;
  disk_begin(&u, g, o, d, target, dev_cc, hash, &ci);
  int loaded = u.dir && disk_load(&u, ctx, d, what, g, k, &ci);
  fhjit_status s = loaded ? FHJIT_OK : compile_fresh(k, g, d, what, target, &u, &ci);
  free(u.dir);
  if (s != FHJIT_OK) goto fail;
  ci.nkernels = k->prog.nkernels;
  ci.scratch_bytes = k->prog.scratch_arena;
  ci.total_ms = rt_now_ms() - t0;
  k->info = ci;
  k->next = st->kernels;
  st->kernels = k;
  if (info) *info = ci;
  return k;
fail:
  kernel_free(k, NULL);
  return NULL;
}

fhjit_cuda_kernel *rt_compile(fhjit_graph *g, const fhjit_cuda_options *o, CUcontext cuctx,
                              const rt_driver *d, const char *what,
                              fhjit_cuda_compile_info *info) {
  rt_state *st = rt_state_get(g->ctx);
  if (!st) {
    ir_error(g->ctx, FHJIT_ERR_MEMORY, "%s: out of memory", what);
    return NULL;
  }
  pthread_mutex_lock(&st->lock);
  fhjit_cuda_kernel *k = compile_locked(st, g, d, o, cuctx, what, info);
  pthread_mutex_unlock(&st->lock);
  return k;
}

/* Several threads may compile in one context at once (docs/runtime.md),
 * and they share its error record: every step that may record an error
 * (the graph's check, the driver, the current CUDA context, the compile)
 * runs under the context's lock. Those checks recorded their errors
 * before it, and two threads failing at once freed the same old message
 * (found by ThreadSanitizer, a double free under ASan). */
fhjit_cuda_kernel *fhjit_cuda_compile(fhjit_graph *g, const fhjit_cuda_options *o,
                                      fhjit_cuda_compile_info *info) {
  const char *what = "fhjit_cuda_compile";
  if (!g) return NULL;
  rt_state *st = rt_state_get(g->ctx);
  if (!st) {
    /* no state, so no thread holds its lock: the creation lock orders
     * these records */
    pthread_mutex_lock(&state_create_lock);
    ir_error(g->ctx, FHJIT_ERR_MEMORY, "%s: out of memory", what);
    pthread_mutex_unlock(&state_create_lock);
    return NULL;
  }
  fhjit_cuda_kernel *k = NULL;
  pthread_mutex_lock(&st->lock);
  const rt_driver *d = graph_usable(g, what) ? rt_driver_get(g->ctx, what) : NULL;
  CUcontext cuctx;
  if (d && rt_current_context(g->ctx, d, o ? o->device : 0, what, &cuctx) == FHJIT_OK)
    k = compile_locked(st, g, d, o, cuctx, what, info);
  pthread_mutex_unlock(&st->lock);
  return k;
}

const fhjit_cuda_compile_info *fhjit_cuda_kernel_info(const fhjit_cuda_kernel *k) {
  return k ? &k->info : NULL;
}

fhjit_cuda_context fhjit_cuda_kernel_context(const fhjit_cuda_kernel *k) {
  return k ? (fhjit_cuda_context)k->cuctx : NULL;
}

/* The caller's scratch is the arena (its buffers lie at the program's
 * offsets in it): one buffer, or none. */
int32_t fhjit_cuda_scratch_count(const fhjit_cuda_kernel *k) {
  return k && k->prog.scratch_arena ? 1 : 0;
}

int64_t fhjit_cuda_scratch_size(const fhjit_cuda_kernel *k, int32_t index) {
  if (!k || index != 0 || !k->prog.scratch_arena) return -1;
  return k->prog.scratch_arena;
}
