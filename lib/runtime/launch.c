/* launch.c: launching compiled kernels, and the thin memory helpers. The
 * launch path checks everything it can before the driver sees a pointer
 * (counts, zero and misaligned pointers, overlaps, then, unless told not
 * to, each pointer's allocation and context through the driver), and then
 * only enqueues: no synchronisation and no allocation, so that it works
 * inside CUDA graph capture. */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/runtime.h"

#define RT_ALIGN 16u

/* The context a launch on `stream` runs in: the current one; when the thread
 * has none, the stream's, else `fallback`, else the primary context. The
 * stream's context must be the current one. */
static fhjit_status launch_context(fhjit_context *ctx, const rt_driver *d, CUstream stream,
                                   CUcontext fallback, int32_t device, const char *what,
                                   CUcontext *out) {
  CUcontext cur = NULL, sctx = NULL;
  CUresult r = d->cuCtxGetCurrent(&cur);
  if (r != CUDA_SUCCESS)
    return rt_cuda_error(ctx, d, r, "cuCtxGetCurrent", "%s: cannot read the current context",
                         what);
  if (stream && stream != FHJIT_CU_STREAM_LEGACY && stream != FHJIT_CU_STREAM_PER_THREAD) {
    r = d->cuStreamGetCtx(stream, &sctx);
    if (r != CUDA_SUCCESS)
      return rt_cuda_error(ctx, d, r, "cuStreamGetCtx", "%s: stream %p is not a usable CUDA stream",
                           what, (void *)stream);
  }
  if (!cur) {
    CUcontext want = sctx ? sctx : fallback;
    if (!want) return rt_current_context(ctx, d, device, what, out);
    if ((r = d->cuCtxSetCurrent(want)) != CUDA_SUCCESS)
      return rt_cuda_error(ctx, d, r, "cuCtxSetCurrent", "%s: cannot make context %p current",
                           what, (void *)want);
    cur = want;
  }
  if (sctx && sctx != cur)
    return ir_error(ctx, FHJIT_ERR_ARGUMENT,
                    "%s: stream %p belongs to CUDA context %p, but the calling thread's current "
                    "context is %p",
                    what, (void *)stream, (void *)sctx, (void *)cur);
  *out = cur;
  return FHJIT_OK;
}

/* One pointer of a launch, for the checks. */
typedef enum rt_role { RT_PARAMS, RT_INPUT, RT_RESULT, RT_SCRATCH } rt_role;

typedef struct rt_ptr {
  rt_role role;
  int32_t index;
  CUdeviceptr base;
  uint64_t lo, hi; /* bytes touched from base: [lo, hi) */
} rt_ptr;

/* Names for messages, made only when one is needed: from the launching
 * graph when there is one, else from the graph that compiled the kernel. */
typedef struct rt_namer {
  const fhjit_cuda_kernel *k;
  const fhjit_graph *g;
} rt_namer;

static void describe(char *buf, size_t size, const rt_namer *nm, const rt_ptr *p) {
  char label[160];
  switch (p->role) {
  case RT_PARAMS: snprintf(buf, size, "parameter table"); return;
  case RT_SCRATCH: snprintf(buf, size, "scratch buffer #%d", (int)p->index); return;
  case RT_INPUT:
    snprintf(buf, size, "input #%d (%%%s)", (int)p->index,
             nm->g ? nm->g->nodes[nm->g->inputs[p->index]].name : nm->k->inputs[p->index].name);
    return;
  case RT_RESULT:
    if (nm->g) rt_result_label(nm->g, p->index, label, sizeof label);
    else snprintf(label, sizeof label, "%s", nm->k->results[p->index].name);
    snprintf(buf, size, "result #%d (%s)", (int)p->index, label);
    return;
  }
}

static int overlap(const rt_ptr *a, const rt_ptr *b) {
  uint64_t a0 = a->base + a->lo, a1 = a->base + a->hi;
  uint64_t b0 = b->base + b->lo, b1 = b->base + b->hi;
  return a0 < b1 && b0 < a1;
}

