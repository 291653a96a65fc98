/* target.c: LLVM initialisation, the GPU target table, target machines, the
 * optimisation pipeline and PTX emission (see nvptx.h). */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <llvm-c/Analysis.h>
#include <llvm-c/Error.h>
#include <llvm-c/Target.h>
#include <llvm-c/Transforms/PassBuilder.h>

#include "nvptx/nvptx.h"

/* LLVM 19 accepts any sm_XX and +ptxNN with a mere warning (and an empty CPU
 * silently gives sm_30 code), so the table is the only gate. Each target gets
 * the lowest PTX ISA version LLVM 19 allows for it: the oldest driver that
 * knows the target can load the module, and CUDA 13's driver loads them all. */
static const nv_target targets[] = {
    {"sm_70", "+ptx60", 60}, {"sm_75", "+ptx63", 63}, {"sm_80", "+ptx70", 70},
    {"sm_86", "+ptx71", 71}, {"sm_89", "+ptx78", 78}, {"sm_90", "+ptx78", 78},
    {"sm_90a", "+ptx80", 80},
};
#define NTARGETS (sizeof targets / sizeof *targets)

static const char *const target_names[NTARGETS + 1] = {
    "sm_70", "sm_75", "sm_80", "sm_86", "sm_89", "sm_90", "sm_90a", NULL};

const char *const *nv_target_names(void) { return target_names; }

static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static int native_ok;

static void init_llvm(void) {
  LLVMInitializeNVPTXTargetInfo();
  LLVMInitializeNVPTXTarget();
  LLVMInitializeNVPTXTargetMC();
  LLVMInitializeNVPTXAsmPrinter();
  native_ok = !LLVMInitializeNativeTarget() && !LLVMInitializeNativeAsmPrinter();
}

int nv_init(void) {
  pthread_once(&init_once, init_llvm);
  return native_ok;
}

const nv_target *nv_find_target(sp_err *e, const char *arch) {
  if (!arch) arch = "sm_90";
  for (size_t i = 0; i < NTARGETS; i++)
    if (strcmp(targets[i].arch, arch) == 0) return &targets[i];
  sp_buf list = {0};
  for (size_t i = 0; i < NTARGETS; i++)
    sp_buf_printf(&list, "%s%s", i ? ", " : "", targets[i].arch);
  sp_error(e, FHJIT_ERR_TARGET, "error: unknown GPU target '%s'; supported targets: %s",
           arch, list.data ? list.data : "");
  sp_buf_free(&list);
  return NULL;
}

int nv_target_has_pdl(const nv_target *t) {
  return atoi(t->arch + 3) >= 90 && t->ptx_version >= 78;
}

int nv_target_has_cluster(const nv_target *t) {
  return atoi(t->arch + 3) >= 90 && t->ptx_version >= 78;
}

int nv_target_has_mma_u8(const nv_target *t) { return atoi(t->arch + 3) >= 80; }

static LLVMTargetMachineRef make_machine(sp_err *e, const char *triple,
                                         const char *cpu, const char *features,
                                         LLVMCodeGenOptLevel level) {
  nv_init();
  LLVMTargetRef target;
  char *err = NULL;
  if (LLVMGetTargetFromTriple(triple, &target, &err)) {
    sp_error(e, FHJIT_ERR_LLVM, "error: LLVM has no target for %s: %s", triple,
             err ? err : "");
    LLVMDisposeMessage(err);
    return NULL;
  }
  LLVMTargetMachineRef tm = LLVMCreateTargetMachine(target, triple, cpu, features, level,
                                                    LLVMRelocPIC, LLVMCodeModelDefault);
  if (!tm) sp_error(e, FHJIT_ERR_LLVM, "error: LLVM could not create a target machine for %s (%s)",
                    triple, cpu);
  return tm;
}

LLVMTargetMachineRef nv_gpu_machine(sp_err *e, const nv_target *t) {
  return make_machine(e, NV_TRIPLE, t->arch, t->feature, LLVMCodeGenLevelAggressive);
}

