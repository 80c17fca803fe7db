// kernel 0: fused_sub_pow_reduce_sum1_5 grid 32 block 256
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
  const long long rows = n0;
  const long long width = n1;
  const int lane = threadIdx.x & 31;
  const long long warps = (long long)gridDim.x * (blockDim.x >> 5);
  for (long long row = (long long)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5); row < rows; row += warps) {
    const float v3 = 2.0f;
    // pass over the row for %5 = reduce_sum %4
    float acc5 = 0.0f;
    for (long long j = lane; j < width; j += 32) {
      const float v0 = a0[off0 + row * st0_0 + j];
      const float v1 = a1[off1 + row * st1_0 + j];
      const float v2 = v0 - v1;
      const float v4 = v2 * v2;
      acc5 = SmSum()(acc5, v4);
    }
    acc5 = sm_warp_allreduce(acc5, SmSum());
    const float v5 = acc5;
    if (lane == 0) a2[off2 + row] = v5;
  }
}