static _Atomic uint64_t free_generation;

uint64_t rt_free_generation_now(void) {
  return atomic_load_explicit(&free_generation, memory_order_acquire);
}

void rt_free_generation_bump(void) {
  atomic_fetch_add_explicit(&free_generation, 1, memory_order_acq_rel);
}

/* The entry remembering `first`, or NULL. Fully associative: a launch's few
 * pointers must never evict one another (a direct-mapped table made two
 * colliding buffers miss at every launch). Called under seen_lock. */
static rt_ptr_seen *seen_find(fhjit_cuda_kernel *k, CUdeviceptr first) {
  for (int i = 0; i < RT_PTR_SEEN; i++)
    if (k->seen[i].first == first) return &k->seen[i];
  return NULL;
}

/* The driver's view of the allocation holding `first`: remembered from an
 * earlier launch of k when nothing was freed through fhjit since, else
 * queried (and remembered when the pointer is good). */
static CUresult driver_view(fhjit_cuda_kernel *k, const rt_driver *d, CUdeviceptr first,
                            CUcontext *owner, CUdeviceptr *start, size_t *size) {
  uint64_t gen = rt_free_generation_now();
  pthread_mutex_lock(&k->seen_lock);
  rt_ptr_seen *e = seen_find(k, first);
  int hit = e && e->generation == gen;
  if (hit) *owner = e->owner, *start = e->start, *size = e->size;
  pthread_mutex_unlock(&k->seen_lock);
  if (hit) return CUDA_SUCCESS;
  CUpointer_attribute attrs[] = {CU_POINTER_ATTRIBUTE_CONTEXT,
                                 CU_POINTER_ATTRIBUTE_RANGE_START_ADDR,
                                 CU_POINTER_ATTRIBUTE_RANGE_SIZE};
  void *data[] = {owner, start, size};
  CUresult r = d->cuPointerGetAttributes(3, attrs, data, first);
  if (r == CUDA_SUCCESS && *size != 0 && *start <= first) {
    pthread_mutex_lock(&k->seen_lock);
    e = seen_find(k, first);
    if (!e) e = &k->seen[k->seen_next++ % RT_PTR_SEEN];
    *e = (rt_ptr_seen){first, *start, *size, *owner, gen};
    pthread_mutex_unlock(&k->seen_lock);
  }
  return r;
}

static fhjit_status check_driver_view(fhjit_cuda_kernel *k, const rt_driver *d, const char *what,
                                      const char *gname, const rt_namer *nm, const rt_ptr *p,
                                      CUcontext cur) {
  fhjit_context *ctx = k->ctx;
  char who[256];
  CUcontext owner = NULL;
  CUdeviceptr start = 0;
  size_t size = 0;
  CUdeviceptr first = p->base + p->lo; /* the base itself may lie before the allocation */
  CUresult r = driver_view(k, d, first, &owner, &start, &size);
  if (r == CUDA_SUCCESS && size != 0 && start <= first && (!owner || owner == cur) &&
      p->base + p->hi <= start + size)
    return FHJIT_OK; /* messages are made only for failures */
  describe(who, sizeof who, nm, p);
  if (r != CUDA_SUCCESS)
    return rt_cuda_error(ctx, d, r, "cuPointerGetAttributes", "%s: graph @%s: %s at 0x%llx", what,
                         gname, who, (unsigned long long)first);
  if (size == 0 || start > first)
    return ir_error(ctx, FHJIT_ERR_ARGUMENT,
                    "%s: graph @%s: %s: 0x%llx is not in memory allocated through the CUDA driver "
                    "(never allocated, freed, or a host pointer)",
                    what, gname, who, (unsigned long long)first);
  if (owner && owner != cur)
    return ir_error(ctx, FHJIT_ERR_ARGUMENT,
                    "%s: graph @%s: %s at 0x%llx belongs to CUDA context %p, not to the launch's "
                    "context %p",
                    what, gname, who, (unsigned long long)p->base, (void *)owner, (void *)cur);
  if (p->base + p->hi > start + size)
    return ir_error(ctx, FHJIT_ERR_ARGUMENT,
                    "%s: graph @%s: %s at 0x%llx spans %llu bytes from its base, but its "
                    "allocation (0x%llx, %llu bytes) ends %llu bytes after the base",
                    what, gname, who, (unsigned long long)p->base, (unsigned long long)p->hi,
                    (unsigned long long)start, (unsigned long long)size,
                    (unsigned long long)(start + size - p->base));
  return FHJIT_OK;
}

