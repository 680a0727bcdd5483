// The Vulkan backend's row operations, each against the CPU's (kernels/ops.h) or a double-precision reference:
// RMSNorm (plain, gathered, accumulated), RoPE (both styles), SwiGLU and GeGLU, soft-cap, argmax (ties to the
// lowest index), attention (GQA, a slot list, soft-capped scores, an fp16 cache) and the KV slot moves of keep().
#include <cmath>
#include <cstring>
#include <vector>

#include "base/rng.h"
#include "kernels/dtype.h"
#include "kernels/ops.h"
#include "vulkan/buffer.h"
#include "vulkan/kernels.h"
#include "vulkan/recorder.h"
#include "vulkan_support.h"

namespace jf {
namespace {

using vulkan::Buffer;

std::vector<float> random_floats(size_t n, uint64_t seed, float scale = 1.0f) {
  Rng r(seed);
  std::vector<float> v(n);
  for (float& x : v) x = (r.uniform() * 2.0f - 1.0f) * scale;
  return v;
}

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

// RoPE on q in place, and the keys (rotated) and values into their rows' cache slots, in one dispatch: the
// CPU's rope on q and k, the unrotated dims past rope_dim kept, both pair styles, rows 1..3 of 4 (row0).
TEST(VulkanOps, RopeAndKvStoreBothStyles) {
  JF_VULKAN_DEVICE(device);
  Ops o(device);
  const uint32_t rows = 4, row0 = 1, heads = 4, kv_heads = 2, hd = 16, rope_dim = 12, half = rope_dim / 2, cap = 9;
  const std::vector<float> q = random_floats(rows * heads * hd, 4), k = random_floats(rows * kv_heads * hd, 6),
                           v = random_floats(rows * kv_heads * hd, 7), angles = random_floats(2 * rows * half, 5, 3.0f);
  const int32_t slots[rows] = {0, 7, 2, 5};
  std::vector<float> arena(5 * rows + angles.size());  // the row table (ints), then the angles
  for (uint32_t r = 0; r < rows; r++) std::memcpy(&arena[5 * r], &slots[r], 4);
  std::copy(angles.begin(), angles.end(), arena.begin() + 5 * rows);
  for (RopeStyle style : {RopeStyle::Interleaved, RopeStyle::Neox}) {
    Buffer bq = o.buffer(q), bk = o.buffer(k), bv = o.buffer(v), ba = o.buffer(arena);
    Buffer ck = o.buffer(std::vector<float>(kv_heads * cap * hd, -1.0f)), cv = o.buffer(std::vector<float>(kv_heads * cap * hd, -1.0f));
    struct {
      uint32_t row0, n_rows, n_heads, n_kv_heads, head_dim, half_dim, neox, capacity, info_off, cos_off, sin_off;
    } p{row0, rows - row0, heads, kv_heads, hd, half, style == RopeStyle::Neox ? 1u : 0u, cap, 0, 5 * rows, 5 * rows + rows * half};
    o.run("rope_store_f32", {bq.view(), bk.view(), bv.view(), ck.view(), cv.view(), ba.view()}, p,
          ((rows - row0) * (heads * half + 2 * kv_heads * hd) + 63) / 64);
    std::vector<float> want_q = q, want_k = k, want_ck(kv_heads * cap * hd, -1.0f), want_cv = want_ck;
    for (uint32_t r = row0; r < rows; r++) {
      const float *cos = &angles[r * half], *sin = &angles[rows * half + r * half];
      rope(&want_q[r * heads * hd], heads, hd, rope_dim, cos, sin, style);
      rope(&want_k[r * kv_heads * hd], kv_heads, hd, rope_dim, cos, sin, style);
      for (uint32_t c = 0; c < kv_heads * hd; c++) {
        const uint32_t at = ((c / hd) * cap + static_cast<uint32_t>(slots[r])) * hd + c % hd;
        want_ck[at] = want_k[r * kv_heads * hd + c], want_cv[at] = v[r * kv_heads * hd + c];
      }
    }
    const std::string what = style == RopeStyle::Neox ? "neox" : "interleaved";
    expect_close(Ops::read(bq, q.size()), want_q, 1e-6f, what + " q");
    expect_close(Ops::read(ck, want_ck.size()), want_ck, 1e-6f, what + " keys");
    expect_close(Ops::read(cv, want_cv.size()), want_cv, 0.0f, what + " values");
  }
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
  const std::vector<int32_t> info{0, 0, n0, 0, n0, 0, n0, n0 + n1, n0, n0 + n1};
  for (bool f16 : {false, true}) {
    std::vector<uint16_t> k16(k.size()), v16(v.size());
    for (size_t i = 0; i < k.size(); i++) k16[i] = f32_to_f16(k[i]), v16[i] = f32_to_f16(v[i]);
    Buffer bq = o.buffer(q), bk = f16 ? o.buffer(k16) : o.buffer(k), bv = f16 ? o.buffer(v16) : o.buffer(v);
    Buffer bi = o.buffer(info), bs = o.buffer(slots), out = o.buffer(std::vector<float>(rows * heads * hd));
    struct {
      uint32_t row0, n_heads, n_kv_heads, head_dim, capacity, info_off, slots_off, local;
      float scale, cap;
    } p{0, heads, kv_heads, hd, cap, 0, 0, 0, 0.2f, 5.0f};
    o.run(f16 ? "attention_f16" : "attention_f32", {bq.view(), bk.view(), bv.view(), bi.view(), bs.view(), out.view()}, p, rows, heads);
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

}  // namespace
}  // namespace jf
