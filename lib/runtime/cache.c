/* cache.c: the on-disk kernel cache and the serialised kernel description.
 * One file per key: a header (magic, format version, sizes, checksum), the
 * key text, the PTX, the cubin and the description. Files are written to a
 * temporary name and renamed into place, so readers in other threads or
 * processes see a whole entry or none; whatever fails a check (short file,
 * bad checksum, other key, bad description) is reported as corrupt, with
 * the reason, and the caller rebuilds and overwrites it.
 *
 * Trust: the checksum only catches accidents, and a cubin cannot be checked
 * against its PTX without compiling it again. So the cache trusts what the
 * user alone can write: a directory owned by the user and writable by
 * nobody else (rt_disk_dir_problem; the caller then leaves the cache
 * alone), holding regular files owned by the user and writable by nobody
 * else, opened without following links or blocking (a FIFO or a device in
 * an entry's place never hangs a compile). Entries that fail are refused,
 * never loaded. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "runtime/runtime.h"

#define RT_DISK_MAGIC "FHJITKC1"
#define RT_DISK_FORMAT 4u /* 2: kernel flags; 3: cluster dimensions; 4: the scratch arena */
#define RT_DISK_HEADER 48
#define RT_DISK_MAX_FILE ((uint64_t)1 << 30)
#define RT_DESC_MAGIC 0x4450574cu /* "LWPD" */
/* a temporary entry file this old (seconds) is a dead writer's */
#define RT_DISK_STALE_TMP 3600

/* ---------------------------------------------------------------- checksum */

static uint64_t mix64(uint64_t x) {
  x ^= x >> 32;
  x *= UINT64_C(0xd6e8feb86659fd93);
  x ^= x >> 32;
  x *= UINT64_C(0xd6e8feb86659fd93);
  x ^= x >> 32;
  return x;
}

uint64_t rt_checksum(uint64_t seed, const void *data, size_t size) {
  const unsigned char *p = data;
  uint64_t h = mix64(seed ^ UINT64_C(0x9e3779b97f4a7c15) ^ (uint64_t)size);
  size_t i = 0;
  for (; i + 8 <= size; i += 8) {
    uint64_t w;
    memcpy(&w, p + i, 8);
    h = (h ^ mix64(w)) * UINT64_C(0x9fb21c651e98df25) + 0x632be59bd9b4e019u;
  }
  uint64_t tail = 0;
  for (size_t k = 0; i + k < size; k++) tail |= (uint64_t)p[i + k] << (8 * k);
  h = (h ^ mix64(tail + 1)) * UINT64_C(0x9fb21c651e98df25);
  return mix64(h);
}

/* ------------------------------------------------------------- description */

static void put32(sp_buf *b, uint32_t v) { sp_buf_put(b, (const char *)&v, 4); }
static void put64(sp_buf *b, uint64_t v) { sp_buf_put(b, (const char *)&v, 8); }

void rt_desc_write(sp_buf *out, const lw_program *p) {
  put32(out, RT_DESC_MAGIC);
  put32(out, (uint32_t)p->nkernels);
  put32(out, (uint32_t)p->nscratch);
  for (int32_t k = 0; k < p->nkernels; k++) {
    const lw_kernel *kd = &p->kernels[k];
    char name[sizeof kd->name];
    memset(name, 0, sizeof name);
    strncpy(name, kd->name, sizeof name - 1);
    sp_buf_put(out, name, sizeof name);
    for (int i = 0; i < 3; i++) put32(out, kd->grid[i]);
    for (int i = 0; i < 3; i++) put32(out, kd->block[i]);
    put32(out, kd->shared_bytes);
    put32(out, kd->flags);
    for (int i = 0; i < 3; i++) put32(out, kd->cluster[i]);
    put32(out, (uint32_t)kd->nargs);
    for (int32_t a = 0; a < kd->nargs; a++) {
      put32(out, (uint32_t)kd->args[a].kind);
      put32(out, (uint32_t)kd->args[a].index);
    }
  }
  for (int32_t s = 0; s < p->nscratch; s++) put64(out, (uint64_t)p->scratch_bytes[s]);
  for (int32_t s = 0; s < p->nscratch; s++) put64(out, (uint64_t)p->scratch_offset[s]);
  put64(out, (uint64_t)p->scratch_arena);
}

typedef struct reader {
  const unsigned char *p;
  size_t left;
  int bad;
} reader;

