// kernel 0: fused_random_uniform_lt_cast_div_mul_7 grid 256 block 256
// scalars: n0=256 n1=256 off0=0 off1=0 off2=1 off3=0 off4=0
extern "C" __global__ void __launch_bounds__(256) smelt_fused_random_uniform_lt_cast_div_mul_7(
    const float* __restrict__ a0,
    const long long* __restrict__ a1,
    float* __restrict__ a2,
    const long long n0,
    const long long n1,
    const long long off0,
    const long long off1,
    const long long off2,
    const long long off3,
    const long long off4) {
  const long long total = n0 * n1;
  const long long stride = (long long)blockDim.x * gridDim.x;
  const long long first = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  for (long long i = first; i < total; i += stride) {
    const float v0 = a0[off0 + i];
    const long long v1 = a1[off1];
    const long long v2 = a1[off2];
    const float v3 = sm_random_uniform_f32(v1, v2, off3 + i);
    const float v4 = 0.9f;
    const bool v5 = (v3 < v4);
    const float v6 = (float)v5;
    const float v7 = v6 / v4;
    const float v8 = v0 * v7;
    a2[off4 + i] = v8;
  }
}

