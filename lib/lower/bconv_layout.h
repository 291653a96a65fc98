/* bconv_layout.h: the conversion kernel's shared-memory layout and the
 * tensor-core form's shapes (prefix-free static inline helpers, internal
 * to bconv_plan.c and bconv.c: the plan sizes what the emitter lays
 * out). */
#ifndef FHJIT_LOWER_BCONV_LAYOUT_H
#define FHJIT_LOWER_BCONV_LAYOUT_H

#include "lower/bconv.h"

/* shared layout, in words of the radix: per source row 3 (a' or 4a', its
 * Montgomery constant, s), per target row 4 (r32: t, k, 2^32 mod t,
 * h mod t; r62: t, k64, h mod t, pad; in the tensor-core form the last
 * word is 2^8 R mod t, and r62's third 2^32 mod t), then the l*m
 * products' constants, each target row's padded to whole 16-byte vectors
 * (the tensor-core form: its B fragments instead) */
#define SRC_WORDS 3
#define TGT_WORDS 4

static inline int word_bytes(fhjit_radix r) { return r == FHJIT_R32 ? 4 : 8; }
static inline int64_t crow_words(const lw_bconv_plan *p) {
  int v = 16 / word_bytes(p->radix);
  return ((int64_t)p->l + v - 1) / v * v;
}
static inline int64_t tgt_base(const lw_bconv_plan *p) {
  int v = 16 / word_bytes(p->radix);
  return ((int64_t)SRC_WORDS * p->l + v - 1) / v * v;
}
static inline int64_t c_base(const lw_bconv_plan *p) {
  return tgt_base(p) + (int64_t)TGT_WORDS * p->m;
}
static inline int64_t shared_words(const lw_bconv_plan *p) {
  return c_base(p) + crow_words(p) * p->m;
}


/* The tensor-core form's shapes: 32-bit halves per word (r32 1, r62 2)
 * and bytes (4, 8); k-steps of 8 halves (32 bytes), groups of 8 target
 * rows; its shared memory: the scalar form's source and target constants,
 * then the B fragments (bconv_mma.c's file comment),
 * [group][byte][k-step][lane][2] 32-bit words. */
static inline int mma_halves(const lw_bconv_plan *p) { return p->radix == FHJIT_R62 ? 2 : 1; }
static inline int mma_bytes(const lw_bconv_plan *p) { return 4 * mma_halves(p); }
static inline int64_t mma_ks(const lw_bconv_plan *p) { return ((int64_t)p->l * mma_halves(p) + 7) / 8; }
static inline int64_t mma_groups(const lw_bconv_plan *p) { return ((int64_t)p->m + 7) / 8; }
static inline int64_t frag_words(const lw_bconv_plan *p) {
  return mma_groups(p) * mma_bytes(p) * mma_ks(p) * 64;
}
static inline int64_t mma_shared_words(const lw_bconv_plan *p) {
  return c_base(p) + frag_words(p) / mma_halves(p);
}

#endif
