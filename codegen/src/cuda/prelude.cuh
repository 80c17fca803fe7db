// smelt CUDA prelude: the scalar semantics of runtime/src/scalar_ops.rs in CUDA C.
// f16/bf16 values live in float registers, rounded to their dtype after every op. Buffers hold
// their bits; the conversions are self-contained (NVRTC 12 ships no cuda_fp16.h built in), and a
// double reaches f16/bf16 through float, as c10::Half and c10::BFloat16 convert.
typedef unsigned short sm_half;
typedef unsigned short sm_bfloat16;

#define SM_I64_MIN (-9223372036854775807LL - 1)

__device__ __forceinline__ float sm_half2float(sm_half h) {
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
  return f;
}
__device__ __forceinline__ sm_half sm_float2half(float f) {
  sm_half h;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
  return h;
}
__device__ __forceinline__ float sm_bfloat162float(sm_bfloat16 b) { return __uint_as_float(((unsigned int)b) << 16); }
// Round to nearest even; NaN stays a quiet NaN.
__device__ __forceinline__ sm_bfloat16 sm_float2bfloat16(float f) {
  const unsigned int u = __float_as_uint(f);
  if (f != f) return (sm_bfloat16)((u >> 16) | 0x40);
  return (sm_bfloat16)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}
__device__ __forceinline__ float sm_round_f16(float x) { return sm_half2float(sm_float2half(x)); }
__device__ __forceinline__ float sm_round_bf16(float x) { return sm_bfloat162float(sm_float2bfloat16(x)); }
__device__ __forceinline__ float sm_f16_of_double(double x) { return sm_round_f16((float)x); }
__device__ __forceinline__ float sm_bf16_of_double(double x) { return sm_round_bf16((float)x); }

// n / d for n < 2^31 and 1 <= d <= 2^31 by a multiply and a shift: (magic, shift) come from
// the host (`render::Divider`), so an index unravels without a 64-bit division loop.
__device__ __forceinline__ unsigned int sm_udiv(unsigned int n, unsigned int magic, unsigned int shift) {
  return (__umulhi(n, magic) + n) >> shift;
}

// float -> integer as smelt casts: truncation; NaN and out-of-range give INT64_MIN (x86).
__device__ __forceinline__ long long sm_f2i(double x) {
  return (x != x || x >= 9223372036854775808.0 || x < -9223372036854775808.0) ? SM_I64_MIN : (long long)x;
}