static uint32_t get32(reader *r) {
  uint32_t v = 0;
  if (r->left < 4) {
    r->bad = 1;
    return 0;
  }
  memcpy(&v, r->p, 4);
  r->p += 4;
  r->left -= 4;
  return v;
}

static uint64_t get64(reader *r) {
  uint64_t v = 0;
  if (r->left < 8) {
    r->bad = 1;
    return 0;
  }
  memcpy(&v, r->p, 8);
  r->p += 8;
  r->left -= 8;
  return v;
}

int rt_desc_read(const void *data, size_t size, lw_program *out) {
  reader r = {data, size, 0};
  memset(out, 0, sizeof *out);
  if (get32(&r) != RT_DESC_MAGIC) return 0;
  uint32_t nk = get32(&r), ns = get32(&r);
  if (r.bad || nk > LW_MAX_KERNELS || ns > LW_MAX_KERNELS) return 0;
  out->nkernels = (int32_t)nk;
  out->nscratch = (int32_t)ns;
  for (uint32_t k = 0; k < nk; k++) {
    lw_kernel *kd = &out->kernels[k];
    if (r.left < sizeof kd->name) return 0;
    memcpy(kd->name, r.p, sizeof kd->name);
    r.p += sizeof kd->name;
    r.left -= sizeof kd->name;
    if (!memchr(kd->name, 0, sizeof kd->name) || !kd->name[0]) return 0;
    for (int i = 0; i < 3; i++) kd->grid[i] = get32(&r);
    for (int i = 0; i < 3; i++) kd->block[i] = get32(&r);
    kd->shared_bytes = get32(&r);
    kd->flags = get32(&r);
    for (int i = 0; i < 3; i++) kd->cluster[i] = get32(&r);
    uint32_t na = get32(&r);
    if (r.bad || na > LW_MAX_ARGS || (kd->flags & ~LW_KERNEL_PDL)) return 0;
    kd->nargs = (int32_t)na;
    for (uint32_t a = 0; a < na; a++) {
      uint32_t kind = get32(&r), index = get32(&r);
      if (kind > LW_ARG_OWN || index > INT32_MAX) return 0;
      kd->args[a].kind = (lw_arg_kind)kind;
      kd->args[a].index = (int32_t)index;
    }
    for (int i = 0; i < 3; i++)
      if (kd->grid[i] == 0 || kd->block[i] == 0) return 0;
    /* clusters: none (all 0), or each dimension dividing the grid's, at
     * most 16 blocks (sm_90's non-portable limit) */
    if (kd->cluster[0] || kd->cluster[1] || kd->cluster[2]) {
      uint64_t blocks = 1;
      for (int i = 0; i < 3; i++) {
        if (kd->cluster[i] == 0 || kd->grid[i] % kd->cluster[i]) return 0;
        blocks *= kd->cluster[i];
      }
      if (blocks > 16) return 0;
    }
  }
  for (uint32_t s = 0; s < ns; s++) {
    uint64_t bytes = get64(&r);
    if (bytes == 0 || bytes > (uint64_t)INT64_MAX) return 0;
    out->scratch_bytes[s] = (int64_t)bytes;
  }
  for (uint32_t s = 0; s < ns; s++) {
    uint64_t at = get64(&r);
    if (at > (uint64_t)INT64_MAX) return 0;
    out->scratch_offset[s] = (int64_t)at;
  }
  uint64_t arena = get64(&r);
  if (arena > (uint64_t)INT64_MAX) return 0;
  out->scratch_arena = (int64_t)arena;
  return !r.bad && r.left == 0;
}

/* -------------------------------------------------------------- directory */

int rt_disk_option_problem(const fhjit_context *ctx, char *why, size_t why_size) {
  /* the context's values were checked when set (lib/lower/options.c);
   * the environment's are only read here */
  static const char *const ok[] = {"", "0", "off", "no", "false", "1", "on", "yes", "true"};
  const char *on = ir_option(ctx, IR_OPT_CACHE);
  int good = !on;
  for (size_t i = 0; on && i < sizeof ok / sizeof *ok; i++) good |= !strcasecmp(on, ok[i]);
  if (!good) {
    snprintf(why, why_size, "%s=\"%s\": expected on or off (1/0, yes/no, true/false)",
             ir_option_label(ctx, IR_OPT_CACHE), on);
    return 1;
  }
  const char *dir = ir_option(ctx, IR_OPT_CACHE_DIR);
  if (dir && *dir && dir[0] != '/') {
    snprintf(why, why_size, "%s=\"%s\": expected an absolute path (or \"\" for the default)",
             ir_option_label(ctx, IR_OPT_CACHE_DIR), dir);
    return 1;
  }
  return 0;
}

