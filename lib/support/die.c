/* die.c: sp_die, the one way fhjit stops on its own bugs (support.h). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "support/support.h"

_Noreturn void sp_die(const char *file, int line, const char *fmt, ...) {
  fprintf(stderr, "fhjit: internal error at %s:%d: ", file, line);
  va_list ap;
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputs("\n(this is a bug in fhjit, not in the caller's input; please report it)\n", stderr);
  abort();
}
