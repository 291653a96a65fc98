/* readfile.h: reading a whole input file of the tools (a .fh graph, a .npy
 * array) into memory with a size limit, so that a hostile or mistaken path
 * (/dev/zero, a directory, a huge file) fails at once with a message instead
 * of filling memory. Shared by fhjit-run, fhjit-dump and npy.c. */
#ifndef FHJIT_READFILE_H
#define FHJIT_READFILE_H

#include <stddef.h>

/* The largest graph file fhjit-run and fhjit-dump read: 64 MiB. */
#define TOOL_GRAPH_FILE_LIMIT ((size_t)64 << 20)

/* Reads all of `path` ("-": stdin) into a malloc'd buffer of *len bytes
 * followed by a NUL. Regular files, pipes, FIFOs and terminals are read;
 * directories, devices and sockets are refused. More than `limit` bytes is
 * an error that names the size, the limit and `limit_name` (what the limit
 * is, e.g. "the graph file limit"). Returns 0, or -1 with a message that
 * starts with the path ("<stdin>" for "-") in err (may be NULL) and *data
 * NULL. */
/* Formats a message into err (errsize bytes; either may be 0/NULL) and
 * returns -1: the tools' error convention. */
int tool_fail(char *err, size_t errsize, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

int tool_read_file(const char *path, size_t limit, const char *limit_name, char **data,
                   size_t *len, char *err, size_t errsize);

#endif
