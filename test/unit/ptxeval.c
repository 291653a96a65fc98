/* ptxeval.c: the PTX interpreter of the r62 inline-assembly tests, and
 * ptxas over generated modules (ptxeval.h). */
#include "ptxeval.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PTXEVAL_MAXREGS 40 /* the strings declare at most 15 */

typedef struct ptxeval_reg {
  char name[8];
  uint32_t v;
} ptxeval_reg;

/* The register called name[0 .. len), created (as 0) on first use. */
static uint32_t *reg_of(ptxeval_reg *regs, int *nregs, const char *name, size_t len) {
  ck_assert_uint_lt(len, sizeof regs[0].name);
  for (int i = 0; i < *nregs; i++)
    if (strlen(regs[i].name) == len && !strncmp(regs[i].name, name, len)) return &regs[i].v;
  ck_assert_int_lt(*nregs, PTXEVAL_MAXREGS);
  memcpy(regs[*nregs].name, name, len);
  regs[*nregs].name[len] = 0;
  regs[*nregs].v = 0;
  return &regs[(*nregs)++].v;
}

/* Splits "a, b, c" operands (braces kept) into at most 4 tokens. */
static int split_operands(const char *s, const char *tok[4], size_t len[4]) {
  int n = 0;
  while (*s && n < 4) {
    while (*s == ' ') s++;
    const char *start = s;
    int depth = 0;
    while (*s && (depth || *s != ',')) {
      if (*s == '{') depth++;
      if (*s == '}') depth--;
      s++;
    }
    const char *end = s;
    while (end > start && end[-1] == ' ') end--;
    tok[n] = start, len[n++] = (size_t)(end - start);
    if (*s == ',') s++;
  }
  return n;
}

/* An immediate (decimal or 0x..) or a register's value. */
static uint32_t value_of(ptxeval_reg *regs, int *nregs, const char *t, size_t len) {
  if (t[0] >= '0' && t[0] <= '9') return (uint32_t)strtoul(t, NULL, 0);
  return *reg_of(regs, nregs, t, len);
}

/* The register pair of "{lo, hi}" (pair[0 .. len)). */
static void pair_of(const char *pair, size_t len, const char *t2[4], size_t l2[4]) {
  char inner[64];
  ck_assert_int_eq(pair[0], '{');
  ck_assert_uint_lt(len, sizeof inner);
  memcpy(inner, pair + 1, len - 2);
  inner[len - 2] = 0;
  ck_assert_int_eq(split_operands(inner, t2, l2), 2);
  /* the tokens point into inner: re-point them into pair */
  t2[0] = pair + 1 + (t2[0] - inner);
  t2[1] = pair + 1 + (t2[1] - inner);
}

/* The k of an operand "$k". */
static int operand_index(const char *t, size_t len) {
  ck_assert_msg(len == 2 && t[0] == '$' && t[1] >= '0' && t[1] <= '9', "PTX operand '%.*s'",
                (int)len, t);
  return t[1] - '0';
}