static int same_extents(const fhjit_type *a, const fhjit_type *b) {
  if (a->kind != b->kind || a->comps != b->comps || a->nbatch != b->nbatch || a->rows != b->rows ||
      a->n != b->n)
    return 0;
  for (int i = 0; i < a->nbatch; i++)
    if (a->batch[i] != b->batch[i]) return 0;
  return 1;
}

static fhjit_status check_args(fhjit_cuda_kernel *k, const fhjit_cuda_args *a,
                               const fhjit_graph *g, const rt_driver *d, CUcontext cur,
                               const char *what) {
  fhjit_context *ctx = k->ctx;
  const char *gname = g ? g->name : k->graph_name;
  if (a->ninputs != k->ninputs || a->nresults != k->nresults)
    return ir_error(ctx, FHJIT_ERR_ARGUMENT,
                    "%s: graph @%s takes %d inputs and %d results, the arguments give %d and %d",
                    what, gname, (int)k->ninputs, (int)k->nresults, (int)a->ninputs,
                    (int)a->nresults);
  if ((k->ninputs && !a->inputs) || (k->nresults && !a->results))
    return ir_error(ctx, FHJIT_ERR_ARGUMENT, "%s: graph @%s: null %s array", what, gname,
                    k->ninputs && !a->inputs ? "input" : "result");
  size_t ws = ir_word_size(k->radix);
  if (a->pstride < k->param_rows || a->pstride > ir_pstride_max(k->param_rows, ws))
    return ir_error(ctx, FHJIT_ERR_ARGUMENT,
                    "%s: graph @%s: pstride %lld must be at least the %lld columns (rows) of the "
                    "parameter table and at most %lld (its row 7 within the address space)",
                    what, gname, (long long)a->pstride, (long long)k->param_rows,
                    (long long)ir_pstride_max(k->param_rows, ws));
  int32_t nscratch = a->scratch ? fhjit_cuda_scratch_count(k) : 0; /* the arena */
  int32_t n = 1 + k->ninputs + k->nresults + nscratch;
  rt_ptr stack[32];
  rt_ptr *ps = n <= 32 ? stack : malloc(sizeof *ps * (size_t)n);
  if (!ps) return ir_error(ctx, FHJIT_ERR_MEMORY, "%s: out of memory", what);
  fhjit_status s = FHJIT_OK;
  int32_t np = 0;
  ps[np++] = (rt_ptr){RT_PARAMS, -1, a->params, 0,
                      ((uint64_t)a->pstride * 7 + (uint64_t)k->param_rows) * ws};
  int32_t first_input = np;
  for (int32_t i = 0; i < k->ninputs; i++)
    ps[np++] = (rt_ptr){RT_INPUT, i, a->inputs[i], k->inputs[i].lo, k->inputs[i].hi};
  int32_t first_result = np;
  for (int32_t i = 0; i < k->nresults; i++)
    ps[np++] = (rt_ptr){RT_RESULT, i, a->results[i], k->results[i].lo, k->results[i].hi};
  for (int32_t i = 0; i < nscratch; i++)
    ps[np++] = (rt_ptr){RT_SCRATCH, i, a->scratch[i], 0, (uint64_t)k->prog.scratch_arena};
  rt_namer nm = {k, g};
  char who[256], other[256];
  for (int32_t i = 0; i < np && s == FHJIT_OK; i++) {
    if (ps[i].base == 0 || ps[i].base % RT_ALIGN) {
      describe(who, sizeof who, &nm, &ps[i]);
      s = ir_error(ctx, FHJIT_ERR_ARGUMENT, "%s: graph @%s: %s: %s 0x%llx (device pointers must "
                   "be non-zero and %u-byte aligned)", what, gname, who,
                   ps[i].base ? "misaligned pointer" : "null pointer",
                   (unsigned long long)ps[i].base, RT_ALIGN);
    } else if (ps[i].base + ps[i].hi < ps[i].base) {
      describe(who, sizeof who, &nm, &ps[i]);
      s = ir_error(ctx, FHJIT_ERR_ARGUMENT, "%s: graph @%s: %s at 0x%llx runs past the end of the "
                   "address space", what, gname, who, (unsigned long long)ps[i].base);
    }
  }
  /* Whatever a launch writes (results, scratch) may overlap nothing else,
   * except a result over an input of its own type bound densely, when the
   * graph is pointwise and the result is computed from that input. */
  for (int32_t w = first_result; w < np && s == FHJIT_OK; w++) {
    for (int32_t o = 0; o < np && s == FHJIT_OK; o++) {
      if (o == w || (o > w && o >= first_result) || !overlap(&ps[w], &ps[o])) continue;
      if (o >= first_input && o < first_result && w < first_result + k->nresults) {
        const rt_buffer *in = &k->inputs[o - first_input], *res = &k->results[w - first_result];
        const char *why = NULL;
        if (ps[w].base != ps[o].base || !in->inplace_ok || !same_extents(&in->type, &res->type))
          why = "in place, a result must be the same buffer as an input of its type bound with "
                "the dense layout";
        else if (!k->pointwise || k->prog.nkernels > 1 || k->prog.nscratch)
          why = "this graph is not pointwise, so it cannot run in place";
        else if (!res->reads[o - first_input])
          why = "the result is not computed from that input, so it cannot overwrite it";
        if (!why) continue;
        describe(who, sizeof who, &nm, &ps[w]);
        describe(other, sizeof other, &nm, &ps[o]);
        s = ir_error(ctx, FHJIT_ERR_ARGUMENT, "%s: graph @%s: %s overlaps %s: %s", what, gname,
                     who, other, why);
      } else {
        describe(who, sizeof who, &nm, &ps[w]);
        describe(other, sizeof other, &nm, &ps[o]);
        s = ir_error(ctx, FHJIT_ERR_ARGUMENT, "%s: graph @%s: %s overlaps %s", what, gname, who,
                     other);
      }
    }
  }
  int driver_checks = !(a->options && (a->options->flags & FHJIT_CUDA_NO_POINTER_CHECKS));
  for (int32_t i = 0; i < np && s == FHJIT_OK && driver_checks; i++)
    s = check_driver_view(k, d, what, gname, &nm, &ps[i], cur);
  if (ps != stack) free(ps);
  return s;
}

