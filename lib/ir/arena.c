/* arena.c: bump allocation for a unit of work (a graph, a compilation), and
 * the growable text buffer used by printers and error messages. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/ir.h"

struct ir_arena_chunk {
  ir_arena_chunk *next;
  size_t used, size;
  _Alignas(16) unsigned char data[];
};

void ir_arena_init(ir_arena *a) { a->head = NULL; }

void ir_arena_free(ir_arena *a) {
  ir_arena_chunk *c = a->head;
  while (c) {
    ir_arena_chunk *next = c->next;
    free(c);
    c = next;
  }
  a->head = NULL;
}

void *ir_alloc(ir_arena *a, size_t size) {
  size = (size + 15) & ~(size_t)15;
  ir_arena_chunk *c = a->head;
  if (!c || c->size - c->used < size) {
    size_t want = size > 16384 ? size : 16384;
    c = malloc(sizeof *c + want);
    if (!c) return NULL;
    c->next = a->head;
    c->used = 0;
    c->size = want;
    a->head = c;
  }
  void *p = c->data + c->used;
  c->used += size;
  memset(p, 0, size);
  return p;
}

char *ir_strndup(ir_arena *a, const char *s, size_t n) {
  char *p = ir_alloc(a, n + 1);
  if (!p) return NULL;
  memcpy(p, s, n);
  p[n] = 0;
  return p;
}

char *ir_strdup(ir_arena *a, const char *s) {
  return ir_strndup(a, s, strlen(s));
}

static int buf_reserve(ir_buf *b, size_t extra) {
  if (b->failed) return 0;
  if (b->len + extra + 1 <= b->cap) return 1;
  size_t cap = b->cap ? b->cap : 256;
  while (cap < b->len + extra + 1) cap *= 2;
  char *d = realloc(b->data, cap);
  if (!d) {
    b->failed = 1;
    return 0;
  }
  b->data = d;
  b->cap = cap;
  return 1;
}

void ir_buf_put(ir_buf *b, const char *s, size_t n) {
  if (!buf_reserve(b, n)) return;
  memcpy(b->data + b->len, s, n);
  b->len += n;
  b->data[b->len] = 0;
}

void ir_buf_vprintf(ir_buf *b, const char *fmt, va_list ap) {
  va_list ap2;
  va_copy(ap2, ap);
  int n = vsnprintf(NULL, 0, fmt, ap2);
  va_end(ap2);
  if (n < 0 || !buf_reserve(b, (size_t)n)) return;
  vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
  b->len += (size_t)n;
}

void ir_buf_printf(ir_buf *b, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  ir_buf_vprintf(b, fmt, ap);
  va_end(ap);
}

void ir_buf_free(ir_buf *b) {
  free(b->data);
  b->data = NULL;
  b->len = b->cap = 0;
  b->failed = 0;
}
