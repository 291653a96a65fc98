"""test_abi.py: every ctypes Structure of the package has the size and field
offsets of its C struct in include/fhjit/ (a C program built with the
system compiler prints them). A struct that grew in C but not here made the
library write past a ctypes buffer and corrupt the interpreter's heap
(fhjit_cuda_compile_info's disk_note: a segfault on the H200 only)."""
import ctypes
import os
import shutil
import subprocess

import pytest

from fhjit import _lib

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
INCLUDE = os.path.join(ROOT, "include")

STRUCTS = {
    "fhjit_type": _lib.CType,
    "fhjit_layout": _lib.CLayout,
    "fhjit_output_info": _lib.OutputInfo,
    "fhjit_cuda_options": _lib.CudaOptions,
    "fhjit_cuda_args": _lib.CudaArgs,
    "fhjit_cuda_compile_info": _lib.CudaCompileInfo,
}


def c_layout(tmp_path):
    """{struct: (size, {field: offset})} from the C compiler."""
    lines = ['#include <stddef.h>', '#include <stdio.h>', '#include "fhjit/fhjit.h"',
             '#include "fhjit/fhjit_cuda.h"', "int main(void) {"]
    for name, cls in STRUCTS.items():
        lines.append('  printf("%s size %%zu\\n", sizeof(%s));' % (name, name))
        for field, _ in cls._fields_:
            lines.append('  printf("%s %s %%zu\\n", offsetof(%s, %s));'
                         % (name, field, name, field))
    lines.append("  return 0;\n}")
    src = tmp_path / "abi.c"
    src.write_text("\n".join(lines) + "\n")
    exe = tmp_path / "abi"
    cc = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    subprocess.run([cc, "-std=c11", "-I", INCLUDE, str(src), "-o", str(exe)], check=True)
    out = {}
    for line in subprocess.run([str(exe)], check=True, capture_output=True,
                               text=True).stdout.splitlines():
        struct, field, value = line.split()
        size, fields = out.setdefault(struct, [0, {}])
        if field == "size":
            out[struct][0] = int(value)
        else:
            fields[field] = int(value)
    return out


@pytest.mark.skipif(not (shutil.which("cc") or shutil.which("gcc") or shutil.which("clang"))
                    or not os.path.isdir(INCLUDE), reason="needs a C compiler and the headers")
def test_structs_match_the_c_headers(tmp_path):
    c = c_layout(tmp_path)
    for name, cls in STRUCTS.items():
        size, offsets = c[name]
        assert ctypes.sizeof(cls) == size, "%s: ctypes %d bytes, C %d" % (
            name, ctypes.sizeof(cls), size)
        for field, _ in cls._fields_:
            assert getattr(cls, field).offset == offsets[field], "%s.%s" % (name, field)
