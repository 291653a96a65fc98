/* driver.c: opening the CUDA driver. libcuda.so.1 (or $FHJIT_LIBCUDA) is
 * opened once per process, at the first call that needs it, never at load
 * time, so that libfhjit loads and runs its host paths on machines without
 * a GPU. Every failure (no library, a missing symbol, cuInit, no device, a
 * driver too old) becomes FHJIT_ERR_NO_DRIVER with the reason, repeated at
 * every later call. Also the process-wide retained primary contexts. */
#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "runtime/runtime.h"

static pthread_once_t driver_once = PTHREAD_ONCE_INIT;
static rt_driver driver;
static int driver_ok;
static char driver_why[1024];

static void driver_fail(void *handle, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void driver_fail(void *handle, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(driver_why, sizeof driver_why, fmt, ap);
  va_end(ap);
  if (handle) dlclose(handle);
  memset(&driver, 0, sizeof driver);
}

static const char *error_text(CUresult r) {
  const char *name = NULL;
  if (!driver.cuGetErrorName || driver.cuGetErrorName(r, &name) != CUDA_SUCCESS || !name)
    name = "CUDA_ERROR_?";
  return name;
}

static void open_driver(void) {
  const char *path = getenv("FHJIT_LIBCUDA");
  if (!path || !*path) path = "libcuda.so.1";
  dlerror();
  void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    const char *why = dlerror();
    driver_fail(NULL, "cannot open the CUDA driver library %s: %s", path,
                why ? why : "unknown dlopen error");
    return;
  }
  driver.handle = h;
  /* Versioned names: cuda.h maps cuMemAlloc to cuMemAlloc_v2 and so on, and
   * the plain symbols are older ABIs kept for old binaries. */
  struct {
    void **slot;
    const char *name;
  } syms[] = {
#define RT_DRIVER_SLOT(plain, symbol) {(void **)&driver.plain, #symbol},
      RT_DRIVER_SYMBOLS(RT_DRIVER_SLOT)
#undef RT_DRIVER_SLOT
  };
  for (size_t i = 0; i < sizeof syms / sizeof *syms; i++) {
    *syms[i].slot = dlsym(h, syms[i].name);
    if (!*syms[i].slot) {
      driver_fail(h, "the CUDA driver library %s has no symbol %s (a driver older than CUDA %d.%d?)",
                  path, syms[i].name, FHJIT_CUDA_MIN_DRIVER / 1000,
                  FHJIT_CUDA_MIN_DRIVER % 1000 / 10);
      return;
    }
  }
  CUresult r = driver.cuInit(0);
  if (r != CUDA_SUCCESS) {
    const char *text = NULL;
    if (driver.cuGetErrorString(r, &text) != CUDA_SUCCESS || !text) text = "no description";
    driver_fail(h, "cuInit failed: %s (%d): %s", error_text(r), (int)r, text);
    return;
  }
  int version = 0;
  r = driver.cuDriverGetVersion(&version);
  if (r != CUDA_SUCCESS) {
    driver_fail(h, "cuDriverGetVersion failed: %s (%d)", error_text(r), (int)r);
    return;
  }
  if (version < FHJIT_CUDA_MIN_DRIVER) {
    driver_fail(h, "the CUDA driver supports CUDA %d.%d, older than the CUDA %d.%d fhjit needs",
                version / 1000, version % 1000 / 10, FHJIT_CUDA_MIN_DRIVER / 1000,
                FHJIT_CUDA_MIN_DRIVER % 1000 / 10);
    return;
  }
  driver.version = version;
  int count = 0;
  r = driver.cuDeviceGetCount(&count);
  if (r != CUDA_SUCCESS) {
    driver_fail(h, "cuDeviceGetCount failed: %s (%d)", error_text(r), (int)r);
    return;
  }
  if (count < 1) {
    driver_fail(h, "the CUDA driver sees no device");
    return;
  }
  driver_ok = 1;
}

const rt_driver *rt_driver_get(fhjit_context *ctx, const char *what) {
  pthread_once(&driver_once, open_driver);
  if (driver_ok) return &driver;
  ir_error(ctx, FHJIT_ERR_NO_DRIVER, "%s: no usable CUDA driver: %s", what, driver_why);
  return NULL;
}

void rt_cuda_describe(const rt_driver *d, CUresult r, char *buf, size_t size) {
  const char *name = NULL, *text = NULL;
  if (d->cuGetErrorName(r, &name) != CUDA_SUCCESS || !name) name = "CUDA_ERROR_?";
  if (d->cuGetErrorString(r, &text) != CUDA_SUCCESS || !text) text = "no description";
  snprintf(buf, size, "%s (%d): %s", name, (int)r, text);
}

