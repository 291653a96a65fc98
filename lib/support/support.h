/* support.h: the bottom layer of libfhjit (prefix sp_), which every other
 * layer may use and which uses none: assertions for fhjit's own bugs. User
 * errors never come here; they are recorded on the context (ir_error). */
#ifndef FHJIT_SUPPORT_H
#define FHJIT_SUPPORT_H

/* Reports a broken invariant (file:line and what) on stderr and aborts, in
 * every build: an assertion is for a bug in fhjit, never for bad input. */
_Noreturn void sp_die(const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Like assert(), but kept with NDEBUG: a wrong kernel is worse than a stop. */
#define SP_ASSERT(cond) \
  ((cond) ? (void)0 : sp_die(__FILE__, __LINE__, "assertion failed: %s", #cond))
#define SP_UNREACHABLE(what) sp_die(__FILE__, __LINE__, "unreachable: %s", (what))

#endif
