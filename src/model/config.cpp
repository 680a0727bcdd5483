#include "model/config.h"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <sstream>

#include "base/error.h"
#include "formats/gguf.h"

namespace jf {

namespace {
// The architectures files may name (GGUF general.architecture).
constexpr Arch kSupportedArchs[] = {Arch::Llama, Arch::Qwen2, Arch::Qwen3, Arch::Phi3, Arch::Gemma2, Arch::Gemma3};
}  // namespace

std::string arch_name(Arch a) {
  switch (a) {
    case Arch::Llama: return "llama";
    case Arch::Qwen2: return "qwen2";
    case Arch::Qwen3: return "qwen3";
    case Arch::Phi3: return "phi3";
    case Arch::Gemma2: return "gemma2";
    case Arch::Gemma3: return "gemma3";
  }
  return "llama";
}

bool arch_from_name(const std::string& name, Arch* out) {
  for (Arch a : kSupportedArchs)
    if (name == arch_name(a)) return *out = a, true;
  return false;
}

std::string supported_arch_names() {
  std::string s;
  for (Arch a : kSupportedArchs) s += (s.empty() ? "" : ", ") + arch_name(a);
  return s;
}

RopeStyle gguf_rope_style(Arch a) { return a == Arch::Llama ? RopeStyle::Interleaved : RopeStyle::Neox; }

float ModelConfig::attention_scale() const {
  return query_scale > 0.0f ? query_scale : 1.0f / std::sqrt(static_cast<float>(head_dim));
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
  for (const auto* f : {&rope_factors_short, &rope_factors_long})
    if (static_cast<int>(f->size()) != (rope_factors_long.empty() && rope_factors_short.empty() ? 0 : rope_dim / 2))
      bad("LongRoPE factors have " + std::to_string(f->size()) + " entries, expected " + std::to_string(rope_dim / 2) +
          " for both rope_factors_short and rope_factors_long");
  if (!rope_factors_long.empty() && rope_orig_context <= 0) bad("LongRoPE needs rope.scaling.original_context_length");
  if (rope_yarn && rope_orig_context <= 0) bad("YaRN needs rope.scaling.original_context_length");
  if (rope_yarn && !(rope_yarn_beta_fast > rope_yarn_beta_slow && rope_yarn_beta_slow > 0.0f))
    bad("YaRN needs beta_fast > beta_slow > 0");
  if (!(rope_attn_factor > 0.0f) || !std::isfinite(rope_attn_factor)) bad("rope attn_factor " + std::to_string(rope_attn_factor));
  if (sliding_window < 0) bad("sliding_window " + std::to_string(sliding_window));
  if (sliding_window > 0 && sliding_period < 2) bad("sliding window without a layer pattern");
  if (!(rope_theta_local >= 0.0f) || !std::isfinite(rope_theta_local)) bad("local rope freq_base " + std::to_string(rope_theta_local));
  for (float c : {attn_softcap, final_softcap, query_scale})
    if (!(c >= 0.0f) || !std::isfinite(c)) bad("soft-cap or query scale " + std::to_string(c));
}

std::string ModelConfig::summary() const {
  std::ostringstream s;
  s << arch_name(arch) << ": " << n_layers << " layers, dim " << dim << ", heads " << n_heads << "/" << n_kv_heads
    << " x " << head_dim << ", ffn " << ffn_dim << ", vocab " << vocab_size << ", ctx " << context_length
    << ", rope " << (rope_style == RopeStyle::Neox ? "neox" : "interleaved") << " theta " << rope_theta
    << (attn_bias ? ", qkv bias" : "") << (tied_output ? ", tied output" : "") << (qk_norm() ? ", q/k norm" : "")
    << (rope_dim < head_dim ? ", rotary " + std::to_string(rope_dim) + " of " + std::to_string(head_dim) : "")
    << (rope_factors_long.empty() ? "" : ", longrope from " + std::to_string(rope_orig_context))
    << (rope_yarn ? ", yarn x" + std::to_string(static_cast<int>(std::lround(1.0 / rope_freq_scale))) + " from " +
                        std::to_string(rope_orig_context)
                  : "")
    << (sliding_window > 0 ? ", sliding window " + std::to_string(sliding_window) : "")
    << (attn_softcap > 0 ? ", soft-caps" : "");
  return s.str();
}

namespace {

// Gemma's keys: the layer pattern, soft-caps, local RoPE base and query scale (llama.cpp's conventions: the
// 27B models scale q by 1/sqrt(dim / heads), the others by 1/sqrt(head_dim); GGUF does not store it).
void read_gemma_keys(const GgufMetadata& meta, const std::string& p, ModelConfig& c) {
  const bool g2 = c.arch == Arch::Gemma2;
  // Gemma 3 without a window (or with 0) has no local layers at all, as llama.cpp reads it.
  c.sliding_window = static_cast<int>(meta.get_int(p + "attention.sliding_window", g2 ? 4096 : 0));
  c.sliding_period = g2 ? 2 : 6;
  if (g2) {
    c.attn_softcap = static_cast<float>(meta.get_float(p + "attn_logit_softcapping", 50.0));
    c.final_softcap = static_cast<float>(meta.get_float(p + "final_logit_softcapping", 30.0));
  } else {
    if (c.sliding_window > 0) c.rope_theta_local = 10000.0f;
    c.final_softcap = static_cast<float>(meta.get_float(p + "final_logit_softcapping", 0.0));  // fine-tunes may set it
  }
  const bool is_27b = c.n_layers == (g2 ? 46 : 62);
  if (c.n_heads > 0)
    c.query_scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(is_27b ? c.dim / c.n_heads : c.head_dim)));
}

