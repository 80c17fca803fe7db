// kernel 0: fused_add_relu_5 grid 16 block 256
// scalars: n0=64 n1=64 dm1=1 ds1=6 off0=0 off1=0 st1_1=1 off2=0
extern "C" __global__ void __launch_bounds__(256) smelt_fused_add_relu_5(
    const float* __restrict__ a0,
    const float* __restrict__ a1,
    float* __restrict__ a2,
    const long long n0,
    const long long n1,
    const long long dm1,
    const long long ds1,
    const long long off0,
    const long long off1,
    const long long st1_1,
    const long long off2) {
  const long long total = n0 * n1;
  const long long stride = (long long)blockDim.x * gridDim.x;
  const long long first = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  for (long long i = first; i < total; i += stride) {
    unsigned int rest = (unsigned int)i;
    const unsigned int qi1 = sm_udiv(rest, (unsigned int)dm1, (unsigned int)ds1);
    const long long i1 = rest - qi1 * (unsigned int)n1; rest = qi1;
    const long long i0 = rest;
    const float v0 = a0[off0 + i];
    const float v1 = a1[off1 + i1 * st1_1];
    const float v2 = v0 + v1;
    const float v3 = ((v2 > 0.0f || v2 != v2) ? v2 : 0.0f);
    a2[off2 + i] = v3;
  }
}

