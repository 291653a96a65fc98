/* jit.c: the host JIT (ORC LLJIT) and the thread splitter of every host
 * kernel (jit.h). The fused pointwise path and the NTT kernels had each
 * their own copy of both until issue 15; the set-up around the JIT (host
 * machine, module, pipeline, symbols) was written once per kernel kind
 * until jit_compile. */
#include "jit/jit.h"

#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

#include <llvm-c/Error.h>
#include <llvm-c/LLJIT.h>
#include <llvm-c/Orc.h>

#include "nvptx/nvptx.h"

struct jit_code {
  LLVMOrcThreadSafeContextRef tsc; /* until the module is handed over */
  LLVMOrcLLJITRef lljit;
};

static fhjit_status orc_error(sp_err *e, const char *who, const char *what, LLVMErrorRef err) {
  char *msg = LLVMGetErrorMessage(err);
  fhjit_status st = sp_error(e, FHJIT_ERR_LLVM, "error: %s: %s: %s", who, what, msg ? msg : "");
  LLVMDisposeErrorMessage(msg);
  return st;
}

/* A new, empty code object whose context the caller's module is built in.
 * NULL after recording FHJIT_ERR_MEMORY. */
static jit_code *jit_create(sp_err *e) {
  jit_code *j = calloc(1, sizeof *j);
  if (!j) {
    sp_error(e, FHJIT_ERR_MEMORY, "error: out of memory");
    return NULL;
  }
  j->tsc = LLVMOrcCreateNewThreadSafeContext();
  return j;
}

static LLVMContextRef jit_llvm_context(jit_code *j) {
  return LLVMOrcThreadSafeContextGetContext(j->tsc);
}

/* Hands the optimised module m, built in j's context, to a new LLJIT for
 * the host at LLVMCodeGenLevelNone (jit.h says why). m is owned by j from
 * then on, on failure too. */
static fhjit_status jit_add_module(sp_err *e, jit_code *j, LLVMModuleRef m, const char *who) {
  SP_ASSERT(j->tsc && !j->lljit);
  LLVMOrcLLJITBuilderRef jb = LLVMOrcCreateLLJITBuilder(); /* LLJIT takes jb */
  LLVMTargetMachineRef tm = nv_host_machine_level(e, LLVMCodeGenLevelNone);
  if (!tm) {
    LLVMOrcDisposeLLJITBuilder(jb);
    LLVMDisposeModule(m);
    return FHJIT_ERR_LLVM;
  }
  LLVMOrcLLJITBuilderSetJITTargetMachineBuilder( /* takes tm */
      jb, LLVMOrcJITTargetMachineBuilderCreateFromTargetMachine(tm));
  LLVMErrorRef err = LLVMOrcCreateLLJIT(&j->lljit, jb);
  if (err) {
    j->lljit = NULL;
    LLVMDisposeModule(m);
    return orc_error(e, who, "creating the host JIT", err);
  }
  LLVMOrcThreadSafeModuleRef tsm = LLVMOrcCreateNewThreadSafeModule(m, j->tsc);
  /* The module keeps the context alive from here on. */
  LLVMOrcDisposeThreadSafeContext(j->tsc);
  j->tsc = NULL;
  err = LLVMOrcLLJITAddLLVMIRModule(j->lljit, LLVMOrcLLJITGetMainJITDylib(j->lljit), tsm);
  if (err) {
    LLVMOrcDisposeThreadSafeModule(tsm);
    return orc_error(e, who, "adding the module to the host JIT", err);
  }
  return FHJIT_OK;
}

/* The address of `sym`, compiled on first use. */
static fhjit_status jit_lookup(sp_err *e, jit_code *j, const char *sym, const char *who,
                               void **addr) {
  *addr = NULL;
  SP_ASSERT(j->lljit);
  LLVMOrcExecutorAddress a = 0;
  LLVMErrorRef err = LLVMOrcLLJITLookup(j->lljit, &a, sym);
  if (err) return orc_error(e, who, "compiling the host function", err);
  *addr = (void *)(uintptr_t)a;
  return FHJIT_OK;
}

/* Builds the module in j's context and optimises it for tm. The module
 * is prepared after the build, not before: lw_build makes its own module,
 * and no builder reads the triple or data layout. */
