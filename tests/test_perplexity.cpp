// Perplexity's two ways of cutting a text (jf's windows, llama-perplexity's chunks) against hand-written
// expectations, and score_context against a token-at-a-time computation of the same NLL.
#include <gtest/gtest.h>

#include <cmath>
#include <numeric>

#include "base/error.h"
#include "model/batch.h"
#include "model/perplexity.h"
#include "model/random_model.h"

namespace jf {
namespace {

std::vector<int32_t> iota_tokens(int n, int32_t first) {
  std::vector<int32_t> v(static_cast<size_t>(n));
  std::iota(v.begin(), v.end(), first);
  return v;
}

TEST(Perplexity, JfWindowsScoreEveryTextTokenOnce) {
  const std::vector<int32_t> text = iota_tokens(7, 10);  // 10..16
  const auto w = jf_windows(text, 4, 1);
  ASSERT_EQ(w.size(), 3u);
  EXPECT_EQ(w[0].tokens, (std::vector<int32_t>{1, 10, 11, 12}));
  EXPECT_EQ(w[1].tokens, (std::vector<int32_t>{1, 13, 14, 15}));
  EXPECT_EQ(w[2].tokens, (std::vector<int32_t>{1, 16}));
  for (const auto& c : w) EXPECT_EQ(c.first_scored, 0);
  // Without a BOS the window starts with its own first token.
  EXPECT_EQ(jf_windows(text, 4, -1)[1].tokens, (std::vector<int32_t>{13, 13, 14, 15}));
  EXPECT_THROW(jf_windows(text, 1, 1), Error);
}

TEST(Perplexity, LlamaCppChunksReplaceTheFirstTokenAndScoreTheSecondHalf) {
  // As llama-perplexity tokenizes: BOS (1) then the text 10..; 21 tokens, ctx 8: 2 chunks, 5 tokens dropped.
  std::vector<int32_t> tokens = {1};
  for (int32_t t : iota_tokens(20, 10)) tokens.push_back(t);
  const auto c = llama_cpp_chunks(tokens, 8, 1);
  ASSERT_EQ(c.size(), 2u);
  EXPECT_EQ(c[0].tokens, (std::vector<int32_t>{1, 10, 11, 12, 13, 14, 15, 16}));
  EXPECT_EQ(c[1].tokens, (std::vector<int32_t>{1, 18, 19, 20, 21, 22, 23, 24}));  // 17 replaced by BOS
  EXPECT_EQ(c[0].first_scored, 4);  // predictions from positions 4..6: tokens 14, 15, 16
  // A vocabulary that adds no BOS keeps each chunk's own first token.
  EXPECT_EQ(llama_cpp_chunks(tokens, 8, -1)[1].tokens[0], 17);
  EXPECT_THROW(llama_cpp_chunks(tokens, 11, 1), Error);  // 21 < 2 * 11, refused as the tool does
  EXPECT_NO_THROW(llama_cpp_chunks(tokens, 10, 1));
}

// -log softmax(logits)[target] with one M = 1 forward per token: an independent path to the same numbers.
double nll_token_at_a_time(ForwardPass& model, KvCache& cache, const ScoredContext& c) {
  cache.truncate(0);
  SequenceInput in;
  double nll = 0;
  const int V = model.vocab_size();
  for (size_t p = 0; p + 1 < c.tokens.size(); p++) {
    in.set_causal(&cache, std::span<const int32_t>(c.tokens).subspan(p, 1), SequenceInput::Logits::Last);
    const float* row = model.forward(in).logits(0);
    if (static_cast<int>(p) < c.first_scored) continue;
    float mx = row[0];
    for (int v = 1; v < V; v++) mx = std::max(mx, row[v]);
    double sum = 0;
    for (int v = 0; v < V; v++) sum += std::exp(static_cast<double>(row[v] - mx));
    nll += (std::log(sum) + mx) - row[c.tokens[p + 1]];
  }
  return nll;
}

TEST(Perplexity, ScoreContextEqualsTokenAtATimeForEveryPieceSize) {
  auto m = random_model(preset_config("tiny"), DType::Q8_0, 11);
  Transformer tf(m->config(), m->weights());
  KvCache cache(m->config(), 40);
  ScoredContext c;
  for (int i = 0; i < 40; i++) c.tokens.push_back((i * 37 + 5) % m->config().vocab_size);
  for (int first : {0, 20, 39}) {
    c.first_scored = first;
    const double want = nll_token_at_a_time(tf, cache, c);
    for (int piece : {1, 3, 16, 512}) {
      NllSum got;
      score_context(tf, cache, c, got, piece);
      EXPECT_EQ(got.count, 39 - first) << "first " << first << " piece " << piece;
      EXPECT_EQ(got.nll, want) << "first " << first << " piece " << piece;  // batch invariance: the same bits
    }
  }
}

}  // namespace
}  // namespace jf
