// The Vulkan backend's row operations, each against the CPU's (kernels/ops.h) or a double-precision reference:
// RMSNorm (plain, gathered, accumulated), soft-cap, argmax (ties to the lowest index), attention (GQA, a slot
// list, soft-capped scores, an fp16 cache; RoPE and the KV store of its own rows, both styles) and the KV slot
// moves of keep().
#include <cmath>
#include <cstring>
#include <vector>

#include "base/rng.h"
#include "kernels/dtype.h"
#include "kernels/ops.h"
#include "vulkan/bandwidth.h"
#include "vulkan/buffer.h"
#include "vulkan/kernels.h"
#include "vulkan/recorder.h"
#include "vulkan_matmul_support.h"
#include "vulkan_support.h"

namespace jf {
namespace {

using vulkan::Buffer;

using test::random_floats;

// Host-visible buffers (the shaders read them directly) and one-dispatch runs.
struct Ops {
  explicit Ops(int device) : ctx(device), kernels(ctx) {}
  template <class T>
  Buffer buffer(const std::vector<T>& v) {
    Buffer b(ctx, std::max<size_t>(v.size() * sizeof(T), 16), Buffer::Kind::Host);
    std::memcpy(b.mapped(), v.data(), v.size() * sizeof(T));
    return b;
  }
  template <class P>
  void run(const std::string& shader, std::initializer_list<vulkan::View> views, const P& p, uint32_t x, uint32_t y = 1) {
    vulkan::Recorder rec(ctx);
    rec.begin();
    rec.dispatch(kernels.get(shader, static_cast<uint32_t>(views.size())), views, p, x, y);
    rec.finish();
  }
  template <class T = float>
  static std::vector<T> read(const Buffer& b, size_t n) {
    const T* p = static_cast<const T*>(b.mapped());
    return std::vector<T>(p, p + n);
  }
  vulkan::Context ctx;
  vulkan::Kernels kernels;
};

void expect_close(const std::vector<float>& got, const std::vector<float>& want, float tol, const std::string& what) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); i++) ASSERT_NEAR(got[i], want[i], tol * (1 + std::fabs(want[i]))) << what << " [" << i << "]";
}

TEST(VulkanOps, RmsNormPlainGatheredAndAccumulated) {
  JF_VULKAN_DEVICE(device);
  Ops o(device);
  const uint32_t rows = 5, n = 200;
  const std::vector<float> x = random_floats(rows * n, 1), g = random_floats(n, 2), base = random_floats(rows * n, 3);
  Buffer bx = o.buffer(x), bg = o.buffer(g), out = o.buffer(base), gather = o.buffer(std::vector<int32_t>{4, 0, 2});
  struct {
    uint32_t n_rows, n, x_off, x_stride, out_off, out_stride, g_off, gather, gather_off, accumulate;
    float eps;
  } p{rows, n, 0, n, 0, n, 0, 0, 0, 0, 1e-5f};
  std::vector<float> want(rows * n);
  for (uint32_t r = 0; r < rows; r++) rmsnorm(&x[r * n], g.data(), n, 1e-5f, &want[r * n]);
  o.run("rmsnorm", {bx.view(), out.view(), bg.view(), gather.view()}, p, rows);
  expect_close(Ops::read(out, rows * n), want, 1e-5f, "rmsnorm");
  p.gather = 1, p.n_rows = 3, p.accumulate = 1;  // rows 4, 0, 2 added to what is there
  std::memcpy(out.mapped(), base.data(), base.size() * 4);
  o.run("rmsnorm", {bx.view(), out.view(), bg.view(), gather.view()}, p, 3);
  const int src[3] = {4, 0, 2};
  std::vector<float> added(3 * n);
  for (int r = 0; r < 3; r++)
    for (uint32_t i = 0; i < n; i++) added[r * n + i] = base[r * n + i] + want[src[r] * n + i];
  expect_close(Ops::read(out, 3 * n), added, 1e-5f, "gathered, accumulated");
}

