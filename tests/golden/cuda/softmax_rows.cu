// kernel 0: fused_reduce_max1_sub_exp_reduce_sum1_reciprocal_mul_6 grid 32 block 256
// scalars: n0=256 n1=256 off0=0 st0_0=256 off1=0 st1_0=256
extern "C" __global__ void __launch_bounds__(256) smelt_fused_reduce_max1_sub_exp_reduce_sum1_reciprocal_mul_6(
    const float* __restrict__ a0,
    float* __restrict__ a1,
    const long long n0,
    const long long n1,
    const long long off0,
    const long long st0_0,
    const long long off1,
    const long long st1_0) {
  const long long rows = n0;
  const long long width = n1;
  const int lane = threadIdx.x & 31;
  const long long warps = (long long)gridDim.x * (blockDim.x >> 5);
  for (long long row = (long long)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5); row < rows; row += warps) {
    // pass over the row for %1 = reduce_max %0
    float acc1 = (-__int_as_float(0x7f800000));
    for (long long j = lane; j < width; j += 32) {
      const float v0 = a0[off0 + row * st0_0 + j];
      acc1 = SmMax()(acc1, v0);
    }
    acc1 = sm_warp_allreduce(acc1, SmMax());
    const float v1 = acc1;
    // pass over the row for %4 = reduce_sum %3
    float acc4 = 0.0f;
    for (long long j = lane; j < width; j += 32) {
      const float v0 = a0[off0 + row * st0_0 + j];
      const float v2 = v0 - v1;
      const float v3 = expf(v2);
      acc4 = SmSum()(acc4, v3);
    }
    acc4 = sm_warp_allreduce(acc4, SmSum());
    const float v4 = acc4;
    const float v5 = (1.0f / v4);
    // final pass: element-level stores
    for (long long j = lane; j < width; j += 32) {
      const float v0 = a0[off0 + row * st0_0 + j];
      const float v2 = v0 - v1;
      const float v3 = expf(v2);
      const float v6 = v3 * v5;
      a1[off1 + row * st1_0 + j] = v6;
    }
  }
}

