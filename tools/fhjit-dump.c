/* fhjit-dump.c: placeholder; the text-format work replaces it. */
#include <stdio.h>
#include "fhjit/fhjit.h"
int main(void) { printf("fhjit %s\n", fhjit_version()); return 0; }