// (The gated activations run inside the down projection's input loads: test_vulkan_kernels.cpp.)
TEST(VulkanOps, SoftcapAndArgmax) {
  JF_VULKAN_DEVICE(device);
  Ops o(device);
  const uint32_t n = 1000;
  const std::vector<float> gate = random_floats(n, 6, 4.0f);
  Buffer bx = o.buffer(gate);
  struct {
    uint32_t n, off;
    float cap;
  } pc{n, 0, 3.0f};
  o.run("softcap", {bx.view()}, pc, (n + 63) / 64);
  std::vector<float> want = gate;
  softcap(want.data(), n, 3.0f);
  expect_close(Ops::read(bx, n), want, 1e-5f, "softcap");
  // argmax over 3 rows: a plain one, one whose maximum appears twice (the lower index wins), one of equals
  std::vector<float> rows = random_floats(3 * n, 8);
  rows[n + 700] = rows[n + 100] = 5.0f;
  std::fill(rows.begin() + 2 * n, rows.end(), 1.0f);
  Buffer br = o.buffer(rows), out = o.buffer(std::vector<int32_t>(3, -1));
  struct {
    uint32_t n_rows, n, x_off, out_off;
  } pa{3, n, 0, 0};
  o.run("argmax", {br.view(), out.view()}, pa, 3);
  const std::vector<int32_t> got = Ops::read<int32_t>(out, 3);
  EXPECT_EQ(got[0], argmax(rows.data(), n));
  EXPECT_EQ(got[1], 100);
  EXPECT_EQ(got[2], 0);
}

// Top k with softmax probabilities (a draft tree's guesses on the device) against the CPU's softmax_top_k, for
// k = 1, 4, 16: rows with ties (the lower index first), NaN and -inf (nothing), a row of equals, a row shorter
// than k's finite values, and a length that is not a multiple of the workgroup.
TEST(VulkanOps, TopKIsTheCpusSoftmaxTopK) {
  JF_VULKAN_DEVICE(device);
  Ops o(device);
  const uint32_t n = 1003, R = 5;
  std::vector<float> rows = random_floats(R * n, 9, 6.0f);
  rows[n + 700] = rows[n + 100] = rows[n + 40] = 9.0f;  // a three-way tie at the top
  rows[n + 5] = NAN, rows[n + 6] = -INFINITY;
  std::fill(rows.begin() + 2 * n, rows.begin() + 3 * n, 1.0f);
  std::fill(rows.begin() + 3 * n, rows.begin() + 4 * n, -INFINITY);
  rows[3 * n + 500] = 2.0f, rows[3 * n + 3] = 1.0f;
  for (uint32_t k : {1u, 4u, 16u}) {
    Buffer br = o.buffer(rows), out = o.buffer(std::vector<uint32_t>(2 * k * R, 7));
    struct {
      uint32_t n_rows, n, k, x_off, out_off;
    } p{R, n, k, 0, 0};
    o.run("top_k", {br.view(), out.view()}, p, R);
    const std::vector<uint32_t> got = Ops::read<uint32_t>(out, 2 * k * R);
    for (uint32_t r = 0; r < R; r++) {
      std::vector<int32_t> ids(k);
      std::vector<float> probs(k);
      softmax_top_k(&rows[r * n], n, static_cast<int>(k), ids.data(), probs.data());
      for (uint32_t j = 0; j < k; j++) {
        const uint32_t* row = &got[r * 2 * k];
        float prob;
        std::memcpy(&prob, &row[k + j], 4);
        if (r == 3 && j >= 2) {  // (past the finite values: the CPU's -inf entries have probability 0 too)
          EXPECT_EQ(prob, 0.0f) << "k " << k << " row " << r << " guess " << j;
          continue;
        }
        EXPECT_EQ(static_cast<int32_t>(row[j]), ids[j]) << "k " << k << " row " << r << " guess " << j;
        EXPECT_NEAR(prob, probs[j], 1e-6f + 1e-5f * probs[j]) << "k " << k << " row " << r << " guess " << j;
      }
    }
  }
}

