// Hand-fused C for WORKLOADS.md's memory-bound workloads, at smelt's vector width: 128-bit
// SSE/AVX intrinsics with FMA, two OpenMP threads over rows, outputs allocated once and reused
// (2 MiB aligned, advised as huge pages), the same algorithms as smelt's kernels (f64 sum
// lanes, a trip of never-negative terms added in f32 first, two-pass variance, polynomial exp
// of the same degree, GELU's tail as smelt computes it), the same software prefetches (2 KiB
// ahead of streamed inputs; the next row during a row's later passes) and streaming stores
// where smelt's kernels stream (ew_chain, gelu_tanh, transpose_add's tiles, permute_scale,
// softmax_rows with its stash in a scratch row, and layernorm; not a row of sums).
// It is the yardstick for "within 15 % of hand-written C": run it and `smelt bench` back to
// back (scripts/handc.sh).
//
// Every kernel is checked against a scalar double-precision reference on sampled rows before
// it is timed; a wrong answer prints FAILED and exits 1. As `smelt bench` does, each timed run
// follows a clean read of twice the last-level cache (no workload data left in any cache, no
// dirty lines to write back), unless `--warm` is given.

#include <immintrin.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static float *alloc(size_t n) {
    size_t bytes = (n * sizeof(float) + (2u << 20) - 1) & ~(size_t)((2u << 20) - 1);
    float *p = aligned_alloc(2u << 20, bytes);
    if (!p) {
        fprintf(stderr, "out of memory\n");
        exit(1);
    }
    madvise(p, bytes, MADV_HUGEPAGE);
    return p;
}

// Deterministic inputs in [-3, 3).
static float *random_input(size_t n, unsigned seed) {
    float *p = alloc(n);
    unsigned long long s = seed * 0x9e3779b97f4a7c15ull + 1;
    for (size_t i = 0; i < n; i++) {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        p[i] = (float)((s >> 40) * (6.0 / 16777216.0) - 3.0);
    }
    return p;
}

#define N 4096
#define NN ((size_t)N * N)

// --- exp on f32x4 (degree-6 polynomial after Cody-Waite reduction), GELU's tail ----------

static inline __m128 ps(float v) { return _mm_set1_ps(v); }

// e^r for |r| <= ln2/2 as smelt's exp: 1 + r (1 + r (1/2 + r/6 + ...)), Horner's rule down to
// the constant 1, degree 6 overall.
static inline __m128 exp_poly(__m128 r) {
    __m128 p = ps(1.0f / 720);
    p = _mm_fmadd_ps(p, r, ps(1.0f / 120));
    p = _mm_fmadd_ps(p, r, ps(1.0f / 24));
    p = _mm_fmadd_ps(p, r, ps(1.0f / 6));
    p = _mm_fmadd_ps(p, r, ps(0.5f));
    p = _mm_fmadd_ps(p, r, ps(1.0f));
    return _mm_fmadd_ps(p, r, ps(1.0f));
}

// n = round(x log2 e) through the 1.5*2^23 trick; r = x - n ln2 in two parts.
static inline __m128 reduce(__m128 x, __m128 *t) {
    const __m128 magic = ps(12582912.0f);
    *t = _mm_fmadd_ps(x, ps(1.44269504f), magic);
    __m128 n = _mm_sub_ps(*t, magic);
    __m128 r = _mm_fnmadd_ps(n, ps(0.693145752f), x);
    return _mm_fnmadd_ps(n, ps(1.42860677e-6f), r);
}

// exp(x) for x <= 0 (softmax): results down to the denormals as smelt's exp of an argument at
// most 0 computes them: n <= 0, so 2^n = 2^(n+64) (exact, from one exponent field) times 2^-64
// (rounded once).
static inline __m128 exp_neg(__m128 x) {
    x = _mm_max_ps(x, ps(-104.0f));
    __m128 t;
    __m128 r = reduce(x, &t);
    __m128 p = exp_poly(r);
    __m128i e = _mm_add_epi32(_mm_castps_si128(t), _mm_set1_epi32(127 + 64 - 0x4B400000));
    __m128 s = _mm_castsi128_ps(_mm_slli_epi32(e, 23));
    return _mm_mul_ps(_mm_mul_ps(p, s), ps(0x1p-64f));
}

