/* runtime_stub.c: placeholder until lib/runtime lands (the CUDA runtime). */
#include "ir/ir.h"
void rt_context_release(fhjit_context *ctx);
void rt_context_release(fhjit_context *ctx) { (void)ctx; }