// Attention of 2 rows over a slot list against a double-precision softmax, for f32 and f16 caches.
TEST(VulkanOps, AttentionOverASlotList) {
  JF_VULKAN_DEVICE(device);
  Ops o(device);
  const uint32_t heads = 4, kv_heads = 2, hd = 32, cap = 150, rows = 2;
  const std::vector<float> q = random_floats(rows * heads * hd, 9), k = random_floats(kv_heads * cap * hd, 10),
                           v = random_floats(kv_heads * cap * hd, 11);
  std::vector<int32_t> slots;
  for (int s = 0; s < 140; s += 1) slots.push_back(s);  // row 0: 140 slots (three chunks of 64)
  for (int s = 3; s < 100; s += 7) slots.push_back(s);  // row 1: every 7th
  const int32_t n0 = 140, n1 = static_cast<int32_t>(slots.size()) - 140;
  const std::vector<int32_t> info{145, 0, n0, 0, n0, 146, n0, n0 + n1, n0, n0 + n1};  // (own slots 145, 146: seen by no row)
  for (bool f16 : {false, true}) {
    std::vector<uint16_t> k16(k.size()), v16(v.size());
    for (size_t i = 0; i < k.size(); i++) k16[i] = f32_to_f16(k[i]), v16[i] = f32_to_f16(v[i]);
    Buffer bq = o.buffer(q), bk = f16 ? o.buffer(k16) : o.buffer(k), bv = f16 ? o.buffer(v16) : o.buffer(v);
    Buffer bi = o.buffer(info), bs = o.buffer(slots), out = o.buffer(std::vector<float>(rows * heads * hd));
    struct {
      uint32_t row0, n_heads, n_kv_heads, head_dim, capacity, info_off, slots_off, local;
      float scale, cap;
      uint32_t half_dim, neox, cos_off, sin_off;
    } p{0, heads, kv_heads, hd, cap, 0, 0, 0, 0.2f, 5.0f, 0, 0, 0, 0};  // (no RoPE; no own rows)
    Buffer own = o.buffer(std::vector<float>(rows * kv_heads * hd));  // (their keys and values: stored, not read)
    o.run(f16 ? "attention_f16" : "attention_f32", {bq.view(), bk.view(), bv.view(), bi.view(), bs.view(), out.view(), own.view(), own.view()}, p,
          rows, heads);
    auto el = [&](const std::vector<float>& x, size_t i) { return f16 ? f16_to_f32(f32_to_f16(x[i])) : x[i]; };
    std::vector<float> want(rows * heads * hd);
    for (uint32_t r = 0; r < rows; r++)
      for (uint32_t h = 0; h < heads; h++) {
        const int32_t first = info[r * 5 + 1], end = info[r * 5 + 2];
        const size_t base = (h / 2) * cap * hd;
        std::vector<double> s;
        double mx = -1e300, sum = 0;
        for (int32_t j = first; j < end; j++) {
          double d = 0;
          for (uint32_t i = 0; i < hd; i++) d += double(q[(r * heads + h) * hd + i]) * el(k, base + slots[j] * hd + i);
          s.push_back(5.0 * std::tanh(d * 0.2 / 5.0));
          mx = std::max(mx, s.back());
        }
        for (double& x : s) sum += x = std::exp(x - mx);
        for (uint32_t i = 0; i < hd; i++) {
          double a = 0;
          for (int32_t j = first; j < end; j++) a += s[j - first] * el(v, base + slots[j] * hd + i);
          want[(r * heads + h) * hd + i] = static_cast<float>(a / sum);
        }
      }
    expect_close(Ops::read(out, want.size()), want, 1e-5f, f16 ? "f16 cache" : "f32 cache");
  }
}

