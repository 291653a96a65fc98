/* test_evalpf.c: lw_eval_to_prefetch (lib/lower/evalpf.c), the evaluator
 * whose input loads become L2 prefetches (the reduce kernel's key
 * prefetch, ntt_plan epipf bit 2). Checked on the IR itself: every load
 * from an input pointer is gone and a prefetch of the same address stands
 * in its place, the other loads (the parameter table) stay, the module
 * still verifies, and a register input (no load) adds nothing. Which
 * kernel calls these evaluators, and where, test/lit/ntt/epipf.fh checks
 * in the PTX. */
#include <check.h>
#include <stdio.h>
#include <string.h>

#include <llvm-c/Analysis.h>
#include <llvm-c/Core.h>

#include "lower/lw_llvm.h"
#include "testutil.h"

/* The pointer a chain of GEPs starts from (the test's own walk). */
static LLVMValueRef base_of(LLVMValueRef p) {
  while (LLVMIsAGetElementPtrInst(p) || (LLVMIsAConstantExpr(p) && LLVMGetConstOpcode(p) == LLVMGetElementPtr))
    p = LLVMGetOperand(p, 0);
  return p;
}

typedef struct census {
  int loads_from[8];  /* loads whose base is parameter i */
  int prefetches;     /* calls of inline asm "prefetch.global.L2 [$0];" */
  int prefetch_param; /* of those, how many address parameter 2 or above */
} census;

static int param_index(LLVMValueRef fn, LLVMValueRef p) {
  for (unsigned i = 0; i < LLVMCountParams(fn) && i < 8; i++)
    if (LLVMGetParam(fn, i) == p) return (int)i;
  return -1;
}

static census take_census(LLVMValueRef fn) {
  census c;
  memset(&c, 0, sizeof c);
  for (LLVMBasicBlockRef bb = LLVMGetFirstBasicBlock(fn); bb; bb = LLVMGetNextBasicBlock(bb))
    for (LLVMValueRef i = LLVMGetFirstInstruction(bb); i; i = LLVMGetNextInstruction(i)) {
      if (LLVMGetInstructionOpcode(i) == LLVMLoad) {
        int p = param_index(fn, base_of(LLVMGetOperand(i, 0)));
        if (p >= 0) c.loads_from[p]++;
        continue;
      }
      if (LLVMGetInstructionOpcode(i) != LLVMCall || !LLVMIsAInlineAsm(LLVMGetCalledValue(i))) continue;
      size_t len;
      const char *text = LLVMGetInlineAsmAsmString(LLVMGetCalledValue(i), &len);
      if (len != strlen("prefetch.global.L2 [$0];") || strncmp(text, "prefetch.global.L2 [$0];", len)) continue;
      c.prefetches++;
      LLVMValueRef addr = LLVMGetOperand(i, 0); /* ptrtoint of the load's pointer */
      if (LLVMIsAPtrToIntInst(addr) && param_index(fn, base_of(LLVMGetOperand(addr, 0))) >= 2)
        c.prefetch_param++;
    }
  return c;
}

/* The evaluator of result 0 of g (vec lanes, register input reg or -1)
 * built into m, then made prefetches; its census before and after. */
static void build_and_rewrite(fhjit_graph *g, int vec, int32_t reg, census *before, census *after) {
  lw_plan pl;
  ck_assert_int_eq(lw_plan_graph(g, &pl), FHJIT_OK);
  if (vec == 1) pl.vec = 1, pl.groups = pl.work;
  else ck_assert_int_eq(pl.vec, vec);
  LLVMContextRef c = LLVMContextCreate();
  LLVMModuleRef m = LLVMModuleCreateWithNameInContext("pf", c);
  int64_t values;
  ck_assert_int_eq(lw_build_eval_reg(g, &pl, LW_GPU, c, m, reg, &values), FHJIT_OK);
  char name[LW_NAME_MAX + 16];
  snprintf(name, sizeof name, "%s.eval0", pl.name);
  LLVMValueRef fn = LLVMGetNamedFunction(m, name);
  ck_assert_ptr_nonnull(fn);
  *before = take_census(fn);
  ck_assert_int_eq(lw_eval_to_prefetch(g->ctx, fn, 2, (unsigned)g->ninputs), FHJIT_OK);
  *after = take_census(fn);
  char *msg = NULL;
  ck_assert_msg(!LLVMVerifyModule(m, LLVMReturnStatusAction, &msg), "%s", msg ? msg : "");
  LLVMDisposeMessage(msg);
  LLVMDisposeModule(m);
  LLVMContextDispose(c);
}