char *rt_disk_dir(const fhjit_context *ctx) {
  const char *off = ir_option(ctx, IR_OPT_CACHE);
  if (off && (!strcmp(off, "0") || !strcasecmp(off, "off") || !strcasecmp(off, "no") ||
              !strcasecmp(off, "false")))
    return NULL;
  sp_buf b = {0};
  const char *dir = ir_option(ctx, IR_OPT_CACHE_DIR);
  const char *xdg = getenv("XDG_CACHE_HOME");
  const char *home = getenv("HOME");
  if (dir && *dir) sp_buf_printf(&b, "%s", dir);
  else if (xdg && xdg[0] == '/') sp_buf_printf(&b, "%s/fhjit", xdg);
  else if (home && *home) sp_buf_printf(&b, "%s/.cache/fhjit", home);
  else return NULL;
  if (b.failed) {
    sp_buf_free(&b);
    return NULL;
  }
  return b.data;
}

int rt_disk_dir_problem(const char *dir, char *why, size_t why_size) {
  struct stat st;
  if (stat(dir, &st) != 0) {
    if (errno == ENOENT) return 0; /* created private when first written */
    snprintf(why, why_size, "cannot stat the cache directory %s: %s", dir, strerror(errno));
    return 1;
  }
  if (!S_ISDIR(st.st_mode))
    snprintf(why, why_size, "the cache directory %s is not a directory", dir);
  else if (st.st_uid != geteuid())
    snprintf(why, why_size, "the cache directory %s is owned by uid %lu, not by this user (uid %lu)",
             dir, (unsigned long)st.st_uid, (unsigned long)geteuid());
  else if (st.st_mode & (S_IWGRP | S_IWOTH))
    snprintf(why, why_size,
             "the cache directory %s is writable by its group or others (mode %04o; chmod go-w "
             "it, or use another directory)",
             dir, (unsigned)(st.st_mode & 07777));
  else
    return 0;
  return 1;
}

/* mkdir -p, private to the user: cached code is executable material. */
static int make_dirs(const char *path) {
  char *p = strdup(path);
  if (!p) return 0;
  for (char *s = p + 1; *s; s++) {
    if (*s != '/') continue;
    *s = 0;
    if (mkdir(p, 0700) != 0 && errno != EEXIST) {
      free(p);
      return 0;
    }
    *s = '/';
  }
  int ok = mkdir(p, 0700) == 0 || errno == EEXIST;
  free(p);
  return ok;
}

static char *entry_path(const char *dir, const char *key) {
  sp_buf b = {0};
  size_t n = strlen(key);
  sp_buf_printf(&b, "%s/k-%016llx%016llx.fhk", dir,
                (unsigned long long)rt_checksum(1, key, n), (unsigned long long)rt_checksum(2, key, n));
  if (b.failed) {
    sp_buf_free(&b);
    return NULL;
  }
  return b.data;
}

/* ------------------------------------------------------------------ entries */

void rt_disk_entry_free(rt_disk_entry *e) {
  free(e->ptx);
  free(e->cubin);
  memset(e, 0, sizeof *e);
}

static uint64_t payload_checksum(const unsigned char *header_sizes, const unsigned char *payload,
                                 size_t size) {
  /* The sizes are covered too, so a header changed in place is caught. */
  uint64_t seed = rt_checksum(RT_DISK_FORMAT, header_sizes, 32);
  return rt_checksum(seed, payload, size);
}

/* Opens an entry for reading: never through a link, never blocking (a FIFO
 * opens at once), and only a regular file of the user's that nobody else
 * may write. -1 with out->why set (or left empty: no entry). */