int ptxeval_run(const char *p, const uint64_t *in, uint64_t *out, int nout) {
  ptxeval_reg regs[PTXEVAL_MAXREGS];
  int nregs = 0, cc = 0, executed = 0;
  while (*p) {
    const char *eol = strchr(p, '\n');
    size_t n = eol ? (size_t)(eol - p) : strlen(p);
    char line[160];
    ck_assert_uint_lt(n, sizeof line);
    memcpy(line, p, n);
    line[n] = 0;
    p += n + (eol ? 1 : 0);
    char *l = line;
    while (*l == ' ' || *l == '\t') l++;
    if (!*l || !strcmp(l, "{") || !strcmp(l, "}") || !strncmp(l, ".reg", 4)) continue;
    char *semi = strrchr(l, ';');
    ck_assert_msg(semi != NULL, "PTX line without ';': %s", l);
    *semi = 0;
    char op[32];
    size_t oplen = strcspn(l, " ");
    ck_assert_uint_lt(oplen, sizeof op);
    memcpy(op, l, oplen);
    op[oplen] = 0;
    const char *tok[4];
    size_t len[4];
    int nt = split_operands(l + oplen, tok, len);
    executed++;
    if (!strcmp(op, "mov.b64")) {
      ck_assert_int_eq(nt, 2);
      const char *t2[4];
      size_t l2[4];
      if (tok[0][0] == '{') { /* unpack: {lo, hi}, $k */
        pair_of(tok[0], len[0], t2, l2);
        uint64_t v = in[operand_index(tok[1], len[1])];
        *reg_of(regs, &nregs, t2[0], l2[0]) = (uint32_t)v;
        *reg_of(regs, &nregs, t2[1], l2[1]) = (uint32_t)(v >> 32);
      } else { /* pack: $k, {lo, hi} */
        int k = operand_index(tok[0], len[0]);
        ck_assert_int_lt(k, nout);
        pair_of(tok[1], len[1], t2, l2);
        out[k] = (uint64_t)value_of(regs, &nregs, t2[0], l2[0]) |
                 (uint64_t)value_of(regs, &nregs, t2[1], l2[1]) << 32;
      }
      continue;
    }
    ck_assert_int_ge(nt, 3);
    uint32_t *d = reg_of(regs, &nregs, tok[0], len[0]);
    uint64_t a = value_of(regs, &nregs, tok[1], len[1]), b = value_of(regs, &nregs, tok[2], len[2]);
    uint64_t c = nt > 3 ? value_of(regs, &nregs, tok[3], len[3]) : 0, r;
    /* .cc sets the carry (CC.CF) from bit 32 of the sum; madc/addc add it */
    int setcc = strstr(op, ".cc") != NULL;
    uint64_t cin = !strncmp(op, "madc.", 5) || !strncmp(op, "addc.", 5) ? (uint64_t)cc : 0;
    if (!strcmp(op, "mul.lo.u32")) r = (uint32_t)(a * b);
    else if (!strcmp(op, "mul.hi.u32")) r = (a * b) >> 32;
    else if (!strcmp(op, "mad.lo.u32") || !strcmp(op, "mad.lo.cc.u32") || !strcmp(op, "madc.lo.u32") ||
             !strcmp(op, "madc.lo.cc.u32"))
      r = (uint64_t)(uint32_t)(a * b) + c + cin;
    else if (!strcmp(op, "madc.hi.u32") || !strcmp(op, "madc.hi.cc.u32")) r = ((a * b) >> 32) + c + cin;
    else if (!strcmp(op, "add.cc.u32") || !strcmp(op, "addc.u32") || !strcmp(op, "addc.cc.u32"))
      r = a + b + cin;
    else if (!strcmp(op, "sub.cc.u32")) { /* CC.CF: the borrow */
      *d = (uint32_t)(a - b), cc = a < b;
      continue;
    } else if (!strcmp(op, "subc.u32")) r = (uint32_t)(a - b - (uint64_t)cc);
    else if (!strcmp(op, "setp.lt.s32")) r = (int32_t)(uint32_t)a < (int32_t)(uint32_t)b;
    else if (!strcmp(op, "selp.b32")) r = c ? a : b;
    else {
      ck_abort_msg("PTX interpreter: unknown instruction '%s'", op);
      return executed;
    }
    *d = (uint32_t)r;
    if (setcc) cc = (int)((r >> 32) & 1);
  }
  return executed;
}

int ptxeval_ptxas_ok(const char *ptx) {
  const char *ptxas = "/usr/local/cuda/bin/ptxas";
  if (access(ptxas, X_OK)) return 1; /* not here: the callers' other checks remain */
  char path[] = "/tmp/fhjit-ptxeval-XXXXXX";
  int fd = mkstemp(path);
  ck_assert_int_ge(fd, 0);
  FILE *f = fdopen(fd, "w");
  fputs(ptx, f);
  fclose(f);
  char cmd[256];
  snprintf(cmd, sizeof cmd, "%s -arch=sm_90 %s -o /dev/null", ptxas, path);
  int rc = system(cmd);
  unlink(path);
  return rc == 0;
}