static fhjit_status build_module(sp_err *e, jit_code *j, LLVMTargetMachineRef tm,
                                 const char *what, const char *passes, jit_build_fn build,
                                 void *arg, LLVMModuleRef *m) {
  fhjit_status st = build(arg, jit_llvm_context(j), m);
  if (!st) {
    nv_prepare_module(*m, tm);
    st = nv_pipeline(e, *m, tm, what, passes, FHJIT_EMIT_LLVM_OPT, NULL, NULL);
  }
  return st;
}

fhjit_status jit_compile(sp_err *e, const char *what, const char *passes, jit_build_fn build,
                         void *arg, const char *who, const char *const *syms, int nsym,
                         void **addrs, jit_code **out) {
  *out = NULL;
  /* The machine the pipeline's analyses see; jit_add_module makes its own,
   * at level None. */
  LLVMTargetMachineRef tm = nv_host_machine(e);
  if (!tm) return FHJIT_ERR_LLVM;
  jit_code *j = jit_create(e);
  LLVMModuleRef m = NULL;
  fhjit_status st = j ? build_module(e, j, tm, what, passes, build, arg, &m) : FHJIT_ERR_MEMORY;
  LLVMDisposeTargetMachine(tm);
  if (st) {
    if (m) LLVMDisposeModule(m); /* before its context goes with j */
  } else {
    st = jit_add_module(e, j, m, who); /* takes m */
  }
  for (int i = 0; !st && i < nsym; i++) st = jit_lookup(e, j, syms[i], who, &addrs[i]);
  if (st) {
    jit_destroy(j);
    return st;
  }
  *out = j;
  return FHJIT_OK;
}

void jit_destroy(jit_code *j) {
  if (!j) return;
  if (j->lljit) {
    LLVMErrorRef err = LLVMOrcDisposeLLJIT(j->lljit);
    if (err) LLVMConsumeError(err);
  }
  if (j->tsc) LLVMOrcDisposeThreadSafeContext(j->tsc);
  free(j);
}

/* ------------------------------------------------------------ splitter */

typedef struct range {
  jit_range_fn fn;
  void *arg;
  int64_t begin, end;
  size_t scratch_bytes;
  int failed;
} range;

static void *run_range(void *p) {
  range *r = p;
  void *scratch = NULL;
  if (r->scratch_bytes && !(scratch = malloc(r->scratch_bytes))) {
    r->failed = 1;
    return NULL;
  }
  r->fn(r->arg, r->begin, r->end, scratch);
  free(scratch);
  return NULL;
}

fhjit_status jit_split(sp_err *e, jit_range_fn fn, void *arg, int64_t count, int64_t threads,
                       size_t scratch_bytes, const char *who) {
  int64_t n = threads;
  if (n > count) n = count;
  if (n > JIT_MAX_THREADS) n = JIT_MAX_THREADS;
  if (n < 1) n = 1;
  range parts[JIT_MAX_THREADS];
  pthread_t tids[JIT_MAX_THREADS];
  int started[JIT_MAX_THREADS] = {0};
  for (int64_t t = 0; t < n; t++)
    parts[t] = (range){fn, arg, count * t / n, count * (t + 1) / n, scratch_bytes, 0};
  for (int64_t t = 1; t < n; t++)
    started[t] = pthread_create(&tids[t], NULL, run_range, &parts[t]) == 0;
  run_range(&parts[0]);
  int failed = parts[0].failed;
  for (int64_t t = 1; t < n; t++) {
    if (started[t]) pthread_join(tids[t], NULL);
    else run_range(&parts[t]);
    failed |= parts[t].failed;
  }
  if (failed) return sp_error(e, FHJIT_ERR_MEMORY, "error: %s: out of memory", who);
  return FHJIT_OK;
}

int64_t jit_cores(void) {
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? n : 1;
}

typedef struct block_job {
  jit_block_fn fn;
  const uint64_t *slots;
} block_job;

static void block_range(void *arg, int64_t begin, int64_t end, void *shared) {
  const block_job *j = arg;
  j->fn(j->slots, begin, end, shared);
}

fhjit_status jit_run_blocks(sp_err *e, jit_block_fn fn, const uint64_t *slots, int64_t count,
                            int64_t threads, size_t shared_bytes, const char *who) {
  block_job job = {fn, slots};
  return jit_split(e, block_range, &job, count, threads, shared_bytes, who);
}
