/* imap.c: the lowering's hash map from key pairs to int32 (see imap.h):
 * linear probing, at most half full. */
#include <stdlib.h>

#include "lower/imap.h"

static size_t slot_of(uint64_t k1, uint64_t k2, size_t cap) {
  uint64_t h = k1 * UINT64_C(0x9E3779B97F4A7C15) ^ (k2 + UINT64_C(0x632BE59BD9B4E019));
  h ^= h >> 29;
  h *= UINT64_C(0xBF58476D1CE4E5B9);
  h ^= h >> 32;
  return (size_t)h & (cap - 1);
}

int32_t lw_imap_get(const lw_imap *m, uint64_t k1, uint64_t k2) {
  if (!m->cap) return -1;
  for (size_t s = slot_of(k1, k2, m->cap);; s = (s + 1) & (m->cap - 1)) {
    if (m->val[s] < 0) return -1;
    if (m->k1[s] == k1 && m->k2[s] == k2) return m->val[s];
  }
}

static void place(lw_imap *m, uint64_t k1, uint64_t k2, int32_t v) {
  size_t s = slot_of(k1, k2, m->cap);
  while (m->val[s] >= 0) s = (s + 1) & (m->cap - 1);
  m->k1[s] = k1;
  m->k2[s] = k2;
  m->val[s] = v;
}

static int grow(lw_imap *m) {
  size_t cap = m->cap ? m->cap * 2 : 64;
  lw_imap n = {malloc(sizeof *n.k1 * cap), malloc(sizeof *n.k2 * cap),
               malloc(sizeof *n.val * cap), cap, m->count};
  if (!n.k1 || !n.k2 || !n.val) {
    lw_imap_free(&n);
    return -1;
  }
  for (size_t s = 0; s < cap; s++) n.val[s] = -1;
  for (size_t s = 0; s < m->cap; s++)
    if (m->val[s] >= 0) place(&n, m->k1[s], m->k2[s], m->val[s]);
  lw_imap_free(m);
  *m = n;
  return 0;
}

int lw_imap_put(lw_imap *m, uint64_t k1, uint64_t k2, int32_t v) {
  if (2 * (m->count + 1) > m->cap && grow(m)) return -1;
  place(m, k1, k2, v);
  m->count++;
  return 0;
}

void lw_imap_free(lw_imap *m) {
  free(m->k1);
  free(m->k2);
  free(m->val);
  *m = (lw_imap){0};
}
