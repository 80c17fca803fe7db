// kernel 0: fused_mul_add_5 grid 1 block 256
// scalars: n0=2 n1=9 n2=4 dm2=1 ds2=2 dm1=3340530120 ds1=4 off0=0 st0_0=36 st0_1=1 st0_2=9 off1=0
extern "C" __global__ void __launch_bounds__(256) smelt_fused_mul_add_5(
    const float* __restrict__ a0,
    float* __restrict__ a1,
    const long long n0,
    const long long n1,
    const long long n2,
    const long long dm2,
    const long long ds2,
    const long long dm1,
    const long long ds1,
    const long long off0,
    const long long st0_0,
    const long long st0_1,
    const long long st0_2,
    const long long off1) {
  const long long total = n0 * n1 * n2;
  const long long stride = (long long)blockDim.x * gridDim.x;
  const long long first = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  for (long long i = first; i < total; i += stride) {
    unsigned int rest = (unsigned int)i;
    const unsigned int qi2 = sm_udiv(rest, (unsigned int)dm2, (unsigned int)ds2);
    const long long i2 = rest - qi2 * (unsigned int)n2; rest = qi2;
    const unsigned int qi1 = sm_udiv(rest, (unsigned int)dm1, (unsigned int)ds1);
    const long long i1 = rest - qi1 * (unsigned int)n1; rest = qi1;
    const long long i0 = rest;
    const float v0 = a0[off0 + i0 * st0_0 + i1 * st0_1 + i2 * st0_2];
    const float v1 = 2.0f;
    const float v2 = v0 * v1;
    const float v3 = 1.0f;
    const float v4 = v2 + v3;
    a1[off1 + i] = v4;
  }
}

