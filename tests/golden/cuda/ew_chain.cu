// kernel 0: fused_mul_add_relu_mul_add_8 grid 64 block 256 float4
// scalars: n0=256 n1=256 off0=0 off1=0 off2=0 off3=0
extern "C" __global__ void __launch_bounds__(256) smelt_fused_mul_add_relu_mul_add_8(
    const float* __restrict__ a0,
    const float* __restrict__ a1,
    const float* __restrict__ a2,
    float* __restrict__ a3,
    const long long n0,
    const long long n1,
    const long long off0,
    const long long off1,
    const long long off2,
    const long long off3) {
  const long long total = n0 * n1;
  const long long stride = (long long)blockDim.x * gridDim.x;
  const long long first = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  long long start = 0;
  // float4 path: dense f32 accesses whose offsets keep 16-byte alignment.
  if (((off0 | off1 | off2 | off3) & 3) == 0) {
    const long long quads = total >> 2;
    for (long long q = first; q < quads; q += stride) {
      const float4 q0 = reinterpret_cast<const float4*>(a0 + off0)[q];
      const float4 q1 = reinterpret_cast<const float4*>(a1 + off1)[q];
      const float4 q3 = reinterpret_cast<const float4*>(a2 + off2)[q];
      float4 q9;
      {
        const float v0 = q0.x;
        const float v1 = q1.x;
        const float v2 = v0 * v1;
        const float v3 = q3.x;
        const float v4 = v2 + v3;
        const float v5 = ((v4 > 0.0f || v4 != v4) ? v4 : 0.0f);
        const float v6 = 0.5f;
        const float v7 = v5 * v6;
        const float v8 = v7 + v0;
        q9.x = v8;
      }
      {
        const float v0 = q0.y;
        const float v1 = q1.y;
        const float v2 = v0 * v1;
        const float v3 = q3.y;
        const float v4 = v2 + v3;
        const float v5 = ((v4 > 0.0f || v4 != v4) ? v4 : 0.0f);
        const float v6 = 0.5f;
        const float v7 = v5 * v6;
        const float v8 = v7 + v0;
        q9.y = v8;
      }
      {
        const float v0 = q0.z;
        const float v1 = q1.z;
        const float v2 = v0 * v1;
        const float v3 = q3.z;
        const float v4 = v2 + v3;
        const float v5 = ((v4 > 0.0f || v4 != v4) ? v4 : 0.0f);
        const float v6 = 0.5f;
        const float v7 = v5 * v6;
        const float v8 = v7 + v0;
        q9.z = v8;
      }
      {
        const float v0 = q0.w;
        const float v1 = q1.w;
        const float v2 = v0 * v1;
        const float v3 = q3.w;
        const float v4 = v2 + v3;
        const float v5 = ((v4 > 0.0f || v4 != v4) ? v4 : 0.0f);
        const float v6 = 0.5f;
        const float v7 = v5 * v6;
        const float v8 = v7 + v0;
        q9.w = v8;
      }
      reinterpret_cast<float4*>(a3 + off3)[q] = q9;
    }
    start = quads << 2;
  }
  for (long long i = start + first; i < total; i += stride) {
    const float v0 = a0[off0 + i];
    const float v1 = a1[off1 + i];
    const float v2 = v0 * v1;
    const float v3 = a2[off2 + i];
    const float v4 = v2 + v3;
    const float v5 = ((v4 > 0.0f || v4 != v4) ? v4 : 0.0f);
    const float v6 = 0.5f;
    const float v7 = v5 * v6;
    const float v8 = v7 + v0;
    a3[off3 + i] = v8;
  }
}

