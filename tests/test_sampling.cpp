// Sampling strategies are lossless in distribution. For a fake model with a 6-token vocabulary, the joint
// distribution of the first three sampled tokens is known exactly; each strategy's empirical distribution
// over 12,000 seeds is compared with it by a chi-square goodness-of-fit test at significance 0.001
// (a correct implementation fails with probability 0.1% per check). A deliberately broken verifier that
// accepts every draft token must fail the same test.
#include <cmath>
#include <map>

#include "decode/options.h"
#include "decode/sjd.h"
#include "chi_square.h"
#include "fake_model.h"
#include "test_support.h"

namespace jf {
namespace {
using test::gamma_q;

constexpr int V = 6, T = 3, kSeeds = 12000;
constexpr double kAlpha = 0.001;

// Exact probability of every length-T continuation of `prompt` under the processed distribution.
std::map<std::vector<int32_t>, double> exact_joint(const test::NextTokenRule& rule, const std::vector<int32_t>& prompt,
                                                   const SamplingParams& sp) {
  std::map<std::vector<int32_t>, double> out;
  Sampler sampler(sp, V);
  Distribution dist;
  std::vector<float> logits(V), probs;
  std::function<void(std::vector<int32_t>&, std::vector<int32_t>&, double)> rec = [&](std::vector<int32_t>& ctx,
                                                                                       std::vector<int32_t>& gen, double p) {
    if (static_cast<int>(gen.size()) == T) {
      out[gen] = p;
      return;
    }
    rule(ctx, logits.data());
    sampler.distribution(logits.data(), dist);
    dist.to_dense(V, probs);
    const std::vector<float> here = probs;
    for (int t = 0; t < V; t++) {
      if (here[t] <= 0) continue;
      ctx.push_back(t), gen.push_back(t);
      rec(ctx, gen, p * here[t]);
      ctx.pop_back(), gen.pop_back();
    }
  };
  std::vector<int32_t> ctx = prompt, gen;
  rec(ctx, gen, 1.0);
  return out;
}

// Chi-square goodness-of-fit p-value of `counts` against `expected` probabilities (cells with expected count
// below 5 pooled into one).
double gof_p_value(const std::map<std::vector<int32_t>, int>& counts, const std::map<std::vector<int32_t>, double>& exact,
                   int n) {
  double chi2 = 0, pooled_e = 0, pooled_o = 0;
  int cells = 0;
  for (const auto& [seq, p] : exact) {
    const double e = p * n;
    auto it = counts.find(seq);
    const double o = it == counts.end() ? 0 : it->second;
    if (e < 5) {
      pooled_e += e, pooled_o += o;
      continue;
    }
    chi2 += (o - e) * (o - e) / e;
    cells++;
  }
  for (const auto& [seq, c] : counts)
    if (!exact.count(seq)) return 0.0;  // a continuation with probability zero was produced
  if (pooled_e > 0) chi2 += (pooled_o - pooled_e) * (pooled_o - pooled_e) / pooled_e, cells++;
  return gamma_q((cells - 1) / 2.0, chi2 / 2.0);
}

// Counts of each sampled continuation; `accepted` gets the number of draft tokens accepted overall.
std::map<std::vector<int32_t>, int> sample_many(Decoder& d, test::FakeModel& fake, const std::vector<int32_t>& prompt,
                                                SamplingParams sp, int64_t* accepted = nullptr) {
  std::map<std::vector<int32_t>, int> counts;
  Session s(fake, 64);
  GenerationConfig cfg;
  cfg.max_new_tokens = T;
  for (int seed = 1; seed <= kSeeds; seed++) {
    sp.seed = static_cast<uint64_t>(seed);
    cfg.sampling = sp;
    GenerationResult r = d.generate(s, prompt, cfg);
    counts[r.tokens]++;
    if (accepted) *accepted += r.stats.counters["accepted_draft_tokens"];
  }
  return counts;
}

struct SamplingCase {
  std::string label;
  SamplingParams sp;
};

class Lossless : public ::testing::TestWithParam<SamplingCase> {};

TEST_P(Lossless, JointDistributionOfFirstTokensMatchesTheModel) {
  const SamplingParams sp = GetParam().sp;
  test::NextTokenRule rule = test::sampling_rule(V);
  test::FakeModel fake(V, rule);
  const std::vector<int32_t> prompt = {0, 1, 2, 3, 4, 5, 2, 4, 0, 3, 5, 1, 0, 1, 2};
  const auto exact = exact_joint(rule, prompt, sp);
  std::vector<DecoderOptions> strategies(4);
  strategies[0].name = "ar";
  strategies[1].name = "sjd", strategies[1].block = 4;
  strategies[2].name = "lookahead", strategies[2].window = 3, strategies[2].ngram = 3, strategies[2].guesses = 3;
  // pld and lookahead draft every proposal: the row pricing would learn that this fake's drafts rarely pass
  // and stop drafting, leaving the verifier untested.
  strategies[2].draft_adaptive = false;
  strategies[3].name = "pld", strategies[3].draft_max = 4, strategies[3].draft_adaptive = false;
  for (const DecoderOptions& o : strategies) {
    o.validate(false);
    auto d = make_decoder(o);
    int64_t accepted = 0;
    const double p = gof_p_value(sample_many(*d, fake, prompt, sp, &accepted), exact, kSeeds);
    EXPECT_GT(p, kAlpha) << o.name << " (" << GetParam().label << "): chi-square p = " << p;
    if (o.name != "ar") {
      EXPECT_GT(accepted, kSeeds / 20) << o.name << ": drafts were hardly ever accepted, the test proves little";
    }
    std::printf("%-10s %-22s p = %.4f, draft tokens accepted: %lld\n", o.name.c_str(), GetParam().label.c_str(), p,
                static_cast<long long>(accepted));
  }
}

TEST_P(Lossless, BrokenVerifierIsDetected) {
  const SamplingParams sp = GetParam().sp;
  test::NextTokenRule rule = test::sampling_rule(V);
  test::FakeModel fake(V, rule);
  const std::vector<int32_t> prompt = {0, 1, 2, 3, 4, 5, 2, 4, 0, 3, 5, 1, 0, 1, 2};
  SjdOptions broken;
  broken.adaptive = false;
  broken.block = 4;
  broken.accept_all_for_testing = true;
  SjdDecoder d(broken);
  const double p = gof_p_value(sample_many(d, fake, prompt, sp), exact_joint(rule, prompt, sp), kSeeds);
  EXPECT_LT(p, kAlpha) << "the test failed to detect a verifier that accepts every draft (p = " << p << ")";
}

SamplingParams params(float temp, int top_k, float top_p) {
  SamplingParams sp;
  sp.temperature = temp, sp.top_k = top_k, sp.top_p = top_p;
  return sp;
}

INSTANTIATE_TEST_SUITE_P(Params, Lossless,
                         ::testing::Values(SamplingCase{"temp1", params(1.0f, 0, 1.0f)},
                                           SamplingCase{"temp0.8_topk5_topp0.95", params(0.8f, 5, 0.95f)}),
                         [](const auto& info) {
                           std::string s = info.param.label;
                           for (char& c : s)
                             if (!isalnum(static_cast<unsigned char>(c))) c = '_';
                           return s;
                         });

// ---------------------------------------------------------------- the sampler against its definitions

// softmax(logits / T), then top-k (the k most probable, ties to the lower id; renormalised), top-p (the
// shortest prefix by decreasing probability whose mass exceeds p), min-p (tokens >= min_p x the top one),
// computed in double on a sorted copy: what Sampler::distribution must give.
std::vector<double> reference_distribution(const std::vector<float>& logits, const SamplingParams& sp) {
  const int n = static_cast<int>(logits.size());
  std::vector<double> p(n);
  double mx = -1e300, sum = 0;
  for (int i = 0; i < n; i++) mx = std::max(mx, double(logits[i]) / sp.temperature);
  for (int i = 0; i < n; i++) sum += p[i] = std::exp(double(logits[i]) / sp.temperature - mx);
  for (double& x : p) x /= sum;
  std::vector<int> order(n);
  for (int i = 0; i < n; i++) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return p[a] > p[b]; });
  if (sp.top_k > 0 && sp.top_k < n) order.resize(sp.top_k);
  double kept = 0;
  for (int id : order) kept += p[id];
  if (sp.top_p < 1.0f) {
    double cum = 0;
    for (size_t i = 0; i < order.size(); i++)
      if ((cum += p[order[i]] / kept) > sp.top_p) {
        order.resize(i + 1);
        break;
      }
  }
  const double top = p[order[0]];
  std::vector<double> out(n, 0.0);
  double total = 0;
  for (int id : order)
    if (p[id] >= sp.min_p * top) total += out[id] = p[id];
  for (double& x : out) x /= total;
  return out;
}

