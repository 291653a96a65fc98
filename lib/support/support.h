/* support.h: the bottom layer of libfhjit (prefix sp_), which every other
 * layer may use and which uses none (only the public status codes):
 * arenas, growable text buffers, the error record that user errors are
 * written to, and assertions for fhjit's own bugs. */
#ifndef FHJIT_SUPPORT_H
#define FHJIT_SUPPORT_H

#include <stdarg.h>
#include <stddef.h>

#include "fhjit/fhjit.h"

/* ------------------------------------------------------------------ arena */

/* Bump allocator tied to one unit of work (a graph, a compilation). */
typedef struct sp_arena_chunk sp_arena_chunk;
typedef struct sp_arena {
  sp_arena_chunk *head;
} sp_arena;

void sp_arena_init(sp_arena *a);
void sp_arena_free(sp_arena *a);
void *sp_alloc(sp_arena *a, size_t size); /* zeroed, 16-aligned; NULL on OOM */
char *sp_strdup(sp_arena *a, const char *s);
char *sp_strndup(sp_arena *a, const char *s, size_t n);

/* Growable text buffer (malloc-backed), for printers and messages. */
typedef struct sp_buf {
  char *data;
  size_t len, cap;
  int failed; /* an allocation failed: contents are truncated */
} sp_buf;

void sp_buf_printf(sp_buf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void sp_buf_vprintf(sp_buf *b, const char *fmt, va_list ap);
void sp_buf_put(sp_buf *b, const char *s, size_t n);
void sp_buf_free(sp_buf *b);

/* --------------------------------------------------------- error record */

/* The last error of a unit of work (libgccjit's style): its status and a
 * message that says what, where and why. The context embeds one; layers
 * that know no context (nvptx) write to the one they are handed. */
typedef struct sp_err {
  fhjit_status status;
  char *message; /* malloc'd; NULL: none ("") */
} sp_err;

/* Replaces the record's message and status; returns `status`. */
fhjit_status sp_error(sp_err *e, fhjit_status status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
fhjit_status sp_verror(sp_err *e, fhjit_status status, const char *fmt, va_list ap);
void sp_err_clear(sp_err *e);

/* ----------------------------------------------------------------- bugs */

/* Reports a broken invariant (file:line and what) on stderr and aborts, in
 * every build: an assertion is for a bug in fhjit, never for bad input. */
_Noreturn void sp_die(const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Like assert(), but kept with NDEBUG: a wrong kernel is worse than a stop. */
#define SP_ASSERT(cond) \
  ((cond) ? (void)0 : sp_die(__FILE__, __LINE__, "assertion failed: %s", #cond))
#define SP_UNREACHABLE(what) sp_die(__FILE__, __LINE__, "unreachable: %s", (what))

#endif
