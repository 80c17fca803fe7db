// kernel 0: fused_mul_add_3 grid 1 block 256
// scalars: n0=3 n1=4 off0=0 off1=0 off2=0
extern "C" __global__ void __launch_bounds__(256) smelt_fused_mul_add_3(
    const int* __restrict__ a0,
    const int* __restrict__ a1,
    int* __restrict__ a2,
    const long long n0,
    const long long n1,
    const long long off0,
    const long long off1,
    const long long off2) {
  const long long total = n0 * n1;
  const long long stride = (long long)blockDim.x * gridDim.x;
  const long long first = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  for (long long i = first; i < total; i += stride) {
    const int v0 = a0[off0 + i];
    const int v1 = a1[off1 + i];
    const int v2 = (int)sm_i_mul(v0, v1);
    const int v3 = (int)sm_i_add(v2, v0);
    a2[off2 + i] = v3;
  }
}

// kernel 1: fused_reduce_sum1_1 grid 3 block 32
// scalars: n0=3 n1=4 off0=0 st0_0=4 off1=0
extern "C" __global__ void __launch_bounds__(256) smelt_fused_reduce_sum1_1(
    const int* __restrict__ a0,
    long long* __restrict__ a1,
    const long long n0,
    const long long n1,
    const long long off0,
    const long long st0_0,
    const long long off1) {
  __shared__ long long red2[33];
  const long long rows = n0;
  const long long width = n1;
  for (long long row = blockIdx.x; row < rows; row += gridDim.x) {
    // pass over the row for %2 = reduce_sum %1
    long long acc2 = 0LL;
    for (long long j = threadIdx.x; j < width; j += blockDim.x) {
      const int v0 = a0[off0 + row * st0_0 + j];
      const long long v1 = (long long)v0;
      acc2 = SmSum()(acc2, (long long)v1);
    }
    acc2 = sm_block_reduce(acc2, red2, SmSum(), (long long)0LL);
    const long long v2 = (long long)acc2;
    if (threadIdx.x == 0) a1[off1 + row] = v2;
  }
}

// kernel 2: fused_maximum_cast_3 grid 1 block 256
// scalars: n0=3 n1=4 off0=0 off1=0 off2=0 off3=0
extern "C" __global__ void __launch_bounds__(256) smelt_fused_maximum_cast_3(
    const int* __restrict__ a0,
    const int* __restrict__ a1,
    float* __restrict__ a2,
    int* __restrict__ a3,
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
    const int v0 = a0[off0 + i];
    const int v1 = a1[off1 + i];
    const int v2 = (v0 > v1 ? v0 : v1);
    const float v3 = (float)v2;
    a2[off2 + i] = v3;
    a3[off3 + i] = v2;
  }
}