static int open_entry(const char *path, rt_disk_entry *out, struct stat *st) {
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) {
    if (errno == ELOOP) snprintf(out->why, sizeof out->why, "%s is a symbolic link", path);
    else if (errno != ENOENT) snprintf(out->why, sizeof out->why, "cannot open %s: %s", path, strerror(errno));
    return -1;
  }
  if (fstat(fd, st) != 0)
    snprintf(out->why, sizeof out->why, "cannot stat %s: %s", path, strerror(errno));
  else if (!S_ISREG(st->st_mode))
    snprintf(out->why, sizeof out->why, "%s is not a regular file", path);
  else if (st->st_uid != geteuid())
    snprintf(out->why, sizeof out->why, "%s is owned by uid %lu, not by this user", path,
             (unsigned long)st->st_uid);
  else if (st->st_mode & (S_IWGRP | S_IWOTH))
    snprintf(out->why, sizeof out->why, "%s is writable by its group or others (mode %04o)", path,
             (unsigned)(st->st_mode & 07777));
  else if (st->st_size < RT_DISK_HEADER || (uint64_t)st->st_size > RT_DISK_MAX_FILE)
    snprintf(out->why, sizeof out->why, "%s has an impossible size (%lld bytes)", path,
             (long long)st->st_size);
  else
    return fd;
  close(fd);
  return -1;
}

