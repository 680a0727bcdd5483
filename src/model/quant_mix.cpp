#include "model/quant_mix.h"

#include <algorithm>
#include <cctype>
#include <cstdio>

namespace jf {

namespace {

struct Named {
  const char* name;
  DType base;
  WeightScheme::Mix mix;
  int file_type;  // GGUF's general.file_type (llama.cpp's llama_ftype)
};
using Mix = WeightScheme::Mix;
// q3_k / q4_k / q5_k (every matrix) have no file type of their own: they take the "mostly" type's number.
const Named kSchemes[] = {
    {"f32", DType::F32, Mix::Pure, 0},         {"f16", DType::F16, Mix::Pure, 1},
    {"bf16", DType::BF16, Mix::Pure, 32},      {"q8_0", DType::Q8_0, Mix::Pure, 7},
    {"q4_0", DType::Q4_0, Mix::File, 2},       {"q4_1", DType::Q4_1, Mix::File, 3},
    {"q5_0", DType::Q5_0, Mix::File, 8},       {"q5_1", DType::Q5_1, Mix::File, 9},
    {"q2_k", DType::Q2_K, Mix::Q2K, 10},       {"q3_k", DType::Q3_K, Mix::Pure, 11},
    {"q3_k_s", DType::Q3_K, Mix::Q3KS, 11},    {"q3_k_m", DType::Q3_K, Mix::Q3KM, 12},
    {"q3_k_l", DType::Q3_K, Mix::Q3KL, 13},    {"q4_k", DType::Q4_K, Mix::Pure, 14},
    {"q4_k_s", DType::Q4_K, Mix::Q4KS, 14},    {"q4_k_m", DType::Q4_K, Mix::Q4KM, 15},
    {"q5_k", DType::Q5_K, Mix::Pure, 16},      {"q5_k_s", DType::Q5_K, Mix::File, 16},
    {"q5_k_m", DType::Q5_K, Mix::Q5KM, 17},    {"q6_k", DType::Q6_K, Mix::File, 18},
    {"iq4_nl", DType::IQ4_NL, Mix::IQ4, 25},   {"iq4_xs", DType::IQ4_XS, Mix::IQ4, 30},
};

bool contains(const std::string& s, const char* part) { return s.find(part) != std::string::npos; }

// The layer of "blk.N.*", or -1.
int layer_of(const std::string& name) {
  int layer = -1;
  if (std::sscanf(name.c_str(), "blk.%d.", &layer) != 1) return -1;
  return layer;
}

// The layers whose attn_v / ffn_down get more bits in the _M mixes.
bool more_bits(int i, int n) { return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2; }

}  // namespace

bool weight_scheme_from_name(const std::string& name, WeightScheme* out) {
  std::string s = name;
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  for (const Named& n : kSchemes)
    if (s == n.name) {
      *out = WeightScheme{n.name, n.base, n.mix, n.file_type};
      return true;
    }
  return false;
}

WeightScheme pure_scheme(DType t) {
  int file_type = -1;
  for (const Named& n : kSchemes)
    if (n.base == t && n.mix == Mix::Pure) file_type = n.file_type;
  return WeightScheme{dtype_name(t), t, Mix::Pure, file_type};
}

const char* weight_scheme_names() {
  return "f32, f16, bf16, q8_0, q3_k, q4_k, q5_k (every matrix), q4_0, q4_1, q5_0, q5_1, q2_k, q3_k_s, q3_k_m, "
         "q3_k_l, q4_k_s, q4_k_m, q5_k_s, q5_k_m, q6_k, iq4_nl, iq4_xs (GGML's file types)";
}

DType fallback_for_width(DType t, int64_t cols) {
  if (cols % dtype_block_size(t) == 0) return t;
  switch (t) {
    case DType::Q4_K: t = DType::Q5_0; break;
    case DType::Q5_K: t = DType::Q5_1; break;
    case DType::Q6_K: t = DType::Q8_0; break;
    case DType::Q2_K:
    case DType::Q3_K: t = DType::Q4_0; break;
    case DType::IQ4_XS: t = DType::IQ4_NL; break;
    default: break;
  }
  return cols % dtype_block_size(t) == 0 ? t : DType::F16;
}

namespace {

// attn_v's type in the K mixes (`t` otherwise), before the 70B bonus.
DType attn_v_mix_type(Mix mix, DType t, int layer, int n_layers, int n_gqa) {
  switch (mix) {
    case Mix::Q2K: return n_gqa >= 4 ? DType::Q4_K : DType::Q3_K;
    case Mix::Q3KM: return layer < 2 ? DType::Q5_K : DType::Q4_K;
    case Mix::Q3KL: return DType::Q5_K;
    case Mix::Q4KM:
    case Mix::Q5KM: return more_bits(layer, n_layers) ? DType::Q6_K : t;
    case Mix::Q4KS: return layer < 4 ? DType::Q5_K : t;
    case Mix::IQ4: return n_gqa >= 4 ? DType::Q5_K : t;
    default: return t;
  }
}

// ffn_down's type in the K mixes.
DType ffn_down_type(Mix mix, DType t, int layer, int n_layers) {
  switch (mix) {
    case Mix::Q2K: return DType::Q3_K;
    case Mix::Q3KM: return layer < n_layers / 16 ? DType::Q5_K : DType::Q4_K;
    case Mix::Q3KL: return DType::Q5_K;
    case Mix::Q4KM:
    case Mix::Q5KM: return more_bits(layer, n_layers) ? DType::Q6_K : t;
    case Mix::Q4KS:
    case Mix::IQ4: return layer < n_layers / 8 ? DType::Q5_K : t;
    default: return t;
  }
}

DType attn_output_type(Mix mix, DType t) {
  switch (mix) {
    case Mix::Q2K: return DType::Q3_K;
    case Mix::Q3KM: return DType::Q4_K;
    case Mix::Q3KL: return DType::Q5_K;
    default: return t;
  }
}

DType attn_v_type(Mix mix, DType t, int layer, int n_layers, int n_gqa, bool class_70b) {
  t = attn_v_mix_type(mix, t, layer, n_layers, n_gqa);
  // The 70B's attn_v is 8x smaller than attn_q (8 query heads per key-value head): more bits cost little.
  if (class_70b && (t == DType::Q3_K || t == DType::Q4_K)) t = DType::Q5_K;
  return t;
}

}  // namespace

bool reference_70b_class(const ModelConfig& cfg) {
  return cfg.n_layers == 80 && ((cfg.arch == Arch::Llama && cfg.n_kv_heads != cfg.n_heads) || cfg.arch == Arch::Qwen2);
}

DType scheme_tensor_type(const WeightScheme& s, const std::string& name, int64_t cols, int n_layers, bool has_output,
                         int n_gqa, bool class_70b) {
  DType t = s.base;
  if (s.mix != Mix::Pure) {
    const int layer = layer_of(name);
    if (name == "output.weight" || (!has_output && name == "token_embd.weight")) {
      // The reference keeps Q8_0 there when the base type's blocks do not divide the row.
      t = cols % dtype_block_size(s.base) != 0 ? DType::Q8_0 : DType::Q6_K;
    } else if ((contains(name, "attn_v.weight") || contains(name, "attn_qkv.weight")) && layer >= 0) {
      t = attn_v_type(s.mix, t, layer, n_layers, n_gqa, class_70b);
    } else if (contains(name, "ffn_down") && layer >= 0) {
      t = ffn_down_type(s.mix, t, layer, n_layers);
    } else if (contains(name, "attn_output.weight")) {
      t = attn_output_type(s.mix, t);
    }
  }
  return fallback_for_width(t, cols);
}

}  // namespace jf