// The rows SJD-PAC's tree adds beside a draft of k tokens, as decode builds the tree: each branch cut to k; a
// run (after a rejection led by the repeat guess) adds its path less the shared first token and a leaf beside
// each of its tokens from the third; without the guess, no run.
TEST(SjdPricing, TheTreesRowsBesideEachDraftLength) {
  const std::vector<std::vector<int32_t>> branches = {{1, 2, 3}, {4, 5, 6}};
  std::vector<int> out;
  pac_rows_beside(branches, 8, true, 5, out);
  EXPECT_EQ(out, (std::vector<int>{2, 4 + 1, 6 + 2 + 1, 6 + 3 + 2, 6 + 4 + 3}));
  pac_rows_beside(branches, 3, true, 5, out);  // a run of 3: its path as long as the draft, one leaf
  EXPECT_EQ(out, (std::vector<int>{2, 4 + 1, 6 + 2 + 1, 6 + 3 + 1, 6 + 4 + 1}));
  pac_rows_beside(branches, 8, false, 3, out);
  EXPECT_EQ(out, (std::vector<int>{2, 4, 6}));
  pac_rows_beside({}, 0, true, 2, out);
  EXPECT_EQ(out, (std::vector<int>{0, 0}));
}

// Random, peaked and flat logits across top-k (off, inside, at and past the vocabulary), top-p (off, usual,
// below the top probability) and min-p; every case must give the defined distribution, and a draw must
// only return kept tokens.
TEST(Sampler, TopKTopPMinPFollowTheirDefinitions) {
  constexpr int n = 40;
  Rng rng(7);
  std::vector<std::vector<float>> rows;
  for (int r = 0; r < 6; r++) {
    std::vector<float> l(n);
    for (float& x : l) x = 4.0f * (rng.uniform() - 0.5f) * (r + 1);
    rows.push_back(l);
  }
  rows.push_back(std::vector<float>(n, 0.3f));  // flat
  std::vector<float> peaked(n, 0.0f);
  peaked[17] = 9.0f;
  rows.push_back(peaked);
  int cases = 0;
  for (const auto& logits : rows)
    for (float temp : {0.7f, 1.0f, 1.6f})
      for (int k : {0, 1, 5, n - 1, n, n + 20})
        for (float top_p : {1.0f, 0.91f, 0.47f, 0.01f})  // off the flat rows' 1/n steps
          for (float min_p : {0.0f, 0.05f, 0.5f}) {
            SamplingParams sp;
            sp.temperature = temp, sp.top_k = k, sp.top_p = top_p, sp.min_p = min_p;
            Sampler s(sp, n);
            Distribution d;
            s.distribution(logits.data(), d);
            ASSERT_FALSE(d.ids.empty());
            std::vector<float> got;
            d.to_dense(n, got);
            const std::vector<double> want = reference_distribution(logits, sp);
            const std::string what = "T=" + std::to_string(temp) + " k=" + std::to_string(k) +
                                      " p=" + std::to_string(top_p) + " min-p=" + std::to_string(min_p);
            for (int i = 0; i < n; i++) ASSERT_NEAR(got[i], want[i], 2e-5) << what << " token " << i;
            for (float coin : {0.0f, 0.37f, 0.999999f}) ASSERT_GT(want[d.draw(coin)], 0.0) << what;
            cases++;
          }
  EXPECT_EQ(cases, 8 * 3 * 6 * 4 * 3);
}

