// kernel 0: fused_mul_add_div_exp_6 grid 1 block 256
// scalars: n0=3 n1=4 off0=0 st0_1=2 off1=1 st1_1=2 off2=0 st2_1=2 off3=1 st3_1=2 off4=0 st4_1=2 off5=1 st5_1=2 off6=0 st6_1=2 off7=1 st7_1=2
extern "C" __global__ void __launch_bounds__(256) smelt_fused_mul_add_div_exp_6(
    const double* __restrict__ a0,
    const double* __restrict__ a1,
    double* __restrict__ a2,
    double* __restrict__ a3,
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
    const double v0 = a0[off0 + i * st0_1];
    const double v1 = a0[off1 + i * st1_1];
    const double v2 = a1[off2 + i * st2_1];
    const double v3 = a1[off3 + i * st3_1];
    const double v4 = (-v3);
    const double v5 = v0 * v2;
    const double v6 = v1 * v4;
    const double v7 = v0 * v4;
    const double v8 = v1 * v2;
    const double v9 = v5 - v6;
    const double v10 = v7 + v8;
    const double v11 = 2.0;
    const double v12 = 0.0;
    const double v13 = v9 + v11;
    const double v14 = v10 + v12;
    const double v15 = fabs(v0);
    const double v16 = fabs(v1);
    const double v17 = 1.0;
    const bool v18 = (v15 >= v16);
    const bool v19 = (v15 == v12);
    const bool v20 = (v16 == v12);
    const bool v21 = (v19 != 0 && v20 != 0);
    const double v22 = v1 / v0;
    const double v23 = v1 * v22;
    const double v24 = v0 + v23;
    const double v25 = v17 / v24;
    const double v26 = v14 * v22;
    const double v27 = v13 + v26;
    const double v28 = v27 * v25;
    const double v29 = v13 * v22;
    const double v30 = v14 - v29;
    const double v31 = v30 * v25;
    const double v32 = v0 / v1;
    const double v33 = v0 * v32;
    const double v34 = v1 + v33;
    const double v35 = v17 / v34;
    const double v36 = v13 * v32;
    const double v37 = v36 + v14;
    const double v38 = v37 * v35;
    const double v39 = v14 * v32;
    const double v40 = v39 - v13;
    const double v41 = v40 * v35;
    const double v42 = v13 / v15;
    const double v43 = v14 / v16;
    const double v44 = (v21 ? v42 : v28);
    const double v45 = (v21 ? v43 : v31);
    const double v46 = (v18 ? v44 : v38);
    const double v47 = (v18 ? v45 : v41);
    const double v48 = exp(v46);
    const double v49 = cos(v47);
    const double v50 = sin(v47);
    const double v51 = v48 * v49;
    const double v52 = v48 * v50;
    a2[off4 + i * st4_1] = v51;
    a2[off5 + i * st5_1] = v52;
    a3[off6 + i * st6_1] = v46;
    a3[off7 + i * st7_1] = v47;
  }
}

// kernel 1: fused_reduce_sum1_1 grid 3 block 32
// scalars: n0=3 n1=4 off0=0 st0_0=8 st0_1=2 off1=1 st1_0=8 st1_1=2 off2=0 st2_0=2 off3=1 st3_0=2
extern "C" __global__ void __launch_bounds__(256) smelt_fused_reduce_sum1_1(
    const double* __restrict__ a0,
    double* __restrict__ a1,
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
  __shared__ double red2[33];
  __shared__ double red3[33];
  const long long rows = n0;
  const long long width = n1;
  for (long long row = blockIdx.x; row < rows; row += gridDim.x) {
    // pass over the row for %2 = reduce_sum %0
    double acc2 = 0.0;
    for (long long j = threadIdx.x; j < width; j += blockDim.x) {
      const double v0 = a0[off0 + row * st0_0 + j * st0_1];
      acc2 = SmSum()(acc2, v0);
    }
    acc2 = sm_block_reduce(acc2, red2, SmSum(), (double)0.0);
    const double v2 = acc2;
    // pass over the row for %3 = reduce_sum %1
    double acc3 = 0.0;
    for (long long j = threadIdx.x; j < width; j += blockDim.x) {
      const double v1 = a0[off1 + row * st1_0 + j * st1_1];
      acc3 = SmSum()(acc3, v1);
    }
    acc3 = sm_block_reduce(acc3, red3, SmSum(), (double)0.0);
    const double v3 = acc3;
    if (threadIdx.x == 0) a1[off2 + row * st2_0] = v2;
    if (threadIdx.x == 0) a1[off3 + row * st3_0] = v3;
  }
}

// kernel 2: fused_abs_add_3 grid 1 block 256
// scalars: n0=3 n1=4 off0=0 st0_1=2 off1=1 st1_1=2 off2=0 st2_1=2 off3=0
extern "C" __global__ void __launch_bounds__(256) smelt_fused_abs_add_3(
    const double* __restrict__ a0,
    const double* __restrict__ a1,
    double* __restrict__ a2,
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
    const double v0 = a0[off0 + i * st0_1];
    const double v1 = a0[off1 + i * st1_1];
    const double v2 = fabs(v0);
    const double v3 = fabs(v1);
    const double v4 = sm_maximum(v2, v3);
    const double v5 = sm_minimum(v2, v3);
    const double v6 = v5 / v4;
    const double v7 = v6 * v6;
    const double v8 = 1.0;
    const double v9 = v8 + v7;
    const double v10 = sqrt(v9);
    const double v11 = v4 * v10;
    const double v12 = 0.0;
    const bool v13 = (v5 == v12);
    const double v14 = (v13 ? v4 : v11);
    const bool v15 = (v2 == v2 && v2 - v2 != v2 - v2);
    const bool v16 = (v3 == v3 && v3 - v3 != v3 - v3);
    const bool v17 = (v15 != 0 || v16 != 0);
    const double v18 = (__longlong_as_double(0x7ff0000000000000LL));
    const double v19 = (v17 ? v18 : v14);
    const double v20 = a1[off2 + i * st2_1];
    const double v21 = v19 + v20;
    a2[off3 + i] = v21;
  }
}

