// Deterministic random numbers: xorshift* (the generator llama2.c samples with, so seeded runs match
// its reference outputs) plus helpers for uniform floats and normals.
#pragma once
#include <cmath>
#include <cstdint>

namespace jf {

class Rng {
 public:
  explicit Rng(uint64_t seed = 42) : state_(seed ? seed : 0x9E3779B97F4A7C15ull) {}
  uint32_t next_u32() {
    state_ ^= state_ >> 12;
    state_ ^= state_ << 25;
    state_ ^= state_ >> 27;
    return static_cast<uint32_t>((state_ * 0x2545F4914F6CDD1Dull) >> 32);
  }
  float uniform() { return static_cast<float>(next_u32() >> 8) / 16777216.0f; }  // [0, 1)
  uint32_t below(uint32_t n) { return static_cast<uint32_t>((static_cast<uint64_t>(next_u32()) * n) >> 32); }
  float normal() {  // Box-Muller
    float u1 = uniform(), u2 = uniform();
    if (u1 < 1e-12f) u1 = 1e-12f;
    return std::sqrt(-2.0f * std::log(u1)) * std::cos(6.2831853f * u2);
  }
  uint64_t state() const { return state_; }

 private:
  uint64_t state_;
};

}  // namespace jf
