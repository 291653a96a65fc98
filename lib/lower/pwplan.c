/* pwplan.c: the run-time choice of per-thread work for pointwise GPU
 * kernels (the context's pw_plan option or FHJIT_PW_PLAN, see lower.h), for
 * tuning sweeps: read at lowering time and applied to the plan
 * lw_plan_graph computed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lower/lw_llvm.h"

int lw_plan_entry(const char **s, char *key, long *value, char *why, size_t why_size) {
  const char *at = *s;
  *key = *at;
  if (at[1] != '=') {
    snprintf(why, why_size, "expected K=value at \"%s\"", at);
    return -1;
  }
  char *end;
  *value = strtol(at + 2, &end, 10);
  if (end == at + 2) {
    snprintf(why, why_size, "%c= needs a number", *key);
    return -1;
  }
  *s = end;
  return 0;
}

int lw_plan_sep(const char **s, char *why, size_t why_size) {
  if (**s == ',' && (*s)[1]) (*s)++;
  else if (**s) {
    snprintf(why, why_size, "expected ',' at \"%s\"", *s);
    return -1;
  }
  return 0;
}

int lw_pw_plan_parse(const char *s, lw_pw_plan *plan, char *why, size_t why_size) {
  memset(plan, 0, sizeof *plan);
  if (!s || !*s) return 0;
  while (*s) {
    char key;
    long v;
    if (lw_plan_entry(&s, &key, &v, why, why_size)) return -1;
    if (key == 'V' && (v == 1 || v == 2 || v == 4)) plan->vec = (int)v;
    else if (key == 'U' && v >= 1 && v <= 8) plan->per_thread = (int)v;
    else if (key == 'T' && v >= 32 && v <= 1024 && v % 32 == 0) plan->block = (int)v;
    else if (key == 'A' && (v == 0 || v == 1)) plan->aut = (int)v;
    else {
      snprintf(why, why_size, "%c=%ld: V is 1, 2 or 4; U is 1 to 8; T is a multiple of 32 "
               "from 32 to 1024; A is 0 or 1", key, v);
      return -1;
    }
    if (lw_plan_sep(&s, why, why_size)) return -1;
  }
  return 1;
}

int64_t lw_plan_grid(const lw_plan *p) {
  int64_t per_block = (int64_t)p->block * p->per_thread;
  return (p->groups + per_block - 1) / per_block;
}

fhjit_status lw_apply_pw_plan(fhjit_graph *g, lw_plan *p, lw_target target) {
  lw_pw_plan pw;
  char why[160];
  const char *text = ir_option(g->ctx, IR_OPT_PW_PLAN);
  int set = lw_pw_plan_parse(text, &pw, why, sizeof why);
  if (set < 0)
    return ir_error(g->ctx, FHJIT_ERR_ARGUMENT, "error: %s=\"%s\": %s",
                    ir_option_label(g->ctx, IR_OPT_PW_PLAN), text, why);
  if (!set || g->nresults == 0) return FHJIT_OK;
  if (pw.vec) {
    /* a vector access is at most 16 bytes, and never crosses a row */
    int v = pw.vec * (int)ir_word_size(g->radix) > 16 ? 16 / (int)ir_word_size(g->radix) : pw.vec;
    p->vec = p->n % v == 0 ? v : 1;
    p->groups = p->work / p->vec;
  }
  /* the host runs the staged automorphism's arithmetic too (lower_body.c
   * emit_stage), with the GPU's block */
  p->aut_stage = pw.aut;
  if (pw.block) p->block = pw.block;
  if (target != LW_GPU) return FHJIT_OK;
  if (pw.per_thread) p->per_thread = pw.per_thread;
  if (lw_plan_grid(p) > INT32_MAX)
    return ir_error(g->ctx, FHJIT_ERR_UNSUPPORTED,
                    "error: graph @%s: %lld elements need more blocks than a launch grid has",
                    g->name, (long long)p->work);
  return FHJIT_OK;
}