fhjit_status rt_cuda_error(fhjit_context *ctx, const rt_driver *d, CUresult r,
                           const char *call, const char *fmt, ...) {
  char what[768], why[256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  rt_cuda_describe(d, r, why, sizeof why);
  return ir_error(ctx, r == CUDA_ERROR_OUT_OF_MEMORY ? FHJIT_ERR_MEMORY : FHJIT_ERR_CUDA,
                  "%s: %s failed: %s", what, call, why);
}

/* Primary contexts are retained once per process and kept until exit, as the
 * CUDA runtime does: releasing them could destroy a context that the
 * application (or another fhjit context) still has current. */
static pthread_mutex_t primary_lock = PTHREAD_MUTEX_INITIALIZER;
static rt_primary primaries[64];
static int nprimaries;

static fhjit_status primary_context(fhjit_context *ctx, const rt_driver *d, int32_t ordinal,
                                    const char *what, CUcontext *out) {
  CUdevice dev;
  CUresult r = d->cuDeviceGet(&dev, ordinal);
  if (r != CUDA_SUCCESS)
    return rt_cuda_error(ctx, d, r, "cuDeviceGet", "%s: no CUDA device %d", what, (int)ordinal);
  pthread_mutex_lock(&primary_lock);
  fhjit_status s = FHJIT_OK;
  int i = 0;
  while (i < nprimaries && primaries[i].device != dev) i++;
  if (i == nprimaries) {
    CUcontext c = NULL;
    if ((size_t)nprimaries == sizeof primaries / sizeof *primaries) {
      s = ir_error(ctx, FHJIT_ERR_CUDA, "%s: too many devices", what);
    } else if ((r = d->cuDevicePrimaryCtxRetain(&c, dev)) != CUDA_SUCCESS) {
      s = rt_cuda_error(ctx, d, r, "cuDevicePrimaryCtxRetain",
                        "%s: cannot use the primary context of device %d", what, (int)ordinal);
    } else {
      primaries[nprimaries++] = (rt_primary){dev, c};
    }
  }
  if (s == FHJIT_OK) *out = primaries[i].cuctx;
  pthread_mutex_unlock(&primary_lock);
  return s;
}

fhjit_status rt_current_context(fhjit_context *ctx, const rt_driver *d, int32_t device,
                                const char *what, CUcontext *out) {
  CUcontext cur = NULL;
  CUresult r = d->cuCtxGetCurrent(&cur);
  if (r != CUDA_SUCCESS)
    return rt_cuda_error(ctx, d, r, "cuCtxGetCurrent", "%s: cannot read the current context",
                         what);
  if (!cur) {
    fhjit_status s = primary_context(ctx, d, device, what, &cur);
    if (s != FHJIT_OK) return s;
    r = d->cuCtxSetCurrent(cur);
    if (r != CUDA_SUCCESS)
      return rt_cuda_error(ctx, d, r, "cuCtxSetCurrent",
                           "%s: cannot make the primary context of device %d current", what,
                           (int)device);
  }
  *out = cur;
  return FHJIT_OK;
}

fhjit_status fhjit_cuda_current_context(fhjit_context *ctx, int32_t device,
                                        fhjit_cuda_context *out) {
  const char *what = "fhjit_cuda_current_context";
  if (!ctx) return FHJIT_ERR_ARGUMENT;
  if (!out) return ir_error(ctx, FHJIT_ERR_ARGUMENT, "%s: null result pointer", what);
  *out = NULL;
  const rt_driver *d = rt_driver_get(ctx, what);
  if (!d) return FHJIT_ERR_NO_DRIVER;
  CUcontext cur = NULL;
  fhjit_status s = rt_current_context(ctx, d, device, what, &cur);
  if (s == FHJIT_OK) *out = cur;
  return s;
}

void *fhjit_cuda_driver_proc(fhjit_context *ctx, const char *name) {
  if (!name) {
    ir_error(ctx, FHJIT_ERR_ARGUMENT, "fhjit_cuda_driver_proc: null name");
    return NULL;
  }
  const rt_driver *d = rt_driver_get(ctx, "fhjit_cuda_driver_proc");
  if (!d) return NULL;
  void *p = dlsym(d->handle, name);
  if (!p) ir_error(ctx, FHJIT_ERR_NO_DRIVER, "fhjit_cuda_driver_proc: the CUDA driver has no symbol %s", name);
  return p;
}

int fhjit_cuda_available(fhjit_context *ctx) {
  return rt_driver_get(ctx, "fhjit_cuda_available") != NULL;
}

double rt_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}
