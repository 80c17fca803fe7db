// Counter-based random numbers: smelt_ir::random (ir/src/random.rs), bit for bit. Philox4x32-10
// of the counter offset + position under the key seed; the logarithm and cosine come from the
// same series as there, with basic operations only (kernels compile with --fmad=false, so none
// is contracted). Plain C++ apart from the qualifiers: a host test compiles this file with the
// host compiler and compares its draws with Rust's.
union sm_f64_bits { double d; unsigned long long u; };
__device__ __forceinline__ unsigned long long sm_bits_of(double x) { sm_f64_bits b; b.d = x; return b.u; }
__device__ __forceinline__ double sm_double_of(unsigned long long u) { sm_f64_bits b; b.u = u; return b.d; }
__device__ __forceinline__ unsigned int sm_mulhi32(unsigned int a, unsigned int b) {
  return (unsigned int)(((unsigned long long)a * b) >> 32);
}

struct sm_words { unsigned int w[4]; };

__device__ __forceinline__ sm_words sm_philox(long long seed, long long offset, long long position) {
  const unsigned long long counter = (unsigned long long)offset + (unsigned long long)position;
  const unsigned long long key = (unsigned long long)seed;
  unsigned int c0 = (unsigned int)counter, c1 = (unsigned int)(counter >> 32), c2 = 0, c3 = 0;
  unsigned int k0 = (unsigned int)key, k1 = (unsigned int)(key >> 32);
  for (int round = 0; round < 10; ++round) {
    const unsigned int hi0 = sm_mulhi32(0xD2511F53u, c0), lo0 = 0xD2511F53u * c0;
    const unsigned int hi1 = sm_mulhi32(0xCD9E8D57u, c2), lo1 = 0xCD9E8D57u * c2;
    c0 = hi1 ^ c1 ^ k0;
    c1 = lo1;
    c2 = hi0 ^ c3 ^ k1;
    c3 = lo0;
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  sm_words out = {{c0, c1, c2, c3}};
  return out;
}

// 53 random bits from two words, below 2^53.
__device__ __forceinline__ unsigned long long sm_bits53(unsigned int hi, unsigned int lo) {
  return ((unsigned long long)hi << 21) | (unsigned long long)(lo >> 11);
}

// ln x for a normal positive x: atanh's series on a mantissa in [sqrt(1/2), sqrt(2)).
__device__ __forceinline__ double sm_det_ln(double x) {
  const unsigned long long bits = sm_bits_of(x);
  long long e = (long long)((bits >> 52) & 0x7ff) - 1023;
  double m = sm_double_of((bits & ((1ULL << 52) - 1)) | (1023ULL << 52));
  if (m > 0x1.6a09e667f3bcdp+0) {
    m *= 0.5;
    e += 1;
  }
  const double f = m - 1.0;
  const double s = f / (2.0 + f);
  const double z = s * s;
  double r = 2.0 / 23.0;
  r = r * z + 2.0 / 21.0;
  r = r * z + 2.0 / 19.0;
  r = r * z + 2.0 / 17.0;
  r = r * z + 2.0 / 15.0;
  r = r * z + 2.0 / 13.0;
  r = r * z + 2.0 / 11.0;
  r = r * z + 2.0 / 9.0;
  r = r * z + 2.0 / 7.0;
  r = r * z + 2.0 / 5.0;
  r = r * z + 2.0 / 3.0;
  const double log_m = 2.0 * s + s * (z * r);
  const double ed = (double)e;
  return ed * 0x1.62e42fee00000p-1 + (ed * 0x1.a39ef35793c76p-33 + log_m);
}

__device__ __forceinline__ double sm_cos_series(double z) {
  double r = -1.0 / 6402373705728000.0;
  r = r * z + 1.0 / 20922789888000.0;
  r = r * z + -1.0 / 87178291200.0;
  r = r * z + 1.0 / 479001600.0;
  r = r * z + -1.0 / 3628800.0;
  r = r * z + 1.0 / 40320.0;
  r = r * z + -1.0 / 720.0;
  r = r * z + 1.0 / 24.0;
  r = r * z + -1.0 / 2.0;
  return r * z;
}

__device__ __forceinline__ double sm_sin_series(double z) {
  double r = -1.0 / 121645100408832000.0;
  r = r * z + 1.0 / 355687428096000.0;
  r = r * z + -1.0 / 1307674368000.0;
  r = r * z + 1.0 / 6227020800.0;
  r = r * z + -1.0 / 39916800.0;
  r = r * z + 1.0 / 362880.0;
  r = r * z + -1.0 / 5040.0;
  r = r * z + 1.0 / 120.0;
  r = r * z + -1.0 / 6.0;
  return r * z;
}

// cos(2 pi t) for t in [0, 1): exact quadrant, then a series on [0, pi/4].
__device__ __forceinline__ double sm_det_cos_2pi(double t) {
  const double a = t * 4.0;
  const double k = floor(a);
  const double f = a - k;
  const bool swap = f > 0.5;
  const double g = swap ? 1.0 - f : f;
  const double phi = g * 0x1.921fb54442d18p+0;
  const double z = phi * phi;
  const double c = 1.0 + sm_cos_series(z);
  const double s = phi + phi * sm_sin_series(z);
  const double cos_f = swap ? s : c;
  const double sin_f = swap ? c : s;
  const long long q = (long long)k;
  return q == 0 ? cos_f : q == 1 ? -sin_f : q == 2 ? -cos_f : sin_f;
}

__device__ __forceinline__ double sm_normal(long long seed, long long offset, long long position) {
  const sm_words r = sm_philox(seed, offset, position);
  const double u1 = (double)(sm_bits53(r.w[0], r.w[1]) + 1) * 0x1p-53;
  const double u2 = (double)sm_bits53(r.w[2], r.w[3]) * 0x1p-53;
  return sqrt(-2.0 * sm_det_ln(u1)) * sm_det_cos_2pi(u2);
}

__device__ __forceinline__ double sm_exponential(long long seed, long long offset, long long position) {
  const sm_words r = sm_philox(seed, offset, position);
  const double u = (double)(sm_bits53(r.w[0], r.w[1]) + 1) * 0x1p-53;
  return 0.0 - sm_det_ln(u);
}

// The draws, one per distribution and value dtype; f16 and bf16 values in float registers,
// already rounded to their dtype.
__device__ __forceinline__ double sm_random_uniform_f64(long long seed, long long offset, long long position) {
  const sm_words r = sm_philox(seed, offset, position);
  return (double)sm_bits53(r.w[0], r.w[1]) * 0x1p-53;
}
__device__ __forceinline__ float sm_random_uniform_f32(long long seed, long long offset, long long position) {
  return (float)(sm_philox(seed, offset, position).w[0] >> 8) * 0x1p-24f;
}
__device__ __forceinline__ float sm_random_uniform_f16(long long seed, long long offset, long long position) {
  return (float)(sm_philox(seed, offset, position).w[0] >> 21) * 0x1p-11f;
}
__device__ __forceinline__ float sm_random_uniform_bf16(long long seed, long long offset, long long position) {
  return (float)(sm_philox(seed, offset, position).w[0] >> 24) * 0x1p-8f;
}
__device__ __forceinline__ double sm_random_normal_f64(long long seed, long long offset, long long position) {
  return sm_normal(seed, offset, position);
}
__device__ __forceinline__ float sm_random_normal_f32(long long seed, long long offset, long long position) {
  return (float)sm_normal(seed, offset, position);
}
__device__ __forceinline__ float sm_random_normal_f16(long long seed, long long offset, long long position) {
  return sm_round_f16((float)sm_normal(seed, offset, position));
}
__device__ __forceinline__ float sm_random_normal_bf16(long long seed, long long offset, long long position) {
  return sm_round_bf16((float)sm_normal(seed, offset, position));
}
__device__ __forceinline__ double sm_random_exponential_f64(long long seed, long long offset, long long position) {
  return sm_exponential(seed, offset, position);
}
__device__ __forceinline__ float sm_random_exponential_f32(long long seed, long long offset, long long position) {
  return (float)sm_exponential(seed, offset, position);
}
__device__ __forceinline__ float sm_random_exponential_f16(long long seed, long long offset, long long position) {
  return sm_round_f16((float)sm_exponential(seed, offset, position));
}
__device__ __forceinline__ float sm_random_exponential_bf16(long long seed, long long offset, long long position) {
  return sm_round_bf16((float)sm_exponential(seed, offset, position));
}
__device__ __forceinline__ long long sm_random_bits(long long seed, long long offset, long long position) {
  const sm_words r = sm_philox(seed, offset, position);
  return (long long)(((unsigned long long)r.w[0] << 31) | (unsigned long long)(r.w[1] >> 1));
}
