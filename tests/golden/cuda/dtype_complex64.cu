// kernel 0: fused_mul_add_div_exp_6 grid 1 block 256
// scalars: n0=3 n1=4 off0=0 st0_1=2 off1=1 st1_1=2 off2=0 st2_1=2 off3=1 st3_1=2 off4=0 st4_1=2 off5=1 st5_1=2 off6=0 st6_1=2 off7=1 st7_1=2
extern "C" __global__ void __launch_bounds__(256) smelt_fused_mul_add_div_exp_6(
    const float* __restrict__ a0,
    const float* __restrict__ a1,
    float* __restrict__ a2,
    float* __restrict__ a3,
    const long long n0,
    const long long n1,
    const long long off0,
    const long long st0_1,
    const long long off1,
    const long long st1_1,
    const long long off2,
    const long long st2_1,
    const long long off3,
    const long long st3_1,
    const long long off4,
    const long long st4_1,
    const long long off5,
    const long long st5_1,
    const long long off6,
    const long long st6_1,
    const long long off7,
    const long long st7_1) {
  const long long total = n0 * n1;
  const long long stride = (long long)blockDim.x * gridDim.x;
  const long long first = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  for (long long i = first; i < total; i += stride) {
    const float v0 = a0[off0 + i * st0_1];
    const float v1 = a0[off1 + i * st1_1];
    const float v2 = a1[off2 + i * st2_1];
    const float v3 = a1[off3 + i * st3_1];
    const float v4 = (-v3);
    const float v5 = v0 * v2;
    const float v6 = v1 * v4;
    const float v7 = v0 * v4;
    const float v8 = v1 * v2;
    const float v9 = v5 - v6;
    const float v10 = v7 + v8;
    const float v11 = 2.0f;
    const float v12 = 0.0f;
    const float v13 = v9 + v11;
    const float v14 = v10 + v12;
    const float v15 = fabsf(v0);
    const float v16 = fabsf(v1);
    const float v17 = 1.0f;
    const bool v18 = (v15 >= v16);
    const bool v19 = (v15 == v12);
    const bool v20 = (v16 == v12);
    const bool v21 = (v19 != 0 && v20 != 0);
    const float v22 = v1 / v0;
    const float v23 = v1 * v22;
    const float v24 = v0 + v23;
    const float v25 = v17 / v24;
    const float v26 = v14 * v22;
    const float v27 = v13 + v26;
    const float v28 = v27 * v25;
    const float v29 = v13 * v22;
    const float v30 = v14 - v29;
    const float v31 = v30 * v25;
    const float v32 = v0 / v1;
    const float v33 = v0 * v32;
    const float v34 = v1 + v33;
    const float v35 = v17 / v34;
    const float v36 = v13 * v32;
    const float v37 = v36 + v14;
    const float v38 = v37 * v35;
    const float v39 = v14 * v32;
    const float v40 = v39 - v13;
    const float v41 = v40 * v35;
    const float v42 = v13 / v15;
    const float v43 = v14 / v16;
    const float v44 = (v21 ? v42 : v28);
    const float v45 = (v21 ? v43 : v31);
    const float v46 = (v18 ? v44 : v38);
    const float v47 = (v18 ? v45 : v41);
    const float v48 = expf(v46);
    const float v49 = cosf(v47);
    const float v50 = sinf(v47);
    const float v51 = v48 * v49;
    const float v52 = v48 * v50;
    a2[off4 + i * st4_1] = v51;
    a2[off5 + i * st5_1] = v52;
    a3[off6 + i * st6_1] = v46;
    a3[off7 + i * st7_1] = v47;
  }
}

// kernel 1: fused_reduce_sum1_1 grid 3 block 32
// scalars: n0=3 n1=4 off0=0 st0_0=8 st0_1=2 off1=1 st1_0=8 st1_1=2 off2=0 st2_0=2 off3=1 st3_0=2
extern "C" __global__ void __launch_bounds__(256) smelt_fused_reduce_sum1_1(
    const float* __restrict__ a0,
    float* __restrict__ a1,
    const long long n0,
    const long long n1,
    const long long off0,
    const long long st0_0,
    const long long st0_1,
    const long long off1,
    const long long st1_0,
    const long long st1_1,
    const long long off2,
    const long long st2_0,
    const long long off3,
    const long long st3_0) {
  __shared__ float red2[33];
  __shared__ float red3[33];
  const long long rows = n0;
  const long long width = n1;
  for (long long row = blockIdx.x; row < rows; row += gridDim.x) {
    // pass over the row for %2 = reduce_sum %0
    float acc2 = 0.0f;
    for (long long j = threadIdx.x; j < width; j += blockDim.x) {
      const float v0 = a0[off0 + row * st0_0 + j * st0_1];
      acc2 = SmSum()(acc2, v0);
    }
    acc2 = sm_block_reduce(acc2, red2, SmSum(), (float)0.0f);
    const float v2 = acc2;
    // pass over the row for %3 = reduce_sum %1
    float acc3 = 0.0f;
    for (long long j = threadIdx.x; j < width; j += blockDim.x) {
      const float v1 = a0[off1 + row * st1_0 + j * st1_1];
      acc3 = SmSum()(acc3, v1);
    }
    acc3 = sm_block_reduce(acc3, red3, SmSum(), (float)0.0f);
    const float v3 = acc3;
    if (threadIdx.x == 0) a1[off2 + row * st2_0] = v2;
    if (threadIdx.x == 0) a1[off3 + row * st3_0] = v3;
  }
}

// kernel 2: fused_abs_add_3 grid 1 block 256
// scalars: n0=3 n1=4 off0=0 st0_1=2 off1=1 st1_1=2 off2=0 st2_1=2 off3=0
extern "C" __global__ void __launch_bounds__(256) smelt_fused_abs_add_3(
    const float* __restrict__ a0,
    const float* __restrict__ a1,
    float* __restrict__ a2,
    const long long n0,
    const long long n1,
    const long long off0,
    const long long st0_1,
    const long long off1,
    const long long st1_1,
    const long long off2,
    const long long st2_1,
    const long long off3) {
  const long long total = n0 * n1;
  const long long stride = (long long)blockDim.x * gridDim.x;
  const long long first = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  for (long long i = first; i < total; i += stride) {
    const float v0 = a0[off0 + i * st0_1];
    const float v1 = a0[off1 + i * st1_1];
    const float v2 = fabsf(v0);
    const float v3 = fabsf(v1);
    const float v4 = sm_maximum(v2, v3);
    const float v5 = sm_minimum(v2, v3);
    const float v6 = v5 / v4;
    const float v7 = v6 * v6;
    const float v8 = 1.0f;
    const float v9 = v8 + v7;
    const float v10 = sqrtf(v9);
    const float v11 = v4 * v10;
    const float v12 = 0.0f;
    const bool v13 = (v5 == v12);
    const float v14 = (v13 ? v4 : v11);
    const bool v15 = (v2 == v2 && v2 - v2 != v2 - v2);
    const bool v16 = (v3 == v3 && v3 - v3 != v3 - v3);
    const bool v17 = (v15 != 0 || v16 != 0);
    const float v18 = (__int_as_float(0x7f800000));
    const float v19 = (v17 ? v18 : v14);
    const float v20 = a1[off2 + i * st2_1];
    const float v21 = v19 + v20;
    a2[off3 + i] = v21;
  }
}