/* Checks and enqueues; cur is the launch's context, found by the caller,
 * and id_known says that k's context was seen alive in it (by rt_compile). */
static fhjit_status launch_in(fhjit_cuda_kernel *k, const fhjit_cuda_args *a, const fhjit_graph *g,
                              const char *what, const rt_driver *d, CUcontext cur, int id_known) {
  fhjit_context *ctx = k->ctx;
  CUstream stream = (CUstream)a->stream;
  fhjit_status s;
  CUresult r;
  if (id_known) goto checks;
  if (cur != k->cuctx)
    return ir_error(ctx, FHJIT_ERR_ARGUMENT,
                    "%s: the kernels of graph @%s were loaded in CUDA context %p, but this launch "
                    "runs in context %p (compile the graph in that context first)",
                    what, g ? g->name : k->graph_name, (void *)k->cuctx, (void *)cur);
  unsigned long long id = 0;
  r = d->cuCtxGetId(cur, &id);
  if (r != CUDA_SUCCESS || id != k->cuctx_id)
    return ir_error(ctx, FHJIT_ERR_ARGUMENT,
                    "%s: CUDA context %p was destroyed after the kernels of graph @%s were loaded "
                    "in it (call fhjit_cuda_release_context before destroying a context)",
                    what, (void *)cur, g ? g->name : k->graph_name);
checks:
  if ((s = check_args(k, a, g, d, cur, what)) != FHJIT_OK) return s;
  uint64_t vals[LW_MAX_ARGS];
  void *ptrs[LW_MAX_ARGS];
  int own = 0;
  if (k->has_own && !a->scratch && !atomic_load(&k->counters_unsure) &&
      stream != FHJIT_CU_STREAM_PER_THREAD) {
    CUstreamCaptureStatus cs = CU_STREAM_CAPTURE_STATUS_ACTIVE;
    if (d->cuStreamIsCapturing(stream, &cs) == CUDA_SUCCESS && cs == CU_STREAM_CAPTURE_STATUS_NONE) {
      uintptr_t want = (uintptr_t)stream + 1, cur = 0;
      own = atomic_compare_exchange_strong(&k->home_stream, &cur, want) || cur == want;
    }
  }
  for (int32_t i = 0; i < k->prog.nkernels; i++) {
    const lw_kernel *kd = &k->prog.kernels[i];
    for (int32_t j = 0; j < kd->nargs; j++) {
      int32_t x = kd->args[j].index;
      switch (kd->args[j].kind) {
      case LW_ARG_PARAMS: vals[j] = a->params; break;
      case LW_ARG_PSTRIDE: vals[j] = (uint64_t)a->pstride; break;
      case LW_ARG_INPUT: vals[j] = a->inputs[x]; break;
      case LW_ARG_RESULT: vals[j] = a->results[x]; break;
      case LW_ARG_SCRATCH:
        vals[j] = a->scratch ? a->scratch[0] + (uint64_t)k->prog.scratch_offset[x] : k->scratch[x];
        break;
      case LW_ARG_OWN: vals[j] = (uint64_t)own; break;
      }
      ptrs[j] = &vals[j];
    }
    /* cuLaunchKernelEx for the attributes a plain launch lacks: programmatic
     * stream serialization (the kernel waits for the one before it itself,
     * griddepcontrol.wait) and thread-block clusters */
    CUlaunchAttribute attrs[2];
    unsigned nattrs = 0;
    memset(attrs, 0, sizeof attrs);
    if (kd->flags & LW_KERNEL_PDL) {
      attrs[nattrs].id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
      attrs[nattrs++].value.programmatic_stream_serialization_allowed = 1;
    }
    if (lw_kernel_cluster_size(kd) > 1) {
      attrs[nattrs].id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
      attrs[nattrs].value.cluster_dim.x = kd->cluster[0];
      attrs[nattrs].value.cluster_dim.y = kd->cluster[1];
      attrs[nattrs++].value.cluster_dim.z = kd->cluster[2];
    }
    if (nattrs) {
      CUlaunchConfig cfg = {kd->grid[0], kd->grid[1], kd->grid[2], kd->block[0], kd->block[1],
                            kd->block[2], kd->shared_bytes, stream, attrs, nattrs};
      r = d->cuLaunchKernelEx(&cfg, k->funcs[i], ptrs, NULL);
    } else {
      r = d->cuLaunchKernel(k->funcs[i], kd->grid[0], kd->grid[1], kd->grid[2], kd->block[0],
                            kd->block[1], kd->block[2], kd->shared_bytes, stream, ptrs, NULL);
    }
    if (r != CUDA_SUCCESS) {
      if (i > 0) atomic_store(&k->counters_unsure, 1);
      const char *launcher = nattrs ? "cuLaunchKernelEx" : "cuLaunchKernel";
      return rt_cuda_error(ctx, d, r, launcher, "%s: graph @%s: kernel %s (grid %u x %u x "
                           "%u, block %u x %u x %u, cluster %u, %u bytes shared)", what,
                           g ? g->name : k->graph_name, kd->name, kd->grid[0], kd->grid[1],
                           kd->grid[2], kd->block[0], kd->block[1], kd->block[2],
                           lw_kernel_cluster_size(kd), kd->shared_bytes);
    }
  }
  return FHJIT_OK;
}

