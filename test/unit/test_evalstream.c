/* test_evalstream.c: lw_eval_stream_loads (lib/lower/evalstream.c), the
 * evaluator whose input loads become streaming PTX loads (ntt_plan
 * epics). Checked on the IR: every load from a chosen input pointer is
 * gone and inline PTX loads of the same address stand in its place, each
 * lane of the old value coming from the word the PTX reads at that lane's
 * byte offset (split into loads of at most 16 bytes and at most the
 * alignment); the other loads stay; the module verifies. Which kernels
 * call these evaluators test/lit/ntt/epics.fh checks in the PTX (ptxas
 * too), and the GPU test runs them against the interpreter. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <llvm-c/Analysis.h>
#include <llvm-c/Core.h>

#include "lower/lw_llvm.h"
#include "testutil.h"

static const char policy_form[] = "{ .reg .b64 pol; createpolicy.fractional.L2::evict_first.b64 pol, 1.0; "
                                  "ld.global.L1::no_allocate.L2::cache_hint";

static LLVMValueRef base_of(LLVMValueRef p) {
  while (LLVMIsAGetElementPtrInst(p) || (LLVMIsAConstantExpr(p) && LLVMGetConstOpcode(p) == LLVMGetElementPtr))
    p = LLVMGetOperand(p, 0);
  return p;
}

static int param_index(LLVMValueRef fn, LLVMValueRef p) {
  for (unsigned i = 0; i < LLVMCountParams(fn) && i < 8; i++)
    if (LLVMGetParam(fn, i) == p) return (int)i;
  return -1;
}

/* The asm text of call i, or NULL when i is not a call of inline asm. */
static const char *asm_text(LLVMValueRef i, size_t *len) {
  if (LLVMGetInstructionOpcode(i) != LLVMCall || !LLVMIsAInlineAsm(LLVMGetCalledValue(i))) return NULL;
  return LLVMGetInlineAsmAsmString(LLVMGetCalledValue(i), len);
}

typedef struct census {
  int loads_from[8]; /* loads whose base is parameter i */
  int streams;       /* calls of a streaming load of the form asked */
  int stream_param;  /* of those, how many address parameter 2 or above */
} census;

static census take_census(LLVMValueRef fn, int cs) {
  census c;
  memset(&c, 0, sizeof c);
  const char *form = cs ? "ld.global.cs" : policy_form;
  for (LLVMBasicBlockRef bb = LLVMGetFirstBasicBlock(fn); bb; bb = LLVMGetNextBasicBlock(bb))
    for (LLVMValueRef i = LLVMGetFirstInstruction(bb); i; i = LLVMGetNextInstruction(i)) {
      if (LLVMGetInstructionOpcode(i) == LLVMLoad) {
        int p = param_index(fn, base_of(LLVMGetOperand(i, 0)));
        if (p >= 0) c.loads_from[p]++;
        continue;
      }
      size_t len;
      const char *text = asm_text(i, &len);
      if (!text || len < strlen(form) || strncmp(text, form, strlen(form))) continue;
      c.streams++;
      LLVMValueRef addr = LLVMGetOperand(i, 0);
      if (LLVMIsAPtrToIntInst(addr) && param_index(fn, base_of(LLVMGetOperand(addr, 0))) >= 2)
        c.stream_param++;
    }
  return c;
}

/* A digit product plus a polynomial (r62), its evaluator at vec lanes made
 * streaming for the inputs in params: the census before and after. */
