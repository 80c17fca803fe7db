// kernel 0: fused_reduce_sum1_div_sub_mul_reduce_sum1_div_add_sqrt_div_mul_add_19 grid 64 block 256
// scalars: n0=512 n1=64 off0=0 st0_0=64 off1=0 off2=0 off3=0 st3_0=64
extern "C" __global__ void __launch_bounds__(256) smelt_fused_reduce_sum1_div_sub_mul_reduce_sum1_div_add_sqrt_div_mul_add_19(
    const float* __restrict__ a0,
    const float* __restrict__ a1,
    const float* __restrict__ a2,
    float* __restrict__ a3,
    const long long n0,
    const long long n1,
    const long long off0,
    const long long st0_0,
    const long long off1,
    const long long off2,
    const long long off3,
    const long long st3_0) {
  const long long rows = n0;
  const long long width = n1;
  const int lane = threadIdx.x & 31;
  const long long warps = (long long)gridDim.x * (blockDim.x >> 5);
  for (long long row = (long long)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5); row < rows; row += warps) {
    // pass over the row for %1 = reduce_sum %0
    float acc1 = 0.0f;
    for (long long j = lane; j < width; j += 32) {
      const float v0 = a0[off0 + row * st0_0 + j];
      acc1 = SmSum()(acc1, v0);
    }
    acc1 = sm_warp_allreduce(acc1, SmSum());
    const float v1 = acc1;
    const float v2 = 64.0f;
    const float v3 = v1 / v2;
    // pass over the row for %6 = reduce_sum %5
    float acc6 = 0.0f;
    for (long long j = lane; j < width; j += 32) {
      const float v0 = a0[off0 + row * st0_0 + j];
      const float v4 = v0 - v3;
      const float v5 = v4 * v4;
      acc6 = SmSum()(acc6, v5);
    }
    acc6 = sm_warp_allreduce(acc6, SmSum());
    const float v6 = acc6;
    const float v7 = v6 / v2;
    const float v8 = 1e-5f;
    const float v9 = v7 + v8;
    const float v10 = sqrtf(v9);
    // final pass: element-level stores
    for (long long j = lane; j < width; j += 32) {
      const float v0 = a0[off0 + row * st0_0 + j];
      const float v4 = v0 - v3;
      const float v11 = v4 / v10;
      const float v12 = a1[off1 + j];
      const float v13 = v11 * v12;
      const float v14 = a2[off2 + j];
      const float v15 = v13 + v14;
      a3[off3 + row * st3_0 + j] = v15;
    }
  }
}