void read_rope_scaling(const GgufMetadata& meta, const std::string& p, ModelConfig& c) {
  const std::string scaling = meta.get_string(p + "rope.scaling.type", "none");
  if (scaling == "linear" || scaling == "yarn") {
    const double f = meta.get_float(p + "rope.scaling.factor", 1.0);
    if (!(f > 0)) throw Error("invalid rope scaling factor");
    c.rope_freq_scale = static_cast<float>(1.0 / f);
    c.rope_yarn = scaling == "yarn";
    c.rope_yarn_beta_fast = static_cast<float>(meta.get_float(p + "rope.scaling.yarn_beta_fast", 32.0));
    c.rope_yarn_beta_slow = static_cast<float>(meta.get_float(p + "rope.scaling.yarn_beta_slow", 1.0));
  } else if (scaling != "none" && !scaling.empty() && !(c.arch == Arch::Phi3 && (scaling == "longrope" || scaling == "su"))) {
    throw Error("unsupported rope scaling type '" + scaling + "' (supported: none, linear, yarn, llama3 rope_freqs, phi3 longrope)");
  }
  // Without the key llama.cpp takes the trained context as the original one (YaRN, Phi-3's LongRoPE).
  const bool needs_orig = c.rope_yarn || c.arch == Arch::Phi3;
  c.rope_orig_context = static_cast<int>(meta.get_int(p + "rope.scaling.original_context_length", needs_orig ? c.context_length : 0));
  c.rope_attn_factor = static_cast<float>(meta.get_float(p + "rope.scaling.attn_factor", 1.0));
}

}  // namespace

ModelConfig config_from_gguf(const GgufMetadata& meta) {
  ModelConfig c;
  std::string arch = meta.get_string("general.architecture");
  if (!arch_from_name(arch, &c.arch))
    throw Error("unsupported architecture '" + arch + "' (supported: " + supported_arch_names() + ")");
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
  const int value_length = static_cast<int>(meta.get_int(p + "attention.value_length", c.head_dim));
  if (value_length != c.head_dim)
    throw Error("attention.value_length " + std::to_string(value_length) + " differs from key_length " +
                std::to_string(c.head_dim) + " (not supported)");
  c.rope_dim = static_cast<int>(meta.get_int(p + "rope.dimension_count", c.head_dim));
  c.rope_style = gguf_rope_style(c.arch);
  c.vocab_size = static_cast<int>(meta.get_int(p + "vocab_size", 0));
  read_rope_scaling(meta, p, c);
  if (c.gemma()) read_gemma_keys(meta, p, c);
  c.draft_chain = static_cast<int>(meta.get_int("jf.draft_chain", 0));
  if (c.draft_chain < 0) throw Error("jf.draft_chain " + std::to_string(c.draft_chain) + " is negative");
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
  if (c.head_dim * c.n_heads != c.dim || c.gemma()) {  // llama.cpp defaults both to dim / heads
    meta.set(p + "attention.key_length", GgufValue::of_u32(c.head_dim));
    meta.set(p + "attention.value_length", GgufValue::of_u32(c.head_dim));
  }
  meta.set(p + "attention.layer_norm_rms_epsilon", GgufValue::of_f32(c.norm_eps));
  meta.set(p + "rope.freq_base", GgufValue::of_f32(c.rope_theta));
  meta.set(p + "rope.dimension_count", GgufValue::of_u32(c.rope_dim));
  if (c.rope_freq_scale != 1.0f || c.rope_yarn) {
    meta.set(p + "rope.scaling.type", GgufValue::of_string(c.rope_yarn ? "yarn" : "linear"));
    meta.set(p + "rope.scaling.factor", GgufValue::of_f32(1.0f / c.rope_freq_scale));
  }
  if (c.rope_yarn) {
    meta.set(p + "rope.scaling.yarn_beta_fast", GgufValue::of_f32(c.rope_yarn_beta_fast));
    meta.set(p + "rope.scaling.yarn_beta_slow", GgufValue::of_f32(c.rope_yarn_beta_slow));
  }
  if (c.rope_orig_context > 0) meta.set(p + "rope.scaling.original_context_length", GgufValue::of_u32(c.rope_orig_context));
  if (c.rope_attn_factor != 1.0f) meta.set(p + "rope.scaling.attn_factor", GgufValue::of_f32(c.rope_attn_factor));
  if (c.sliding_window > 0) meta.set(p + "attention.sliding_window", GgufValue::of_u32(c.sliding_window));
  if (c.arch == Arch::Gemma2) {
    meta.set(p + "attn_logit_softcapping", GgufValue::of_f32(c.attn_softcap));
    meta.set(p + "final_logit_softcapping", GgufValue::of_f32(c.final_softcap));
  } else if (c.final_softcap > 0.0f) {
    meta.set(p + "final_logit_softcapping", GgufValue::of_f32(c.final_softcap));
  }
  if (c.draft_chain > 0) meta.set("jf.draft_chain", GgufValue::of_u32(static_cast<uint32_t>(c.draft_chain)));
}