fhjit_status fhjit_cuda_launch_kernel(fhjit_cuda_kernel *k, const fhjit_cuda_args *a) {
  const char *what = "fhjit_cuda_launch_kernel";
  if (!k) return FHJIT_ERR_ARGUMENT;
  if (!a) return ir_error(k->ctx, FHJIT_ERR_ARGUMENT, "%s: null arguments", what);
  const rt_driver *d = rt_driver_get(k->ctx, what);
  if (!d) return FHJIT_ERR_NO_DRIVER;
  CUcontext cur;
  fhjit_status s = launch_context(k->ctx, d, (CUstream)a->stream, k->cuctx, 0, what, &cur);
  if (s != FHJIT_OK) return s;
  return launch_in(k, a, NULL, what, d, cur, 0);
}

fhjit_status fhjit_cuda_launch(fhjit_graph *g, const fhjit_cuda_args *a) {
  const char *what = "fhjit_cuda_launch";
  if (!g) return FHJIT_ERR_ARGUMENT;
  if (!a) return ir_error(g->ctx, FHJIT_ERR_ARGUMENT, "%s: null arguments", what);
  if (!g->bound)
    return ir_error(g->ctx, FHJIT_ERR_ARGUMENT, "%s: graph @%s is not bound (call fhjit_bind)",
                    what, g->name);
  const rt_driver *d = rt_driver_get(g->ctx, what);
  if (!d) return FHJIT_ERR_NO_DRIVER;
  CUcontext cur;
  fhjit_status s = launch_context(g->ctx, d, (CUstream)a->stream, NULL,
                                  a->options ? a->options->device : 0, what, &cur);
  if (s != FHJIT_OK) return s;
  fhjit_cuda_kernel *k = rt_compile(g, a->options, cur, d, what, NULL);
  if (!k) return g->ctx->err.status ? g->ctx->err.status : FHJIT_ERR_CUDA;
  return launch_in(k, a, g, what, d, cur, 1); /* rt_compile matched cur and its id */
}