/* Inputs of a digit product and a sum: every input load made a prefetch
 * (one per lane at vec 1, one per vector at vec 2 where the layout is
 * dense), the parameter table's loads kept. */
START_TEST(test_inputs_become_prefetches) {
  int vec = _i ? 2 : 1;
  fhjit_context *ctx = fhjit_context_create();
  fhjit_graph *g = fhjit_graph_create(ctx, "pf", FHJIT_R62);
  fhjit_type pt = tu_poly(0, 0, NULL, 2, 16), kt = tu_key(2, 2, 16);
  pt.domain = kt.domain = FHJIT_DOMAIN_NTT;
  pt.form = kt.form = FHJIT_FORM_MONT;
  fhjit_value x = fhjit_input(g, "x", &pt), key = fhjit_input(g, "key", &kt);
  fhjit_value y = fhjit_input(g, "y", &pt);
  fhjit_value p = fhjit_keyswitch_digit_product(g, x, key, 1, 0);
  ck_assert_int_eq(fhjit_output(g, fhjit_add(g, p, y), NULL), FHJIT_OK);
  ck_assert_int_eq(fhjit_bind(g), FHJIT_OK);
  census b, a;
  build_and_rewrite(g, vec, -1, &b, &a);
  /* before: x, key and y read (params 2, 3, 4), no prefetch */
  ck_assert_int_eq(b.prefetches, 0);
  for (int i = 2; i <= 4; i++) ck_assert_int_ge(b.loads_from[i], 1);
  int input_loads = b.loads_from[2] + b.loads_from[3] + b.loads_from[4];
  /* after: none of them read, one prefetch per load it replaced, each of
   * an input's address; the parameter table still read */
  for (int i = 2; i <= 4; i++) ck_assert_int_eq(a.loads_from[i], 0);
  ck_assert_int_eq(a.prefetches, input_loads);
  ck_assert_int_eq(a.prefetch_param, input_loads);
  ck_assert_int_eq(a.loads_from[0], b.loads_from[0]);
  ck_assert_int_ge(a.loads_from[0], 1);
  fhjit_context_destroy(ctx);
}
END_TEST

/* A register input is not loaded, so it adds no prefetch; the other
 * input's loads still become prefetches. */
START_TEST(test_register_input) {
  fhjit_context *ctx = fhjit_context_create();
  fhjit_graph *g = fhjit_graph_create(ctx, "pfr", FHJIT_R32);
  fhjit_type pt = tu_poly(0, 0, NULL, 3, 64);
  fhjit_value a = fhjit_input(g, "a", &pt), c = fhjit_input(g, "c", &pt);
  ck_assert_int_eq(fhjit_output(g, fhjit_add(g, a, c), NULL), FHJIT_OK);
  ck_assert_int_eq(fhjit_bind(g), FHJIT_OK);
  census b, af;
  build_and_rewrite(g, 1, 0, &b, &af);
  ck_assert_int_eq(b.loads_from[2], 0); /* a: in registers */
  ck_assert_int_eq(b.loads_from[3], 1);
  ck_assert_int_eq(af.loads_from[3], 0);
  ck_assert_int_eq(af.prefetches, 1);
  ck_assert_int_eq(af.prefetch_param, 1);
  fhjit_context_destroy(ctx);
}
END_TEST

int main(void) {
  Suite *s = suite_create("evalpf");
  TCase *tc = tcase_create("evalpf");
  tcase_add_loop_test(tc, test_inputs_become_prefetches, 0, 2);
  tcase_add_test(tc, test_register_input);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? 1 : 0;
}
