#!/usr/bin/python3
"""Prints the constants of kernels/silu_grad32.go: silu''s root x0 in two
float32 parts and the coefficients of h(d) = silu'(x0 + d)/d on [-B, B],
the polynomial ewgSiluF32At takes near the root.

    /usr/bin/python3 tools/silu_grad_fit.py [B [DEGREE]]    # defaults 0.3 7; needs mpmath, numpy

h is interpolated at DEGREE+1 Chebyshev nodes of [-B, B] from 50-digit
values, solved for the monomial coefficients and rounded to float32; the
script prints the largest relative error of that polynomial (exact
arithmetic, float32 coefficients) on a grid, in float32 ulps (2^-24).
TestSiluGradF32Ulps checks the whole float32 computation.
"""
import sys

import mpmath as mp
import numpy as np

mp.mp.dps = 50


def sigmoid(x):
    return 1 / (1 + mp.exp(-x))


def silu_grad(x):
    s = sigmoid(x)
    return s * (1 + x * (1 - s))


def main():
    band = float(sys.argv[1]) if len(sys.argv) > 1 else 0.3
    degree = int(sys.argv[2]) if len(sys.argv) > 2 else 7
    x0 = mp.findroot(lambda x: 1 + x * (1 - sigmoid(x)), -1.28)
    hi = np.float32(float(x0))
    lo = np.float32(float(x0 - mp.mpf(float(hi))))

    def h(d):
        if abs(d) < mp.mpf(10) ** -20:
            return mp.diff(silu_grad, x0)
        return silu_grad(x0 + d) / d

    nodes = [mp.mpf(band) * mp.cos(mp.pi * (2 * j + 1) / (2 * (degree + 1))) for j in range(degree + 1)]
    a = mp.matrix([[t ** k for k in range(degree + 1)] for t in nodes])
    c = mp.lu_solve(a, mp.matrix([h(t) for t in nodes]))
    c32 = [np.float32(float(c[k])) for k in range(degree + 1)]
    worst = 0
    for t in np.linspace(-band, band, 801):
        t = mp.mpf(float(t))
        p = sum(mp.mpf(float(v)) * t ** k for k, v in enumerate(c32))
        worst = max(worst, abs(p / h(t) - 1))
    print(f"// x0 = {mp.nstr(x0, 30)}")
    print(f"siluRootHi32 = float32({float(hi)!r})")
    print(f"siluRootLo32 = float32({float(lo)!r})")
    print(f"const siluBand32 = {band}")
    print("var siluGradPoly32 = [...]float32{" + ", ".join(repr(float(v)) for v in c32) + "}")
    print(f"// largest relative error of the polynomial: {mp.nstr(worst / 2.0 ** -24, 3)} ulps")


if __name__ == "__main__":
    main()
