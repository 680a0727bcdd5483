// Classifier-free guidance (model/guided_forward.h) on the shipped text-to-image model: a guided row is exactly
// u + s(c - u) of the sequence and its unconditional twin computed apart, the twin's cache follows every
// rollback of a decoder that rolls back on every forward, and a greedy decoder stays the guided `ar`. (That the
// sampling decoders draw from the guided distribution is test_image_tokens' SjdOnImages.Guided*.)
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "base/error.h"
#include "base/rng.h"
#include "decode/jacobi.h"
#include "decode/sjd.h"
#include "model/guided_forward.h"
#include "model/loader.h"
#include "model/transformer.h"
#include "tokenizer/image_vocab.h"

namespace jf {
namespace {

constexpr float kScale = 3.0f;

struct Fixture {
  LoadedModel lm = load_model(JF_SOURCE_DIR "/models/emoji16-q8_0.gguf");
  ImageVocab iv = *ImageVocab::find(*lm.tokenizer);
  Transformer tf{lm.model->config(), lm.model->weights()};
  std::vector<int32_t> uncond = iv.unconditional_prefix(*lm.tokenizer);
  GuidedForward guided{tf, iv.marker(), uncond, kScale};
  int vocab = lm.model->config().vocab_size;

  std::vector<int32_t> colours(int n, uint64_t seed) const {
    Rng rng(seed);
    std::vector<int32_t> out;
    for (int i = 0; i < n; i++) out.push_back(iv.colour_tokens()[rng.below(iv.colour_tokens().size())]);
    return out;
  }
  // Every row's logits of one causal forward of `text` through `fwd`.
  std::vector<std::vector<float>> rows(ForwardPass& fwd, const std::vector<int32_t>& text) {
    KvCache cache = fwd.make_cache(256);
    SequenceInput in;
    in.set_causal(&cache, text, SequenceInput::Logits::All);
    const ForwardResult r = fwd.forward(in);
    std::vector<std::vector<float>> out;
    for (int i = 0; i < r.rows(); i++) out.emplace_back(r.logits(i), r.logits(i) + vocab);
    return out;
  }
};

Fixture& fixture() {
  static Fixture f;
  return f;
}

TEST(GuidedForward, RowsAreTheCombinationOfTheSequenceAndItsTwin) {
  Fixture& f = fixture();
  const std::vector<int32_t> prompt = f.iv.prompt(*f.lm.tokenizer, "red heart");
  const std::vector<int32_t> image = f.colours(40, 1);
  std::vector<int32_t> text = prompt, twin = f.uncond;
  text.insert(text.end(), image.begin(), image.end());
  twin.push_back(f.iv.marker());
  twin.insert(twin.end(), image.begin(), image.end());
  const auto guided = f.rows(f.guided, text), c = f.rows(f.tf, text), u = f.rows(f.tf, twin);
  const int anchor = static_cast<int>(prompt.size()) - 1, shift = anchor - static_cast<int>(f.uncond.size());
  int differs = 0;
  for (int r = 0; r < static_cast<int>(text.size()); r++)
    for (int v = 0; v < f.vocab; v++) {
      if (r < anchor) {  // the caption's rows are not guided
        ASSERT_EQ(guided[r][v], c[r][v]) << "row " << r;
        continue;
      }
      const float uu = u[r - shift][v];
      ASSERT_EQ(guided[r][v], uu + kScale * (c[r][v] - uu)) << "row " << r << ", token " << v;
      differs += guided[r][v] != c[r][v];
    }
  EXPECT_GT(differs, f.vocab * 10);  // (guidance moved the rows)
}

// SJD-PAC keeps a path of its tree and drops the rest on every forward; the twin must hold exactly what a
// fresh unconditional prefill of the committed tokens gives (bit for bit: batch invariance).
TEST(GuidedForward, TwinFollowsEveryRollback) {
  Fixture& f = fixture();
  Session s(f.guided, 512);
  SjdOptions o;
  o.block = 32;
  o.adaptive = false;
  o.pac_continue = true;
  o.pac_tree_depth = 3, o.pac_tree_width = 4;
  SjdDecoder sjd(o);
  GenerationConfig cfg;
  cfg.max_new_tokens = f.iv.pixels();
  cfg.ignore_eos = true;
  cfg.sampling.temperature = 1.0f;
  cfg.sampling.seed = 3;
  for (int32_t t : f.iv.other_tokens(f.vocab)) cfg.rules.bias[t] = -100.0f;
  const std::vector<int32_t> prompt = f.iv.prompt(*f.lm.tokenizer, "dog face");
  const GenerationResult r = sjd.generate(s, prompt, cfg);
  ASSERT_EQ(static_cast<int>(r.tokens.size()), f.iv.pixels());
  EXPECT_LT(r.stats.n_forwards, f.iv.pixels() * 9 / 10);  // (drafts were accepted, and rejected: rollbacks ran)
  EXPECT_GT(r.stats.n_forwards, 8);

  const KvCache& cache = s.cache();
  const KvFollower* twin = cache.follower();
  ASSERT_NE(twin, nullptr);
  ASSERT_GE(twin->from, 0);
  std::vector<int32_t> fresh = f.uncond;
  fresh.push_back(f.iv.marker());
  fresh.insert(fresh.end(), r.tokens.begin(), r.tokens.begin() + (cache.size() - static_cast<int>(prompt.size())));
  ASSERT_EQ(twin->cache->size(), static_cast<int>(fresh.size()));
  KvCache ref = f.tf.make_cache(512);
  SequenceInput in;
  in.set_causal(&ref, fresh, SequenceInput::Logits::None);
  f.tf.forward(in);
  const ModelConfig& c = f.tf.config();
  for (int l = 0; l < c.n_layers; l++)
    for (int slot = 0; slot < ref.size(); slot++) {
      ASSERT_EQ(twin->cache->position(slot), ref.position(slot)) << "slot " << slot;
      for (int i = 0; i < c.kv_dim(); i++) {
        ASSERT_EQ(twin->cache->key(l, slot, i), ref.key(l, slot, i)) << "layer " << l << ", slot " << slot;
        ASSERT_EQ(twin->cache->value(l, slot, i), ref.value(l, slot, i)) << "layer " << l << ", slot " << slot;
      }
    }
}

TEST(GuidedForward, GreedyJacobiIsGuidedAr) {
  Fixture& f = fixture();
  GenerationConfig cfg;
  cfg.max_new_tokens = 96;
  cfg.ignore_eos = true;
  cfg.sampling.temperature = 0.0f;
  for (int32_t t : f.iv.other_tokens(f.vocab)) cfg.rules.bias[t] = -100.0f;
  const std::vector<int32_t> prompt = f.iv.prompt(*f.lm.tokenizer, "green heart");
  Session guided(f.guided, 512), plain(f.tf, 512);
  ArDecoder ar;
  JacobiOptions jo;
  jo.block = 16;
  JacobiDecoder jacobi(jo);
  const std::vector<int32_t> want = ar.generate(guided, prompt, cfg).tokens;
  const GenerationResult got = jacobi.generate(guided, prompt, cfg);
  EXPECT_EQ(got.tokens, want);
  EXPECT_LT(got.stats.n_forwards, cfg.max_new_tokens);  // (several tokens a forward: rollbacks ran)
  EXPECT_NE(ar.generate(plain, prompt, cfg).tokens, want);  // (guidance changed the image)
}

// A cache copied from another (the server's prefix reuse) takes the source twin's slots with it: the copy then
// continues exactly as the source would; a copy that stops before the anchor leaves an empty twin, primed again
// when the anchor comes.
TEST(GuidedForward, CopiedPrefixesCarryTheirTwin) {
  Fixture& f = fixture();
  std::vector<int32_t> text = f.iv.prompt(*f.lm.tokenizer, "red heart");
  const int anchor = static_cast<int>(text.size()) - 1;
  const std::vector<int32_t> image = f.colours(12, 2);
  text.insert(text.end(), image.begin(), image.end());
  const auto want = f.rows(f.guided, text);
  KvCache source = f.guided.make_cache(256);
  SequenceInput in;
  in.set_causal(&source, std::span<const int32_t>(text).first(anchor + 6), SequenceInput::Logits::None);
  f.guided.forward(in);
  for (int cut : {anchor + 4, anchor - 1}) {
    KvCache copy = f.guided.make_cache(256);
    copy.copy_prefix(source, cut);
    EXPECT_EQ(copy.follower()->from, cut > anchor ? anchor : -1);
    in.set_causal(&copy, std::span<const int32_t>(text).subspan(static_cast<size_t>(cut)), SequenceInput::Logits::All);
    const ForwardResult r = f.guided.forward(in);
    for (int i = 0; i < r.rows(); i++)
      for (int v = 0; v < f.vocab; v++) ASSERT_EQ(r.logits(i)[v], want[static_cast<size_t>(cut + i)][v]) << "cut " << cut << ", row " << i;
  }
}

TEST(GuidedForward, ErrorsNameTheProblem) {
  Fixture& f = fixture();
  KvCache plain = f.tf.make_cache(64);
  SequenceInput in;
  in.set_causal(&plain, f.iv.prompt(*f.lm.tokenizer, "dog"), SequenceInput::Logits::Last);
  EXPECT_THROW(f.guided.forward(in), Error);  // a cache without a twin
  KvCache cache = f.guided.make_cache(64);
  in.set_causal(&cache, f.iv.prompt(*f.lm.tokenizer, "dog"), SequenceInput::Logits::Last);
  f.guided.forward(in);
  const int32_t slots[] = {cache.size() - 1};
  EXPECT_THROW(cache.keep(cache.size() - 2, slots), Error);  // the anchor moved: the twin cannot follow
  EXPECT_THROW(GuidedForward(f.tf, f.iv.marker(), f.uncond, -1.0f), Error);
  EXPECT_THROW(GuidedForward(f.tf, -5, f.uncond, 2.0f), Error);
  EXPECT_THROW(GuidedForward(f.tf, f.iv.marker(), {f.iv.marker()}, 2.0f), Error);
}

}  // namespace
}  // namespace jf
