#!/usr/bin/env python3
"""many_inputs.py KIND K: prints a graph whose fused work reads K graph inputs
(test/lit/diag/kernel_args.test). KIND epi: a forward NTT (r32, N = 2^13)
and its result plus K inputs, a chain of adds (one epilogue of K + 1
inputs); epi4: four such chains of K inputs each; pw: an NTT and a separate
pointwise result of K inputs."""
import sys

kind, k = sys.argv[1], int(sys.argv[2])
n = 8192
print("graph @many radix(r32) moduli(268369921) {")
print(f"  %x = input pt<[], 1, {n}> coef mont")
print(f"  %tf = input twiddles<1, {n}>")
print("  %y = ntt_fwd %x, %tf mode(mont)")
chains = 4 if kind == "epi4" else 1
for c in range(chains):
    prev = "%y"
    for i in range(k):
        print(f"  %a{c}_{i} = input pt<[], 1, {n}> ntt mont")
        if kind == "pw" and i == 0:
            prev = f"%a{c}_0"
            continue
        print(f"  %s{c}_{i} = add {prev}, %a{c}_{i}")
        prev = f"%s{c}_{i}"
    print(f"  output {prev}")
if kind == "pw":
    print("  output %y")
print("}")