// x * (1 + tanh(u)) / 2 = x / (1 + e^-2u), smelt's idiom for GELU's tail: u clamped to
// [-44.5, 44], e^-2u = 2^n e^r with h = r/-2 = u + n ln2/2 in one step (ln2/2 rounded to f32),
// e^-2h = 1 + h Q(h) with smelt's degree-5 fit, 1 + 2^n e^r one FMA.
static inline __m128 gelu_tail4(__m128 x, __m128 u) {
    u = _mm_max_ps(_mm_min_ps(u, ps(44.0f)), ps(-44.5f));
    const __m128 magic = ps(12582912.0f);
    __m128 t = _mm_fmadd_ps(u, ps(-2.0f * 1.44269504f), magic);
    __m128 n = _mm_sub_ps(t, magic);
    __m128 h = _mm_fmadd_ps(n, ps(0.3465735912322998f), u);
    __m128 p = ps(-0.2652626633644104f);
    p = _mm_fmadd_ps(p, h, ps(0.6704409122467041f));
    p = _mm_fmadd_ps(p, h, ps(-1.333414077758789f));
    p = _mm_fmadd_ps(p, h, ps(1.9999645948410034f));
    p = _mm_fmadd_ps(p, h, ps(-1.9999994039535522f));
    p = _mm_fmadd_ps(p, h, ps(1.0f));
    __m128i e = _mm_add_epi32(_mm_castps_si128(t), _mm_set1_epi32(127 - 0x4B400000));
    __m128 s = _mm_castsi128_ps(_mm_slli_epi32(e, 23));
    return _mm_div_ps(x, _mm_fmadd_ps(p, s, ps(1.0f)));
}

static inline __m128d hi_pd(__m128 v) {
    return _mm_cvtps_pd(_mm_castsi128_ps(_mm_shuffle_epi32(_mm_castps_si128(v), 0xee)));
}

// --- the workloads -------------------------------------------------------------------------

static float *A, *B, *C, *O, *X4, *W, *Bias;

// A prefetch of the cache line at `p` into every cache level (it never faults, so `p` may
// point past the end of an array), and one 2 KiB past `p`, issued once per 16 floats of a
// streamed input, as smelt's kernels do (codegen/src/cpu/prefetch.rs).
static inline void fetch(const float *p) { _mm_prefetch((const char *)p, _MM_HINT_T0); }
static inline void pf(const float *p) { fetch(p + 512); }

static void ew_chain(void) {
#pragma omp parallel
    {
#pragma omp for schedule(static)
        for (size_t r = 0; r < N; r++)
            for (size_t i = r * N; i < (r + 1) * N; i += 4) {
                if (!(i & 15)) pf(A + i), pf(B + i), pf(C + i);
                __m128 a = _mm_loadu_ps(A + i);
                __m128 v = _mm_fmadd_ps(a, _mm_loadu_ps(B + i), _mm_loadu_ps(C + i));
                v = _mm_max_ps(v, _mm_setzero_ps());
                _mm_stream_ps(O + i, _mm_fmadd_ps(v, ps(0.5f), a));
            }
        _mm_sfence();
    }
}

static void gelu_tanh(void) {
#pragma omp parallel
    {
#pragma omp for schedule(static)
        for (size_t r = 0; r < N; r++)
            for (size_t i = r * N; i < (r + 1) * N; i += 4) {
                if (!(i & 15)) pf(A + i);
                __m128 x = _mm_loadu_ps(A + i);
                __m128 x3 = _mm_mul_ps(_mm_mul_ps(x, x), x);
                __m128 u = _mm_mul_ps(_mm_fmadd_ps(x3, ps(0.044715f), x), ps(0.7978845608f));
                _mm_stream_ps(O + i, gelu_tail4(x, u));
            }
        _mm_sfence();
    }
}

// Four rows of four floats from `p` (rows `stride` floats apart), transposed: out[k] holds
// column k.
static inline void load4_transposed(const float *p, size_t stride, __m128 out[4]) {
    __m128 r0 = _mm_loadu_ps(p), r1 = _mm_loadu_ps(p + stride);
    __m128 r2 = _mm_loadu_ps(p + 2 * stride), r3 = _mm_loadu_ps(p + 3 * stride);
    _MM_TRANSPOSE4_PS(r0, r1, r2, r3);
    out[0] = r0, out[1] = r1, out[2] = r2, out[3] = r3;
}

