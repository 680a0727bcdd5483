#include "vulkan/matmul_grid.h"

#include "base/error.h"

namespace jf::vulkan {

MatrixMath parse_matrix_math(const std::string& name) {
  if (name == "fma") return MatrixMath::Fma;
  if (name == "tiles") return MatrixMath::Tiles;
  if (name == "matrix-units") return MatrixMath::MatrixUnits;
  throw Error("unknown matrix math '" + name + "' (use fma, tiles or matrix-units)");
}

uint32_t parse_tile_rows(const std::string& s) {
  if (s == "16" || s == "32" || s == "64") return static_cast<uint32_t>(std::stoul(s));
  throw Error("unknown tile rows '" + s + "' (use 16, 32 or 64)");
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
