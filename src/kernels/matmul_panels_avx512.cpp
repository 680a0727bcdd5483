// AVX-512 kernels over the panel layout: the shared panel tiles (kernels/matmul_panel_tiles.h) with two
// adjacent panels (16 output features) per vector. An odd panel at the end of a range goes to the AVX2
// kernel, which computes the same FMA chain.
#include <immintrin.h>

#include "kernels/matmul_panel_vec_avx512.h"

namespace jf::avx512 {

void matmul_panels(const float* x, int64_t M, const WeightMatrix& w, float* y, int64_t p0, int64_t p1) {
  const int64_t pairs_end = p0 + (p1 - p0) / 2 * 2;
  panel_tiles::matmul_panels<PanelVec>(x, M, w, y, p0, pairs_end);
  if (pairs_end < p1) avx2::matmul_panels(x, M, w, y, pairs_end, p1);
}

}  // namespace jf::avx512
