// kernel 0: fused_random_uniform_1 grid 256 block 256
// scalars: n0=256 n1=256 off0=0 off1=1 off2=0 off3=0
extern "C" __global__ void __launch_bounds__(256) smelt_fused_random_uniform_1(
    const long long* __restrict__ a0,
    float* __restrict__ a1,
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
    const long long v0 = a0[off0];
    const long long v1 = a0[off1];
    const float v2 = sm_random_uniform_f32(v0, v1, off2 + i);
    a1[off3 + i] = v2;
  }
}

