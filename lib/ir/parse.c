/* parse.c: the reader of the .fh text format (fhjit_parse), grammar in
 * docs/format.md. A small lexer and a recursive-descent parser that builds
 * the graph through the public builder API, so text and C API share every
 * type, shape and modulus check. Before each builder call the parser points
 * g->cur_loc at the construct being built, which makes builder and binder
 * errors come out as "file:line:col: error: ..." with the source line and a
 * caret, like the lexical and syntax errors found here. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/ir.h"

/* ------------------------------------------------------------------ lexer */

typedef enum tok_kind {
  T_EOF = 0,
  T_WORD,   /* [A-Za-z0-9_.]+: keywords, numbers, output names */
  T_VALUE,  /* %name; text holds the name without '%' */
  T_GLOBAL, /* @name; text holds the name without '@' */
  T_QUOTED, /* @"..."; text holds the body between the quotes, undecoded */
  T_EQ,
  T_COMMA,
  T_LPAREN,
  T_RPAREN,
  T_LT,
  T_GT,
  T_LBRACK,
  T_RBRACK,
  T_LBRACE,
  T_RBRACE,
  T_QUESTION
} tok_kind;

typedef struct token {
  tok_kind kind;
  const char *text; /* into the parser's copy of the source */
  size_t len;
  ir_loc loc; /* of the token's first character (the sigil, if any) */
} token;

/* A name the text has defined, for resolving operands. */
typedef struct symbol {
  const char *name; /* into the source copy; NULL marks a free slot */
  size_t len;
  fhjit_value value;
  ir_loc loc;
} symbol;

typedef struct parser {
  fhjit_context *ctx;
  const char *src; /* malloc'd NUL-terminated copy of the text */
  size_t len;
  size_t pos;
  int32_t line;
  size_t line_start;
  token tok; /* the lookahead */
  fhjit_graph *g; /* NULL until the header has been read */
  fhjit_graph diag; /* stands in for g in diagnostics before g exists */
  int failed;
  symbol *syms; /* open-addressing table, a power-of-two size */
  size_t nsyms, syms_cap;
} parser;

static int is_name_char(int c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
         c == '_' || c == '.';
}

