// Embedding lookup and linear layers (y = x W^T + b): forward and backward side by side.
#include <algorithm>
#include <cstring>
#include <vector>

#include "kernels/parallel.h"
#include "train/gemm.h"
#include "train/layers.h"

namespace jf {
namespace {

constexpr int64_t kColumnChunk = 64;  // columns per work item of the column-parallel loops below

// Work large enough to be worth waking the thread pool for.
bool worth_parallel(int64_t flops) { return flops >= (1 << 16); }

LinearPrecision precision = LinearPrecision::F32;

}  // namespace

void set_linear_precision(LinearPrecision p) { precision = p; }
LinearPrecision linear_precision() { return precision; }

// ---------------------------------------------------------------- embedding

void embedding_forward(float* out, const int32_t* tokens, int64_t T, const float* table, int64_t C) {
  for (int64_t t = 0; t < T; t++) std::memcpy(out + t * C, table + static_cast<int64_t>(tokens[t]) * C, C * sizeof(float));
}

void embedding_backward(float* dtable, const float* dout, const int32_t* tokens, int64_t T, int64_t C) {
  // Threads own column ranges of the table, so repeated tokens never race and always sum in row order.
  const int64_t chunks = (C + kColumnChunk - 1) / kColumnChunk;
  parallel_for(chunks, worth_parallel(T * C), [&](int64_t c0, int64_t c1) {
    const int64_t lo = c0 * kColumnChunk, hi = std::min(C, c1 * kColumnChunk);
    for (int64_t t = 0; t < T; t++) {
      float* drow = dtable + static_cast<int64_t>(tokens[t]) * C;
      const float* g = dout + t * C;
      for (int64_t c = lo; c < hi; c++) drow[c] += g[c];
    }
  });
}

// ---------------------------------------------------------------- linear

void linear_forward(float* out, const float* inp, const float* weight, const float* bias, int64_t T, int64_t K,
                    int64_t N) {
  // out[t][n] = b[n] + sum_k inp[t][k] * W^T[k][n]   (A = inp, B = W^T)
  const bool parallel = worth_parallel(T * K * N);
  auto start_from_bias = [&] {
    for (int64_t t = 0; t < T; t++) {
      if (bias) std::memcpy(out + t * N, bias, N * sizeof(float));
      else std::memset(out + t * N, 0, N * sizeof(float));
    }
  };
  if (precision == LinearPrecision::Bf16) {  // packs W^T as it reads W: no transpose
    start_from_bias();
    gemm_accumulate_bf16(parallel, T, N, K, inp, K, 1, weight, 1, K, out, N);
    return;
  }
  thread_local std::vector<float> wt_buffer;  // W^T, grown to the largest weight, reused
  if (wt_buffer.size() < static_cast<size_t>(N * K)) wt_buffer.resize(static_cast<size_t>(N * K));
  float* wt = wt_buffer.data();
  transpose(parallel, N, K, weight, wt);
  start_from_bias();
  gemm_accumulate(parallel, T, N, K, inp, K, 1, wt, N, out, N);
}

void linear_backward(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp,
                     const float* weight, int64_t T, int64_t K, int64_t N) {
  const bool parallel = worth_parallel(T * K * N);
  const bool bf16 = precision == LinearPrecision::Bf16;
  // dinp[t][k] += sum_n dout[t][n] * W[n][k]        (A = dout, B = W)
  if (dinp && bf16) gemm_accumulate_bf16(parallel, T, K, N, dout, N, 1, weight, K, 1, dinp, K);
  else if (dinp) gemm_accumulate(parallel, T, K, N, dout, N, 1, weight, K, dinp, K);
  // dweight[n][k] += sum_t dout[t][n] * inp[t][k]   (A = dout^T, B = inp)
  if (dweight && bf16) gemm_accumulate_bf16(parallel, N, K, T, dout, 1, N, inp, K, 1, dweight, K);
  else if (dweight) gemm_accumulate(parallel, N, K, T, dout, 1, N, inp, K, dweight, K);
  // dbias[n] += sum_t dout[t][n], in row order
  if (dbias) {
    const int64_t chunks = (N + kColumnChunk - 1) / kColumnChunk;
    parallel_for(chunks, worth_parallel(T * N), [&](int64_t c0, int64_t c1) {
      const int64_t lo = c0 * kColumnChunk, hi = std::min(N, c1 * kColumnChunk);
      for (int64_t t = 0; t < T; t++)
        for (int64_t n = lo; n < hi; n++) dbias[n] += dout[t * N + n];
    });
  }
}

}  // namespace jf