// out[i][j] = a[j][i] + b[i][j] in 16 x 16 line blocks as smelt walks it, in 64 x 64 tiles
// (the C's best; smelt's are 64 x 128, which the C runs 8 % slower). A block reads 16 whole
// lines of a (4 x 4 blocks transposed in registers, kept on the stack), then writes each of
// its 16 output rows as one whole line, streamed.
static void transpose_add(void) {
#pragma omp parallel
    {
#pragma omp for schedule(static)
        for (size_t i0 = 0; i0 < N; i0 += 64)
            for (size_t j0 = 0; j0 < N; j0 += 64)
                for (size_t ib = i0; ib < i0 + 64; ib += 16)
                    for (size_t jb = j0; jb < j0 + 64; jb += 16) {
                        __m128 t[16][4];
                        for (size_t q = 0; q < 4; q++)
                            for (size_t k = 0; k < 4; k++) {
                                __m128 rr[4];
                                load4_transposed(A + (jb + 4 * q) * N + ib + 4 * k, N, rr);
                                for (int r = 0; r < 4; r++) t[4 * k + r][q] = rr[r];
                            }
                        for (size_t r = 0; r < 16; r++)
                            for (size_t q = 0; q < 4; q++) {
                                size_t o = (ib + r) * N + jb + 4 * q;
                                _mm_stream_ps(O + o, _mm_add_ps(t[r][q], _mm_loadu_ps(B + o)));
                            }
                    }
        _mm_sfence();
    }
}

// x [32,64,56,56] -> x.permute(0,2,3,1) * 2 + 1: per image a [64, 3136] -> [3136, 64] transpose.
#define PC 64
#define PHW 3136
static void permute_scale(void) {
#pragma omp parallel
    {
#pragma omp for schedule(static) collapse(2)
        for (size_t n = 0; n < 32; n++)
            for (size_t s0 = 0; s0 < PHW; s0 += 16) {
                const float *src = X4 + n * PC * PHW;
                float *dst = O + n * PC * PHW;
                for (size_t s = s0; s < s0 + 16; s += 4)
                    for (size_t c = 0; c < PC; c += 4) {
                        __m128 rr[4];
                        load4_transposed(src + c * PHW + s, PHW, rr);
                        for (int k = 0; k < 4; k++)
                            _mm_stream_ps(dst + (s + k) * PC + c,
                                          _mm_fmadd_ps(rr[k], ps(2.0f), ps(1.0f)));
                    }
            }
        _mm_sfence();
    }
}

static double sum8(__m128d *a) {
    __m128d s = _mm_add_pd(_mm_add_pd(_mm_add_pd(a[0], a[1]), _mm_add_pd(a[2], a[3])),
                           _mm_add_pd(_mm_add_pd(a[4], a[5]), _mm_add_pd(a[6], a[7])));
    return s[0] + s[1];
}

// f32 values of one row summed in eight f64x2 lanes; PF runs once per 16 elements.
#define ROW_SUM(len, PF, EXPR)                                                             \
    __m128d acc[8];                                                                        \
    for (int q = 0; q < 8; q++) acc[q] = _mm_setzero_pd();                                 \
    for (size_t i = 0; i < (len); i += 16)                                                 \
        for (int u = 0; u < 4; u++) {                                                      \
            if (u == 0) PF;                                                                \
            size_t k = i + 4 * u;                                                          \
            __m128 v = (EXPR);                                                             \
            acc[2 * u] = _mm_add_pd(acc[2 * u], _mm_cvtps_pd(v));                          \
            acc[2 * u + 1] = _mm_add_pd(acc[2 * u + 1], hi_pd(v));                         \
        }

// The same for values that are never negative (squares, exponentials), as smelt's row pass
// adds them: a trip's four vectors in f32 as a tree, (v0 + v1) + (v2 + v3), widened once.
#define ROW_SUM_NONNEG(len, PF, EXPR)                                                      \
    __m128d acc[8];                                                                        \
    for (int q = 0; q < 8; q++) acc[q] = _mm_setzero_pd();                                 \
    for (size_t i = 0; i < (len); i += 16) {                                               \
        __m128 t[4];                                                                       \
        for (int u = 0; u < 4; u++) {                                                      \
            if (u == 0) PF;                                                                \
            size_t k = i + 4 * u;                                                          \
            t[u] = (EXPR);                                                                 \
        }                                                                                  \
        __m128 v = _mm_add_ps(_mm_add_ps(t[0], t[1]), _mm_add_ps(t[2], t[3]));             \
        acc[0] = _mm_add_pd(acc[0], _mm_cvtps_pd(v));                                      \
        acc[1] = _mm_add_pd(acc[1], hi_pd(v));                                             \
    }