// Attention with its rows' RoPE and KV store folded in: rows 1..3 of 4 (row0 1) of one sequence over a cache
// of earlier slots and each other (their own slots -(row + 2) in the list, read from this forward's keys and
// values): the output against RoPE then a double-precision softmax over the rotated keys, and the rows' rotated
// keys and values stored in their slots; both pair styles, dims past rope_dim unrotated, f32 and f16 caches.
TEST(VulkanOps, AttentionRotatesItsRowsReadsThemAndStoresThem) {
  JF_VULKAN_DEVICE(device);
  Ops o(device);
  const uint32_t rows = 4, row0 = 1, heads = 4, kv_heads = 2, hd = 16, rope_dim = 12, half = rope_dim / 2, cap = 12, past = 6;
  const std::vector<float> q = random_floats(rows * heads * hd, 4), k = random_floats(rows * kv_heads * hd, 6),
                           v = random_floats(rows * kv_heads * hd, 7), angles = random_floats(2 * rows * half, 5, 3.0f),
                           old_k = random_floats(kv_heads * cap * hd, 8), old_v = random_floats(kv_heads * cap * hd, 9);
  const int32_t own[rows] = {11, 7, 10, 8};  // the rows' cache slots (row 0 is another pass's: not run)
  // Row r (1..3) sees slots 0..past-1 of the cache, then rows 1..r (encoded).
  std::vector<int32_t> arena(5 * rows), list;
  for (uint32_t r = row0; r < rows; r++) {
    const int32_t begin = static_cast<int32_t>(list.size());
    for (uint32_t s = 0; s < past; s++) list.push_back(static_cast<int32_t>(s));
    for (uint32_t j = row0; j <= r; j++) list.push_back(-static_cast<int32_t>(j) - 2);
    const int32_t end = static_cast<int32_t>(list.size());
    const int32_t row[5] = {own[r], begin, end, begin, end};
    std::copy(row, row + 5, arena.begin() + 5 * r);
  }
  const uint32_t slots_off = static_cast<uint32_t>(arena.size());
  arena.insert(arena.end(), list.begin(), list.end());
  const uint32_t cos_off = static_cast<uint32_t>(arena.size()), sin_off = cos_off + rows * half;
  for (float a : angles) {
    int32_t bits;
    std::memcpy(&bits, &a, 4);
    arena.push_back(bits);
  }
  for (bool f16 : {false, true})
    for (RopeStyle style : {RopeStyle::Interleaved, RopeStyle::Neox}) {
      const std::string what = std::string(style == RopeStyle::Neox ? "neox" : "interleaved") + (f16 ? " f16" : " f32");
      auto el = [&](float x) { return f16 ? f16_to_f32(f32_to_f16(x)) : x; };
      std::vector<uint16_t> k16(old_k.size()), v16(old_v.size());
      for (size_t i = 0; i < old_k.size(); i++) k16[i] = f32_to_f16(old_k[i]), v16[i] = f32_to_f16(old_v[i]);
      Buffer bq = o.buffer(q), bk = o.buffer(k), bv = o.buffer(v), ba = o.buffer(arena), out = o.buffer(std::vector<float>(rows * heads * hd));
      Buffer ck = f16 ? o.buffer(k16) : o.buffer(old_k), cv = f16 ? o.buffer(v16) : o.buffer(old_v);
      struct {
        uint32_t row0, n_heads, n_kv_heads, head_dim, capacity, info_off, slots_off, local;
        float scale, cap;
        uint32_t half_dim, neox, cos_off, sin_off;
      } p{row0, heads, kv_heads, hd, cap, 0, slots_off, 0, 0.25f, 0.0f, half, style == RopeStyle::Neox ? 1u : 0u, cos_off, sin_off};
      o.run(f16 ? "attention_f16" : "attention_f32", {bq.view(), ck.view(), cv.view(), ba.view(), ba.view(), out.view(), bk.view(), bv.view()},
            p, rows - row0, heads);
      // The reference: the rows' q and k rotated (the CPU's rope), then attention over the cache and the rows.
      std::vector<float> rq = q, rk = k;
      for (uint32_t r = 0; r < rows; r++) {
        const float *c = &angles[r * half], *s = &angles[rows * half + r * half];
        rope(&rq[r * heads * hd], heads, hd, rope_dim, c, s, style);
        rope(&rk[r * kv_heads * hd], kv_heads, hd, rope_dim, c, s, style);
      }
      std::vector<float> got_ck(old_k.size()), got_cv(old_v.size());
      for (size_t i = 0; i < old_k.size(); i++)
        got_ck[i] = f16 ? f16_to_f32(Ops::read<uint16_t>(ck, old_k.size())[i]) : Ops::read(ck, old_k.size())[i],
        got_cv[i] = f16 ? f16_to_f32(Ops::read<uint16_t>(cv, old_v.size())[i]) : Ops::read(cv, old_v.size())[i];
      std::vector<float> want(rows * heads * hd, 0.0f), want_ck(old_k.size()), want_cv(old_v.size());
      for (size_t i = 0; i < old_k.size(); i++) want_ck[i] = el(old_k[i]), want_cv[i] = el(old_v[i]);
      for (uint32_t r = row0; r < rows; r++)
        for (uint32_t c = 0; c < kv_heads * hd; c++) {
          const size_t at = ((c / hd) * cap + static_cast<uint32_t>(own[r])) * hd + c % hd;
          want_ck[at] = el(rk[r * kv_heads * hd + c]), want_cv[at] = el(v[r * kv_heads * hd + c]);
        }
      for (uint32_t r = row0; r < rows; r++)
        for (uint32_t h = 0; h < heads; h++) {
          const uint32_t kvh = h / (heads / kv_heads);
          std::vector<float> keys, vals;  // every visible key and value, as the cache holds them
          for (int32_t e : std::vector<int32_t>(list.begin() + arena[5 * r + 1], list.begin() + arena[5 * r + 2])) {
            for (uint32_t d = 0; d < hd; d++) {
              if (e >= 0) {
                keys.push_back(el(old_k[(kvh * cap + e) * hd + d])), vals.push_back(el(old_v[(kvh * cap + e) * hd + d]));
              } else {
                const uint32_t j = static_cast<uint32_t>(-e - 2);
                keys.push_back(el(rk[(j * kv_heads + kvh) * hd + d])), vals.push_back(el(v[(j * kv_heads + kvh) * hd + d]));
              }
            }
          }
          const size_t n = keys.size() / hd;
          std::vector<double> s(n);
          double mx = -1e300, sum = 0;
          for (size_t j = 0; j < n; j++) {
            double dot = 0;
            for (uint32_t d = 0; d < hd; d++) dot += double(rq[(r * heads + h) * hd + d]) * keys[j * hd + d];
            mx = std::max(mx, s[j] = dot * 0.25);
          }
          for (double& x : s) sum += x = std::exp(x - mx);
          for (uint32_t d = 0; d < hd; d++) {
            double a = 0;
            for (size_t j = 0; j < n; j++) a += s[j] * vals[j * hd + d];
            want[(r * heads + h) * hd + d] = static_cast<float>(a / sum);
          }
        }
      expect_close(Ops::read(out, want.size()), want, 1e-5f, what + " output");
      expect_close(got_ck, want_ck, f16 ? 1e-3f : 1e-6f, what + " keys stored");
      expect_close(got_cv, want_cv, 0.0f, what + " values stored");
    }
}

