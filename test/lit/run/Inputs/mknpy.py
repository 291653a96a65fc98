#!/usr/bin/env python3
"""mknpy.py: writes small .npy files for the fhjit-run lit tests without
numpy, including deliberately broken ones.

usage: mknpy.py OUT DESCR SHAPE [--fill V] [--values V0,V1,...] [--fortran]
                [--truncate K] [--version 1|2] [--raw-header TEXT]
DESCR is the numpy type string ('<u4', '<i8', '<f8', '>u4', ...), SHAPE a
comma-separated list of extents ('' for a scalar). Elements are
(index % 1000) unless --fill gives one value (it may be negative) or --values
all of them in C order."""
import struct
import sys


def main():
    args = sys.argv[1:]
    out, descr, shape_text = args[0], args[1], args[2]
    opts = args[3:]
    fill = None
    values = None
    fortran = False
    truncate = 0
    version = 1
    raw_header = None
    i = 0
    while i < len(opts):
        if opts[i] == "--fill":
            fill = int(opts[i + 1]); i += 2
        elif opts[i] == "--values":
            values = [int(v) for v in opts[i + 1].split(",")]; i += 2
        elif opts[i] == "--fortran":
            fortran = True; i += 1
        elif opts[i] == "--truncate":
            truncate = int(opts[i + 1]); i += 2
        elif opts[i] == "--version":
            version = int(opts[i + 1]); i += 2
        elif opts[i] == "--raw-header":
            raw_header = opts[i + 1]; i += 2
        else:
            sys.exit("mknpy.py: unknown option " + opts[i])
    shape = tuple(int(x) for x in shape_text.split(",") if x)
    count = 1
    for e in shape:
        count *= e
    shape_repr = "(" + ", ".join(str(e) for e in shape) + ("," if len(shape) == 1 else "") + ")"
    header = raw_header if raw_header is not None else (
        "{'descr': '%s', 'fortran_order': %s, 'shape': %s, }"
        % (descr, "True" if fortran else "False", shape_repr))
    prefix = 10 if version == 1 else 12
    total = prefix + len(header) + 1
    pad = (64 - total % 64) % 64
    header = header + " " * pad + "\n"
    head = b"\x93NUMPY" + bytes([version, 0])
    head += struct.pack("<H" if version == 1 else "<I", len(header))
    head += header.encode("latin1")
    code = descr.lstrip("<>=|")
    endian = ">" if descr.startswith(">") else "<"
    fmt = {"u4": "I", "u8": "Q", "i4": "i", "i8": "q", "f8": "d", "f4": "f",
           "u1": "B", "u2": "H"}.get(code, "I")
    data = b""
    if values is not None and len(values) != count:
        sys.exit("mknpy.py: --values gives %d values for %d elements" % (len(values), count))
    for k in range(count):
        v = values[k] if values is not None else fill if fill is not None else k % 1000
        if fmt in "df":
            v = float(v)
        data += struct.pack(endian + fmt, v)
    blob = head + data
    if truncate:
        blob = blob[:-truncate]
    with open(out, "wb") as f:
        f.write(blob)


if __name__ == "__main__":
    main()
