// The one matrix-product kernel of training (linear layers and attention, forward and backward), written as
// plain loops over a register tile that the compiler vectorises; and the transpose that feeds it.
#pragma once
#include <cstdint>

namespace jf {

// C[m][n] += sum_k A(m, k) * B[k][n]  for m < M, n < N, k < K, with
//   A(m, k) = a[m * a_ms + k * a_ks]  (strides pick A or A^T without copying),
//   B[k][n] = b[k * ldb + n], C[m][n] = c[m * ldc + n]  (n contiguous in B and C).
// Every C element is computed as acc = 0; for k in order: acc = acc + A(m,k) * B[k][n]; C += acc — the same
// operations whatever the tile it falls in, the shape of the call and the thread count, so results are
// deterministic and independent of how the work is split. `parallel` splits output tiles over threads with
// parallel_for (do not set it from inside another parallel_for).
void gemm_accumulate(bool parallel, int64_t M, int64_t N, int64_t K, const float* a, int64_t a_ms, int64_t a_ks,
                     const float* b, int64_t ldb, float* c, int64_t ldc);

// The same product with bfloat16 operands (jf train --matmul bf16): A and B rounded to bfloat16 (nearest
// even), products summed in fp32 two k at a time — AVX512-BF16's dot product where the build has it (about
// twice the fp32 rate), the same sums with fp32 FMAs where not. B(k, n) = b[k * b_ks + n * b_ns], so B or
// B^T is read without a copy. Deterministic and split-independent like gemm_accumulate.
void gemm_accumulate_bf16(bool parallel, int64_t M, int64_t N, int64_t K, const float* a, int64_t a_ms, int64_t a_ks,
                          const float* b, int64_t b_ks, int64_t b_ns, float* c, int64_t ldc);
bool gemm_bf16_native();  // whether this build uses the CPU's bfloat16 dot product

// dst (cols x rows) = src^T (src: rows x cols, row-major), in cache-sized tiles; `parallel` as above.
void transpose(bool parallel, int64_t rows, int64_t cols, const float* src, float* dst);

}  // namespace jf
