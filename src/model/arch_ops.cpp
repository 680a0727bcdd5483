#include "model/arch_ops.h"

#include "kernels/ops.h"

namespace jf {

void head_rmsnorm(float* v, int n_heads, int head_dim, const float* weight, float eps) {
  for (int h = 0; h < n_heads; h++) rmsnorm(v + int64_t{h} * head_dim, weight, head_dim, eps, v + int64_t{h} * head_dim);
}

}  // namespace jf
