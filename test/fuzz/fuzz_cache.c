/* fuzz_cache.c: libFuzzer target for the disk cache's reader
 * (lib/runtime/cache.c: rt_disk_parse and rt_desc_read), whose files an
 * earlier run, a crash mid-write or another version of fhjit may have
 * left. The input is an entry's whole image; its checksum is sealed first
 * (rt_disk_seal), so the fuzzer reaches the checks after it, and the key
 * looked up is the one the image names, as a lookup of that key would
 * pass. An accepted entry must be consistent: its PTX NUL-terminated at
 * ptx_size, its description written back and read again the same. A
 * refused one must say why. The raw input is also read as a description
 * alone, with the same round trip. Aborts only on a violation of these
 * properties; libFuzzer, ASan and UBSan report the rest. Seeds:
 * test/fuzz/cache-seeds (entries written by compiles on the fake driver). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/runtime.h"

static void violation(const char *what) {
  fprintf(stderr, "fuzz_cache: property violated: %s\n", what);
  abort();
}

static int same_kernel(const lw_kernel *a, const lw_kernel *b) {
  if (strcmp(a->name, b->name) || a->shared_bytes != b->shared_bytes || a->flags != b->flags ||
      a->nargs != b->nargs)
    return 0;
  for (int i = 0; i < 3; i++)
    if (a->grid[i] != b->grid[i] || a->block[i] != b->block[i] || a->cluster[i] != b->cluster[i])
      return 0;
  for (int32_t i = 0; i < a->nargs; i++)
    if (a->args[i].kind != b->args[i].kind || a->args[i].index != b->args[i].index) return 0;
  return 1;
}

/* An accepted description, written back and read again, is the same. */
static void check_desc_round_trip(const lw_program *p) {
  sp_buf b = {0};
  rt_desc_write(&b, p);
  if (b.failed) {
    sp_buf_free(&b);
    return;
  }
  lw_program q;
  if (!rt_desc_read(b.data, b.len, &q)) violation("a written description does not read");
  sp_buf_free(&b);
  if (q.nkernels != p->nkernels || q.nscratch != p->nscratch || q.scratch_arena != p->scratch_arena)
    violation("a written description reads with other counts");
  for (int32_t k = 0; k < p->nkernels; k++)
    if (!same_kernel(&p->kernels[k], &q.kernels[k])) violation("a kernel reads back otherwise");
  for (int32_t s = 0; s < p->nscratch; s++)
    if (q.scratch_bytes[s] != p->scratch_bytes[s] || q.scratch_offset[s] != p->scratch_offset[s])
      violation("a scratch buffer reads back otherwise");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > (1u << 20)) return 0;
  unsigned char *img = malloc(size ? size : 1);
  if (!img) return 0;
  memcpy(img, data, size);
  char key[2048] = "";
  if (rt_disk_seal(img, size)) { /* the key the image names (header: its length at byte 12) */
    uint32_t len;
    memcpy(&len, img + 12, 4);
    size_t n = len < sizeof key && len <= size - 48 ? len : 0;
    memcpy(key, img + 48, n);
    key[n < sizeof key ? n : sizeof key - 1] = 0;
  }
  rt_disk_entry e;
  const char *bad = NULL;
  if (rt_disk_parse(img, size, key, &e, &bad) == RT_DISK_HIT) {
    if (!e.ptx || e.ptx[e.ptx_size] != 0 || strlen(key) + e.ptx_size + e.cubin_size > size)
      violation("an accepted entry's PTX or sizes are inconsistent");
    check_desc_round_trip(&e.desc);
    rt_disk_entry_free(&e);
  } else if (!bad || !*bad || e.ptx || e.cubin) {
    violation("a refused entry says nothing or keeps its buffers");
  }
  free(img);
  lw_program p;
  if (rt_desc_read(data, size, &p)) check_desc_round_trip(&p);
  return 0;
}
