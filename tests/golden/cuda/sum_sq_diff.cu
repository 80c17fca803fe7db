// kernel 0: fused_sub_pow_reduce_sum1_5 grid 256 block 256
// scalars: n0=256 n1=256 off0=0 st0_0=256 off1=0 st1_0=256 off2=0
extern "C" __global__ void __launch_bounds__(256) smelt_fused_sub_pow_reduce_sum1_5(
    const float* __restrict__ a0,
    const float* __restrict__ a1,
    float* __restrict__ a2,
    const long long n0,
    const long long n1,
    const long long off0,
    const long long st0_0,
    const long long off1,
    const long long st1_0,
    const long long off2) {
  __shared__ float red5[33];
  const long long rows = n0;
  const long long width = n1;
  for (long long row = blockIdx.x; row < rows; row += gridDim.x) {
    const float v3 = 2.0f;
    // pass over the row for %5 = reduce_sum %4
    float acc5 = 0.0f;
    for (long long j = threadIdx.x; j < width; j += blockDim.x) {
      const float v0 = a0[off0 + row * st0_0 + j];
      const float v1 = a1[off1 + row * st1_0 + j];
      const float v2 = v0 - v1;
      const float v4 = v2 * v2;
      acc5 = SmSum()(acc5, v4);
    }
    acc5 = sm_block_reduce(acc5, red5, SmSum(), (float)0.0f);
    const float v5 = acc5;
    if (threadIdx.x == 0) a2[off2 + row] = v5;
  }
}