// The two bugs this pins: top-k >= the vocabulary made top-p measure p against the mass of the tokens its
// pre-filter kept (too small a nucleus); a top-p below the top probability of a flat distribution filtered
// out every token.
TEST(Sampler, TopPEdgeCases) {
  constexpr int n = 10;
  std::vector<float> flat(n, 1.0f);
  SamplingParams sp;
  sp.temperature = 1.0f, sp.top_p = 0.05f;  // below 1/n
  Distribution d;
  Sampler(sp, n).distribution(flat.data(), d);
  ASSERT_EQ(d.ids.size(), 1u);
  EXPECT_EQ(d.ids[0], 0);
  // Probabilities 0.5, 0.3, 0.15, then 7 tokens sharing 0.05 (each below the pre-filter's cutoff): p = 0.83
  // needs three tokens with or without top-k = n (measured against 0.95, two were enough).
  std::vector<float> l = {std::log(0.5f), std::log(0.3f), std::log(0.15f)};
  while (static_cast<int>(l.size()) < n) l.push_back(std::log(0.05f / 7));
  for (int k : {0, n, 2 * n}) {
    sp.top_p = 0.83f, sp.top_k = k;
    Sampler(sp, n).distribution(l.data(), d);
    EXPECT_EQ(d.ids.size(), 3u) << "top-k " << k;
  }
}

TEST(ChiSquare, SurvivalFunctionKnownValues) {
  EXPECT_NEAR(gamma_q(0.5, 3.841 / 2), 0.05, 1e-3);   // df 1
  EXPECT_NEAR(gamma_q(5, 18.307 / 2), 0.05, 1e-3);    // df 10
  EXPECT_NEAR(gamma_q(50, 124.342 / 2), 0.05, 1e-3);  // df 100
}

}  // namespace
}  // namespace jf