RopeTable rope_table(const ModelConfig& cfg, int context) {
  RopeTable t;
  t.theta = cfg.rope_theta;
  t.freq_scale = cfg.rope_freq_scale;
  if (!cfg.rope_freq_factors.empty()) t.factors = cfg.rope_freq_factors.data();
  if (!cfg.rope_factors_long.empty())
    t.factors = context > cfg.rope_orig_context ? cfg.rope_factors_long.data() : cfg.rope_factors_short.data();
  t.mscale = cfg.rope_attn_factor;
  if (cfg.rope_yarn) {
    // The dim whose frequency turns `rotations` times over the original context (llama.cpp's corr dims).
    auto dim_for = [&](float rotations) {
      return static_cast<float>(cfg.rope_dim) *
             std::log(static_cast<float>(cfg.rope_orig_context) / (rotations * 2.0f * static_cast<float>(M_PI))) /
             (2.0f * std::log(cfg.rope_theta));
    };
    t.yarn = true;
    t.yarn_low = std::max(0.0f, std::floor(dim_for(cfg.rope_yarn_beta_fast)));
    t.yarn_high = std::min(static_cast<float>(cfg.rope_dim - 1), std::ceil(dim_for(cfg.rope_yarn_beta_slow)));
    t.mscale *= 1.0f + 0.1f * std::log(1.0f / cfg.rope_freq_scale);
  }
  return t;
}

RopeTable local_rope_table(const ModelConfig& cfg) {
  if (cfg.rope_theta_local <= 0.0f) return rope_table(cfg, 0);
  RopeTable t;
  t.theta = cfg.rope_theta_local;
  return t;
}

void rope_angles(const RopeTable& t, int rope_dim, int32_t pos, float* cos, float* sin) {
  const int half = rope_dim / 2;
  for (int i = 0; i < half; i++) {
    // Same float expression as llama2.c, so the reference outputs reproduce bit for bit.
    float freq = 1.0f / std::pow(t.theta, static_cast<float>(2 * i) / static_cast<float>(rope_dim));
    if (t.factors) freq /= t.factors[i];
    float val = static_cast<float>(pos) * t.freq_scale * freq;
    if (t.yarn) {  // the scaled angle blended with the unscaled one by the ramp (llama.cpp's rope_yarn)
      const float extrap = static_cast<float>(pos) * freq;
      const float ramp = 1.0f - std::min(1.0f, std::max(0.0f, (static_cast<float>(i) - t.yarn_low) /
                                                                   std::max(0.001f, t.yarn_high - t.yarn_low)));
      val = t.freq_scale * extrap * (1.0f - ramp) + extrap * ramp;
    }
    cos[i] = std::cos(val);
    sin[i] = std::sin(val);
    if (t.mscale != 1.0f) cos[i] *= t.mscale, sin[i] *= t.mscale;
  }
}

void rope_angles(const ModelConfig& cfg, int32_t pos, float* cos, float* sin) {
  rope_angles(rope_table(cfg, 0), cfg.rope_dim, pos, cos, sin);
}

std::vector<float> llama3_rope_freq_factors(float rope_theta, int rope_dim, double factor, double low_freq_factor,
                                            double high_freq_factor, double original_context) {
  const double low_freq_wavelen = original_context / low_freq_factor;
  const double high_freq_wavelen = original_context / high_freq_factor;
  std::vector<float> out;
  for (int i = 0; i < rope_dim / 2; i++) {
    const float freq = 1.0f / std::pow(rope_theta, static_cast<float>(2 * i) / static_cast<float>(rope_dim));
    const double wavelen = 2.0 * std::numbers::pi / freq;
    double divisor;
    if (wavelen < high_freq_wavelen) {
      divisor = 1.0;  // high frequencies: unchanged
    } else if (wavelen > low_freq_wavelen) {
      divisor = factor;  // low frequencies: fully scaled
    } else {  // in between: interpolate the frequency smoothly between scaled and unscaled
      const double smooth = (original_context / wavelen - low_freq_factor) / (high_freq_factor - low_freq_factor);
      divisor = 1.0 / ((1.0 - smooth) / factor + smooth);
    }
    out.push_back(static_cast<float>(divisor));
  }
  return out;
}

}  // namespace jf