static void digit_product(int vec, uint64_t params, int cs, census *before, census *after) {
  fhjit_context *ctx = fhjit_context_create();
  fhjit_graph *g = fhjit_graph_create(ctx, "st", FHJIT_R62);
  fhjit_type pt = tu_poly(0, 0, NULL, 2, 16), kt = tu_key(2, 2, 16);
  pt.domain = kt.domain = FHJIT_DOMAIN_NTT;
  pt.form = kt.form = FHJIT_FORM_MONT;
  fhjit_value x = fhjit_input(g, "x", &pt), key = fhjit_input(g, "key", &kt);
  fhjit_value y = fhjit_input(g, "y", &pt);
  fhjit_value p = fhjit_keyswitch_digit_product(g, x, key, 1, 0);
  ck_assert_int_eq(fhjit_output(g, fhjit_add(g, p, y), NULL), FHJIT_OK);
  ck_assert_int_eq(fhjit_bind(g), FHJIT_OK);
  lw_plan pl;
  ck_assert_int_eq(lw_plan_graph(g, &pl), FHJIT_OK);
  if (vec == 1) pl.vec = 1, pl.groups = pl.work;
  else ck_assert_int_eq(pl.vec, vec);
  LLVMContextRef c = LLVMContextCreate();
  LLVMModuleRef m = LLVMModuleCreateWithNameInContext("st", c);
  int64_t values;
  ck_assert_int_eq(lw_build_eval_reg(g, &pl, LW_GPU, c, m, -1, &values), FHJIT_OK);
  char name[LW_NAME_MAX + 16];
  snprintf(name, sizeof name, "%s.eval0", pl.name);
  LLVMValueRef fn = LLVMGetNamedFunction(m, name);
  ck_assert_ptr_nonnull(fn);
  *before = take_census(fn, cs);
  ck_assert_int_eq(lw_eval_stream_loads(ctx, fn, params, cs), FHJIT_OK);
  *after = take_census(fn, cs);
  char *msg = NULL;
  ck_assert_msg(!LLVMVerifyModule(m, LLVMReturnStatusAction, &msg), "%s", msg ? msg : "");
  LLVMDisposeMessage(msg);
  LLVMDisposeModule(m);
  LLVMContextDispose(c);
  fhjit_context_destroy(ctx);
}

/* Every input's loads streamed (x, key, y: parameters 2, 3, 4), one PTX
 * load per old load (16 bytes at most at r62's vec 2), both forms; the
 * parameter table's loads kept. */
START_TEST(test_inputs_stream) {
  int vec = _i & 1 ? 2 : 1, cs = _i >> 1;
  census b, a;
  digit_product(vec, 0x1c, cs, &b, &a);
  ck_assert_int_eq(b.streams, 0);
  int input_loads = 0;
  for (int i = 2; i <= 4; i++) {
    ck_assert_int_ge(b.loads_from[i], 1);
    ck_assert_int_eq(a.loads_from[i], 0);
    input_loads += b.loads_from[i];
  }
  ck_assert_int_eq(a.streams, input_loads);
  ck_assert_int_eq(a.stream_param, input_loads);
  ck_assert_int_ge(a.loads_from[0], 1);
  ck_assert_int_eq(a.loads_from[0], b.loads_from[0]);
}
END_TEST

/* Only the parameters asked for: the key (3) streams, x and y keep their
 * loads. */
START_TEST(test_chosen_inputs) {
  census b, a;
  digit_product(2, UINT64_C(1) << 3, 0, &b, &a);
  ck_assert_int_eq(a.loads_from[3], 0);
  ck_assert_int_eq(a.streams, b.loads_from[3]);
  ck_assert_int_eq(a.loads_from[2], b.loads_from[2]);
  ck_assert_int_eq(a.loads_from[4], b.loads_from[4]);
}
END_TEST

/* The byte offset in "[$k+OFF]" of a load's text. */
static unsigned offset_of(const char *text, size_t len) {
  const char *plus = NULL;
  for (size_t j = 0; j + 1 < len; j++)
    if (text[j] == '+' && text[j + 1] >= '0' && text[j + 1] <= '9') plus = text + j + 1;
  ck_assert_ptr_nonnull(plus);
  return (unsigned)strtoul(plus, NULL, 10);
}

/* A function loading one value of type ty (align bytes) from parameter 2
 * and returning it, rewritten; each lane of the value returned must be the
 * word of its own byte offset, read by a load of `words` words. */
