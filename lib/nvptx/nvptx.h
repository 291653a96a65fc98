/* nvptx.h: LLVM set-up and the NVPTX back end (prefix nv_): one-time,
 * thread-safe LLVM initialisation, the table of supported GPU targets, target
 * machines for a GPU target or the host, the optimisation pipeline, and PTX
 * emission. Every compilation owns its LLVMContextRef and target machine, so
 * compilations may run on several threads at once. */
#ifndef FHJIT_NVPTX_H
#define FHJIT_NVPTX_H

#include <llvm-c/Core.h>
#include <llvm-c/TargetMachine.h>

#include "support/support.h"

/* A supported GPU target and the PTX ISA version its code is emitted for. */
typedef struct nv_target {
  const char *arch;    /* "sm_90" */
  const char *feature; /* "+ptx78": the lowest PTX ISA LLVM 19 allows for arch */
  int ptx_version;     /* 78 */
} nv_target;

#define NV_TRIPLE "nvptx64-nvidia-cuda"

/* Initialises the NVPTX and native targets once (pthread_once). Returns 0 when
 * the native target could not be initialised (the host JIT is then refused);
 * the NVPTX target is always linked in. */
int nv_init(void);

/* The target for `arch` (NULL: sm_90), or NULL after recording
 * FHJIT_ERR_TARGET with the list of supported targets in e. */
const nv_target *nv_find_target(sp_err *e, const char *arch);
/* 1 when the target has programmatic dependent launch (griddepcontrol:
 * sm_90 on, PTX ISA 7.8). */
int nv_target_has_pdl(const nv_target *t);
/* 1 when the target has thread-block clusters and distributed shared
 * memory (sm_90 on, PTX 7.8). */
int nv_target_has_cluster(const nv_target *t);
/* 1 when the target has mma.sync.m16n8k32 on 8-bit integers (sm_80 on). */
int nv_target_has_mma_u8(const nv_target *t);
/* NULL-terminated list of supported arch names (fhjit_targets). */
const char *const *nv_target_names(void);

/* A target machine for a GPU target / for the host (CPU and features of this
 * machine). NULL after recording FHJIT_ERR_LLVM in e. Dispose with
 * LLVMDisposeTargetMachine. */
LLVMTargetMachineRef nv_gpu_machine(sp_err *e, const nv_target *t);
LLVMTargetMachineRef nv_host_machine(sp_err *e);
/* The same with another code generation level (the host JIT of the fused
 * kernel uses LLVMCodeGenLevelNone: fast instruction selection). */
LLVMTargetMachineRef nv_host_machine_level(sp_err *e, LLVMCodeGenOptLevel level);
/* A GPU target machine at another level (nv_gpu_machine: Aggressive). */
LLVMTargetMachineRef nv_gpu_machine_level(sp_err *e, const nv_target *t,
                                          LLVMCodeGenOptLevel level);

/* Sets the module's triple and data layout from the target machine. */
void nv_prepare_module(LLVMModuleRef m, LLVMTargetMachineRef tm);

/* LLVMVerifyModule; FHJIT_ERR_LLVM with LLVM's message on failure. */
fhjit_status nv_verify(sp_err *e, LLVMModuleRef m, const char *what);

/* Runs a new-pass-manager pipeline ("default<O3>") with the target's
 * analyses. FHJIT_ERR_LLVM with LLVM's message on failure. */
fhjit_status nv_optimize(sp_err *e, LLVMModuleRef m, LLVMTargetMachineRef tm,
                         const char *pipeline);

/* Module text (LLVMPrintModuleToString), malloc'd; NULL when out of memory. */
char *nv_module_text(LLVMModuleRef m);

/* The one pipeline of a GPU module (pipeline.c): verify, then optimise
 * with `passes` unless only the unoptimised text is asked for, then emit
 * PTX when it is asked for. stage: the text handed out in *text (when text
 * is not NULL): the module before optimisation (FHJIT_EMIT_LLVM), after it
 * (FHJIT_EMIT_LLVM_OPT) or the PTX; ptx (when not NULL) receives the PTX
 * too. A stage beyond the last asked for is not run; with neither text nor
 * ptx and a stage past FHJIT_EMIT_LLVM it verifies and optimises (the host
 * JIT's use). Outputs malloc'd; NULL on failure, recorded in e. */
fhjit_status nv_pipeline(sp_err *e, LLVMModuleRef m, LLVMTargetMachineRef tm, const char *what,
                         const char *passes, fhjit_emit_kind stage, char **text, char **ptx);

/* PTX of an optimised module, malloc'd and NUL-terminated. */
fhjit_status nv_emit_ptx(sp_err *e, LLVMModuleRef m, LLVMTargetMachineRef tm,
                         char **ptx);

#endif