/* ----------------------------------------------------------------- helpers */

static const rt_driver *helper_driver(fhjit_context *ctx, const char *what) {
  const rt_driver *d = rt_driver_get(ctx, what);
  CUcontext cur;
  if (d && rt_current_context(ctx, d, 0, what, &cur) != FHJIT_OK) return NULL;
  return d;
}

fhjit_status fhjit_cuda_alloc(fhjit_context *ctx, size_t bytes, fhjit_cuda_ptr *out) {
  const char *what = "fhjit_cuda_alloc";
  if (!ctx) return FHJIT_ERR_ARGUMENT;
  if (!out) return ir_error(ctx, FHJIT_ERR_ARGUMENT, "%s: null result pointer", what);
  *out = 0;
  if (!bytes) return ir_error(ctx, FHJIT_ERR_ARGUMENT, "%s: zero bytes", what);
  const rt_driver *d = helper_driver(ctx, what);
  if (!d) return ctx->err.status;
  CUdeviceptr p = 0;
  CUresult r = d->cuMemAlloc(&p, bytes);
  if (r != CUDA_SUCCESS)
    return rt_cuda_error(ctx, d, r, "cuMemAlloc_v2", "%s: cannot allocate %zu bytes", what, bytes);
  *out = p;
  return FHJIT_OK;
}

fhjit_status fhjit_cuda_free(fhjit_context *ctx, fhjit_cuda_ptr ptr) {
  const char *what = "fhjit_cuda_free";
  if (!ctx) return FHJIT_ERR_ARGUMENT;
  if (!ptr) return FHJIT_OK;
  const rt_driver *d = helper_driver(ctx, what);
  if (!d) return ctx->err.status;
  rt_free_generation_bump(); /* pointers launches remembered must be checked again */
  CUresult r = d->cuMemFree(ptr);
  if (r != CUDA_SUCCESS)
    return rt_cuda_error(ctx, d, r, "cuMemFree_v2", "%s: 0x%llx", what, (unsigned long long)ptr);
  return FHJIT_OK;
}