static void check_lanes(LLVMTypeRef (*make)(LLVMContextRef), unsigned align, unsigned words) {
  LLVMContextRef c = LLVMContextCreate();
  LLVMModuleRef m = LLVMModuleCreateWithNameInContext("lanes", c);
  LLVMTypeRef ty = make(c), ptr = LLVMPointerTypeInContext(c, 1);
  LLVMTypeRef args[3] = {ptr, LLVMInt64TypeInContext(c), ptr};
  LLVMValueRef fn = LLVMAddFunction(m, "f", LLVMFunctionType(ty, args, 3, 0));
  LLVMBuilderRef b = LLVMCreateBuilderInContext(c);
  LLVMPositionBuilderAtEnd(b, LLVMAppendBasicBlockInContext(c, fn, "entry"));
  LLVMValueRef v = LLVMBuildLoad2(b, ty, LLVMGetParam(fn, 2), "v");
  LLVMSetAlignment(v, align);
  LLVMValueRef ret = LLVMBuildRet(b, v);
  LLVMDisposeBuilder(b);
  fhjit_context *ctx = fhjit_context_create();
  ck_assert_int_eq(lw_eval_stream_loads(ctx, fn, UINT64_C(1) << 2, 0), FHJIT_OK);
  char *msg = NULL;
  ck_assert_msg(!LLVMVerifyModule(m, LLVMReturnStatusAction, &msg), "%s", msg ? msg : "");
  LLVMDisposeMessage(msg);
  int vector = LLVMGetTypeKind(ty) == LLVMVectorTypeKind;
  unsigned lanes = vector ? LLVMGetVectorSize(ty) : 1;
  LLVMTypeRef elem = vector ? LLVMGetElementType(ty) : ty;
  unsigned bytes = LLVMGetIntTypeWidth(elem) / 8;
  unsigned seen = 0;
  /* walk the insertelement chain back from the return */
  LLVMValueRef x = LLVMGetOperand(ret, 0);
  for (unsigned n = 0; n < lanes; n++) {
    LLVMValueRef word = x;
    unsigned lane = 0;
    if (vector) {
      ck_assert_int_eq(LLVMGetInstructionOpcode(x), LLVMInsertElement);
      word = LLVMGetOperand(x, 1);
      lane = (unsigned)LLVMConstIntGetZExtValue(LLVMGetOperand(x, 2));
      x = LLVMGetOperand(x, 0);
    }
    unsigned field = 0;
    if (LLVMGetInstructionOpcode(word) == LLVMExtractValue) {
      ck_assert_int_eq(LLVMGetNumIndices(word), 1);
      field = LLVMGetIndices(word)[0];
      word = LLVMGetOperand(word, 0);
    }
    size_t len;
    const char *text = asm_text(word, &len);
    ck_assert_ptr_nonnull(text);
    ck_assert_int_eq(strncmp(text, policy_form, strlen(policy_form)), 0);
    char want[16];
    snprintf(want, sizeof want, "%s.u%u ", words == 4 ? ".v4" : words == 2 ? ".v2" : "", bytes * 8);
    ck_assert_msg(strstr(text, want) != NULL, "%.*s has no %s", (int)len, text, want);
    ck_assert_uint_eq(offset_of(text, len) / bytes + field, lane);
    seen |= 1u << lane;
  }
  ck_assert_uint_eq(seen, (1u << lanes) - 1);
  LLVMDisposeModule(m);
  LLVMContextDispose(c);
  fhjit_context_destroy(ctx);
}

static LLVMTypeRef v4i64(LLVMContextRef c) { return LLVMVectorType(LLVMInt64TypeInContext(c), 4); }
static LLVMTypeRef v4i32(LLVMContextRef c) { return LLVMVectorType(LLVMInt32TypeInContext(c), 4); }
static LLVMTypeRef v2i64(LLVMContextRef c) { return LLVMVectorType(LLVMInt64TypeInContext(c), 2); }
static LLVMTypeRef i64t(LLVMContextRef c) { return LLVMInt64TypeInContext(c); }

/* 32 bytes as two 16-byte loads (+0, +16); 16-byte vectors whole where
 * aligned; word by word at a word's alignment; a scalar as itself. */
START_TEST(test_lanes) {
  check_lanes(v4i64, 32, 2);
  check_lanes(v4i32, 16, 4);
  check_lanes(v4i32, 4, 1);
  check_lanes(v4i32, 8, 2);
  check_lanes(v2i64, 16, 2);
  check_lanes(v2i64, 8, 1);
  check_lanes(i64t, 8, 1);
}
END_TEST

int main(void) {
  Suite *s = suite_create("evalstream");
  TCase *tc = tcase_create("evalstream");
  tcase_add_loop_test(tc, test_inputs_stream, 0, 4);
  tcase_add_test(tc, test_chosen_inputs);
  tcase_add_test(tc, test_lanes);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? 1 : 0;
}