// Integer ops with i64 two's-complement wrapping; the caller wraps to the compute dtype.
__device__ __forceinline__ long long sm_i_add(long long a, long long b) { return (long long)((unsigned long long)a + (unsigned long long)b); }
__device__ __forceinline__ long long sm_i_sub(long long a, long long b) { return (long long)((unsigned long long)a - (unsigned long long)b); }
__device__ __forceinline__ long long sm_i_mul(long long a, long long b) { return (long long)((unsigned long long)a * (unsigned long long)b); }
__device__ __forceinline__ long long sm_i_neg(long long a) { return (long long)(0ULL - (unsigned long long)a); }
__device__ __forceinline__ long long sm_i_abs(long long a) { return a < 0 ? sm_i_neg(a) : a; }
__device__ __forceinline__ long long sm_i_sign(long long a) { return (long long)((a > 0) - (a < 0)); }
// Division by zero gives 0 (a lazy kernel cannot raise); INT64_MIN / -1 gives 0 (checked_div).
__device__ __forceinline__ long long sm_i_div_trunc(long long a, long long b) {
  return (b == 0 || (a == SM_I64_MIN && b == -1)) ? 0 : a / b;
}
__device__ __forceinline__ long long sm_i_rem(long long a, long long b) { return b == -1 ? 0 : a % b; }
__device__ __forceinline__ long long sm_i_div_floor(long long a, long long b) {
  if (b == 0) return 0;
  const long long q = b == -1 ? sm_i_neg(a) : a / b;
  return (sm_i_rem(a, b) != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}
__device__ __forceinline__ long long sm_i_remainder(long long a, long long b) {
  if (b == 0) return 0;
  const long long m = sm_i_rem(a, b);
  return (m != 0 && ((m < 0) != (b < 0))) ? m + b : m;
}
__device__ __forceinline__ long long sm_i_fmod(long long a, long long b) { return b == 0 ? 0 : sm_i_rem(a, b); }
__device__ __forceinline__ long long sm_i_pow(long long base, long long e) {
  if (e < 0) return base == 1 ? 1 : (base == -1 ? ((e & 1) ? -1 : 1) : 0);
  long long acc = 1;
  while (e > 0) {
    if (e & 1) acc = sm_i_mul(acc, base);
    base = sm_i_mul(base, base);
    e >>= 1;
  }
  return acc;
}

// Float helpers, overloaded for float and double.
__device__ __forceinline__ float sm_floor(float x) { return floorf(x); }
__device__ __forceinline__ double sm_floor(double x) { return floor(x); }
__device__ __forceinline__ float sm_fmod(float a, float b) { return fmodf(a, b); }
__device__ __forceinline__ double sm_fmod(double a, double b) { return fmod(a, b); }
__device__ __forceinline__ float sm_copysign(float a, float b) { return copysignf(a, b); }
__device__ __forceinline__ double sm_copysign(double a, double b) { return copysign(a, b); }
__device__ __forceinline__ float sm_nan(float) { return __int_as_float(0x7fc00000); }
__device__ __forceinline__ double sm_nan(double) { return __longlong_as_double(0x7ff8000000000000LL); }

// Python floor division on floats (torch's div_floor_floating).
template <class T> __device__ __forceinline__ T sm_div_floor(T a, T b) {
  if (b == (T)0) return a / b;
  const T m = sm_fmod(a, b);
  T div = (a - m) / b;
  if (m != (T)0 && ((b < (T)0) != (m < (T)0))) div -= (T)1;
  if (div != (T)0) {
    T f = sm_floor(div);
    if (div - f > (T)0.5) f += (T)1;
    return f;
  }
  return sm_copysign((T)0, a / b);
}
// Python %: the sign of the divisor.
template <class T> __device__ __forceinline__ T sm_remainder(T a, T b) {
  T m = sm_fmod(a, b);
  if (m != (T)0 && ((b < (T)0) != (m < (T)0))) m += b;
  return m;
}
// maximum/minimum propagate NaN.
template <class T> __device__ __forceinline__ T sm_maximum(T a, T b) {
  return (a != a || b != b) ? sm_nan(a) : (a > b ? a : b);
}
template <class T> __device__ __forceinline__ T sm_minimum(T a, T b) {
  return (a != a || b != b) ? sm_nan(a) : (a < b ? a : b);
}
template <class T> __device__ __forceinline__ T sm_sign(T x) {
  return x != x ? (T)0 : (T)((x > (T)0) - (x < (T)0));
}

// Reduction combiners (accumulators: float, double, long long, int for bool).
struct SmSum {
  template <class T> __device__ __forceinline__ T operator()(T a, T b) const { return a + b; }
  __device__ __forceinline__ long long operator()(long long a, long long b) const { return sm_i_add(a, b); }
};
struct SmProd {
  template <class T> __device__ __forceinline__ T operator()(T a, T b) const { return a * b; }
  __device__ __forceinline__ long long operator()(long long a, long long b) const { return sm_i_mul(a, b); }
};
// NaN wins (a NaN accumulator stays NaN).
struct SmMax {
  template <class T> __device__ __forceinline__ T operator()(T a, T b) const { return a != a ? a : (b != b ? b : (b > a ? b : a)); }
};
struct SmMin {
  template <class T> __device__ __forceinline__ T operator()(T a, T b) const { return a != a ? a : (b != b ? b : (b < a ? b : a)); }
};
struct SmAnd {
  __device__ __forceinline__ int operator()(int a, int b) const { return a && b; }
};
struct SmOr {
  __device__ __forceinline__ int operator()(int a, int b) const { return a || b; }
};

template <class T, class F> __device__ __forceinline__ T sm_warp_reduce(T v, F f) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = f(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

// Reduces one value per lane over the warp; every lane gets lane 0's result (the butterfly
// hands lanes their operands in different orders, and max/min of +0 and -0, or of NaNs with
// different payloads, depend on the order: the lanes of a row must agree).
template <class T, class F> __device__ __forceinline__ T sm_warp_allreduce(T v, F f) {
  return __shfl_sync(0xffffffffu, sm_warp_reduce(v, f), 0);
}

// Reduces one value per thread over the block (blockDim.x a multiple of 32, at most 1024);
// every thread gets the result. `sh` holds 33 elements; the order of combination is fixed.
template <class T, class F> __device__ __forceinline__ T sm_block_reduce(T v, T* sh, F f, T identity) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = (blockDim.x + 31) >> 5;
  v = sm_warp_reduce(v, f);
  if (lane == 0) sh[warp] = v;
  __syncthreads();
  if (warp == 0) {
    T w = lane < warps ? sh[lane] : identity;
    w = sm_warp_reduce(w, f);
    if (lane == 0) sh[32] = w;
  }
  __syncthreads();
  return sh[32];
}
