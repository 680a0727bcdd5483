// Draft files: a model's draft tensors written on their own, bound to the model; loaded beside it they
// give the very same forward (logits and draft logits) as the combined model; a draft file for another model
// is refused with the check that failed.
#include <cstring>
#include <filesystem>

#include "base/error.h"
#include "decode/options.h"
#include "decode/session.h"
#include "model/convert.h"
#include "model/draft_file.h"
#include "model/loader.h"
#include "model/random_model.h"
#include "model/transformer.h"
#include "model_helpers.h"
#include "test_support.h"

namespace jf {
namespace {

ModelConfig draft_config(int dim = 0) {
  ModelConfig cfg = preset_config("tiny");
  if (dim > 0) cfg.dim = dim;
  cfg.draft_head = cfg.draft_layer = true;
  cfg.draft_chain = 2;
  return cfg;
}

// Writes the base of a random combined model to DIR/NAME.gguf and its draft tensors to DIR/NAME.draft.gguf.
void write_split(const ModelConfig& cfg, uint64_t seed, const std::string& dir, const std::string& name) {
  TensorSet ts = random_tensors(cfg, DType::F32, seed);
  ModelConfig base = cfg;
  base.draft_head = base.draft_layer = false, base.draft_chain = 0;
  TensorSet own;
  for (const auto& [n, t] : ts.tensors)
    if (!is_draft_tensor(n)) own.tensors[n] = t;
  write_model_gguf(dir + "/" + name + ".gguf", base, own, GgufMetadata{});
  write_draft_file(dir + "/" + name + ".draft.gguf", cfg, ts, base_fingerprint(own));
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(DraftFile, BesideItsModelItIsTheCombinedModel) {
  test::TempDir dir("draft_file");
  const ModelConfig cfg = draft_config();
  write_split(cfg, 3, dir.path, "m");
  const std::unique_ptr<Model> combined = random_model(cfg, DType::F32, 3);
  LoadedModel lm = load_model(dir / "m.gguf");
  EXPECT_FALSE(lm.model->config().draft_head);
  attach_draft_file(*lm.model, dir / "m.draft.gguf");
  EXPECT_TRUE(lm.model->config().draft_layer);
  EXPECT_EQ(lm.model->config().draft_chain, 2);
  EXPECT_EQ(lm.model->draft_source(), dir / "m.draft.gguf");
  // The same forward, bit for bit: logits, draft logits and the chain's drafts.
  auto run = [&](const Model& m) {
    Transformer tf(m.config(), m.weights());
    KvCache cache(m.config(), 64);
    SequenceInput in;
    in.set_causal(&cache, std::vector<int32_t>{1, 5, 9, 2, 7}, SequenceInput::Logits::All);
    in.draft_logits = true;
    const ForwardResult res = tf.forward(in);
    std::vector<float> out = test::all_logits(res);
    const std::vector<float> d = test::draft_rows(res, 5);
    out.insert(out.end(), d.begin(), d.end());
    int32_t chain[2];
    EXPECT_EQ(2, res.chain(4, 3, 2, chain));
    out.push_back(float(chain[0])), out.push_back(float(chain[1]));
    return out;
  };
  const std::vector<float> a = run(*combined), b = run(*lm.model);
  ASSERT_EQ(a.size(), b.size());
  EXPECT_EQ(0, std::memcmp(a.data(), b.data(), a.size() * 4));
  EXPECT_EQ(draft_file_beside(dir / "m.gguf"), dir / "m.draft.gguf");
  EXPECT_EQ(draft_file_beside(dir / "m.draft.gguf"), "");
  EXPECT_EQ(draft_file_beside("model.bin"), "");
  EXPECT_TRUE(is_draft_file(dir / "m.draft.gguf"));
  EXPECT_FALSE(is_draft_file(dir / "m.gguf"));
}

// Draft work only where drafts are used: `ar` never runs the draft layer (nor the output head over every row);
// jacobi runs it on every forward, its prompt included, and returns ar's tokens.
TEST(DraftFile, ArPaysNothingForADraftLayer) {
  const std::unique_ptr<Model> m = random_model(draft_config(), DType::F32, 5);
  Transformer tf(m->config(), m->weights());
  Session s(tf, 128);
  GenerationConfig cfg;
  cfg.max_new_tokens = 24;
  const std::vector<int32_t> prompt{1, 4, 9, 16, 25, 36};
  DecoderOptions ar, jacobi;
  ar.name = "ar", jacobi.name = "jacobi", jacobi.draft_adaptive = false;
  const GenerationResult a = make_decoder(ar)->generate(s, prompt, cfg);
  EXPECT_EQ(tf.n_draft_layer_runs(), 0u);
  const uint64_t before = tf.n_forwards();
  const GenerationResult j = make_decoder(jacobi)->generate(s, prompt, cfg);
  EXPECT_EQ(j.tokens, a.tokens);
  EXPECT_EQ(tf.n_draft_layer_runs(), tf.n_forwards() - before);  // every forward of jacobi's, the prefill too
  EXPECT_GT(tf.n_draft_layer_runs(), 1u);
  // The draft head only for the rows asked for: one a forward (the last verified row's shifted draft), not
  // every row jacobi sent.
  EXPECT_LE(tf.n_draft_head_rows(), tf.n_forwards() - before);
  EXPECT_LT(2 * static_cast<int64_t>(tf.n_draft_head_rows()), j.stats.n_forward_rows);
}

// In a batch mixing a sequence that drafts with one that does not (a server's), the draft layer and the output
// head over every row run on the drafting sequence's rows alone; each sequence's logits, draft logits and
// chain are the same bits as when it runs alone, and the other sequence has no draft logits.
TEST(DraftFile, AMixedBatchRunsTheDraftLayerOnlyOnTheRowsThatDraft) {
  const std::unique_ptr<Model> m = random_model(draft_config(), DType::F32, 6);
  const int V = m->config().vocab_size;
  const std::vector<int32_t> plain_tokens{2, 7, 1, 8, 2, 8, 1, 8}, drafting_tokens{3, 1, 4, 1, 5};
  struct Out {
    std::vector<float> plain, drafting, drafts;
    int32_t chain[2] = {-1, -1};
  };
  auto run = [&](bool with_plain, bool with_drafting, uint64_t* layer_rows) {
    Transformer tf(m->config(), m->weights());
    KvCache pc(m->config(), 64), dc(m->config(), 64);
    SequenceInput plain, drafting;
    plain.set_causal(&pc, plain_tokens, SequenceInput::Logits::All);
    drafting.set_causal(&dc, drafting_tokens, SequenceInput::Logits::All);
    drafting.draft_logits = true;
    std::vector<SequenceInput*> seqs;
    if (with_plain) seqs.push_back(&plain);
    if (with_drafting) seqs.push_back(&drafting);
    const ForwardResult res = tf.forward(std::span<SequenceInput* const>(seqs));
    Out o;
    const int P = with_plain ? static_cast<int>(plain_tokens.size()) : 0, D = static_cast<int>(drafting_tokens.size());
    if (with_plain) {
      o.plain = test::all_logits(res.slice(0, P));
      EXPECT_EQ(res.draft_logits(0), nullptr);  // not asked for: none, even with the layer run in this forward
    }
    if (with_drafting) {
      const ForwardResult d = res.slice(P, D);
      o.drafting = test::all_logits(d);
      o.drafts = test::draft_rows(d, D);
      EXPECT_EQ(2, d.chain(D - 1, 3, 2, o.chain));
    }
    *layer_rows = tf.n_draft_layer_rows();
    return o;
  };
  uint64_t rows_mixed = 0, rows_plain = 0, rows_drafting = 0;
  const Out mixed = run(true, true, &rows_mixed), plain = run(true, false, &rows_plain), drafting = run(false, true, &rows_drafting);
  EXPECT_EQ(rows_plain, 0u);
  EXPECT_EQ(rows_mixed, drafting_tokens.size());
  EXPECT_EQ(rows_drafting, drafting_tokens.size());
  EXPECT_EQ(mixed.plain, plain.plain);
  EXPECT_EQ(mixed.drafting, drafting.drafting);
  ASSERT_EQ(mixed.drafts.size(), drafting_tokens.size() * V);
  EXPECT_EQ(mixed.drafts, drafting.drafts);
  EXPECT_EQ(mixed.chain[0], drafting.chain[0]);
  EXPECT_EQ(mixed.chain[1], drafting.chain[1]);
}

TEST(DraftFile, ADraftFileForAnotherModelIsRefusedNamingTheCheck) {
  test::TempDir dir("draft_file_bad");
  write_split(draft_config(), 3, dir.path, "m");
  write_split(draft_config(), 4, dir.path, "other");        // same shapes, other weights
  write_split(draft_config(128), 3, dir.path, "wide");      // another width
  auto attach = [&](const std::string& model, const std::string& draft) {
    return error_of([&] {
      LoadedModel lm = load_model(dir / model);
      attach_draft_file(*lm.model, dir / draft);
    });
  };
  EXPECT_NE(attach("m.gguf", "other.draft.gguf").find("fingerprint"), std::string::npos);
  EXPECT_NE(attach("m.gguf", "wide.draft.gguf").find("embedding width 128, this model 64"), std::string::npos)
      << attach("m.gguf", "wide.draft.gguf");
  EXPECT_NE(attach("m.gguf", "other.gguf").find("not a jf draft file"), std::string::npos);
  const std::string twice = error_of([&] {
    LoadedModel lm = load_model(dir / "m.gguf");
    attach_draft_file(*lm.model, dir / "m.draft.gguf");
    attach_draft_file(*lm.model, dir / "m.draft.gguf");
  });
  EXPECT_NE(twice.find("already has draft tensors"), std::string::npos) << twice;
  EXPECT_EQ(attach("m.gguf", "m.draft.gguf"), "(no error)");
}

}  // namespace
}  // namespace jf
