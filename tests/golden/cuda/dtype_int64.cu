// kernel 0: fused_mul_add_3 grid 1 block 256
// scalars: n0=3 n1=4 off0=0 off1=0 off2=0
extern "C" __global__ void __launch_bounds__(256) smelt_fused_mul_add_3(
    const long long* __restrict__ a0,
    const long long* __restrict__ a1,
    long long* __restrict__ a2,
    const long long n0,
    const long long n1,
    const long long off0,
    const long long off1,
    const long long off2) {
  const long long total = n0 * n1;
  const long long stride = (long long)blockDim.x * gridDim.x;
  const long long first = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  for (long long i = first; i < total; i += stride) {
    const long long v0 = a0[off0 + i];
    const long long v1 = a1[off1 + i];
    const long long v2 = (long long)sm_i_mul(v0, v1);
    const long long v3 = (long long)sm_i_add(v2, v0);
    a2[off2 + i] = v3;
  }
}

// kernel 1: fused_reduce_sum1_1 grid 3 block 32
// scalars: n0=3 n1=4 off0=0 st0_0=4 off1=0
extern "C" __global__ void __launch_bounds__(256) smelt_fused_reduce_sum1_1(
    const long long* __restrict__ a0,
    long long* __restrict__ a1,
    const long long n0,
    const long long n1,
    const long long off0,
    const long long st0_0,
    const long long off1) {
  __shared__ long long red1[33];
  const long long rows = n0;
  const long long width = n1;
  for (long long row = blockIdx.x; row < rows; row += gridDim.x) {
    // pass over the row for %1 = reduce_sum %0
    long long acc1 = 0LL;
    for (long long j = threadIdx.x; j < width; j += blockDim.x) {
      const long long v0 = a0[off0 + row * st0_0 + j];
      acc1 = SmSum()(acc1, (long long)v0);
    }
    acc1 = sm_block_reduce(acc1, red1, SmSum(), (long long)0LL);
    const long long v1 = (long long)acc1;
    if (threadIdx.x == 0) a1[off1 + row] = v1;
  }
}

// kernel 2: fused_maximum_cast_3 grid 1 block 256
// scalars: n0=3 n1=4 off0=0 off1=0 off2=0 off3=0
extern "C" __global__ void __launch_bounds__(256) smelt_fused_maximum_cast_3(
    const long long* __restrict__ a0,
    const long long* __restrict__ a1,
    float* __restrict__ a2,
    long long* __restrict__ a3,
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
    const long long v0 = a0[off0 + i];
    const long long v1 = a1[off1 + i];
    const long long v2 = (v0 > v1 ? v0 : v1);
    const float v3 = (float)v2;
    a2[off2 + i] = v3;
    a3[off3 + i] = v2;
  }
}