static int read_all(int fd, unsigned char *data, size_t size) {
  for (size_t got = 0; got < size;) {
    ssize_t n = read(fd, data + got, size - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return 0;
    got += (size_t)n;
  }
  return 1;
}

rt_disk_result rt_disk_parse(const unsigned char *data, size_t size, const char *key,
                             rt_disk_entry *out, const char **bad) {
  memset(out, 0, sizeof *out);
  *bad = "is not an fhjit cache entry";
  if (size < RT_DISK_HEADER || size > RT_DISK_MAX_FILE || memcmp(data, RT_DISK_MAGIC, 8) != 0)
    return RT_DISK_CORRUPT;
  uint32_t format, key_len;
  uint64_t ptx_len, cubin_len, desc_len, sum;
  memcpy(&format, data + 8, 4);
  memcpy(&key_len, data + 12, 4);
  memcpy(&ptx_len, data + 16, 8);
  memcpy(&cubin_len, data + 24, 8);
  memcpy(&desc_len, data + 32, 8);
  memcpy(&sum, data + 40, 8);
  uint64_t body = size - RT_DISK_HEADER;
  *bad = "has another format or inconsistent sizes";
  if (format != RT_DISK_FORMAT || key_len > body || ptx_len > body || cubin_len > body ||
      desc_len > body || (uint64_t)key_len + ptx_len + cubin_len + desc_len != body)
    return RT_DISK_CORRUPT;
  const unsigned char *p = data + RT_DISK_HEADER;
  *bad = "fails its checksum";
  if (payload_checksum(data + 8, p, body) != sum) return RT_DISK_CORRUPT;
  *bad = "belongs to another key";
  if (key_len != strlen(key) || memcmp(p, key, key_len) != 0) return RT_DISK_CORRUPT;
  p += key_len;
  *bad = "cannot be read (out of memory)";
  out->ptx = malloc(ptx_len + 1);
  out->cubin = malloc(cubin_len ? cubin_len : 1);
  if (!out->ptx || !out->cubin) goto fail;
  memcpy(out->ptx, p, ptx_len);
  out->ptx[ptx_len] = 0;
  out->ptx_size = ptx_len;
  p += ptx_len;
  memcpy(out->cubin, p, cubin_len);
  out->cubin_size = cubin_len;
  p += cubin_len;
  *bad = "has a malformed kernel description";
  if (!rt_desc_read(p, desc_len, &out->desc)) goto fail;
  return RT_DISK_HIT;
fail:
  rt_disk_entry_free(out);
  return RT_DISK_CORRUPT;
}

int rt_disk_seal(void *entry, size_t size) {
  unsigned char *d = entry;
  if (size < RT_DISK_HEADER) return 0;
  uint64_t sum = payload_checksum(d + 8, d + RT_DISK_HEADER, size - RT_DISK_HEADER);
  memcpy(d + 40, &sum, 8);
  return 1;
}

rt_disk_result rt_disk_load(const char *dir, const char *key, rt_disk_entry *out) {
  memset(out, 0, sizeof *out);
  char *path = entry_path(dir, key);
  if (!path) return RT_DISK_MISS;
  struct stat st;
  int fd = open_entry(path, out, &st);
  if (fd < 0) {
    free(path);
    return out->why[0] ? RT_DISK_CORRUPT : RT_DISK_MISS;
  }
  rt_disk_result res = RT_DISK_CORRUPT;
  const char *bad = "cannot be read";
  size_t size = (size_t)st.st_size;
  unsigned char *data = malloc(size);
  if (data && read_all(fd, data, size)) res = rt_disk_parse(data, size, key, out, &bad);
  if (res != RT_DISK_HIT) {
    rt_disk_entry_free(out);
    snprintf(out->why, sizeof out->why, "%s %s", path, bad);
  }
  free(data);
  free(path);
  close(fd);
  return res;
}

static int write_all(int fd, const void *data, size_t size) {
  const char *p = data;
  while (size) {
    ssize_t n = write(fd, p, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return 0;
    p += n;
    size -= (size_t)n;
  }
  return 1;
}

/* A writer that died between creating its temporary file and renaming it
 * (a crash, a kill) leaves the file behind. Each store removes the user's
 * regular ".tmp-" files older than RT_DISK_STALE_TMP seconds (a live
 * writer holds one for the time of one write), best effort, so crashes do
 * not fill the cache directory. */
static void sweep_stale_tmp(const char *dir) {
  DIR *d = opendir(dir);
  if (!d) return;
  time_t now = time(NULL);
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    struct stat st;
    if (strncmp(e->d_name, ".tmp-", 5) != 0 ||
        fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0)
      continue;
    if (S_ISREG(st.st_mode) && st.st_uid == geteuid() && now - st.st_mtime >= RT_DISK_STALE_TMP)
      unlinkat(dirfd(d), e->d_name, 0);
  }
  closedir(d);
}

int rt_disk_store(const char *dir, const char *key, const char *ptx, size_t ptx_size,
                  const void *cubin, size_t cubin_size, const lw_program *desc, char *why,
                  size_t why_size) {
  static unsigned long counter;
  int ok = 0;
  char *path = NULL, *tmp = NULL;
  sp_buf body = {0}, tmpname = {0};
  int fd = -1;
  if (!make_dirs(dir)) {
    snprintf(why, why_size, "cannot create the cache directory %s: %s", dir, strerror(errno));
    goto done;
  }
  if (rt_disk_dir_problem(dir, why, why_size)) goto done; /* someone else's since */
  sweep_stale_tmp(dir);
  path = entry_path(dir, key);
  size_t key_len = strlen(key);
  sp_buf_put(&body, key, key_len);
  sp_buf_put(&body, ptx, ptx_size);
  sp_buf_put(&body, cubin, cubin_size);
  size_t before_desc = body.len;
  rt_desc_write(&body, desc);
  if (!path || body.failed) {
    snprintf(why, why_size, "out of memory");
    goto done;
  }
  unsigned char header[RT_DISK_HEADER];
  uint32_t format = RT_DISK_FORMAT, kl = (uint32_t)key_len;
  uint64_t pl = ptx_size, cl = cubin_size, dl = body.len - before_desc;
  memcpy(header, RT_DISK_MAGIC, 8);
  memcpy(header + 8, &format, 4);
  memcpy(header + 12, &kl, 4);
  memcpy(header + 16, &pl, 8);
  memcpy(header + 24, &cl, 8);
  memcpy(header + 32, &dl, 8);
  uint64_t sum = payload_checksum(header + 8, (const unsigned char *)body.data, body.len);
  memcpy(header + 40, &sum, 8);
  unsigned long serial = __atomic_add_fetch(&counter, 1, __ATOMIC_RELAXED);
  sp_buf_printf(&tmpname, "%s/.tmp-%ld-%lu-%lx", dir, (long)getpid(), serial,
                (unsigned long)pthread_self());
  if (tmpname.failed) {
    snprintf(why, why_size, "out of memory");
    goto done;
  }
  tmp = tmpname.data;
  fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) {
    snprintf(why, why_size, "cannot create %s: %s", tmp, strerror(errno));
    goto done;
  }
  if (!write_all(fd, header, sizeof header) || !write_all(fd, body.data, body.len)) {
    snprintf(why, why_size, "cannot write %s: %s", tmp, strerror(errno));
    goto done;
  }
  if (close(fd) != 0) {
    fd = -1;
    snprintf(why, why_size, "cannot write %s: %s", tmp, strerror(errno));
    goto done;
  }
  fd = -1;
  if (rename(tmp, path) != 0) {
    snprintf(why, why_size, "cannot rename %s to %s: %s", tmp, path, strerror(errno));
    goto done;
  }
  ok = 1;
done:
  if (fd >= 0) close(fd);
  if (!ok && tmp) unlink(tmp);
  sp_buf_free(&tmpname);
  sp_buf_free(&body);
  free(path);
  return ok;
}
