#!/usr/bin/env python3
"""Derives the f32 polynomial and rational coefficients of codegen/src/cpu/math.rs.

Each approximation is a weighted minimax fit on a dense grid by Lawson's algorithm
(iteratively reweighted least squares) against mpmath's values, weighted so that the error
minimised is the relative error of the final function. Coefficients are then rounded to f32
and the fit's error is reported with the f32 coefficients (evaluated in double;
runtime/src/math_tests.rs measures the real error of the generated code). tanh and sigmoid
reuse exp's polynomial; pow's f64 core uses Taylor coefficients.

Pure Python (mpmath only for the reference values): `python3 scripts/fit_math.py`.
"""

import math
import struct

import mpmath as mp

mp.mp.dps = 40


def f32(v):
    return struct.unpack("f", struct.pack("f", float(v)))[0]


def lstsq(rows, rhs):
    """Least squares min ||A c - b|| by Householder QR (A given as rows)."""
    m, n = len(rows), len(rows[0])
    a = [list(r) + [b] for r, b in zip(rows, rhs)]
    for k in range(n):
        norm = math.sqrt(sum(a[i][k] ** 2 for i in range(k, m)))
        if norm == 0.0:
            continue
        alpha = -norm if a[k][k] > 0 else norm
        v = [0.0] * m
        v[k] = a[k][k] - alpha
        for i in range(k + 1, m):
            v[i] = a[i][k]
        vv = sum(x * x for x in v[k:])
        if vv == 0.0:
            continue
        for j in range(k, n + 1):
            d = sum(v[i] * a[i][j] for i in range(k, m))
            f = 2.0 * d / vv
            for i in range(k, m):
                a[i][j] -= f * v[i]
    c = [0.0] * n
    for k in range(n - 1, -1, -1):
        s = a[k][n] - sum(a[k][j] * c[j] for j in range(k + 1, n))
        c[k] = s / a[k][k]
    return c


def grid(lo, hi, n=1500):
    # Chebyshev-distributed: denser near the ends, where minimax errors peak.
    return [
        (lo + hi) / 2 + (hi - lo) / 2 * math.cos(math.pi * (i + 0.5) / n) for i in range(n)
    ]


def lawson(xs, target, basis, weight, iters=300):
    """min over c of max_x |weight(x) * (target(x) - sum c_i basis_i(x))|."""
    t = [target(x) for x in xs]
    w = [weight(x) for x in xs]
    phi = [[b(x) for b in basis] for x in xs]
    lam = [1.0 / len(xs)] * len(xs)
    c = None
    for _ in range(iters):
        s = [math.sqrt(l) * wi for l, wi in zip(lam, w)]
        c = lstsq([[si * p for p in row] for si, row in zip(s, phi)], [si * ti for si, ti in zip(s, t)])
        err = [abs(wi * (ti - sum(ci * p for ci, p in zip(c, row)))) for wi, ti, row in zip(w, t, phi)]
        tot = sum(l * e for l, e in zip(lam, err))
        lam = [l * e / tot for l, e in zip(lam, err)]
    return c


def report(name, coeffs, err):
    print(f"{name}: max error {err:.3e} (2^{math.log2(err) if err > 0 else -999:.1f})")
    for c in coeffs:
        print(f"    {f32(c)!r:>24}  # {c!r}")


def max_err(xs, fn):
    return max(abs(fn(x)) for x in xs)


def horner(cs, x):
    r = 0.0
    for c in reversed(cs):
        r = r * x + c
    return r


def fit_exp():
    # exp(r) = 1 + r + r^2 * P(r), |r| <= ln2/2 (+1% for the rounded reduction).
    h = math.log(2) / 2 * 1.01
    xs = grid(-h, h)
    target = lambda r: float((mp.exp(r) - 1 - r) / (r * r)) if r != 0 else 0.5
    basis = [lambda r, i=i: r**i for i in range(5)]
    c = lawson(xs, target, basis, lambda r: r * r / math.exp(r))
    c32 = [f32(v) for v in c]
    err = max_err(xs, lambda r: (1 + r + r * r * horner(c32, r) - float(mp.exp(r))) / math.exp(r))
    report("exp P(r), exp(r) = 1 + r + r^2 P(r)", c, err)


def fit_one_plus_tanh():
    # e^(-2h) = 1 + h * Q(h), |h| <= ln2/4 (+1%): the reduced argument of 1 +- tanh(u), whose
    # f32 form reduces u + n*ln2/2 in one step (ln2/2 rounded to f32).
    h = math.log(2) / 4 * 1.01
    xs = grid(-h, h, 2000)
    target = lambda x: float((mp.exp(-2 * x) - 1) / x) if x != 0 else -2.0
    basis = [lambda x, i=i: x**i for i in range(5)]
    c = lawson(xs, target, basis, lambda x: x / math.exp(-2 * x))
    c32 = [f32(v) for v in c]
    err = max_err(xs, lambda x: (1 + x * horner(c32, x) - float(mp.exp(-2 * x))) / math.exp(-2 * x))
    report("1 +- tanh Q(h), e^(-2h) = 1 + h Q(h)", c, err)
    l2h = f32(mp.log(2) / 2)
    print(f"ln2/2 = {l2h!r} in f32 ({float(mp.mpf(l2h) - mp.log(2) / 2):.3e} above)")


