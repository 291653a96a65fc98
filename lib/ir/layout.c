/* layout.c: walking a layout from the host (fhjit.h, "Walking a layout"):
 * a concrete type's axes in order with a layout's strides, the element
 * offset of a coordinate tuple, and the elements a layout spans. Every
 * product and sum is overflow-checked, so callers may pass any values. */
#include "ir/ir.h"

/* The axes of a concrete type with the layout's strides; the axis count, or
 * 0 when the type is malformed or not concrete (an extent below 1, more
 * than INT64_MAX elements: fhjit_type_elements < 0) or the layout has a
 * negative offset or stride on one of the type's axes. Division-free: a
 * walk calls it per element. */
static int32_t type_axes(const fhjit_type *t, const fhjit_layout *l, int64_t ext[FHJIT_MAX_AXES],
                         int64_t str[FHJIT_MAX_AXES]) {
  if (!t || !l || ir_type_structure_problem(t) || l->offset < 0) return 0;
  int32_t k = 0;
  if (t->kind == FHJIT_KIND_KEY) ext[k] = t->digits, str[k++] = l->digit_stride;
  if (t->comps > 0) ext[k] = t->comps, str[k++] = l->comp_stride;
  for (int a = 0; a < t->nbatch; a++) ext[k] = t->batch[a], str[k++] = l->batch_stride[a];
  ext[k] = t->rows, str[k++] = l->row_stride;
  ext[k] = t->n, str[k++] = l->index_stride;
  int64_t count = 1;
  for (int32_t a = 0; a < k; a++)
    if (ext[a] < 1 || str[a] < 0 || __builtin_mul_overflow(count, ext[a], &count)) return 0;
  return k;
}

/* off + x * stride for non-negative operands; -1 past INT64_MAX. */
static int64_t add_scaled(int64_t off, int64_t x, int64_t stride) {
  int64_t p;
  if (__builtin_mul_overflow(x, stride, &p) || __builtin_add_overflow(off, p, &p)) return -1;
  return p;
}

fhjit_status fhjit_layout_axes(const fhjit_type *type, const fhjit_layout *layout,
                               int64_t extents[FHJIT_MAX_AXES], int64_t strides[FHJIT_MAX_AXES],
                               int32_t *naxes) {
  if (!extents || !strides || !naxes) return FHJIT_ERR_ARGUMENT;
  int64_t ext[FHJIT_MAX_AXES], str[FHJIT_MAX_AXES];
  int32_t k = type_axes(type, layout, ext, str);
  if (!k) return FHJIT_ERR_ARGUMENT;
  for (int32_t a = 0; a < k; a++) extents[a] = ext[a], strides[a] = str[a];
  *naxes = k;
  return FHJIT_OK;
}

int64_t fhjit_layout_offset(const fhjit_type *type, const fhjit_layout *layout,
                            const int64_t *coords) {
  int64_t ext[FHJIT_MAX_AXES], str[FHJIT_MAX_AXES];
  int32_t k = coords ? type_axes(type, layout, ext, str) : 0;
  if (!k) return -1;
  int64_t off = layout->offset;
  for (int32_t a = 0; a < k && off >= 0; a++) {
    if (coords[a] < 0 || coords[a] >= ext[a]) return -1;
    off = add_scaled(off, coords[a], str[a]);
  }
  return off;
}

int64_t fhjit_layout_span(const fhjit_type *type, const fhjit_layout *layout) {
  int64_t ext[FHJIT_MAX_AXES], str[FHJIT_MAX_AXES];
  int32_t k = type_axes(type, layout, ext, str);
  if (!k) return -1;
  int64_t last = layout->offset;
  for (int32_t a = 0; a < k && last >= 0; a++) last = add_scaled(last, ext[a] - 1, str[a]);
  return last < 0 ? -1 : add_scaled(last, 1, 1);
}
