/* imap.h: a small open-addressing hash map from a pair of 64-bit keys to a
 * non-negative int32, for the lowering's interning tables (index contexts by
 * their (a, b), values by their (context, node)). Inserts and look-ups are
 * expected O(1): the lowering stays linear in what it evaluates. */
#ifndef FHJIT_IMAP_H
#define FHJIT_IMAP_H

#include <stddef.h>
#include <stdint.h>

typedef struct lw_imap {
  uint64_t *k1, *k2;
  int32_t *val; /* -1: empty slot */
  size_t cap, count; /* cap: 0 or a power of two */
} lw_imap;

/* The value stored for (k1, k2), or -1. */
int32_t lw_imap_get(const lw_imap *m, uint64_t k1, uint64_t k2);
/* Stores (k1, k2) -> v (v >= 0; the key must not be present). 0 on success,
 * -1 when out of memory (the map is unchanged). */
int lw_imap_put(lw_imap *m, uint64_t k1, uint64_t k2, int32_t v);
void lw_imap_free(lw_imap *m);

#endif
