#include "model/config.h"

#include <cmath>
#include <sstream>

#include "base/error.h"
#include "formats/gguf.h"

namespace jf {

std::string arch_name(Arch a) { return a == Arch::Qwen2 ? "qwen2" : "llama"; }

bool arch_from_name(const std::string& name, Arch* out) {
  if (name == "llama") *out = Arch::Llama;
  else if (name == "qwen2") *out = Arch::Qwen2;
  else return false;
  return true;
}

void ModelConfig::validate() const {
  auto bad = [](const std::string& what) { throw Error("invalid model config: " + what); };
  auto positive = [&](int v, const char* name) {
    if (v <= 0 || v > (1 << 24)) bad(std::string(name) + " = " + std::to_string(v));
  };
  positive(vocab_size, "vocab_size");
  positive(dim, "embedding_length");
  positive(n_layers, "block_count");
  positive(n_heads, "head_count");
  positive(n_kv_heads, "head_count_kv");
  positive(head_dim, "head_dim");
  positive(ffn_dim, "feed_forward_length");
  positive(context_length, "context_length");
  if (n_heads % n_kv_heads != 0) bad("head_count " + std::to_string(n_heads) + " is not a multiple of head_count_kv " + std::to_string(n_kv_heads));
  if (rope_dim <= 0 || rope_dim > head_dim || rope_dim % 2 != 0) bad("rope dimension " + std::to_string(rope_dim));
  if (!(norm_eps > 0.0f) || norm_eps > 1.0f) bad("rms norm epsilon " + std::to_string(norm_eps));
  if (!(rope_theta > 0.0f) || !std::isfinite(rope_theta)) bad("rope freq_base " + std::to_string(rope_theta));
  if (!(rope_freq_scale > 0.0f) || !std::isfinite(rope_freq_scale)) bad("rope scaling factor");
  if (!rope_freq_factors.empty() && static_cast<int>(rope_freq_factors.size()) != rope_dim / 2)
    bad("rope_freqs has " + std::to_string(rope_freq_factors.size()) + " entries, expected " + std::to_string(rope_dim / 2));
}

std::string ModelConfig::summary() const {
  std::ostringstream s;
  s << arch_name(arch) << ": " << n_layers << " layers, dim " << dim << ", heads " << n_heads << "/" << n_kv_heads
    << " x " << head_dim << ", ffn " << ffn_dim << ", vocab " << vocab_size << ", ctx " << context_length
    << ", rope " << (rope_style == RopeStyle::Neox ? "neox" : "interleaved") << " theta " << rope_theta
    << (attn_bias ? ", qkv bias" : "") << (tied_output ? ", tied output" : "");
  return s.str();
}

ModelConfig config_from_gguf(const GgufMetadata& meta) {
  ModelConfig c;
  std::string arch = meta.get_string("general.architecture");
  if (!arch_from_name(arch, &c.arch)) throw Error("unsupported architecture '" + arch + "' (supported: llama, qwen2)");
  const std::string p = arch + ".";
  c.name = meta.get_string("general.name", "");
  c.dim = static_cast<int>(meta.get_int(p + "embedding_length"));
  c.n_layers = static_cast<int>(meta.get_int(p + "block_count"));
  c.n_heads = static_cast<int>(meta.get_int(p + "attention.head_count"));
  c.n_kv_heads = static_cast<int>(meta.get_int(p + "attention.head_count_kv", c.n_heads));
  c.ffn_dim = static_cast<int>(meta.get_int(p + "feed_forward_length"));
  c.context_length = static_cast<int>(meta.get_int(p + "context_length", 2048));
  c.norm_eps = static_cast<float>(meta.get_float(p + "attention.layer_norm_rms_epsilon", 1e-5));
  c.rope_theta = static_cast<float>(meta.get_float(p + "rope.freq_base", 10000.0));
  if (c.n_heads > 0) c.head_dim = static_cast<int>(meta.get_int(p + "attention.key_length", c.dim / c.n_heads));
  c.rope_dim = static_cast<int>(meta.get_int(p + "rope.dimension_count", c.head_dim));
  c.rope_style = c.arch == Arch::Qwen2 ? RopeStyle::Neox : RopeStyle::Interleaved;
  c.vocab_size = static_cast<int>(meta.get_int(p + "vocab_size", 0));
  std::string scaling = meta.get_string(p + "rope.scaling.type", "none");
  if (scaling == "linear") {
    double f = meta.get_float(p + "rope.scaling.factor", 1.0);
    if (!(f > 0)) throw Error("invalid rope scaling factor");
    c.rope_freq_scale = static_cast<float>(1.0 / f);
  } else if (scaling != "none" && !scaling.empty()) {
    throw Error("unsupported rope scaling type '" + scaling + "' (supported: none, linear, llama3 rope_freqs)");
  }
  return c;
}

void config_to_gguf(const ModelConfig& c, GgufMetadata& meta) {
  const std::string p = arch_name(c.arch) + ".";
  meta.set("general.architecture", GgufValue::of_string(arch_name(c.arch)));
  if (!c.name.empty()) meta.set("general.name", GgufValue::of_string(c.name));
  meta.set(p + "vocab_size", GgufValue::of_u32(c.vocab_size));
  meta.set(p + "context_length", GgufValue::of_u32(c.context_length));
  meta.set(p + "embedding_length", GgufValue::of_u32(c.dim));
  meta.set(p + "block_count", GgufValue::of_u32(c.n_layers));
  meta.set(p + "feed_forward_length", GgufValue::of_u32(c.ffn_dim));
  meta.set(p + "attention.head_count", GgufValue::of_u32(c.n_heads));
  meta.set(p + "attention.head_count_kv", GgufValue::of_u32(c.n_kv_heads));
  if (c.head_dim * c.n_heads != c.dim) meta.set(p + "attention.key_length", GgufValue::of_u32(c.head_dim));
  meta.set(p + "attention.layer_norm_rms_epsilon", GgufValue::of_f32(c.norm_eps));
  meta.set(p + "rope.freq_base", GgufValue::of_f32(c.rope_theta));
  meta.set(p + "rope.dimension_count", GgufValue::of_u32(c.rope_dim));
  if (c.rope_freq_scale != 1.0f) {
    meta.set(p + "rope.scaling.type", GgufValue::of_string("linear"));
    meta.set(p + "rope.scaling.factor", GgufValue::of_f32(1.0f / c.rope_freq_scale));
  }
}

void rope_angles(const ModelConfig& cfg, int32_t pos, float* cos, float* sin) {
  const int half = cfg.rope_dim / 2;
  for (int i = 0; i < half; i++) {
    // Same float expression as llama2.c, so the reference outputs reproduce bit for bit.
    float freq = 1.0f / std::pow(cfg.rope_theta, static_cast<float>(2 * i) / static_cast<float>(cfg.rope_dim));
    if (!cfg.rope_freq_factors.empty()) freq /= cfg.rope_freq_factors[i];
    float val = static_cast<float>(pos) * cfg.rope_freq_scale * freq;
    cos[i] = std::cos(val);
    sin[i] = std::sin(val);
  }
}

}  // namespace jf