def fit_log():
    # log1p(f) = f - hfsq + s (hfsq + R(z)), s = f / (2 + f), z = s^2, |s| <= 3 - 2 sqrt2.
    smax = 3 - 2 * math.sqrt(2)
    zs = [x * x for x in grid(0, smax)]
    target = lambda z: float((mp.log((1 + mp.sqrt(z)) / (1 - mp.sqrt(z))) - 2 * mp.sqrt(z)) / mp.sqrt(z)) if z > 0 else 0.0
    basis = [lambda z, i=i: z ** (i + 1) for i in range(3)]
    c = lawson(zs, target, basis, lambda z: 1.0)
    c32 = [f32(v) for v in c]
    err = max_err(zs, lambda z: z * horner(c32, z) - target(z))
    report("log R(z) = z * (c0 + c1 z + c2 z^2)", c, err)


def fit_sin_cos():
    h = math.pi / 4 * 1.01
    xs = grid(1e-6, h)
    # sin r = r + r^3 S(r^2)
    t = lambda r: float((mp.sin(r) - r) / r**3)
    c = lawson(xs, t, [lambda r, i=i: r ** (2 * i) for i in range(3)], lambda r: r**3 / math.sin(r))
    c32 = [f32(v) for v in c]
    err = max_err(xs, lambda r: (r + r**3 * horner(c32, r * r) - float(mp.sin(r))) / math.sin(r))
    report("sin S(r^2), sin r = r + r^3 S(r^2)", c, err)
    # cos r = 1 - r^2/2 + r^4 C(r^2)
    t = lambda r: float((mp.cos(r) - 1 + r * r / 2) / r**4)
    c = lawson(xs, t, [lambda r, i=i: r ** (2 * i) for i in range(3)], lambda r: r**4 / math.cos(r))
    c32 = [f32(v) for v in c]
    err = max_err(xs, lambda r: (1 - r * r / 2 + r**4 * horner(c32, r * r) - float(mp.cos(r))) / math.cos(r))
    report("cos C(r^2), cos r = 1 - r^2/2 + r^4 C(r^2)", c, err)


def fit_erf():
    # small: erf x = x (C0 + x^2 S(x^2)) with C0 = 2/sqrt(pi) as an f32 pair (hi + lo), so
    # the leading term carries no rounding of C0; 0 <= x < 0.921875.
    a = 0.921875
    c0 = 2 / mp.sqrt(mp.pi)
    hi = f32(c0)
    lo = f32(float(c0 - hi))
    print(f"erf C0 = {hi!r} + {lo!r}")
    xs = grid(1e-6, a, 600)
    t = lambda x: float((mp.erf(x) / x - c0) / (x * x))
    c = lawson(xs, t, [lambda x, i=i: x ** (2 * i) for i in range(6)], lambda x: x**3 / math.erf(x))
    c32 = [f32(v) for v in c]
    err = max_err(xs, lambda x: (x * hi + x * (lo + x * x * horner(c32, x * x)) - float(mp.erf(x))) / math.erf(x))
    report("erf small S(x^2)", c, err)
    # large: erf x = 1 - exp(L(x)), L ~ log erfc, 0.921875 <= x <= 3.93 (erf rounds to 1 beyond)
    xs = grid(a, 3.93)
    t = lambda x: float(mp.log(mp.erfc(x)))
    c = lawson(xs, t, [lambda x, i=i: x**i for i in range(9)], lambda x: math.erfc(x) / math.erf(x))
    c32 = [f32(v) for v in c]
    err = max_err(xs, lambda x: (1 - math.exp(horner(c32, x)) - float(mp.erf(x))) / math.erf(x))
    report("erf large L(x)", c, err)


def constants():
    """The split constants of the reductions."""
    p = mp.pi / 2
    p1 = f32(p)
    p2 = f32(p - p1)
    p3 = f32(p - p1 - p2)
    print(f"pi/2 = {p1!r} + {p2!r} + {p3!r} (+ {float(p - p1 - p2 - p3):.3e})")
    l2 = mp.log(2)
    hi = struct.unpack("f", struct.pack("I", struct.unpack("I", struct.pack("f", f32(l2)))[0] - 1))[0]
    assert hi < l2
    lo = f32(l2 - hi)
    print(f"ln2 = {hi!r} + {lo!r} (+ {float(l2 - hi - lo):.3e}); the high part is below ln2")
    print(f"log2(e) = {f32(1 / l2)!r}, 2/pi = {f32(2 / mp.pi)!r}")
    print("exp2 Taylor (f64):", [repr(float(l2**k / mp.factorial(k))) for k in range(11)])


if __name__ == "__main__":
    constants()
    fit_exp()
    fit_one_plus_tanh()
    fit_log()
    fit_sin_cos()
    fit_erf()