static void softmax_rows(void) {
#pragma omp parallel
    {
        // The exp values wait in a row of this thread's own (in cache) while the final pass
        // streams the output, as smelt's streaming variant does.
        float *scratch = alloc(N);
#pragma omp for schedule(static)
        for (size_t r = 0; r < N; r++) {
            const float *x = A + r * N;
            float *o = O + r * N;
            __m128 m4[4] = {ps(-INFINITY), ps(-INFINITY), ps(-INFINITY), ps(-INFINITY)};
            // The first pass streams the row; the later ones, from cache, fetch the next row.
            for (size_t i = 0; i < N; i += 16) {
                pf(x + i);
                for (int u = 0; u < 4; u++) m4[u] = _mm_max_ps(m4[u], _mm_loadu_ps(x + i + 4 * u));
            }
            __m128 m = _mm_max_ps(_mm_max_ps(m4[0], m4[1]), _mm_max_ps(m4[2], m4[3]));
            m = _mm_max_ps(m, _mm_shuffle_ps(m, m, 0x4e));
            m = _mm_max_ps(m, _mm_shuffle_ps(m, m, 0xb1));
            ROW_SUM_NONNEG(N, fetch(x + N + i), ({
                        __m128 e = exp_neg(_mm_sub_ps(_mm_loadu_ps(x + k), m));
                        _mm_store_ps(scratch + k, e);
                        e;
                    }));
            __m128 inv = ps((float)(1.0 / (float)sum8(acc)));
            for (size_t i = 0; i < N; i += 4) {
                if (!(i & 15)) fetch(x + N + i);
                _mm_stream_ps(o + i, _mm_mul_ps(_mm_load_ps(scratch + i), inv));
            }
        }
        _mm_sfence();
        free(scratch);
    }
}

static void sum_sq_diff(void) {
#pragma omp parallel for schedule(static)
    for (size_t r = 0; r < N; r++) {
        const float *a = A + r * N, *b = B + r * N;
        ROW_SUM_NONNEG(N, (pf(a + i), pf(b + i)), ({
                    __m128 d = _mm_sub_ps(_mm_loadu_ps(a + k), _mm_loadu_ps(b + k));
                    _mm_mul_ps(d, d);
                }));
        O[r] = (float)sum8(acc);
    }
}

#define LR 8192
#define LC 1024
static void layernorm(void) {
#pragma omp parallel
    {
#pragma omp for schedule(static)
        for (size_t r = 0; r < LR; r++) {
            const float *x = A + r * LC;
            float *o = O + r * LC;
            float mean;
            {
                ROW_SUM(LC, pf(x + i), _mm_loadu_ps(x + k));
                mean = (float)sum8(acc) / LC;
            }
            __m128 m = ps(mean);
            float var;
            {
                ROW_SUM_NONNEG(LC, fetch(x + LC + i), ({
                            __m128 d = _mm_sub_ps(_mm_loadu_ps(x + k), m);
                            _mm_mul_ps(d, d);
                        }));
                var = (float)sum8(acc) / LC;
            }
            __m128 sd = ps(sqrtf(var + 1e-5f));
            for (size_t i = 0; i < LC; i += 4) {
                if (!(i & 15)) fetch(x + LC + i);
                __m128 v = _mm_div_ps(_mm_sub_ps(_mm_loadu_ps(x + i), m), sd);
                _mm_stream_ps(o + i, _mm_fmadd_ps(v, _mm_loadu_ps(W + i), _mm_loadu_ps(Bias + i)));
            }
        }
        _mm_sfence();
    }
}

// --- checks: a scalar double reference on sampled rows -------------------------------------

static int close_to(double got, double want) {
    return fabs(got - want) <= 1e-4 + 1e-4 * fabs(want);
}

static int check(const char *name) {
    for (size_t r = 0; r < N; r += 509) {
        for (size_t j = 0; j < N; j += 37) {
            size_t i = r * N + j;
            double want, got = O[i];
            if (!strcmp(name, "ew_chain")) {
                double v = (double)A[i] * B[i] + C[i];
                want = (v > 0 ? v : 0) * 0.5 + A[i];
            } else if (!strcmp(name, "gelu_tanh")) {
                double x = A[i];
                want = 0.5 * x * (1 + tanh(0.7978845608 * (x + 0.044715 * x * x * x)));
            } else if (!strcmp(name, "transpose_add")) {
                want = (double)A[j * N + r] + B[i];
            } else if (!strcmp(name, "softmax_rows")) {
                double m = -INFINITY, s = 0;
                for (size_t k = 0; k < N; k++) m = fmax(m, A[r * N + k]);
                for (size_t k = 0; k < N; k++) s += exp(A[r * N + k] - m);
                want = exp(A[i] - m) / s;
            } else if (!strcmp(name, "sum_sq_diff")) {
                if (j) continue;
                double s = 0;
                for (size_t k = 0; k < N; k++) s += ((double)A[r * N + k] - B[r * N + k]) * ((double)A[r * N + k] - B[r * N + k]);
                got = O[r];
                want = s;
            } else if (!strcmp(name, "layernorm")) {
                if (r >= LR || j >= LC) continue;
                double m = 0, v = 0;
                for (size_t k = 0; k < LC; k++) m += A[r * LC + k];
                m /= LC;
                for (size_t k = 0; k < LC; k++) v += (A[r * LC + k] - m) * (A[r * LC + k] - m);
                v /= LC;
                got = O[r * LC + j];
                want = (A[r * LC + j] - m) / sqrt(v + 1e-5) * W[j] + Bias[j];
            } else { // permute_scale: out[n][s][c] = x[n][c][s]*2+1
                size_t n = r % 32, s = j % PHW, c = (r + j) % PC;
                got = O[(n * PHW + s) * PC + c];
                want = X4[(n * PC + c) * PHW + s] * 2.0 + 1.0;
            }
            if (!close_to(got, want)) {
                printf("%-14s FAILED at row %zu col %zu: %g vs reference %g\n", name, r, j, got, want);
                return 0;
            }
        }
    }
    return 1;
}