static int is_hex(int c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

/* Records the first error (later ones are consequences) and returns -1. */
static int fail_at(parser *p, ir_loc loc, fhjit_status st, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int fail_at(parser *p, ir_loc loc, fhjit_status st, const char *fmt, ...) {
  if (p->failed) return -1;
  p->failed = 1;
  sp_buf b = {0};
  va_list ap;
  va_start(ap, fmt);
  sp_buf_vprintf(&b, fmt, ap);
  va_end(ap);
  ir_error_at(p->g ? p->g : &p->diag, loc, st, "%s", b.data ? b.data : "out of memory");
  sp_buf_free(&b);
  return -1;
}

/* The builder already recorded the message; just stop. */
static int fail_recorded(parser *p) {
  p->failed = 1;
  return -1;
}

static ir_loc loc_here(const parser *p) {
  return (ir_loc){p->line, (int32_t)(p->pos - p->line_start + 1)};
}

/* Reads the next token into p->tok. Returns -1 on a lexical error. */
static int next(parser *p) {
  const char *s = p->src;
  for (;;) {
    if (p->pos >= p->len) break;
    char c = s[p->pos];
    if (c == '\n') {
      p->pos++;
      p->line++;
      p->line_start = p->pos;
    } else if (c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v') {
      p->pos++;
    } else if (c == '/' && p->pos + 1 < p->len && s[p->pos + 1] == '/') {
      while (p->pos < p->len && s[p->pos] != '\n') {
        /* A NUL would cut the source line shown under later diagnostics. */
        if (s[p->pos] == 0)
          return fail_at(p, loc_here(p), FHJIT_ERR_PARSE, "NUL byte in a comment");
        p->pos++;
      }
    } else {
      break;
    }
  }
  token t = {.loc = loc_here(p), .text = s + p->pos};
  if (p->pos >= p->len) {
    t.kind = T_EOF;
    p->tok = t;
    return 0;
  }
  unsigned char c = (unsigned char)s[p->pos];
  if (is_name_char(c)) {
    size_t b = p->pos;
    while (p->pos < p->len && is_name_char(s[p->pos])) p->pos++;
    t.kind = T_WORD;
    t.len = p->pos - b;
  } else if (c == '%' || c == '@') {
    p->pos++;
    if (c == '@' && p->pos < p->len && s[p->pos] == '"') {
      size_t b = ++p->pos;
      for (;;) {
        if (p->pos >= p->len || s[p->pos] == '\n')
          return fail_at(p, t.loc, FHJIT_ERR_PARSE, "unterminated quoted name");
        char q = s[p->pos];
        if (q == '"') break;
        if (q == 0) return fail_at(p, loc_here(p), FHJIT_ERR_PARSE, "NUL byte in a quoted name");
        if (q == '\\') {
          ir_loc eloc = loc_here(p);
          char e = p->pos + 1 < p->len ? s[p->pos + 1] : 0;
          if (e == '"' || e == '\\') {
            p->pos += 2;
          } else if (e == 'x' && p->pos + 3 < p->len && is_hex(s[p->pos + 2]) &&
                     is_hex(s[p->pos + 3]) && !(s[p->pos + 2] == '0' && s[p->pos + 3] == '0')) {
            p->pos += 4;
          } else {
            return fail_at(p, eloc, FHJIT_ERR_PARSE,
                           "invalid escape in a quoted name (use \\\", \\\\ or \\xHH, not \\x00)");
          }
        } else {
          p->pos++;
        }
      }
      t.kind = T_QUOTED;
      t.text = s + b;
      t.len = p->pos - b;
      p->pos++; /* the closing quote */
    } else {
      size_t b = p->pos;
      while (p->pos < p->len && is_name_char(s[p->pos])) p->pos++;
      if (p->pos == b)
        return fail_at(p, t.loc, FHJIT_ERR_PARSE,
                       "expected a name after '%c' (letters, digits, '_' and '.')", c);
      t.kind = c == '%' ? T_VALUE : T_GLOBAL;
      t.text = s + b;
      t.len = p->pos - b;
    }
  } else {
    static const char punct[] = "=,()<>[]{}?";
    static const tok_kind kinds[] = {T_EQ,     T_COMMA,  T_LPAREN, T_RPAREN,
                                     T_LT,     T_GT,     T_LBRACK, T_RBRACK,
                                     T_LBRACE, T_RBRACE, T_QUESTION};
    const char *at = c ? strchr(punct, c) : NULL;
    if (!at) {
      if (c == '/')
        return fail_at(p, t.loc, FHJIT_ERR_PARSE, "unexpected '/' (comments start with //)");
      if (c >= 0x21 && c < 0x7f)
        return fail_at(p, t.loc, FHJIT_ERR_PARSE, "unexpected character '%c'", c);
      return fail_at(p, t.loc, FHJIT_ERR_PARSE, "unexpected byte 0x%02x", c);
    }
    t.kind = kinds[at - punct];
    t.len = 1;
    p->pos++;
  }
  p->tok = t;
  return 0;
}

/* ------------------------------------------------------------ token tests */

static int tok_is(const token *t, const char *word) {
  return t->kind == T_WORD && strlen(word) == t->len && memcmp(t->text, word, t->len) == 0;
}

/* "'text'" of the lookahead for messages, cut at 40 characters. */
static const char *tok_desc(const token *t, char *buf, size_t size) {
  switch (t->kind) {
  case T_EOF: return "end of file";
  case T_VALUE: snprintf(buf, size, "'%%%.*s'", (int)(t->len > 40 ? 40 : t->len), t->text); break;
  case T_GLOBAL: snprintf(buf, size, "'@%.*s'", (int)(t->len > 40 ? 40 : t->len), t->text); break;
  case T_QUOTED: snprintf(buf, size, "a quoted name"); break;
  default: snprintf(buf, size, "'%.*s'", (int)(t->len > 40 ? 40 : t->len), t->text); break;
  }
  return buf;
}

static int expected(parser *p, const char *what) {
  char d[64];
  return fail_at(p, p->tok.loc, FHJIT_ERR_PARSE, "expected %s, found %s", what,
                 tok_desc(&p->tok, d, sizeof d));
}

/* Consumes a token of `kind` (spelled `what` in messages). */
static int expect(parser *p, tok_kind kind, const char *what) {
  if (p->tok.kind != kind) return expected(p, what);
  return next(p);
}

/* A decimal number in [0, max]. */
static int parse_number(parser *p, uint64_t max, const char *what, uint64_t *out) {
  const token *t = &p->tok;
  if (t->kind != T_WORD || t->text[0] < '0' || t->text[0] > '9') return expected(p, what);
  uint64_t v = 0;
  for (size_t i = 0; i < t->len; i++) {
    char c = t->text[i];
    if (c < '0' || c > '9') {
      char d[64];
      return fail_at(p, t->loc, FHJIT_ERR_PARSE, "%s is not a decimal number",
                     tok_desc(t, d, sizeof d));
    }
    unsigned digit = (unsigned)(c - '0');
    if (v > (max - digit) / 10) {
      char d[64];
      return fail_at(p, t->loc, FHJIT_ERR_PARSE, "number %s is out of range (%s is at most %llu)",
                     tok_desc(t, d, sizeof d), what, (unsigned long long)max);
    }
    v = v * 10 + digit;
  }
  *out = v;
  return next(p);
}

static int parse_int64(parser *p, const char *what, int64_t *out) {
  uint64_t v;
  if (parse_number(p, INT64_MAX, what, &v)) return -1;
  *out = (int64_t)v;
  return 0;
}

/* ----------------------------------------------------------------- symbols */

static size_t name_hash(const char *s, size_t n) {
  size_t h = 1469598103934665603u;
  for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 1099511628211u;
  return h;
}

static symbol *sym_find(parser *p, const char *name, size_t len) {
  if (!p->syms_cap) return NULL;
  size_t mask = p->syms_cap - 1;
  for (size_t i = name_hash(name, len) & mask;; i = (i + 1) & mask) {
    symbol *s = &p->syms[i];
    if (!s->name) return NULL;
    if (s->len == len && memcmp(s->name, name, len) == 0) return s;
  }
}

static int sym_add(parser *p, const token *t, fhjit_value v) {
  if (2 * (p->nsyms + 1) > p->syms_cap) {
    size_t cap = p->syms_cap ? 2 * p->syms_cap : 64;
    symbol *old = p->syms;
    size_t old_cap = p->syms_cap;
    p->syms = calloc(cap, sizeof *p->syms);
    if (!p->syms) {
      p->syms = old;
      return fail_at(p, t->loc, FHJIT_ERR_MEMORY, "out of memory");
    }
    p->syms_cap = cap;
    for (size_t i = 0; i < old_cap; i++)
      if (old[i].name) {
        size_t j = name_hash(old[i].name, old[i].len) & (cap - 1);
        while (p->syms[j].name) j = (j + 1) & (cap - 1);
        p->syms[j] = old[i];
      }
    free(old);
  }
  size_t j = name_hash(t->text, t->len) & (p->syms_cap - 1);
  while (p->syms[j].name) j = (j + 1) & (p->syms_cap - 1);
  p->syms[j] = (symbol){.name = t->text, .len = t->len, .value = v, .loc = t->loc};
  p->nsyms++;
  return 0;
}

/* Resolves the lookahead %name to a defined value and consumes it. */
static int parse_operand(parser *p, fhjit_value *out, ir_loc *loc) {
  if (p->tok.kind != T_VALUE) return expected(p, "an operand ('%name')");
  symbol *s = sym_find(p, p->tok.text, p->tok.len);
  if (!s)
    return fail_at(p, p->tok.loc, FHJIT_ERR_PARSE, "use of undefined value %%%.*s",
                   (int)p->tok.len, p->tok.text);
  *out = s->value;
  if (loc) *loc = p->tok.loc;
  return next(p);
}

/* A malloc'd copy of a token's text (a name). */
static char *tok_strdup(parser *p, const token *t) {
  char *s = malloc(t->len + 1);
  if (!s) {
    fail_at(p, t->loc, FHJIT_ERR_MEMORY, "out of memory");
    return NULL;
  }
  memcpy(s, t->text, t->len);
  s[t->len] = 0;
  return s;
}

/* Decodes the body of @"..." (escapes were validated by the lexer). */
static char *decode_quoted(parser *p, const token *t) {
  char *s = malloc(t->len + 1);
  if (!s) {
    fail_at(p, t->loc, FHJIT_ERR_MEMORY, "out of memory");
    return NULL;
  }
  size_t o = 0;
  for (size_t i = 0; i < t->len; i++) {
    char c = t->text[i];
    if (c == '\\' && t->text[i + 1] == 'x') {
      char hex[3] = {t->text[i + 2], t->text[i + 3], 0};
      s[o++] = (char)strtol(hex, NULL, 16);
      i += 3;
    } else if (c == '\\') {
      s[o++] = t->text[++i];
    } else {
      s[o++] = c;
    }
  }
  s[o] = 0;
  return s;
}

/* ------------------------------------------------------------------- types */

static int parse_extent(parser *p, const char *what, int64_t *out) {
  if (p->tok.kind == T_QUESTION) {
    *out = FHJIT_UNKNOWN;
    return next(p);
  }
  if (p->tok.kind != T_WORD || p->tok.text[0] < '0' || p->tok.text[0] > '9') {
    char w[96];
    snprintf(w, sizeof w, "%s (a number or '?')", what);
    return expected(p, w);
  }
  return parse_int64(p, what, out);
}

/* ct<C, [batch...], rows, n> | pt<[batch...], rows, n> | key<digits, 2, rows, n>
 * | twiddles<rows, n>, the kind word being the lookahead. */
static int parse_type(parser *p, fhjit_type *t) {
  memset(t, 0, sizeof *t);
  const token kw = p->tok;
  int is_ct = tok_is(&kw, "ct"), is_pt = tok_is(&kw, "pt"), is_key = tok_is(&kw, "key"),
      is_tw = tok_is(&kw, "twiddles"), is_tab = tok_is(&kw, "table");
  if (!is_ct && !is_pt && !is_key && !is_tw && !is_tab)
    return expected(p, "a type (ct<...>, pt<...>, key<...>, twiddles<...> or table<...>)");
  if (next(p) || expect(p, T_LT, "'<'")) return -1;
  if (is_tab) { /* table<n>: one row of constants (SPEC section 7) */
    t->kind = FHJIT_KIND_TABLE;
    t->rows = 1;
    return parse_extent(p, "the table's length", &t->n) || expect(p, T_GT, "'>'") ? -1 : 0;
  }
  t->kind = is_key ? FHJIT_KIND_KEY : is_tw ? FHJIT_KIND_TWIDDLE : FHJIT_KIND_POLY;
  if (is_ct || is_key) {
    if (is_key && (parse_extent(p, "the number of digits", &t->digits) ||
                   expect(p, T_COMMA, "','")))
      return -1;
    if (p->tok.kind == T_QUESTION)
      return fail_at(p, p->tok.loc, FHJIT_ERR_PARSE,
                     "the component count is part of the type and cannot be '?'");
    ir_loc cloc = p->tok.loc;
    uint64_t c;
    if (parse_number(p, INT32_MAX, "the component count", &c)) return -1;
    if (is_ct && (c < 1 || c > 3))
      return fail_at(p, cloc, FHJIT_ERR_TYPE,
                     "a ciphertext has 1 to 3 components, not %llu (pt<...> has none)",
                     (unsigned long long)c);
    t->comps = (int32_t)c;
    if (expect(p, T_COMMA, "','")) return -1;
  }
  if (is_ct || is_pt) {
    if (expect(p, T_LBRACK, "'[' (the batch axes, '[]' for none)")) return -1;
    while (p->tok.kind != T_RBRACK) {
      if (t->nbatch == FHJIT_MAX_BATCH)
        return fail_at(p, p->tok.loc, FHJIT_ERR_PARSE, "too many batch axes (at most %d)",
                       FHJIT_MAX_BATCH);
      if (parse_extent(p, "a batch extent", &t->batch[t->nbatch])) return -1;
      t->nbatch++;
      if (p->tok.kind == T_COMMA) {
        if (next(p)) return -1;
      } else if (p->tok.kind != T_RBRACK) {
        return expected(p, "',' or ']'");
      }
    }
    if (next(p) || expect(p, T_COMMA, "','")) return -1;
  }
  if (parse_extent(p, is_key ? "the key rows" : "the rows", &t->rows) ||
      expect(p, T_COMMA, "','") || parse_extent(p, "n", &t->n) ||
      expect(p, T_GT, "'>'"))
    return -1;
  return 0;
}

/* ---------------------------------------------------------------- clauses */

/* A clause name(...) after an operation or input; the lookahead is the word. */
typedef ir_clause clause; /* ir.h: IR_CL_* */

/* Every clause word, in bit order (IR_CL_COMPONENT is bracket syntax). */
#define FOR_EACH_CLAUSE(c) for (unsigned c = 1; c < IR_CL_COMPONENT; c <<= 1)

static void list_clauses(char *buf, size_t size, unsigned allowed) {
  size_t used = 0;
  buf[0] = 0;
  FOR_EACH_CLAUSE(c)
    if ((allowed & c) && used < size)
      used += (size_t)snprintf(buf + used, size - used, "%s%s(%s)", used ? ", " : "",
                               ir_clause_name((clause)c), ir_clause_hint((clause)c));
}

/* Identifies the clause word in the lookahead; checks it is allowed and new. */
static int clause_word(parser *p, const char *context, unsigned allowed, unsigned *seen,
                       clause *out) {
  FOR_EACH_CLAUSE(c) {
    if (!tok_is(&p->tok, ir_clause_name((clause)c)) || !(allowed & c)) continue;
    if (*seen & c)
      return fail_at(p, p->tok.loc, FHJIT_ERR_PARSE, "%s(...) is given twice",
                     ir_clause_name((clause)c));
    *seen |= c;
    *out = (clause)c;
    return next(p);
  }
  char list[256], d[64];
  list_clauses(list, sizeof list, allowed);
  if (!allowed)
    return fail_at(p, p->tok.loc, FHJIT_ERR_PARSE,
                   "unexpected %s after %s (expected a new definition, 'output' or '}')",
                   tok_desc(&p->tok, d, sizeof d), context);
  return fail_at(p, p->tok.loc, FHJIT_ERR_PARSE, "unexpected %s after %s (expected %s)",
                 tok_desc(&p->tok, d, sizeof d), context, list);
}

static int parse_compression(parser *p, fhjit_compression *out) {
  if (tok_is(&p->tok, "cyclic")) *out = FHJIT_CYCLIC;
  else if (tok_is(&p->tok, "contiguous")) *out = FHJIT_CONTIGUOUS;
  else if (tok_is(&p->tok, "strided_sparse")) *out = FHJIT_STRIDED_SPARSE;
  else return expected(p, "a compression layout (cyclic, contiguous or strided_sparse)");
  return next(p);
}

static int parse_domain_word(parser *p, fhjit_domain *out) {
  if (tok_is(&p->tok, "coef")) *out = FHJIT_DOMAIN_COEF;
  else if (tok_is(&p->tok, "ntt")) *out = FHJIT_DOMAIN_NTT;
  else return expected(p, "a domain (coef or ntt)");
  return next(p);
}

/* p, ... inside basis(...): chain positions (malloc'd into *out). */
static int parse_positions(parser *p, int32_t **out, int32_t *count) {
  int32_t cap = 0;
  *count = 0;
  for (;;) {
    uint64_t v;
    if (*count == cap) {
      cap = cap ? 2 * cap : 8;
      int32_t *a = realloc(*out, sizeof *a * (size_t)cap);
      if (!a) return fail_at(p, p->tok.loc, FHJIT_ERR_MEMORY, "out of memory");
      *out = a;
    }
    if (parse_number(p, INT32_MAX, "a chain position", &v)) return -1;
    (*out)[(*count)++] = (int32_t)v;
    if (p->tok.kind != T_COMMA) return 0;
    if (next(p)) return -1;
  }
}

/* ------------------------------------------------------------------ inputs */

/* The axes of a type in stride order, for strides(...). */
static int layout_axes(const fhjit_type *t, int64_t **slots, fhjit_layout *l, char *names,
                       size_t size) {
  int k = 0;
  size_t used = 0;
#define AXIS(ptr, label)                                                                    \
  do {                                                                                      \
    slots[k++] = (ptr);                                                                     \
    used += (size_t)snprintf(names + used, used < size ? size - used : 0, "%s%s",          \
                             used ? ", " : "", (label));                                    \
  } while (0)
  if (t->kind == FHJIT_KIND_KEY) AXIS(&l->digit_stride, "digit");
  if (t->comps > 0) AXIS(&l->comp_stride, "component");
  if (t->kind == FHJIT_KIND_POLY)
    for (int a = 0; a < t->nbatch; a++) AXIS(&l->batch_stride[a], "batch");
  AXIS(&l->row_stride, "row");
  AXIS(&l->index_stride, "index");
#undef AXIS
  return k;
}

/* The words after an input's type: [coef|ntt] [std|mont] [basis(p, ...)]
 * [strides(s, ...)] [offset(k)], in any order. */
static int parse_input_words(parser *p, const token *name, fhjit_type *t, unsigned *seen,
                             int64_t *strides, int *nstrides, ir_loc *strides_loc,
                             int64_t *offset, int32_t **basis, int32_t *nbasis,
                             ir_loc *basis_loc) {
  int have_domain = 0, have_form = 0;
  const int max_strides = 2 + FHJIT_MAX_BATCH + 2;
  while (p->tok.kind == T_WORD && !tok_is(&p->tok, "output")) {
    ir_loc wloc = p->tok.loc;
    if (tok_is(&p->tok, "coef") || tok_is(&p->tok, "ntt")) {
      if (have_domain++)
        return fail_at(p, wloc, FHJIT_ERR_PARSE, "the domain of %%%.*s is given twice",
                       (int)name->len, name->text);
      if (parse_domain_word(p, &t->domain)) return -1;
      continue;
    }
    if (tok_is(&p->tok, "std") || tok_is(&p->tok, "mont")) {
      if (have_form++)
        return fail_at(p, wloc, FHJIT_ERR_PARSE, "the form of %%%.*s is given twice",
                       (int)name->len, name->text);
      t->form = tok_is(&p->tok, "std") ? FHJIT_FORM_STD : FHJIT_FORM_MONT;
      if (next(p)) return -1;
      continue;
    }
    if (!tok_is(&p->tok, "strides") && !tok_is(&p->tok, "offset") && !tok_is(&p->tok, "basis")) {
      char d[64];
      return fail_at(p, wloc, FHJIT_ERR_PARSE,
                     "unexpected %s after the input type (expected coef, ntt, std, mont, "
                     "basis(...), strides(...) or offset(...))",
                     tok_desc(&p->tok, d, sizeof d));
    }
    clause c;
    if (clause_word(p, "the input type", IR_CL_STRIDES | IR_CL_OFFSET | IR_CL_BASIS, seen, &c) ||
        expect(p, T_LPAREN, "'('"))
      return -1;
    if (c == IR_CL_OFFSET) {
      if (parse_int64(p, "the offset", offset)) return -1;
    } else if (c == IR_CL_BASIS) {
      *basis_loc = wloc;
      if (parse_positions(p, basis, nbasis)) return -1;
    } else {
      *strides_loc = wloc;
      for (;;) {
        int64_t s;
        ir_loc sloc = p->tok.loc;
        if (parse_int64(p, "a stride", &s)) return -1;
        if (*nstrides == max_strides)
          return fail_at(p, sloc, FHJIT_ERR_PARSE, "too many strides");
        strides[(*nstrides)++] = s;
        if (p->tok.kind != T_COMMA) break;
        if (next(p)) return -1;
      }
    }
    if (expect(p, T_RPAREN, "')'")) return -1;
  }
  return 0;
}

/* Builds the input the words described: fhjit_input, its basis, its layout. */
static int make_input(parser *p, const token *name, ir_loc type_loc, fhjit_type *tp,
                      unsigned seen, const int64_t *strides, int nstrides, ir_loc strides_loc,
                      int64_t offset, const int32_t *basis, int32_t nbasis, ir_loc basis_loc) {
  fhjit_type t = *tp;
  char *cname = tok_strdup(p, name);
  if (!cname) return -1;
  p->g->cur_loc = type_loc;
  fhjit_value v = fhjit_input(p->g, cname, &t);
  free(cname);
  if (v == FHJIT_NO_VALUE) return fail_recorded(p);
  if (sym_add(p, name, v)) return -1;
  if (seen & IR_CL_BASIS) {
    p->g->cur_loc = basis_loc;
    if (fhjit_input_basis(p->g, v, basis, nbasis) != FHJIT_OK) return fail_recorded(p);
    t = p->g->nodes[v].decl; /* '?' rows become the basis's */
  }
  seen &= ~(unsigned)IR_CL_BASIS;
  if (!seen) return 0;

  /* A layout in the text is the input's binding, given as fhjit_bind_input
   * would be, so the binder checks it. */
  fhjit_layout l;
  memset(&l, 0, sizeof l);
  if (!(seen & IR_CL_STRIDES)) {
    /* offset(k) alone: dense strides, which need concrete extents. */
    if (fhjit_dense_layout(&t, &l) != FHJIT_OK) {
      /* Unknown or overflowing extents: the binder says which. */
      fhjit_bind_input(p->g, v, NULL, NULL);
      return fail_recorded(p);
    }
  } else {
    int64_t *slots[2 + FHJIT_MAX_BATCH + 2];
    char names[128];
    int want = layout_axes(&t, slots, &l, names, sizeof names);
    if (nstrides != want)
      return fail_at(p, strides_loc, FHJIT_ERR_PARSE,
                     "strides(...) of %%%.*s needs %d strides (%s), not %d", (int)name->len,
                     name->text, want, names, nstrides);
    for (int i = 0; i < want; i++) *slots[i] = strides[i];
  }
  l.offset = offset;
  p->g->cur_loc = type_loc;
  if (fhjit_bind_input(p->g, v, NULL, &l) != FHJIT_OK) return fail_recorded(p);
  return 0;
}

/* %name = input TYPE [coef|ntt] [std|mont] [basis(p, ...)] [strides(s, ...)] [offset(k)] */
static int parse_input(parser *p, const token *name) {
  ir_loc type_loc = p->tok.loc;
  fhjit_type t;
  if (parse_type(p, &t)) return -1;
  unsigned seen = 0;
  int64_t strides[2 + FHJIT_MAX_BATCH + 2];
  int nstrides = 0;
  ir_loc strides_loc = {0, 0};
  int64_t offset = 0;
  int32_t *basis = NULL, nbasis = 0;
  ir_loc basis_loc = {0, 0};
  int rc = parse_input_words(p, name, &t, &seen, strides, &nstrides, &strides_loc, &offset,
                             &basis, &nbasis, &basis_loc);
  if (!rc) rc = make_input(p, name, type_loc, &t, seen, strides, nstrides, strides_loc, offset,
                           basis, nbasis, basis_loc);
  free(basis);
  return rc;
}

/* ------------------------------------------------------------- operations */

/* The operation word: its table row (an op or a composite, ops.def), its
 * text in mnemonic; NULL after an error. */
static const ir_op_info *op_word(parser *p, char *mnemonic, size_t size) {
  const token opw = p->tok;
  ir_op op = opw.kind == T_WORD ? ir_op_by_mnemonic(opw.text, opw.len) : IR_NUM_OPS;
  const ir_op_info *syn = op < IR_NUM_OPS ? ir_op_info_of(op)
                          : opw.kind == T_WORD ? ir_composite_by_mnemonic(opw.text, opw.len)
                                               : NULL;
  snprintf(mnemonic, size, "%.*s", (int)opw.len, opw.text);
  if (!syn) {
    char d[64];
    if (opw.kind != T_WORD) expected(p, "an operation or 'input'");
    else fail_at(p, opw.loc, FHJIT_ERR_PARSE, "unknown operation %s", tok_desc(&opw, d, sizeof d));
    return NULL;
  }
  return next(p) ? NULL : syn;
}

/* The operands: a comma list (extract: one, then [component]) into *args
 * (owned by the caller), counted against the op's arity. */
static int parse_operands(parser *p, const ir_op_info *syn, const token *opw, const char *mnemonic,
                          fhjit_value **args, ir_op_args *a) {
  int cap = 0;
  for (;;) {
    fhjit_value v = FHJIT_NO_VALUE;
    if (parse_operand(p, &v, NULL)) return -1;
    if (a->nargs == cap) {
      cap = cap ? 2 * cap : 4;
      fhjit_value *grown = realloc(*args, sizeof *grown * (size_t)cap);
      if (!grown) return fail_at(p, opw->loc, FHJIT_ERR_MEMORY, "out of memory");
      *args = grown;
    }
    (*args)[a->nargs++] = v;
    if (syn->clauses & IR_CL_COMPONENT) {
      uint64_t c;
      if (expect(p, T_LBRACK, "'[' (extract %v[component])") ||
          parse_number(p, INT32_MAX, "the component index", &c) || expect(p, T_RBRACK, "']'"))
        return -1;
      a->component = (int64_t)c;
      break;
    }
    if (p->tok.kind != T_COMMA) break;
    if (next(p)) return -1;
  }
  if (syn->arity >= 0 && a->nargs < syn->arity && p->tok.kind == T_VALUE)
    return fail_at(p, p->tok.loc, FHJIT_ERR_PARSE,
                   "expected ',' before %%%.*s (%s takes %d operands)", (int)p->tok.len,
                   p->tok.text, mnemonic, syn->arity);
  if (syn->arity >= 0 && a->nargs != syn->arity)
    return fail_at(p, opw->loc, FHJIT_ERR_PARSE, "%s takes %d operand%s, not %d", mnemonic,
                   syn->arity, syn->arity == 1 ? "" : "s", (int)a->nargs);
  return 0;
}

/* galois(k) or, where the statement defines a value per element
 * (IR_F_RESULT_PER_GALOIS), galois(k, ...): into *list (owned by the
 * caller), a->galois_list and a->galois (the first). */
static int parse_galois(parser *p, const ir_op_info *syn, ir_op_args *a, int64_t **list) {
  int32_t cap = 0;
  for (;;) {
    int64_t k;
    ir_loc loc = p->tok.loc;
    if (parse_int64(p, "the Galois element", &k)) return -1;
    if (a->ngalois == cap) {
      cap = cap ? 2 * cap : 8;
      int64_t *grown = realloc(*list, sizeof *grown * (size_t)cap);
      if (!grown) return fail_at(p, loc, FHJIT_ERR_MEMORY, "out of memory");
      *list = grown;
    }
    (*list)[a->ngalois++] = k;
    if (p->tok.kind != T_COMMA) break;
    if (!(syn->flags & IR_F_RESULT_PER_GALOIS))
      return fail_at(p, p->tok.loc, FHJIT_ERR_PARSE,
                     "%s takes one Galois element in galois(k) (ckks_rotate_hoisted takes "
                     "several)", a->mnemonic);
    if (next(p)) return -1;
  }
  a->galois_list = *list, a->galois = (*list)[0];
  return 0;
}

/* One clause's value, after its '(' (the word said which). */
static int parse_clause_value(parser *p, const ir_op_info *syn, clause c, ir_op_args *a,
                              int32_t **basis, int64_t **galois) {
  switch (c) {
  case IR_CL_LAYOUT: return parse_compression(p, &a->layout);
  case IR_CL_IMPLICIT: return parse_operand(p, &a->implicit, NULL);
  case IR_CL_DOMAIN: return parse_domain_word(p, &a->domain);
  case IR_CL_DIGIT: return parse_int64(p, "the digit", &a->digit);
  case IR_CL_ROW_START: return parse_int64(p, "row_start", &a->row_start);
  case IR_CL_START: return parse_int64(p, "the first row", &a->start);
  case IR_CL_COUNT: return parse_int64(p, "the row count", &a->count);
  case IR_CL_GALOIS: return parse_galois(p, syn, a, galois);
  case IR_CL_BASIS: return parse_positions(p, basis, &a->nbasis);
  case IR_CL_MODE:
    if (tok_is(&p->tok, "std")) a->mode = FHJIT_FORM_STD;
    else if (tok_is(&p->tok, "mont")) a->mode = FHJIT_FORM_MONT;
    else return expected(p, "a coefficient form (std or mont)");
    return next(p);
  default: return -1;
  }
}

/* The clauses after the operands, each at most once, the required ones
 * present; basis(...) into *basis (owned by the caller). */
static int parse_clauses(parser *p, const ir_op_info *syn, const token *opw, const char *mnemonic,
                         int32_t **basis, int64_t **galois, ir_op_args *a) {
  unsigned seen = 0;
  char context[64];
  snprintf(context, sizeof context, "the operands of %s", mnemonic);
  while (p->tok.kind == T_WORD && !tok_is(&p->tok, "output")) {
    clause c;
    if (clause_word(p, context, syn->clauses & ~IR_CL_COMPONENT, &seen, &c) ||
        expect(p, T_LPAREN, "'('") || parse_clause_value(p, syn, c, a, basis, galois) ||
        expect(p, T_RPAREN, "')'"))
      return -1;
  }
  unsigned missing = syn->required & ~seen & ~IR_CL_COMPONENT;
  if (missing) {
    char list[256];
    list_clauses(list, sizeof list, missing);
    return fail_at(p, opw->loc, FHJIT_ERR_PARSE, "%s needs %s", mnemonic, list);
  }
  return 0;
}

/* Names v as the text does and defines the name. */
static int define(parser *p, const token *name, fhjit_value v) {
  char *cname = tok_strdup(p, name);
  if (!cname) return -1;
  p->g->cur_loc = name->loc;
  fhjit_status st = fhjit_set_name(p->g, v, cname);
  free(cname);
  if (st != FHJIT_OK) return fail_recorded(p);
  return sym_add(p, name, v);
}

/* Builds the op from a (its row's builder) and defines the statement's
 * names: one, or one per Galois element (IR_F_RESULT_PER_GALOIS: the
 * builder fills a->results). */
static int build_op(parser *p, const ir_op_info *syn, const token *opw, const token *names,
                    int nnames, ir_op_args *a) {
  fhjit_graph *g = p->g;
  char **cnames = calloc((size_t)nnames, sizeof *cnames);
  fhjit_value *results = malloc(sizeof *results * (size_t)nnames);
  int rc = cnames && results ? 0 : fail_at(p, opw->loc, FHJIT_ERR_MEMORY, "out of memory");
  for (int i = 0; !rc && i < nnames; i++)
    if (!(cnames[i] = tok_strdup(p, &names[i]))) rc = -1;
  if (!rc) {
    g->cur_loc = opw->loc;
    /* a composite (ops.def's IR_COMPOSITE) names what it adds after name */
    a->name = cnames[0];
    a->names = (const char *const *)cnames, a->nnames = nnames, a->results = results;
    fhjit_value v = syn->build(g, a);
    if (v == FHJIT_NO_VALUE) rc = fail_recorded(p);
    else if (!(syn->flags & IR_F_RESULT_PER_GALOIS)) results[0] = v;
  }
  for (int i = 0; !rc && i < nnames; i++) rc = define(p, &names[i], results[i]);
  for (int i = 0; cnames && i < nnames; i++) free(cnames[i]);
  free(cnames);
  free(results);
  return rc;
}

/* A statement defining several values (names[1] on) is one whose op
 * defines one per element of its galois(...), as many as there are. */
static int check_result_count(parser *p, const ir_op_info *syn, const token *opw,
                              const char *mnemonic, const token *names, int nnames,
                              const ir_op_args *a) {
  if (!(syn->flags & IR_F_RESULT_PER_GALOIS)) {
    if (nnames == 1) return 0;
    return fail_at(p, names[1].loc, FHJIT_ERR_PARSE,
                   "%s defines one value, not %d (only ckks_rotate_hoisted defines several)",
                   mnemonic, nnames);
  }
  if (nnames == a->ngalois) return 0;
  return fail_at(p, opw->loc, FHJIT_ERR_PARSE,
                 "%s with %d Galois element%s defines %d value%s (one per element), not %d",
                 mnemonic, (int)a->ngalois, a->ngalois == 1 ? "" : "s", (int)a->ngalois,
                 a->ngalois == 1 ? "" : "s", nnames);
}

/* %name, ... = OP operands clauses */
static int parse_op(parser *p, const token *names, int nnames) {
  const token opw = p->tok;
  char mnemonic[32];
  const ir_op_info *syn = op_word(p, mnemonic, sizeof mnemonic);
  if (!syn) return -1;
  if (nnames > 1 && !(syn->flags & IR_F_RESULT_PER_GALOIS))
    return check_result_count(p, syn, &opw, mnemonic, names, nnames, NULL);
  fhjit_value *args = NULL;
  int32_t *basis = NULL;
  int64_t *galois = NULL;
  ir_op_args a = {.mnemonic = mnemonic, .layout = FHJIT_CYCLIC, .implicit = FHJIT_NO_VALUE,
                  .domain = FHJIT_DOMAIN_ANY, .mode = FHJIT_FORM_ANY};
  int rc = parse_operands(p, syn, &opw, mnemonic, &args, &a);
  if (!rc) rc = parse_clauses(p, syn, &opw, mnemonic, &basis, &galois, &a);
  if (!rc) rc = check_result_count(p, syn, &opw, mnemonic, names, nnames, &a);
  if (!rc) {
    a.args = args, a.basis = basis;
    rc = build_op(p, syn, &opw, names, nnames, &a);
  }
  free(args);
  free(basis);
  free(galois);
  return rc;
}

/* The names a statement defines, %a or %a, %b, ..., up to its '=' (each
 * new, none twice) into *names (owned by the caller). */
static int parse_names(parser *p, token **names, int *nnames) {
  int cap = 0;
  for (;;) {
    const token name = p->tok;
    symbol *prev = sym_find(p, name.text, name.len);
    if (prev)
      return fail_at(p, name.loc, FHJIT_ERR_PARSE,
                     "redefinition of %%%.*s (first defined at line %d, column %d)",
                     (int)name.len, name.text, (int)prev->loc.line, (int)prev->loc.col);
    for (int i = 0; i < *nnames; i++)
      if ((*names)[i].len == name.len && !memcmp((*names)[i].text, name.text, name.len))
        return fail_at(p, name.loc, FHJIT_ERR_PARSE, "%%%.*s is named twice in this definition",
                       (int)name.len, name.text);
    if (*nnames == cap) {
      cap = cap ? 2 * cap : 4;
      token *grown = realloc(*names, sizeof *grown * (size_t)cap);
      if (!grown) return fail_at(p, name.loc, FHJIT_ERR_MEMORY, "out of memory");
      *names = grown;
    }
    (*names)[(*nnames)++] = name;
    if (next(p)) return -1;
    if (p->tok.kind != T_COMMA) return expect(p, T_EQ, "'=' after the value name");
    if (next(p)) return -1;
    if (p->tok.kind != T_VALUE) return expected(p, "a value name ('%name') after ','");
  }
}

/* %name = input ... | %name, ... = OP ... */
static int parse_definition(parser *p) {
  token *names = NULL;
  int nnames = 0;
  int rc = parse_names(p, &names, &nnames);
  if (!rc && tok_is(&p->tok, "input")) {
    if (nnames > 1)
      rc = fail_at(p, names[1].loc, FHJIT_ERR_PARSE, "an input defines one value, not %d",
                   nnames);
    else rc = next(p) ? -1 : parse_input(p, &names[0]);
  } else if (!rc) {
    rc = parse_op(p, names, nnames);
  }
  free(names);
  return rc;
}

/* Whether v is a polynomial value (outputs of tables are refused by the
 * builder; its message should point at the value). */
static int g_node_kind_poly(const fhjit_graph *g, fhjit_value v) {
  return ir_valid_value(g, v) && g->nodes[v].type.kind == FHJIT_KIND_POLY;
}

/* output %value [as name] */
static int parse_output(parser *p) {
  if (next(p)) return -1;
  fhjit_value v = FHJIT_NO_VALUE;
  ir_loc vloc = p->tok.loc;
  if (parse_operand(p, &v, &vloc)) return -1;
  char *oname = NULL;
  ir_loc loc = vloc;
  if (tok_is(&p->tok, "as")) {
    if (next(p)) return -1;
    if (p->tok.kind == T_VALUE)
      return fail_at(p, p->tok.loc, FHJIT_ERR_PARSE,
                     "an output name is written without '%%' (output %%value as name)");
    if (p->tok.kind != T_WORD) return expected(p, "an output name after 'as'");
    /* Errors about the name (used twice) point at it; those about the value
     * (a table) at the value. */
    if (g_node_kind_poly(p->g, v)) loc = p->tok.loc;
    oname = tok_strdup(p, &p->tok);
    if (!oname || next(p)) {
      free(oname);
      return -1;
    }
  }
  p->g->cur_loc = loc;
  fhjit_status st = fhjit_output(p->g, v, oname);
  free(oname);
  return st == FHJIT_OK ? 0 : fail_recorded(p);
}

/* ------------------------------------------------------------------ graph */

static int parse_moduli(parser *p, uint64_t **moduli, ir_loc **locs, int32_t *count) {
  if (expect(p, T_LPAREN, "'('")) return -1;
  int32_t cap = 0;
  for (;;) {
    if (*count == cap) {
      cap = cap ? 2 * cap : 8;
      uint64_t *m = realloc(*moduli, sizeof *m * (size_t)cap);
      if (m) *moduli = m;
      ir_loc *l = realloc(*locs, sizeof *l * (size_t)cap);
      if (l) *locs = l;
      if (!m || !l) return fail_at(p, p->tok.loc, FHJIT_ERR_MEMORY, "out of memory");
    }
    (*locs)[*count] = p->tok.loc;
    if (parse_number(p, UINT64_MAX, "a modulus", &(*moduli)[*count])) return -1;
    ++*count;
    if (p->tok.kind != T_COMMA) break;
    if (next(p)) return -1;
  }
  return expect(p, T_RPAREN, "')'");
}

/* What the text says before the graph's '{'. */
typedef struct graph_header {
  char *name;
  fhjit_radix radix;
  uint64_t *moduli;
  ir_loc *mlocs;
  int32_t nmoduli;
  int64_t nspecial, alpha; /* special(K) digits(alpha): the chain's split, the key's digits */
  ir_loc special_loc, digits_loc, brace;
} graph_header;

/* @name radix(r..) [moduli(...) [special(K)] [digits(alpha)]], up to the
 * '{' (the current token after). */
static int parse_header(parser *p, graph_header *h) {
  if (p->tok.kind == T_GLOBAL) h->name = tok_strdup(p, &p->tok);
  else if (p->tok.kind == T_QUOTED) h->name = decode_quoted(p, &p->tok);
  else return expected(p, "the graph name ('@name')");
  if (!h->name) return -1;
  if (!*h->name) return fail_at(p, p->tok.loc, FHJIT_ERR_PARSE, "the graph name is empty");
  if (next(p)) return -1;
  if (!tok_is(&p->tok, "radix")) return expected(p, "'radix' (radix(r32) or radix(r62))");
  if (next(p) || expect(p, T_LPAREN, "'('")) return -1;
  if (tok_is(&p->tok, "r32")) h->radix = FHJIT_R32;
  else if (tok_is(&p->tok, "r62")) h->radix = FHJIT_R62;
  else return expected(p, "a radix (r32 or r62)");
  if (next(p) || expect(p, T_RPAREN, "')'")) return -1;
  if (tok_is(&p->tok, "moduli") &&
      (next(p) || parse_moduli(p, &h->moduli, &h->mlocs, &h->nmoduli)))
    return -1;
  h->special_loc = h->digits_loc = p->tok.loc;
  if (h->nmoduli && tok_is(&p->tok, "special")) {
    h->special_loc = p->tok.loc;
    if (next(p) || expect(p, T_LPAREN, "'('") ||
        parse_int64(p, "the number of special primes", &h->nspecial) || expect(p, T_RPAREN, "')'"))
      return -1;
  }
  if (h->nmoduli && tok_is(&p->tok, "digits")) {
    h->digits_loc = p->tok.loc;
    if (next(p) || expect(p, T_LPAREN, "'('") || parse_int64(p, "the digit size", &h->alpha) ||
        expect(p, T_RPAREN, "')'"))
      return -1;
  }
  if (p->tok.kind != T_LBRACE)
    return expected(p, h->nmoduli ? "'special(...)', 'digits(...)' or '{'"
                                  : "'moduli(...)' or '{'");
  h->brace = p->tok.loc;
  return 0;
}

/* The graph the header describes, with its chain (each modulus checked
 * where it is written), as p->g. */
static int create_graph(parser *p, const graph_header *h, const char *filename) {
  fhjit_graph *g = fhjit_graph_create(p->ctx, h->name, h->radix);
  if (!g) {
    p->failed = 1;
    return -1;
  }
  p->g = g;
  g->loc = h->brace;
  g->filename = sp_strdup(&g->arena, filename);
  g->source = sp_strndup(&g->arena, p->src, p->len);
  if (!g->filename || !g->source) return fail_at(p, h->brace, FHJIT_ERR_MEMORY, "out of memory");
  for (int32_t i = 0; i < h->nmoduli; i++) {
    fhjit_status st = fhjit_check_modulus(p->ctx, h->radix, h->moduli[i], 0);
    if (st != FHJIT_OK) {
      /* The check's message is copied: fail_at replaces it. */
      char *why = strdup(fhjit_last_error(p->ctx));
      fail_at(p, h->mlocs[i], st, "%s", why ? why : "bad modulus");
      free(why);
      return -1;
    }
  }
  if (h->nmoduli) {
    g->cur_loc = h->mlocs[0];
    if (fhjit_graph_set_moduli(g, h->moduli, h->nmoduli) != FHJIT_OK) return fail_recorded(p);
  }
  /* the setters take an int32_t: a count past it is refused here, with
   * the number as written (the setters' messages would quote a stand-in) */
  if (h->nspecial > INT32_MAX || h->nspecial < INT32_MIN)
    return fail_at(p, h->special_loc, FHJIT_ERR_ARGUMENT,
                   "special(%lld): the number of special primes must be between 1 and the "
                   "chain's %d moduli minus one",
                   (long long)h->nspecial, (int)g->nmoduli);
  g->cur_loc = h->special_loc;
  if (h->nspecial && fhjit_graph_set_special(g, (int32_t)h->nspecial)) return fail_recorded(p);
  if (h->alpha > INT32_MAX || h->alpha < INT32_MIN)
    return fail_at(p, h->digits_loc, FHJIT_ERR_ARGUMENT,
                   "digits(%lld): the digit size must be between 1 and the %d positions of Q_L "
                   "(the chain's %d moduli less %d special primes)",
                   (long long)h->alpha, (int)(g->nmoduli - g->nspecial), (int)g->nmoduli,
                   (int)g->nspecial);
  g->cur_loc = h->digits_loc;
  if (h->alpha && fhjit_graph_set_digits(g, (int32_t)h->alpha)) return fail_recorded(p);
  return 0;
}

/* The definitions and outputs up to the '}', then the end of the file. */
static int parse_body(parser *p, ir_loc brace) {
  if (next(p)) return -1;
  while (p->tok.kind != T_RBRACE) {
    if (p->tok.kind == T_VALUE) {
      if (parse_definition(p)) return -1;
    } else if (tok_is(&p->tok, "output")) {
      if (parse_output(p)) return -1;
    } else if (p->tok.kind == T_EOF) {
      return fail_at(p, brace, FHJIT_ERR_PARSE, "the '{' of graph @%s is never closed",
                     p->g->name);
    } else {
      return expected(p, "a definition ('%name = ...'), 'output' or '}'");
    }
  }
  if (next(p)) return -1;
  if (p->tok.kind != T_EOF)
    return expected(p, "the end of the file after the graph's '}' (a file holds one graph)");
  return 0;
}

static int parse_graph(parser *p, const char *filename) {
  if (next(p)) return -1;
  if (!tok_is(&p->tok, "graph")) return expected(p, "'graph' (a file holds one graph)");
  if (next(p)) return -1;
  graph_header h = {0};
  int rc = parse_header(p, &h);
  if (!rc) rc = create_graph(p, &h, filename);
  if (!rc) rc = parse_body(p, h.brace);
  free(h.name);
  free(h.moduli);
  free(h.mlocs);
  return rc;
}

fhjit_graph *fhjit_parse(fhjit_context *ctx, const char *text, size_t length,
                         const char *filename) {
  if (!ctx) return NULL;
  if (!text && length) {
    ir_error(ctx, FHJIT_ERR_ARGUMENT, "fhjit_parse: null text");
    return NULL;
  }
  if (!filename || !*filename) filename = "<input>";
  parser p = {.ctx = ctx, .len = length, .line = 1};
  char *src = malloc(length + 1);
  if (!src) {
    ir_error(ctx, FHJIT_ERR_MEMORY, "fhjit_parse: out of memory");
    return NULL;
  }
  if (length) memcpy(src, text, length);
  src[length] = 0;
  p.src = src;
  p.diag.ctx = ctx;
  p.diag.filename = filename;
  p.diag.source = src;
  p.diag.name = "?";
  int rc = parse_graph(&p, filename);
  free(p.syms);
  free(src);
  if (rc != 0) {
    if (!p.failed) ir_error(ctx, FHJIT_ERR_PARSE, "%s: error: parse failed", filename);
    fhjit_graph_destroy(p.g);
    return NULL;
  }
  /* Later builder calls through the C API are not from this text. */
  p.g->cur_loc = (ir_loc){0, 0};
  return p.g;
}