// An fp16 cache holds a row's key and value rounded to the nearest fp16 value, ties to even, as the CPU
// converts: stored, and read back by this forward's own rows with the very same bits (else a row's output
// would depend on whether its neighbours came in its forward: an H200's compiler rounded float(float16_t(x))
// its own way). One row that sees only itself with q = 0: its output is its value as the cache holds it.
TEST(VulkanOps, Fp16CacheRoundsToNearestEvenBothWays) {
  JF_VULKAN_DEVICE(device);
  Ops o(device);
  const uint32_t heads = 4, kv_heads = 4, hd = 64, n = kv_heads * hd, cap = 2;
  const float t11 = std::ldexp(1.0f, -11), t24 = std::ldexp(1.0f, -24), t25 = std::ldexp(1.0f, -25);
  std::vector<float> v{0.0f, -0.0f, 65504.0f, 65505.0f, 65519.0f, 65520.0f, -65520.0f, 1e10f, -3e38f,
                       std::ldexp(1.0f, -14), std::ldexp(1.0f, -14) * (1 - t11 / 2), t24, t25, -t25, t25 * 1.0001f,
                       3 * t25, 5 * t25, 1 + t11, 1 + 3 * t11, -(1 + 3 * t11), 1 + t11 * 1.0001f, 1e-40f, -1e-40f,
                       std::ldexp(1.0f, -15) * 1.5f, std::ldexp(1.0f, -20) * 1.25f, 2047.5f, 4095.0f, 4097.0f};
  const std::vector<float> spread = random_floats(n, 12);
  for (size_t i = v.size(); i < n; i++) v.push_back(spread[i] * std::pow(10.0f, static_cast<float>(i % 13) - 8.0f));
  std::vector<float> k = v;  // the keys too, but finite (q = 0 times an infinite key would give NaN scores)
  for (float& x : k) x = std::isfinite(f16_to_f32(f32_to_f16(x))) ? x : 1.0f;
  const std::vector<int32_t> arena{1, 5, 6, 5, 6, -2};  // the row: slot 1, its list [5, 6) = {itself}
  Buffer bq = o.buffer(std::vector<float>(heads * hd, 0.0f)), bk = o.buffer(k), bv = o.buffer(v), ba = o.buffer(arena);
  Buffer ck = o.buffer(std::vector<uint16_t>(kv_heads * cap * hd)), cv = o.buffer(std::vector<uint16_t>(kv_heads * cap * hd));
  Buffer out = o.buffer(std::vector<float>(heads * hd));
  struct {
    uint32_t row0, n_heads, n_kv_heads, head_dim, capacity, info_off, slots_off, local;
    float scale, cap;
    uint32_t half_dim, neox, cos_off, sin_off;
  } p{0, heads, kv_heads, hd, cap, 0, 0, 0, 1.0f, 0.0f, 0, 0, 0, 0};  // (no RoPE)
  o.run("attention_f16", {bq.view(), ck.view(), cv.view(), ba.view(), ba.view(), out.view(), bk.view(), bv.view()}, p, 1, heads);
  const std::vector<float> got = Ops::read(out, n);
  const std::vector<uint16_t> got_k = Ops::read<uint16_t>(ck, kv_heads * cap * hd), got_v = Ops::read<uint16_t>(cv, kv_heads * cap * hd);
  for (uint32_t i = 0; i < n; i++) {
    const uint32_t at = ((i / hd) * cap + 1) * hd + i % hd;
    const float want = f16_to_f32(f32_to_f16(v[i]));
    EXPECT_EQ(got[i], want) << "value " << v[i] << " read back";  // (by value: the softmax's sum makes -0 +0)
    EXPECT_EQ(got_v[at], f32_to_f16(v[i])) << "value " << v[i] << " stored";
    EXPECT_EQ(got_k[at], f32_to_f16(k[i])) << "key " << k[i] << " stored";
  }
}

