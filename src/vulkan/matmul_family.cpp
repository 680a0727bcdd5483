#include "vulkan/matmul_family.h"

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "base/cache_dir.h"
#include "base/error.h"
#include "base/mapped_file.h"
#include "vulkan/attention_sweep.h"

namespace jf::vulkan {

std::string MatmulKernel::name() const {
  if (serial) return "serial";
  if (tile_rows) return "tiles-r" + std::to_string(tile_rows);
  if (qmm) return "qmm-o" + std::to_string(outputs) + "-r" + std::to_string(rows) + (units ? "-mu" : "");
  const std::string d = depth > 1 ? "-d" + std::to_string(depth) : "";
  if (vec)
    return "vec-wg" + std::to_string(wg) + "-o" + std::to_string(outputs) + "-r" + std::to_string(rows) + d + (qmm_order ? "-qmm" : dot ? "-dot" : "") +
           (slices > 1 ? "-k" + std::to_string(slices) : "");
  std::string s = "split-wg" + std::to_string(wg) + "-o" + std::to_string(outputs) + "-r" + std::to_string(rows) + d;
  if (pair) s += "-pair";
  if (fold) s += "-fold";
  if (subgroup) s += "-sg";
  return s;
}

namespace {
// Depths beyond 1 where a thread's loads in flight stay within 8 fours' or pieces' registers, on the members
// meant for GPUs (a latency-bound device): 4 rows, subgroup sums.
bool depth_allowed(const MatmulKernel& k) {
  if (k.depth == 1) return true;
  return k.rows == 4 && (k.vec || k.subgroup) && k.depth * k.outputs * (k.pair ? 2 : 1) <= 8;
}
}  // namespace

MatmulKernel parse_matmul_kernel(const std::string& name) {
  MatmulKernel k;
  if (name == "serial") {
    k.serial = true;
    return k;
  }
  if (name == "tiles-r16" || name == "tiles-r32" || name == "tiles-r64") {
    k.tile_rows = static_cast<uint32_t>(std::stoul(name.substr(7)));
    return k;
  }
  for (uint32_t o : {16u, 32u, 64u})
    for (uint32_t r : {16u, 32u, 64u}) {
      const std::string base = "qmm-o" + std::to_string(o) + "-r" + std::to_string(r);
      if (name == base || name == base + "-mu") {
        k.qmm = true, k.units = name != base, k.wg = 128, k.outputs = o, k.rows = r;
        return k;
      }
    }
  const auto bad = [&] {
    return Error("unknown matrix kernel '" + name +
                 "' (use serial, tiles-r16/r32/r64, qmm-oO-rR[-mu] with O and R 16/32/64, split-wgW-oO-rR[-dD][-pair[-fold]][-sg] with W 64/128/256, O 1/2/4, R 4/8, "
                 "or vec-wgW-oO-rR[-dD][-dot|-qmm][-kS] with W 32/64/128, O 1/2/4/8, R 4/8, not o8-r8, -qmm O 1/2/4 R 4, S 2 or 4 (not -qmm); D 2 or 4, with R 4, "
                 "D x O (x 2 for pairs) at most 8, a split's with -sg)");
  };
  std::istringstream in(name);
  std::string part;
  if (!std::getline(in, part, '-') || (part != "split" && part != "vec")) throw bad();
  k.vec = part == "vec";
  int fields = 0;
  while (std::getline(in, part, '-')) {
    const auto number = [&](size_t skip) {
      const std::string digits = part.substr(skip);
      if (digits.empty() || digits.size() > 3 || digits.find_first_not_of("0123456789") != std::string::npos) throw bad();
      return static_cast<uint32_t>(std::stoul(digits));
    };
    if (fields == 0 && part.rfind("wg", 0) == 0) k.wg = number(2);
    else if (fields == 1 && part[0] == 'o') k.outputs = number(1);
    else if (fields == 2 && part[0] == 'r') k.rows = number(1);
    else if (fields == 3 && part.size() == 2 && part[0] == 'd' && (part[1] == '2' || part[1] == '4')) k.depth = number(1);
    else if (k.vec && fields >= 3 && part == "dot" && !k.dot && k.slices == 1) k.dot = true;
    else if (k.vec && fields >= 3 && part == "qmm" && !k.dot && k.slices == 1) k.dot = k.qmm_order = true;
    else if (k.vec && fields >= 3 && (part == "k2" || part == "k4") && k.slices == 1 && !k.qmm_order) k.slices = number(1);
    else if (k.vec) throw bad();  // (a vec member's options: a depth, -dot or -qmm, K slices last)
    else if (fields >= 3 && part == "pair" && !k.pair && !k.subgroup) k.pair = true;
    else if (fields >= 3 && part == "fold" && k.pair && !k.fold && !k.subgroup) k.fold = true;
    else if (fields >= 3 && part == "sg" && !k.subgroup) k.subgroup = true;
    else throw bad();
    fields++;
  }
  const auto one_of = [](uint32_t v, std::initializer_list<uint32_t> ok) {
    for (uint32_t o : ok)
      if (v == o) return true;
    return false;
  };
  if (fields < 3 || !one_of(k.wg, k.vec ? std::initializer_list<uint32_t>{32, 64, 128} : std::initializer_list<uint32_t>{64, 128, 256}) ||
      !one_of(k.outputs, k.vec ? std::initializer_list<uint32_t>{1, 2, 4, 8} : std::initializer_list<uint32_t>{1, 2, 4}) ||
      !one_of(k.rows, {4, 8}) || (k.vec && k.outputs == 8 && k.rows == 8) || !depth_allowed(k) ||
      (k.qmm_order && (k.rows != 4 || k.outputs > 4)))
    throw bad();
  return k;
}

uint32_t matmul_shared_bytes(const MatmulKernel& k) {
  if (k.serial) return 4 * (64 + 8);  // norm_fold.glsl's
  if (k.qmm) {  // matmul_qmm.comp: a step's int8 weights and inputs, their scales, the sub-blocks' integer sums
    const uint32_t o = k.outputs, r = k.rows, pairs = o * r, kb = pairs >= 1024 ? 4 : 8,
                   kbi = pairs >= 2048 ? 1 : pairs >= 1024 ? 2 : pairs >= 512 ? 4 : 8;
    const uint32_t common = r * (kb * 32 + 16) + 4 * kbi * pairs + 4 * r;  // (inputs: kb slots, Q3_K's and Q6_K's half-blocks)
    const auto weights = [&](uint32_t kbw) { return o * (kbw * 32 + 16); };
    // (their scales; the inputs' squares, a step's or a super-block's; IQ4_XS as Q8_0, Q5_K as Q4_K, Q3_K as Q6_K)
    const uint32_t q8_0 = weights(kb) + 4 * kb * (o + r) + 4 * kb * r, q4_k = weights(kb) + 8 * o + 8 * kb * o + 4 * r + 32 * r + 4 * kb * r + 32 * r,
                   q6_k = weights(kb / 2) + 4 * o + 4 * kb * o + 4 * r + 32 * r + 32 * r;
    return common + std::max({q8_0, q4_k, q6_k});
  }
  if (k.tile_rows) {  // matmul_tiles.comp: fp16 weights and inputs of a step, a tile's quarter sums, row scales
    const uint32_t step = k.tile_rows == 64 ? 128 : 256, ld = step + 8;
    return 2 * (16 + k.tile_rows) * ld + 4 * (4 * 16 * 20) + 4 * (128 + 128 + 2 * k.tile_rows);
  }
  const uint32_t slots = (k.outputs + 1) * k.rows;  // the outputs and (a folded norm) the rows' sums of squares
  if (k.qmm_order) {  // (and the steps' integer sums, scales and squares, matmul_vec.comp's Qsm ... Qrow_ss)
    const uint32_t o = k.outputs, r = k.rows, groups = (k.wg / 8) * k.depth;
    const uint32_t kquants = groups * (8 * o * r + 8 * o + 8 * r), q8_0 = 8 * groups * 4 * (o * r + o + 2 * r);
    return 4 * slots * (k.wg / 8) + std::max(kquants, q8_0) + 4 * r;
  }
  if (k.subgroup || k.vec) return 4 * slots * (k.wg / 8) + (k.slices > 1 ? 4 : 0);  // (k_slices.glsl's flag)
  return 4 * (slots * (k.wg + 1) + slots * (k.wg / 8));
}

std::vector<MatmulKernel> matmul_family(const DeviceInfo& d) {
  std::vector<MatmulKernel> family;
  MatmulKernel serial;
  serial.serial = true;
  family.push_back(serial);
  for (bool subgroup : {false, true}) {
    if (subgroup && !(d.subgroup_shuffle && d.subgroup_size >= 8)) continue;
    for (uint32_t wg : {64u, 128u, 256u})
      for (uint32_t outputs : {1u, 2u, 4u})
        for (uint32_t rows : {4u, 8u})
          for (int variant = 0; variant < 3; variant++)  // fours, pairs, pairs folded
            for (uint32_t depth : {1u, 2u, 4u}) {
              MatmulKernel k;
              k.wg = wg, k.outputs = outputs, k.rows = rows, k.pair = variant > 0, k.fold = variant == 2, k.subgroup = subgroup;
              k.depth = depth;
              if (depth_allowed(k) && matmul_shared_bytes(k) <= d.shared_memory) family.push_back(k);
            }
  }
  if (d.subgroup_shuffle && d.subgroup_size >= 8)  // (a workgroup at least a subgroup: its butterfly's lanes all run)
    for (uint32_t wg : {32u, 64u, 128u})
      for (uint32_t outputs : {1u, 2u, 4u, 8u})
        for (uint32_t rows : {4u, 8u})
          for (int variant = 0; variant < 3; variant++)  // fp32, -dot, -qmm
            for (uint32_t depth : {1u, 2u, 4u}) {
              if (outputs == 8 && rows == 8) continue;  // (registers: 8 outputs' loads and 64 sums a thread)
              if (variant == 2 && (rows != 4 || outputs > 4)) continue;  // (a twin for few rows: the tiles take more)
              const bool dot = variant > 0;
              MatmulKernel k;
              k.vec = true, k.wg = wg, k.outputs = outputs, k.rows = rows, k.dot = dot, k.qmm_order = variant == 2, k.depth = depth;
              if (depth_allowed(k) && wg >= d.subgroup_size && matmul_shared_bytes(k) <= d.shared_memory && (!dot || d.int_dot))
                family.push_back(k);
            }
  // K slices: the GPU-shaped vec members (4 rows, 1 or 2 outputs, 64 or 128 threads), fp32 and -dot.
  if (d.subgroup_shuffle && d.subgroup_size >= 8)
    for (uint32_t slices : {2u, 4u})
      for (uint32_t wg : {64u, 128u})
        for (uint32_t outputs : {1u, 2u})
          for (bool dot : {false, true})
            for (uint32_t depth : {1u, 2u, 4u}) {
              MatmulKernel k;
              k.vec = true, k.wg = wg, k.outputs = outputs, k.rows = 4, k.dot = dot, k.depth = depth, k.slices = slices;
              if (depth_allowed(k) && wg >= d.subgroup_size && matmul_shared_bytes(k) <= d.shared_memory && (!dot || d.int_dot))
                family.push_back(k);
            }
  for (bool units : {false, true})  // (qmm: the vec types' integer members, on matrix units that take int8s)
    for (uint32_t outputs : {16u, 32u, 64u})
      for (uint32_t rows : {16u, 32u, 64u}) {
        MatmulKernel k;
        k.qmm = true, k.units = units, k.wg = 128, k.outputs = outputs, k.rows = rows;
        if ((!units || d.int8_matrix_units) && matmul_shared_bytes(k) <= d.shared_memory) family.push_back(k);
      }
  if (d.matrix_units)
    for (uint32_t rows : {16u, 32u, 64u}) {
      MatmulKernel k;
      k.tile_rows = rows;
      if (matmul_shared_bytes(k) <= d.shared_memory) family.push_back(k);
    }
  return family;
}

void require_member(const DeviceInfo& d, const MatmulKernel& k) {
  const std::vector<MatmulKernel> family = matmul_family(d);
  if (std::find(family.begin(), family.end(), k) == family.end())
    throw Error("Vulkan: " + d.name + " cannot run the matrix kernel " + k.name() +
                " (too much shared memory, or subgroup shuffles, integer dot products or matrix units it lacks)");
}

MatmulKernel default_matmul_kernel(uint32_t K, uint32_t split_min_k, bool software) {
  MatmulKernel k;
  k.serial = K < split_min_k;
  if (!software) k.outputs = 2, k.rows = 4;
  return k;
}

namespace {
std::string slug(const std::string& s) {
  std::string out;
  for (char c : s) out += std::isalnum(static_cast<unsigned char>(c)) || c == '.' ? c : '_';
  return out.substr(0, 120);
}
}  // namespace

std::string KernelChoices::cache_path(const DeviceInfo& d) {
  return cache_dir() + "/vulkan-kernels/" + slug(d.name + "-" + d.driver) + ".json";
}

KernelChoices KernelChoices::load(const DeviceInfo& d) {
  const std::string path = cache_path(d);
  if (!std::filesystem::exists(path)) {
    KernelChoices c;
    c.device = d.name, c.driver = d.driver;
    return c;
  }
  return read(path, d);
}

KernelChoices KernelChoices::read(const std::string& path, const DeviceInfo& d) {
  std::ifstream f(path);
  if (!f) throw Error("cannot read the kernel choices " + path);
  KernelChoices c;
  try {
    const nlohmann::json j = nlohmann::json::parse(f);
    c.device = j.at("device").get<std::string>();
    c.driver = j.at("driver").get<std::string>();
    const std::vector<MatmulKernel> family = matmul_family(d);
    for (const auto& e : j.at("matrices")) {
      MatmulShape s;
      s.n = e.at("n").get<uint32_t>(), s.k = e.at("k").get<uint32_t>();
      if (!dtype_from_name(e.at("type").get<std::string>(), &s.type)) throw Error("unknown weight type " + e.at("type").dump());
      Choice ch;
      ch.kernel = parse_matmul_kernel(e.at("kernel").get<std::string>());
      if (std::find(family.begin(), family.end(), ch.kernel) == family.end())
        throw Error("kernel " + ch.kernel.name() + " is not one " + d.name + " runs");
      if (!member_runs(ch.kernel, s))
        throw Error("kernel " + ch.kernel.name() + " does not run a " + dtype_name(s.type) + " matrix of " + std::to_string(s.n) + " outputs and " +
                    std::to_string(s.k) + " inputs");
      for (const auto& t : e.at("seconds")) ch.seconds.emplace_back(t.at(0).get<int>(), t.at(1).get<double>());
      if (e.contains("by_rows"))
        for (const auto& t : e.at("by_rows")) {
          const MatmulKernel twin = parse_matmul_kernel(t.at(1).get<std::string>());
          if (!twin.qmm_bits() || !ch.kernel.qmm_bits() || std::find(family.begin(), family.end(), twin) == family.end())
            throw Error("by_rows names " + twin.name() + ": only qmm members " + d.name + " runs, beside a qmm member, give each other's bits");
          ch.by_rows.emplace_back(t.at(0).get<uint32_t>(), twin);
        }
      c.by_shape[s] = ch;
    }
    if (j.contains("attention")) c.attention = parse_attention_name(j.at("attention").get<std::string>());
  } catch (const std::exception& e) {
    throw Error("the kernel choices " + path + " are malformed (" + e.what() + "); delete the file or run jf tune --kernels again");
  }
  return c;
}

void KernelChoices::write(const std::string& path) const {
  nlohmann::json j;
  j["device"] = device, j["driver"] = driver;
  j["matrices"] = nlohmann::json::array();
  for (const auto& [s, ch] : by_shape) {
    nlohmann::json e;
    e["n"] = s.n, e["k"] = s.k, e["type"] = dtype_name(s.type), e["kernel"] = ch.kernel.name();
    e["seconds"] = nlohmann::json::array();
    for (const auto& [rows, sec] : ch.seconds) e["seconds"].push_back({rows, sec});
    if (!ch.by_rows.empty()) {
      e["by_rows"] = nlohmann::json::array();
      for (const auto& [rows, k] : ch.by_rows) e["by_rows"].push_back({rows, k.name()});
    }
    j["matrices"].push_back(e);
  }
  if (attention) j["attention"] = attention_name(*attention);
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  const std::string text = j.dump(1) + "\n";
  write_file_atomic(path, text.data(), text.size());
}

}  // namespace jf::vulkan