// Empties the caches of the workloads' data: a read of twice the last-level cache.
static unsigned long long *flush_words;
static size_t flush_len;

static void flush_init(void) {
    long llc = sysconf(_SC_LEVEL3_CACHE_SIZE);
    size_t bytes = 2 * (size_t)(llc > 0 ? llc : 64L << 20);
    if (bytes < (64u << 20)) bytes = 64u << 20;
    if (bytes > (1u << 30)) bytes = 1u << 30;
    flush_len = bytes / sizeof *flush_words;
    flush_words = malloc(bytes);
    if (!flush_words) {
        fprintf(stderr, "out of memory\n");
        exit(1);
    }
    for (size_t i = 0; i < flush_len; i++) flush_words[i] = i;
}

static volatile unsigned long long flush_sink;

static void flush(void) {
    unsigned long long s = 0;
#pragma omp parallel for reduction(+ : s)
    for (size_t i = 0; i < flush_len; i += 8) s += flush_words[i];
    flush_sink = s;
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv) {
    int reps = argc > 1 ? atoi(argv[1]) : 7;
    if (reps < 1) reps = 1;
    A = random_input(NN, 1);
    B = random_input(NN, 2);
    C = random_input(NN, 3);
    X4 = random_input((size_t)32 * PC * PHW, 4);
    W = random_input(LC, 5);
    Bias = random_input(LC, 6);
    O = alloc(NN);
    memset(O, 0, NN * sizeof(float));
    struct {
        const char *name;
        void (*run)(void);
        double mib;
    } w[] = {
        {"ew_chain", ew_chain, 4 * 64.0},
        {"gelu_tanh", gelu_tanh, 2 * 64.0},
        {"transpose_add", transpose_add, 3 * 64.0},
        {"permute_scale", permute_scale, 2 * 24.5},
        {"softmax_rows", softmax_rows, 2 * 64.0},
        {"sum_sq_diff", sum_sq_diff, 2 * 64.0},
        {"layernorm", layernorm, 2 * 32.0},
    };
    int warm = 0, names = 0;
    for (int a = 2; a < argc; a++) {
        if (!strcmp(argv[a], "--warm"))
            warm = 1;
        else if (argv[a][0] != '-')
            names = 1;
    }
    if (!warm) flush_init();
    printf("hand-fused C, 128-bit SIMD, %d threads, median of %d %s\n", omp_get_max_threads(), reps,
           warm ? "back to back (--warm)" : "with the caches emptied before each");
    printf("%-14s %9s %8s\n", "workload", "median ms", "GB/s");
    int ok = 1;
    for (size_t k = 0; k < sizeof w / sizeof w[0]; k++) {
        if (names) {
            int named = 0;
            for (int a = 2; a < argc; a++) named |= !strcmp(argv[a], w[k].name);
            if (!named) continue;
        }
        w[k].run();
        if (!check(w[k].name)) {
            ok = 0;
            continue;
        }
        double t[64];
        int n = reps < 64 ? reps : 64;
        for (int i = 0; i < n; i++) {
            if (!warm) flush();
            double s = now();
            w[k].run();
            t[i] = now() - s;
        }
        qsort(t, n, sizeof t[0], cmp);
        double med = t[n / 2];
        printf("%-14s %9.2f %8.1f\n", w[k].name, med * 1e3, w[k].mib * 1048576 / med / 1e9);
    }
    return ok ? 0 : 1;
}