// keep()'s slot moves, applied in order (a moved slot may be a later move's source).
TEST(VulkanOps, KvMovesApplyInOrder) {
  JF_VULKAN_DEVICE(device);
  Ops o(device);
  const uint32_t kv_heads = 2, hd = 8, cap = 10;
  std::vector<float> data(kv_heads * cap * hd);
  for (size_t i = 0; i < data.size(); i++) data[i] = float(i);
  const std::vector<int32_t> moves{4, 2, 5, 3, 7, 4};  // slots 4, 5, 7 -> 2, 3, 4
  Buffer bd = o.buffer(data), bm = o.buffer(moves);
  struct {
    uint32_t columns, head_dim, capacity, n_moves, moves_off;
  } p{kv_heads * hd, hd, cap, 3, 0};
  o.run("kv_move_f32", {bd.view(), bm.view()}, p, 1);
  std::vector<float> want = data;
  for (int m = 0; m < 3; m++)
    for (uint32_t h = 0; h < kv_heads; h++)
      for (uint32_t i = 0; i < hd; i++) want[(h * cap + moves[2 * m + 1]) * hd + i] = want[(h * cap + moves[2 * m]) * hd + i];
  EXPECT_EQ(Ops::read(bd, data.size()), want);
}


// The one-shot read probe (`jf devices --read-probe`): every (size, loads) pair timed, sizes rounded to whole
// 16-byte words, and each dispatch's reads checked inside the probe (the thread laid out to load the last word
// finds its marker; a probe whose loads were dropped or misplaced throws, which fails this test).
TEST(VulkanOps, ReadProbeTimesEveryPairAndItsLoadsRun) {
  JF_VULKAN_DEVICE(device);
  vulkan::Context ctx(device);
  if (!ctx.timestamps()) GTEST_SKIP() << ctx.info().name << " has no timestamps";
  const std::vector<vulkan::OneShotRead> r = vulkan::probe_one_shot_reads(ctx, {1000, 70'000, 16}, {1, 3, 8}, 2);
  ASSERT_EQ(r.size(), 9u);
  for (size_t i = 0; i < r.size(); i++) {
    EXPECT_EQ(r[i].bytes, std::vector<size_t>({992, 70'000, 16})[i / 3]) << i;
    EXPECT_EQ(r[i].loads, std::vector<int>({1, 3, 8})[i % 3]) << i;
    EXPECT_TRUE(std::isfinite(r[i].seconds) && r[i].seconds > 0) << i;
  }
  EXPECT_THROW(vulkan::probe_one_shot_reads(ctx, {4096}, {9}), Error);
  EXPECT_THROW(vulkan::probe_one_shot_reads(ctx, {4096}, {0}), Error);
}

// A buffer freed while a recording binds it (grown in the middle of a recording, say) is a use after free when
// the recording runs; lavapipe does not fault on it, so the context refuses to submit such a recording.
TEST(VulkanOps, ARecordingThatBindsAFreedBufferIsRefused) {
  JF_VULKAN_DEVICE(device);
  Ops o(device);
  Buffer src = o.buffer(std::vector<float>{1, 2, 3, 4}), dst = o.buffer(std::vector<float>{0, 0, 0, 0});
  vulkan::Recorder rec(o.ctx);
  rec.begin();
  rec.copy(src.view(), dst.view());
  src = Buffer(o.ctx, 16, Buffer::Kind::Host);  // the bound one freed, as ensure_size does
  EXPECT_THROW(rec.finish(), Error);
  rec.begin();  // a new recording of the same command buffer binds only what it binds
  rec.copy(src.view(), dst.view());
  EXPECT_NO_THROW(rec.finish());
  Buffer kept(o.ctx, 16, Buffer::Kind::Host);
  rec.begin();
  rec.copy(kept.view(), dst.view());
  rec.finish();
  kept = Buffer();  // freed after the recording ran: fine until it runs again
  rec.begin();
  rec.copy(src.view(), dst.view());
  EXPECT_NO_THROW(rec.finish());
}

}  // namespace
}  // namespace jf
