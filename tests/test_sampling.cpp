// Sampling strategies are lossless in distribution. For a fake model with a 6-token vocabulary, the joint
// distribution of the first three sampled tokens is known exactly; each strategy's empirical distribution
// over 12,000 seeds is compared with it by a chi-square goodness-of-fit test at significance 0.001
// (a correct implementation fails with probability 0.1% per check). A deliberately broken verifier that
// accepts every draft token must fail the same test.
#include <cmath>
#include <map>

#include "decode/options.h"
#include "decode/sjd.h"
#include "fake_model.h"
#include "test_support.h"

namespace jf {
namespace {

constexpr int V = 6, T = 3, kSeeds = 12000;
constexpr double kAlpha = 0.001;

// Regularised upper incomplete gamma Q(a, x): chi-square survival is Q(df / 2, x / 2).
double gamma_q(double a, double x) {
  if (x <= 0) return 1.0;
  const double lg = std::lgamma(a);
  if (x < a + 1) {  // series for P
    double sum = 1.0 / a, term = sum;
    for (int n = 1; n < 1000; n++) {
      term *= x / (a + n);
      sum += term;
      if (term < sum * 1e-15) break;
    }
    return 1.0 - sum * std::exp(-x + a * std::log(x) - lg);
  }
  double b = x + 1 - a, c = 1e300, d = 1 / b, h = d;  // continued fraction for Q
  for (int i = 1; i < 1000; i++) {
    const double an = -i * (i - a);
    b += 2;
    d = an * d + b;
    if (std::fabs(d) < 1e-300) d = 1e-300;
    c = b + an / c;
    if (std::fabs(c) < 1e-300) c = 1e-300;
    d = 1 / d;
    const double del = d * c;
    h *= del;
    if (std::fabs(del - 1) < 1e-15) break;
  }
  return std::exp(-x + a * std::log(x) - lg) * h;
}

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
  // pld drafts every proposal: the adaptive policy would learn that this fake's drafts rarely pass and
  // stop drafting, leaving the verifier untested.
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

TEST(ChiSquare, SurvivalFunctionKnownValues) {
  EXPECT_NEAR(gamma_q(0.5, 3.841 / 2), 0.05, 1e-3);   // df 1
  EXPECT_NEAR(gamma_q(5, 18.307 / 2), 0.05, 1e-3);    // df 10
  EXPECT_NEAR(gamma_q(50, 124.342 / 2), 0.05, 1e-3);  // df 100
}

}  // namespace
}  // namespace jf
