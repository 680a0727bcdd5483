#include "vulkan/matmul_grid.h"

#include "base/error.h"

namespace jf::vulkan {

MatrixMath parse_matrix_math(const std::string& name) {
  if (name == "fma") return MatrixMath::Fma;
  if (name == "tiles") return MatrixMath::Tiles;
  if (name == "matrix-units") return MatrixMath::MatrixUnits;
  throw Error("unknown matrix math '" + name + "' (use fma, tiles or matrix-units)");
}

const char* matrix_math_name(MatrixMath m) {
  switch (m) {
    case MatrixMath::Fma: return "fma";
    case MatrixMath::Tiles: return "tiles";
    case MatrixMath::MatrixUnits: return "matrix-units";
  }
  return "?";
}

}  // namespace jf::vulkan
