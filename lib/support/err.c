/* err.c: the error record (support.h): one status and one message, the
 * last failure's, replaced by each new one. */
#include <stdarg.h>
#include <stdlib.h>

#include "support/support.h"

fhjit_status sp_verror(sp_err *e, fhjit_status status, const char *fmt, va_list ap) {
  if (!e) return status;
  sp_buf b = {0};
  sp_buf_vprintf(&b, fmt, ap);
  free(e->message);
  e->message = b.data; /* NULL when out of memory: reported as "" */
  e->status = status;
  return status;
}

fhjit_status sp_error(sp_err *e, fhjit_status status, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  sp_verror(e, status, fmt, ap);
  va_end(ap);
  return status;
}

void sp_err_clear(sp_err *e) {
  free(e->message);
  e->message = NULL;
  e->status = FHJIT_OK;
}
