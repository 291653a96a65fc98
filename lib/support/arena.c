/* arena.c: bump allocation for a unit of work (a graph, a compilation). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support/support.h"

struct sp_arena_chunk {
  sp_arena_chunk *next;
  size_t used, size;
  _Alignas(16) unsigned char data[];
};

void sp_arena_init(sp_arena *a) { a->head = NULL; }

void sp_arena_free(sp_arena *a) {
  sp_arena_chunk *c = a->head;
  while (c) {
    sp_arena_chunk *next = c->next;
    free(c);
    c = next;
  }
  a->head = NULL;
}

void *sp_alloc(sp_arena *a, size_t size) {
  size = (size + 15) & ~(size_t)15;
  sp_arena_chunk *c = a->head;
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

char *sp_strndup(sp_arena *a, const char *s, size_t n) {
  char *p = sp_alloc(a, n + 1);
  if (!p) return NULL;
  memcpy(p, s, n);
  p[n] = 0;
  return p;
}

char *sp_strdup(sp_arena *a, const char *s) {
  return sp_strndup(a, s, strlen(s));
}
