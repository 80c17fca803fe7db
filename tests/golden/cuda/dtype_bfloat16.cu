// kernel 0: fused_mul_add_3 grid 1 block 256
// scalars: n0=3 n1=4 off0=0 off1=0 off2=0
extern "C" __global__ void __launch_bounds__(256) smelt_fused_mul_add_3(
    const sm_bfloat16* __restrict__ a0,
    const sm_bfloat16* __restrict__ a1,
    sm_bfloat16* __restrict__ a2,
    const long long n0,
    const long long n1,
    const long long off0,
    const long long off1,
    const long long off2) {
  const long long total = n0 * n1;
  const long long stride = (long long)blockDim.x * gridDim.x;
  const long long first = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  for (long long i = first; i < total; i += stride) {
    const float v0 = sm_bfloat162float(a0[off0 + i]);
    const float v1 = sm_bfloat162float(a1[off1 + i]);
    const float v2 = sm_round_bf16(v0 * v1);
    const float v3 = sm_round_bf16(v2 + v0);
    a2[off2 + i] = sm_float2bfloat16(v3);
  }
}

// kernel 1: fused_reduce_sum1_1 grid 3 block 32
// scalars: n0=3 n1=4 off0=0 st0_0=4 off1=0
extern "C" __global__ void __launch_bounds__(256) smelt_fused_reduce_sum1_1(
    const sm_bfloat16* __restrict__ a0,
    sm_bfloat16* __restrict__ a1,
    const long long n0,
    const long long n1,
    const long long off0,
    const long long st0_0,
    const long long off1) {
  __shared__ float red1[33];
  const long long rows = n0;
  const long long width = n1;
  for (long long row = blockIdx.x; row < rows; row += gridDim.x) {
    // pass over the row for %1 = reduce_sum %0
    float acc1 = 0.0f;
    for (long long j = threadIdx.x; j < width; j += blockDim.x) {
      const float v0 = sm_bfloat162float(a0[off0 + row * st0_0 + j]);
      acc1 = SmSum()(acc1, v0);
    }
    acc1 = sm_block_reduce(acc1, red1, SmSum(), (float)0.0f);
    const float v1 = sm_round_bf16(acc1);
    if (threadIdx.x == 0) a1[off1 + row] = sm_float2bfloat16(v1);
  }
}

// kernel 2: fused_maximum_cast_3 grid 1 block 256
// scalars: n0=3 n1=4 off0=0 off1=0 off2=0 off3=0
extern "C" __global__ void __launch_bounds__(256) smelt_fused_maximum_cast_3(
    const sm_bfloat16* __restrict__ a0,
    const sm_bfloat16* __restrict__ a1,
    float* __restrict__ a2,
    sm_bfloat16* __restrict__ a3,
    const long long n0,
    const long long n1,
    const long long off0,
    const long long off1,
    const long long off2,
    const long long off3) {
  const long long total = n0 * n1;
  const long long stride = (long long)blockDim.x * gridDim.x;
  const long long first = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  for (long long i = first; i < total; i += stride) {
    const float v0 = sm_bfloat162float(a0[off0 + i]);
    const float v1 = sm_bfloat162float(a1[off1 + i]);
    const float v2 = sm_round_bf16(sm_maximum(v0, v1));
    const float v3 = (float)v2;
    a2[off2 + i] = v3;
    a3[off3 + i] = sm_float2bfloat16(v2);
  }
}

// kernel 3: fused_cast_reduce_max1_sub_exp_reduce_sum1_reciprocal_mul_cast_8 grid 3 block 32
// scalars: n0=3 n1=4 off0=0 st0_0=4 off1=0 st1_0=4
extern "C" __global__ void __launch_bounds__(256) smelt_fused_cast_reduce_max1_sub_exp_reduce_sum1_reciprocal_mul_cast_8(
    const sm_bfloat16* __restrict__ a0,
    sm_bfloat16* __restrict__ a1,
    const long long n0,
    const long long n1,
    const long long off0,
    const long long st0_0,
    const long long off1,
    const long long st1_0) {
  __shared__ float red2[33];
  __shared__ float red5[33];
  const long long rows = n0;
  const long long width = n1;
  for (long long row = blockIdx.x; row < rows; row += gridDim.x) {
    // pass over the row for %2 = reduce_max %1
    float acc2 = (-__int_as_float(0x7f800000));
    for (long long j = threadIdx.x; j < width; j += blockDim.x) {
      const float v0 = sm_bfloat162float(a0[off0 + row * st0_0 + j]);
      const float v1 = (float)v0;
      acc2 = SmMax()(acc2, v1);
    }
    acc2 = sm_block_reduce(acc2, red2, SmMax(), (float)(-__int_as_float(0x7f800000)));
    const float v2 = acc2;
    // pass over the row for %5 = reduce_sum %4
    float acc5 = 0.0f;
    for (long long j = threadIdx.x; j < width; j += blockDim.x) {
      const float v0 = sm_bfloat162float(a0[off0 + row * st0_0 + j]);
      const float v1 = (float)v0;
      const float v3 = v1 - v2;
      const float v4 = expf(v3);
      acc5 = SmSum()(acc5, v4);
    }
    acc5 = sm_block_reduce(acc5, red5, SmSum(), (float)0.0f);
    const float v5 = acc5;
    const float v6 = (1.0f / v5);
    // final pass: element-level stores
    for (long long j = threadIdx.x; j < width; j += blockDim.x) {
      const float v0 = sm_bfloat162float(a0[off0 + row * st0_0 + j]);
      const float v1 = (float)v0;
      const float v3 = v1 - v2;
      const float v4 = expf(v3);
      const float v7 = v4 * v6;
      const float v8 = sm_round_bf16(v7);
      a1[off1 + row * st1_0 + j] = sm_float2bfloat16(v8);
    }
  }
}