fhjit_status fhjit_cuda_upload(fhjit_context *ctx, fhjit_cuda_ptr dst, const void *src,
                               size_t bytes) {
  const char *what = "fhjit_cuda_upload";
  if (!ctx) return FHJIT_ERR_ARGUMENT;
  if (!bytes) return FHJIT_OK;
  if (!dst || !src) return ir_error(ctx, FHJIT_ERR_ARGUMENT, "%s: null pointer", what);
  const rt_driver *d = helper_driver(ctx, what);
  if (!d) return ctx->err.status;
  CUresult r = d->cuMemcpyHtoD(dst, src, bytes);
  if (r != CUDA_SUCCESS)
    return rt_cuda_error(ctx, d, r, "cuMemcpyHtoD_v2", "%s: %zu bytes to 0x%llx", what, bytes,
                         (unsigned long long)dst);
  return FHJIT_OK;
}

fhjit_status fhjit_cuda_download(fhjit_context *ctx, void *dst, fhjit_cuda_ptr src, size_t bytes) {
  const char *what = "fhjit_cuda_download";
  if (!ctx) return FHJIT_ERR_ARGUMENT;
  if (!bytes) return FHJIT_OK;
  if (!dst || !src) return ir_error(ctx, FHJIT_ERR_ARGUMENT, "%s: null pointer", what);
  const rt_driver *d = helper_driver(ctx, what);
  if (!d) return ctx->err.status;
  CUresult r = d->cuMemcpyDtoH(dst, src, bytes);
  if (r != CUDA_SUCCESS)
    return rt_cuda_error(ctx, d, r, "cuMemcpyDtoH_v2", "%s: %zu bytes from 0x%llx", what, bytes,
                         (unsigned long long)src);
  return FHJIT_OK;
}

fhjit_status fhjit_cuda_param_table(fhjit_context *ctx, fhjit_radix radix, const uint64_t *moduli,
                                    int32_t rows, int64_t n, int ntt, uint64_t scale,
                                    fhjit_cuda_ptr *table, int64_t *pstride) {
  const char *what = "fhjit_cuda_param_table";
  if (!ctx) return FHJIT_ERR_ARGUMENT;
  if (!table || !pstride) return ir_error(ctx, FHJIT_ERR_ARGUMENT, "%s: null output", what);
  *table = 0;
  if (rows < 1) return ir_error(ctx, FHJIT_ERR_ARGUMENT, "%s: rows must be >= 1", what);
  if (radix != FHJIT_R32 && radix != FHJIT_R62)
    return ir_error(ctx, FHJIT_ERR_ARGUMENT, "%s: unknown radix %d", what, (int)radix);
  size_t bytes = (size_t)rows * 8 * ir_word_size(radix);
  void *host = malloc(bytes);
  if (!host) return ir_error(ctx, FHJIT_ERR_MEMORY, "%s: out of memory", what);
  fhjit_status s = fhjit_param_table(ctx, radix, moduli, rows, n, ntt, scale, host, rows);
  fhjit_cuda_ptr dev = 0;
  if (s == FHJIT_OK) s = fhjit_cuda_alloc(ctx, bytes, &dev);
  if (s == FHJIT_OK) s = fhjit_cuda_upload(ctx, dev, host, bytes);
  free(host);
  if (s != FHJIT_OK) {
    if (dev) {
      /* keep the upload's message, not the free's */
      fhjit_status keep = ctx->err.status;
      char *msg = ctx->err.message;
      ctx->err.message = NULL;
      fhjit_cuda_free(ctx, dev);
      free(ctx->err.message);
      ctx->err.message = msg;
      ctx->err.status = keep;
    }
    return s;
  }
  *table = dev;
  *pstride = rows;
  return FHJIT_OK;
}