LLVMTargetMachineRef nv_gpu_machine_level(sp_err *e, const nv_target *t,
                                          LLVMCodeGenOptLevel level) {
  return make_machine(e, NV_TRIPLE, t->arch, t->feature, level);
}

LLVMTargetMachineRef nv_host_machine(sp_err *e) {
  return nv_host_machine_level(e, LLVMCodeGenLevelDefault);
}

LLVMTargetMachineRef nv_host_machine_level(sp_err *e, LLVMCodeGenOptLevel level) {
  if (!nv_init()) {
    sp_error(e, FHJIT_ERR_LLVM, "error: LLVM's native target is not available");
    return NULL;
  }
  char *triple = LLVMGetDefaultTargetTriple();
  char *cpu = LLVMGetHostCPUName();
  char *features = LLVMGetHostCPUFeatures();
  LLVMTargetMachineRef tm = make_machine(e, triple, cpu, features, level);
  LLVMDisposeMessage(triple);
  LLVMDisposeMessage(cpu);
  LLVMDisposeMessage(features);
  return tm;
}

void nv_prepare_module(LLVMModuleRef m, LLVMTargetMachineRef tm) {
  char *triple = LLVMGetTargetMachineTriple(tm);
  LLVMSetTarget(m, triple);
  LLVMDisposeMessage(triple);
  LLVMTargetDataRef td = LLVMCreateTargetDataLayout(tm);
  LLVMSetModuleDataLayout(m, td);
  LLVMDisposeTargetData(td);
}

fhjit_status nv_verify(sp_err *e, LLVMModuleRef m, const char *what) {
  char *msg = NULL;
  if (LLVMVerifyModule(m, LLVMReturnStatusAction, &msg)) {
    fhjit_status st = sp_error(e, FHJIT_ERR_LLVM,
                               "error: LLVM rejected the module of %s: %s", what,
                               msg ? msg : "(no message)");
    LLVMDisposeMessage(msg);
    return st;
  }
  LLVMDisposeMessage(msg);
  return FHJIT_OK;
}

fhjit_status nv_optimize(sp_err *e, LLVMModuleRef m, LLVMTargetMachineRef tm,
                         const char *pipeline) {
  LLVMPassBuilderOptionsRef opts = LLVMCreatePassBuilderOptions();
  LLVMErrorRef err = LLVMRunPasses(m, pipeline, tm, opts);
  LLVMDisposePassBuilderOptions(opts);
  if (!err) return FHJIT_OK;
  char *msg = LLVMGetErrorMessage(err);
  fhjit_status st = sp_error(e, FHJIT_ERR_LLVM, "error: LLVM pipeline %s failed: %s",
                             pipeline, msg ? msg : "");
  LLVMDisposeErrorMessage(msg);
  return st;
}

char *nv_module_text(LLVMModuleRef m) {
  char *text = LLVMPrintModuleToString(m);
  char *copy = text ? strdup(text) : NULL;
  LLVMDisposeMessage(text);
  return copy;
}

fhjit_status nv_emit_ptx(sp_err *e, LLVMModuleRef m, LLVMTargetMachineRef tm,
                         char **ptx) {
  *ptx = NULL;
  char *err = NULL;
  LLVMMemoryBufferRef buf = NULL;
  if (LLVMTargetMachineEmitToMemoryBuffer(tm, m, LLVMAssemblyFile, &err, &buf)) {
    fhjit_status st = sp_error(e, FHJIT_ERR_LLVM, "error: NVPTX code generation failed: %s",
                               err ? err : "(no message)");
    LLVMDisposeMessage(err);
    return st;
  }
  /* The buffer is not NUL-terminated: copy it with its size. */
  size_t size = LLVMGetBufferSize(buf);
  char *text = malloc(size + 1);
  if (text) {
    memcpy(text, LLVMGetBufferStart(buf), size);
    text[size] = 0;
  }
  LLVMDisposeMemoryBuffer(buf);
  if (!text) return sp_error(e, FHJIT_ERR_MEMORY, "error: out of memory for PTX text");
  *ptx = text;
  return FHJIT_OK;
}
