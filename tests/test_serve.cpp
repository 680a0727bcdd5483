// The server's layers without HTTP: the scheduler batches every sequence into one forward and returns, for
// every decoder, exactly what `generate` returns alone (greedy: whatever else is in the batch and however
// the draft rows are capped); the draft-row cap follows the cost curve; cancellation, queue limits and
// draining; stop strings in the text stream; request validation.
#include <nlohmann/json.hpp>

#include <algorithm>

#include "base/error.h"
#include "decode/options.h"
#include "model/loader.h"
#include "serve/request.h"
#include "serve/scheduler.h"
#include "serve/text_stream.h"
#include "fake_model.h"
#include "test_support.h"

namespace jf {
namespace {

// Collects what the scheduler reports about one job.
struct Recorder : JobObserver {
  std::vector<int32_t> tokens;
  std::vector<int> per_step;
  bool done = false;
  FinishReason why = FinishReason::Error;
  GenerationResult result;
  std::string error;
  int stop_after = -1;  // end the job once this many tokens arrived (as a stop string would)
  std::vector<TokenLogprob> scored;
  void on_logprobs(std::vector<TokenLogprob> s) override { scored = std::move(s); }
  bool on_tokens(std::span<const int32_t> t) override {
    tokens.insert(tokens.end(), t.begin(), t.end());
    per_step.push_back(static_cast<int>(t.size()));
    return stop_after < 0 || static_cast<int>(tokens.size()) < stop_after;
  }
  void on_finished(const GenerationResult& r, FinishReason w, const std::string& e) override {
    EXPECT_FALSE(done) << "finished twice";
    done = true, why = w, result = r, error = e;
  }
};

std::shared_ptr<Job> make_job(const std::vector<int32_t>& prompt, const DecoderOptions& d, const GenerationConfig& g,
                              std::shared_ptr<Recorder> rec) {
  auto job = std::make_shared<Job>();
  job->prompt = prompt, job->decoder = d, job->gen = g, job->observer = rec;
  return job;
}

// A second row is free, a third costs two forwards: drafting pays alone, but not for two sequences at once.
CostCurve steep_curve() { return CostCurve({{1, 1.0}, {2, 1.0}, {3, 3.0}, {64, 64.0}}); }

DecoderOptions spec(const std::string& s) { return parse_decoder_spec(s, DecoderOptions{}); }

void run_until_idle(Scheduler& s, int max_steps = 100000) {
  for (int i = 0; i < max_steps && s.step(); i++) {
  }
  ASSERT_EQ(s.in_flight(), 0);
}

class ServeStories : public ::testing::Test {
 protected:
  void SetUp() override {
    JF_SHARED_PATH(path, "models/stories260K/stories260K.gguf");
    lm = load_model(path);
    fwd = std::make_unique<Transformer>(lm.model->config(), lm.model->weights());
  }
  std::vector<int32_t> encode(const std::string& text) { return lm.tokenizer->encode(text, true, false); }
  GenerationResult alone(const std::vector<int32_t>& prompt, const DecoderOptions& d, const GenerationConfig& g) {
    Session s(*lm.model, 512);
    return make_decoder(d)->generate(s, prompt, g);
  }
  // Eight jobs with mixed decoders through a 4-slot scheduler (so jobs queue, join and leave mid-batch and
  // prompts are prefilled in chunks of 3 beside decoding sequences); each must equal its run alone.
  void mixed_batch(CostCurve curve, bool with_sampling) {
    SchedulerOptions o;
    o.parallel = 4, o.context = 512, o.prefill_chunk = 3;
    Metrics metrics;
    Scheduler sch(*fwd, o, curve, &metrics);
    const std::vector<std::string> specs = {"ar", "jacobi:block=4", "jacobi:block=6:window-mode=running",
                                            "lookahead:W=4:N=3:G=4", "pld", "multiblock:block=8", "lookahead", "pld:draft-max=3"};
    const std::vector<std::string> texts = {"Once upon a time", "The cat sat on the mat. The cat", "Tom and Lily went to the park",
                                            "One day, a little bird", "She said hello. She said hello. She said", "The sun",
                                            "Lily liked to play with her ball", "A big dog"};
    std::vector<std::shared_ptr<Recorder>> recs;
    std::vector<GenerationConfig> cfgs;
    for (size_t i = 0; i < specs.size(); i++) {
      GenerationConfig g;
      g.max_new_tokens = 40 + 10 * static_cast<int>(i);
      g.eos_ids = {lm.tokenizer->eos()};
      if (with_sampling && (i == 4 || i == 6)) g.sampling.temperature = 0.8f, g.sampling.seed = 7 + i;
      cfgs.push_back(g);
      recs.push_back(std::make_shared<Recorder>());
      ASSERT_EQ(sch.submit(make_job(encode(texts[i]), spec(specs[i]), g, recs.back())), Scheduler::Admit::Queued);
    }
    run_until_idle(sch);
    int64_t job_forwards = 0;
    for (size_t i = 0; i < specs.size(); i++) {
      const GenerationResult want = alone(encode(texts[i]), spec(specs[i]), cfgs[i]);
      ASSERT_TRUE(recs[i]->done) << specs[i];
      EXPECT_EQ(recs[i]->tokens, want.tokens) << specs[i];
      EXPECT_EQ(recs[i]->result.tokens, want.tokens) << specs[i];
      job_forwards += recs[i]->result.stats.n_forwards;
    }
    // The jobs shared forwards: far fewer model forwards than the jobs' own counts added up.
    const std::string m = metrics.render(0, 0);
    const size_t at = m.find("\njf_forwards_total ");
    ASSERT_NE(at, std::string::npos);
    const int64_t forwards = std::stoll(m.substr(at + 19));
    EXPECT_LT(forwards * 2, job_forwards) << m;
  }

  LoadedModel lm;
  std::unique_ptr<Transformer> fwd;
};

// pld requests draft from a memory of finished requests shared through the scheduler: the second of two
// identical requests finds its continuation there (memory hits, fewer forwards), with the same tokens as
// ar. Without the shared memory (--pld-memory 0), or when the request opts out (ngram-memory=0), each
// request has only its own text and the second costs what the first did. (Fixed draft lengths: the
// adaptive policy's choices follow measured row costs, which vary from run to run.)
TEST_F(ServeStories, PldRequestsShareAMemoryOfFinishedRequests) {
  GenerationConfig g;
  g.max_new_tokens = 96;
  const std::vector<int32_t> prompt = encode("Once upon a time");
  const std::vector<int32_t> want = alone(prompt, spec("ar"), g).tokens;
  for (const auto& [memory, request] : std::vector<std::pair<int, std::string>>{
           {1 << 16, "pld:draft-policy=fixed"}, {0, "pld:draft-policy=fixed"},
           {1 << 16, "pld:draft-policy=fixed:ngram-memory=0"}}) {
    SCOPED_TRACE(std::to_string(memory) + " " + request);
    SchedulerOptions o;
    o.parallel = 1, o.context = 512, o.pld_memory = memory;
    Scheduler sch(*fwd, o, CostCurve(), nullptr);
    std::vector<std::shared_ptr<Recorder>> recs;
    for (int i = 0; i < 2; i++) {
      recs.push_back(std::make_shared<Recorder>());
      sch.submit(make_job(prompt, spec(request), g, recs.back()));
      run_until_idle(sch);
      ASSERT_TRUE(recs.back()->done);
      EXPECT_EQ(recs.back()->tokens, want);
    }
    const GenerationStats &first = recs[0]->result.stats, &second = recs[1]->result.stats;
    auto hits = [](const GenerationStats& st) {
      auto it = st.counters.find("memory_hits");
      return it == st.counters.end() ? int64_t{0} : it->second;
    };
    EXPECT_EQ(hits(first), 0);
    if (memory > 0 && request.find("ngram-memory=0") == std::string::npos) {
      EXPECT_GT(hits(second), 0);
      EXPECT_LT(second.n_forwards * 4, first.n_forwards) << first.n_forwards << " then " << second.n_forwards;
    } else {
      EXPECT_EQ(hits(second), 0);
      EXPECT_EQ(second.n_forwards, first.n_forwards);
    }
  }
}

// A conversation's next turn: a prompt that continues a finished request's text goes to that request's
// sequence and skips prefilling what its cache still holds, with the tokens it gets from scratch, for
// every kind of decoder. Another text keeps its own sequence's cache; reuse_prefix = false prefills all.
TEST_F(ServeStories, APromptThatContinuesAFinishedTextReusesItsCache) {
  GenerationConfig g;
  g.max_new_tokens = 30;
  auto reused = [](const Recorder& r) {
    auto it = r.result.stats.counters.find("prompt_tokens_reused");
    return it == r.result.stats.counters.end() ? int64_t{0} : it->second;
  };
  for (const std::string d : {"ar", "pld", "jacobi:block=4", "lookahead", "multiblock:block=8"}) {
    for (bool reuse : {true, false}) {
      SCOPED_TRACE(d + (reuse ? " reuse" : " no reuse"));
      SchedulerOptions o;
      o.parallel = 2, o.context = 512, o.reuse_prefix = reuse, o.pld_memory = 0;
      Scheduler sch(*fwd, o, CostCurve(), nullptr);
      auto a = std::make_shared<Recorder>(), other = std::make_shared<Recorder>();
      const std::vector<int32_t> pa = encode("Once upon a time"), po = encode("The dog ran to the big red barn.");
      sch.submit(make_job(pa, spec(d), g, a));
      sch.submit(make_job(po, spec(d), g, other));
      run_until_idle(sch);
      // The next turn: A's text, its answer, and more.
      std::vector<int32_t> pb = pa;
      pb.insert(pb.end(), a->tokens.begin(), a->tokens.end());
      for (int32_t t : encode(" Then the")) pb.push_back(t);
      auto b = std::make_shared<Recorder>();
      sch.submit(make_job(pb, spec(d), g, b));
      run_until_idle(sch);
      EXPECT_EQ(b->tokens, alone(pb, spec(d), g).tokens);
      if (reuse) {
        EXPECT_GE(reused(*b), static_cast<int64_t>(pa.size() + a->tokens.size()) - 2);  // the answer's last may be pending
        EXPECT_LT(reused(*b), static_cast<int64_t>(pb.size()));
      } else {
        EXPECT_EQ(reused(*b), 0);
      }
      // The other sequence still holds its own text: repeating it reuses all but the pending token.
      auto o2 = std::make_shared<Recorder>();
      sch.submit(make_job(po, spec(d), g, o2));
      run_until_idle(sch);
      EXPECT_EQ(o2->tokens, other->tokens);
      EXPECT_EQ(reused(*o2), reuse ? static_cast<int64_t>(po.size()) - 1 : 0);
    }
  }
}

// A system prompt several clients send: a job that starts like a running job's text gets that sequence's
// keys and values copied instead of prefilling them, with the tokens it gets from scratch.
TEST_F(ServeStories, APromptThatStartsLikeARunningJobCopiesItsKeysAndValues) {
  const std::string shared = "Once upon a time, there was a little girl named Lily. She liked to play in the park.";
  const std::vector<int32_t> pa = encode(shared + " One day"), pb = encode(shared + " Her mom");
  size_t common = 0;
  while (common < std::min(pa.size(), pb.size()) && pa[common] == pb[common]) common++;
  ASSERT_GT(common, 15u);
  for (const std::string d : {"ar", "lookahead", "multiblock:block=8"}) {
    SCOPED_TRACE(d);
    SchedulerOptions o;
    o.parallel = 2, o.context = 512, o.pld_memory = 0;
    Scheduler sch(*fwd, o, CostCurve(), nullptr);
    GenerationConfig g;
    g.max_new_tokens = 60;
    auto a = std::make_shared<Recorder>(), b = std::make_shared<Recorder>();
    sch.submit(make_job(pa, spec(d), g, a));
    for (int i = 0; i < 5; i++) sch.step();  // A is decoding
    ASSERT_FALSE(a->done);
    sch.submit(make_job(pb, spec(d), g, b));
    run_until_idle(sch);
    EXPECT_EQ(a->tokens, alone(pa, spec(d), g).tokens);
    EXPECT_EQ(b->tokens, alone(pb, spec(d), g).tokens);
    EXPECT_EQ(b->result.stats.counters["prompt_tokens_reused"], static_cast<int64_t>(common));
  }
}

// --parse-special: "</s>" in a completions prompt is the EOS token (as llama-server reads it); by default it is
// spelled out as text (as OpenAI's API).
TEST_F(ServeStories, ParseSpecialReadsTokenTextInPrompts) {
  ApiContext ctx;
  ctx.tokenizer = lm.tokenizer.get();
  ctx.context = 64, ctx.vocab_size = lm.model->config().vocab_size;
  const auto body = nlohmann::json::parse(R"({"prompt": "Once</s>upon", "max_tokens": 1})");
  const std::vector<int32_t> plain = parse_completion_request(body, false, ctx).prompt;
  ctx.parse_special = true;
  const std::vector<int32_t> special = parse_completion_request(body, false, ctx).prompt;
  const int32_t eos = lm.tokenizer->eos();
  EXPECT_EQ(std::count(plain.begin(), plain.end(), eos), 0);
  EXPECT_EQ(std::count(special.begin(), special.end(), eos), 1);
  EXPECT_LT(special.size(), plain.size());
}

TEST_F(ServeStories, MixedDecodersInOneBatchEqualGenerateAlone) { mixed_batch(CostCurve(), true); }

TEST_F(ServeStories, GreedyOutputsHoldUnderTheDraftRowCap) {
  // With two or more sequences decoding, each gets one row.
  mixed_batch(steep_curve(), false);
}

TEST_F(ServeStories, DraftRowCapCutsRowsOnlyWhenSeveralDecode) {
  SchedulerOptions o;
  o.parallel = 2, o.context = 256;
  Scheduler sch(*fwd, o, steep_curve(), nullptr);
  EXPECT_EQ(sch.row_cap(1), o.max_rows);
  EXPECT_EQ(sch.row_cap(2), 1);
  GenerationConfig g;
  g.max_new_tokens = 30;
  auto a = std::make_shared<Recorder>(), b = std::make_shared<Recorder>();
  sch.submit(make_job(encode("Once upon a time"), spec("jacobi:block=8:draft-policy=fixed"), g, a));
  sch.submit(make_job(encode("The cat sat"), spec("jacobi:block=8:draft-policy=fixed"), g, b));
  run_until_idle(sch);
  // Both decoded side by side: every forward after the first carried one row per sequence.
  EXPECT_LE(a->result.stats.n_forward_rows, a->result.stats.n_forwards + 7);
  EXPECT_EQ(a->tokens, alone(encode("Once upon a time"), spec("jacobi:block=8:draft-policy=fixed"), g).tokens);

  // Alone, the same job drafts (more rows than forwards). (Its rows are not priced: the cap is tested here.)
  auto c = std::make_shared<Recorder>();
  sch.submit(make_job(encode("Once upon a time"), spec("jacobi:block=8:draft-policy=fixed"), g, c));
  run_until_idle(sch);
  EXPECT_GT(c->result.stats.n_forward_rows, 2 * c->result.stats.n_forwards);

  // A priced decoder prices on the server's curve (the second row free, the third as dear as two forwards):
  // alone it sends the free row and no more.
  auto p = std::make_shared<Recorder>();
  sch.submit(make_job(encode("Once upon a time"), spec("jacobi:block=8"), g, p));
  run_until_idle(sch);
  EXPECT_GT(p->result.stats.n_forward_rows, p->result.stats.n_forwards + 10);
  EXPECT_LE(p->result.stats.n_forward_rows, 2 * p->result.stats.n_forwards);
  EXPECT_EQ(p->tokens, c->tokens);
}

TEST_F(ServeStories, ParallelDecodersCommitSeveralTokensPerForwardInsideTheBatch) {
  SchedulerOptions o;
  o.parallel = 3, o.context = 512;
  Scheduler sch(*fwd, o, CostCurve(), nullptr);
  GenerationConfig g;
  g.max_new_tokens = 100;
  g.ignore_eos = true;
  const auto prompt = encode("the dog ran. the dog ran. the dog ran.");
  const std::vector<std::string> specs = {"pld:draft-policy=fixed", "lookahead:W=4:N=3:G=4:draft-policy=fixed", "ar"};
  std::vector<std::shared_ptr<Recorder>> recs;
  for (const auto& d : specs) {
    recs.push_back(std::make_shared<Recorder>());
    sch.submit(make_job(prompt, spec(d), g, recs.back()));
  }
  run_until_idle(sch);
  for (size_t i = 0; i < 2; i++) {
    // Their drafts do not depend on timing: the same forwards as alone, and well above one token each.
    const GenerationResult want = alone(prompt, spec(specs[i]), g);
    EXPECT_EQ(recs[i]->result.stats.n_forwards, want.stats.n_forwards) << specs[i];
    EXPECT_GT(recs[i]->result.stats.tpf(), 1.5) << specs[i] << ": no drafts accepted in the batch";
    EXPECT_GT(*std::max_element(recs[i]->per_step.begin(), recs[i]->per_step.end()), 2) << specs[i];
  }
  EXPECT_EQ(recs[2]->result.stats.tpf(), 1.0);
}

// A forward that throws whenever a row carries `poison` (as a bad input of one sequence would).
struct PoisonedForward : test::WrappedForward {
  PoisonedForward(ForwardPass& real, int32_t poison) : WrappedForward(real), real(real), poison(poison) {}
  void run(std::span<SequenceInput* const> seqs) override {
    for (const SequenceInput* s : seqs)
      if (std::find(s->tokens.begin(), s->tokens.end(), poison) != s->tokens.end()) {
        real.forward(seqs);  // the caches of the batch grow before the failure, as a real mid-batch throw leaves them
        throw Error("poisoned row");
      }
    WrappedForward::run(seqs);
  }
  ForwardPass& real;
  int32_t poison;
};

// One sequence's failing forward fails that sequence alone: the others of its batch continue and still
// equal their runs alone, and the scheduler goes on serving.
TEST_F(ServeStories, AFailedForwardFailsOnlyItsOwnSequence) {
  const auto good1 = encode("Once upon a time"), good2 = encode("The cat sat on the mat");
  auto bad_prompt = encode("Tom and Lily");
  const int32_t poison = 7;
  ASSERT_EQ(std::count(good1.begin(), good1.end(), poison) + std::count(good2.begin(), good2.end(), poison), 0);
  bad_prompt.push_back(poison);
  PoisonedForward pf(*fwd, poison);
  SchedulerOptions o;
  o.parallel = 3, o.context = 256;
  Scheduler sch(pf, o, CostCurve(), nullptr);
  GenerationConfig g;
  g.max_new_tokens = 24;
  g.ignore_eos = true;
  std::vector<std::shared_ptr<Recorder>> recs;
  for (const std::vector<int32_t>* p : {&good1, static_cast<const std::vector<int32_t>*>(&bad_prompt), &good2}) {
    recs.push_back(std::make_shared<Recorder>());
    sch.submit(make_job(*p, spec("lookahead:W=4:N=3:G=4"), g, recs.back()));
  }
  run_until_idle(sch);
  EXPECT_EQ(recs[1]->why, FinishReason::Error);
  EXPECT_NE(recs[1]->error.find("poisoned"), std::string::npos);
  for (size_t i : {size_t{0}, size_t{2}}) {
    EXPECT_EQ(recs[i]->why, FinishReason::Length) << recs[i]->error;
    EXPECT_EQ(recs[i]->tokens, alone(i == 0 ? good1 : good2, spec("lookahead:W=4:N=3:G=4"), g).tokens);
  }
  auto after = std::make_shared<Recorder>();
  sch.submit(make_job(good1, spec("ar"), g, after));
  run_until_idle(sch);
  EXPECT_EQ(after->tokens, recs[0]->tokens);
}

// Logprobs come from scoring the finished text again: they equal what one-token-at-a-time decoding
// computes, bit for bit, whichever decoder produced the text and whatever shared its forwards.
TEST_F(ServeStories, LogprobsEqualOneTokenAtATimeWhicheverDecoderRuns) {
  const auto prompt = encode("Once upon a time");
  GenerationConfig g;
  g.max_new_tokens = 24;
  g.ignore_eos = true;
  const GenerationResult want = alone(prompt, spec("ar"), g);
  std::vector<int32_t> text = prompt;
  text.insert(text.end(), want.tokens.begin(), want.tokens.end());
  Session ref(*lm.model, 512);
  SequenceInput in;
  std::vector<TokenLogprob> expected;  // for text[1..]
  const size_t V = static_cast<size_t>(fwd->vocab_size());
  for (size_t i = 0; i + 1 < text.size(); i++) {
    in.set_causal(&ref.cache(), std::span<const int32_t>(&text[i], 1), SequenceInput::Logits::Last);
    expected.push_back(token_logprob(std::span<const float>(ref.forward(in).logits(0), V), text[i + 1], 3));
  }
  for (const std::string d : {"ar", "lookahead:W=4:N=3:G=4", "jacobi:block=4", "pld"}) {
    SchedulerOptions o;
    o.parallel = 2, o.context = 256, o.prefill_chunk = 5;
    Scheduler sch(*fwd, o, CostCurve(), nullptr);
    auto echo = std::make_shared<Recorder>(), plain = std::make_shared<Recorder>(), other = std::make_shared<Recorder>();
    auto j1 = make_job(prompt, spec(d), g, echo);
    j1->logprobs = 3, j1->score_prompt = true;
    auto j2 = make_job(prompt, spec(d), g, plain);
    j2->logprobs = 0;
    sch.submit(j1);
    sch.submit(make_job(encode("The cat sat"), spec("ar"), g, other));
    sch.submit(j2);
    run_until_idle(sch);
    ASSERT_EQ(echo->tokens, want.tokens) << d;
    ASSERT_EQ(echo->scored.size(), expected.size()) << d;
    ASSERT_EQ(plain->scored.size(), want.tokens.size()) << d;
    for (size_t i = 0; i < expected.size(); i++) {
      EXPECT_EQ(echo->scored[i].token, expected[i].token) << d << " " << i;
      EXPECT_EQ(echo->scored[i].logprob, expected[i].logprob) << d << " " << i;
      EXPECT_EQ(echo->scored[i].top, expected[i].top) << d << " " << i;
    }
    for (size_t i = 0; i < want.tokens.size(); i++) {
      EXPECT_EQ(plain->scored[i].logprob, expected[prompt.size() - 1 + i].logprob) << d << " " << i;
      EXPECT_TRUE(plain->scored[i].top.empty());
    }
    EXPECT_EQ(other->tokens, alone(encode("The cat sat"), spec("ar"), g).tokens);
  }
}

TEST_F(ServeStories, CancelAndStopFreeTheSequence) {
  SchedulerOptions o;
  o.parallel = 1, o.context = 512, o.queue = 1;
  Scheduler sch(*fwd, o, CostCurve(), nullptr);
  GenerationConfig g;
  g.max_new_tokens = 200;
  g.ignore_eos = true;
  auto a = std::make_shared<Recorder>(), b = std::make_shared<Recorder>(), c = std::make_shared<Recorder>();
  auto ja = make_job(encode("Once upon a time"), spec("ar"), g, a);
  b->stop_after = 5;
  EXPECT_EQ(sch.submit(ja), Scheduler::Admit::Queued);
  EXPECT_EQ(sch.submit(make_job(encode("The cat"), spec("lookahead"), g, b)), Scheduler::Admit::Queued);
  EXPECT_EQ(sch.submit(make_job(encode("The dog"), spec("ar"), g, c)), Scheduler::Admit::QueueFull);
  for (int i = 0; i < 4; i++) sch.step();
  EXPECT_EQ(sch.active(), 1);
  ja->cancel = true;
  sch.step();
  EXPECT_TRUE(a->done);
  EXPECT_EQ(a->why, FinishReason::Cancelled);
  EXPECT_LT(a->tokens.size(), 10u);
  run_until_idle(sch);
  EXPECT_EQ(b->why, FinishReason::Stop);
  EXPECT_GE(b->tokens.size(), 5u);
  EXPECT_LT(b->tokens.size(), 5u + 8u);  // at most one forward's worth past the stop
  // Cancelled while queued: finished without taking the sequence, whose kept cache still serves the next.
  auto d = std::make_shared<Recorder>(), e = std::make_shared<Recorder>();
  auto jd = make_job(encode("A bird"), spec("ar"), g, d);
  jd->cancel = true;
  sch.submit(jd);
  run_until_idle(sch);
  EXPECT_EQ(d->why, FinishReason::Cancelled);
  EXPECT_TRUE(d->tokens.empty());
  GenerationConfig short_g = g;
  short_g.max_new_tokens = 3;
  sch.submit(make_job(encode("The cat"), spec("ar"), short_g, e));
  run_until_idle(sch);
  EXPECT_GT(e->result.stats.counters["prompt_tokens_reused"], 0);
  sch.begin_drain();
  EXPECT_EQ(sch.submit(make_job(encode("The dog"), spec("ar"), g, c)), Scheduler::Admit::Draining);
}

TEST_F(ServeStories, BadJobsFailAloneWithAnError) {
  SchedulerOptions o;
  o.parallel = 2, o.context = 16;
  Scheduler sch(*fwd, o, CostCurve(), nullptr);
  GenerationConfig g;
  auto too_long = std::make_shared<Recorder>(), fine = std::make_shared<Recorder>();
  sch.submit(make_job(std::vector<int32_t>(40, 5), spec("ar"), g, too_long));
  sch.submit(make_job(encode("Once"), spec("ar"), g, fine));
  run_until_idle(sch);
  EXPECT_EQ(too_long->why, FinishReason::Error);
  EXPECT_NE(too_long->error.find("context size"), std::string::npos) << too_long->error;
  EXPECT_EQ(fine->why, FinishReason::ContextFull);
  EXPECT_EQ(fine->tokens.size(), 16u - 2u + 1u);
}

TEST(CostCurve, RowsPerSequenceFollowTheCurve) {
  const CostCurve free_rows({{1, 1.0}, {64, 1.0}});
  EXPECT_EQ(free_rows.rows_per_sequence(8, 1.1, 16), 16);
  const CostCurve linear({{1, 1.0}, {64, 64.0}});
  EXPECT_EQ(linear.rows_per_sequence(1, 1.1, 16), 16);  // one sequence: not capped
  EXPECT_EQ(linear.rows_per_sequence(2, 1.1, 16), 16);  // t(2m)/t(2) = m = t(m)/t(1)
  // A memory-bound model (llama-1b Q8_0 on this machine class, ms): rows nearly free up to ~8.
  const CostCurve llama({{1, 26}, {2, 27}, {4, 30}, {8, 35}, {16, 59}, {32, 110}});
  EXPECT_DOUBLE_EQ(llama.seconds(6), 32.5);
  EXPECT_EQ(llama.rows_per_sequence(8, 1.1, 16), 1);   // t(16)/t(8) = 1.69 > 1.1 * t(2)/t(1)
  EXPECT_GE(llama.rows_per_sequence(2, 1.1, 16), 2);
  EXPECT_LE(llama.rows_per_sequence(2, 1.1, 16), 4);
}

// The start-up measurement times every row count in each round, so a busy spell at start-up cannot make the
// first row counts look dear and the later ones cheap.
TEST(CostCurve, MeasurementIsFairToEveryRowCountWhenTheLoadChanges) {
  test::BusyThenQuiet fwd;
  const CostCurve c = CostCurve::measure(fwd, 8);
  EXPECT_NEAR(c.seconds(2) / c.seconds(1), 2.0, 0.5);
  EXPECT_NEAR(c.seconds(8) / c.seconds(1), 8.0, 2.0);
}

TEST(TextStream, StopStringsAreCutAndNeverSentEvenAcrossForwards) {
  VocabSpec v;
  v.kind = VocabKind::Bpe;
  v.add_bos = false;
  for (const char* t : {"a", "b", "c", "X", "Y", "\xc3", "\xa9"}) v.tokens.push_back(t), v.types.push_back(TokenKind::Normal);
  // Byte-level BPE maps bytes to printable code points; spell the two raw bytes that way ("Ã" is 0xC3,
  // "©" is 0xA9 in that mapping).
  v.tokens[5] = "\xc3\x83", v.tokens[6] = "\xc2\xa9";
  Tokenizer tok(v);
  TextStream s(&tok, {}, {"XY", "cc"}, 0, nullptr);
  std::vector<TextStream::Piece> got;
  std::vector<std::string> pieces;
  auto texts = [&] {
    pieces.clear();
    for (auto& p : got) pieces.push_back(p.text);
  };
  EXPECT_TRUE(s.on_tokens(std::vector<int32_t>{0, 1, 3}));  // "abX": "X" may start a stop string
  s.take(got);
  texts();
  EXPECT_EQ(pieces, std::vector<std::string>{"ab"});
  EXPECT_EQ(got[0].tokens, 3);
  EXPECT_TRUE(s.on_tokens(std::vector<int32_t>{5, 6}));  // "\xc3\xa9" (two bytes): X was no stop after all
  s.take(got);
  texts();
  EXPECT_EQ(pieces, std::vector<std::string>{"X"});  // the held-back byte would split the character
  EXPECT_FALSE(s.on_tokens(std::vector<int32_t>{3, 4, 0}));  // "XYa": a stop string
  s.take(got);
  texts();
  EXPECT_EQ(pieces, std::vector<std::string>{"\xc3\xa9"});
  s.on_finished(GenerationResult{}, FinishReason::Length, {});
  EXPECT_EQ(s.text(), "abX\xc3\xa9");
  EXPECT_EQ(s.reason(), FinishReason::Stop);
}

TEST(Requests, BadFieldsAreNamed) {
  ApiContext ctx;
  ctx.context = 32, ctx.vocab_size = 100;
  auto err = [&](const std::string& body, const std::string& param, const std::string& needle) {
    try {
      parse_completion_request(nlohmann::json::parse(body), false, ctx);
      ADD_FAILURE() << body << " was accepted";
    } catch (const ApiError& e) {
      EXPECT_EQ(e.status, 400) << body;
      EXPECT_EQ(e.param, param) << body << ": " << e.what();
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << body << ": " << e.what();
    }
  };
  err(R"({"prompt": [1, 2], "n": 20})", "n", "between");
  err(R"({"prompt": [1, 2], "best_of": 3})", "best_of", "not supported");
  err(R"({"prompt": [1, 2], "logprobs": 30})", "logprobs", "between");
  err(R"({"prompt": [1, 2], "top_logprobs": 3})", "top_logprobs", "belongs to chat");
  err(R"({"prompt": [1, 2], "frobnicate": 1})", "frobnicate", "unknown field");
  err(R"({"prompt": [1, 2], "temperature": "hot"})", "temperature", "number");
  err(R"({"prompt": [1, 2], "temperature": 3})", "temperature", "between");
  err(R"({"prompt": [1, 2], "max_tokens": -1})", "max_tokens", "between");
  err(R"({"prompt": [1, 200]})", "prompt", "outside the vocabulary");
  err(R"({"prompt": "text"})", "prompt", "no tokenizer");
  err(R"({"prompt": [[1], [2]]})", "prompt", "several prompts");
  err(R"({})", "prompt", "required");
  err(R"({"prompt": [1], "stop": ["a", "b", "c", "d", "e"]})", "stop", "at most 4");
  err(R"({"prompt": [1], "stop": [""]})", "stop", "empty");
  err(R"({"prompt": [1], "decoder": "warp"})", "decoder", "unknown decoder");
  err(R"({"prompt": [1], "decoder": "jacobi", "temperature": 0.5})", "decoder", "greedy only");
  err(R"({"prompt": [1], "decoder": "pld:ngram-corpus=/etc/passwd"})", "decoder", "per request");
  err(R"({"prompt": [1], "stream_options": {"include_usage": true}})", "stream_options", "stream");
  err(R"({"prompt": [1], "messages": []})", "messages", "chat/completions");
  err(R"({"prompt": [1], "chat_template_kwargs": {"enable_thinking": false}})", "chat_template_kwargs", "chat/completions");
  std::string long_prompt = "{\"prompt\": [";
  for (int i = 0; i < 40; i++) long_prompt += (i ? ",1" : "1");
  err(long_prompt + "]}", "prompt", "more than the context size 32");

  const CompletionRequest ok = parse_completion_request(
      nlohmann::json::parse(R"({"prompt": [[1, 2, 3]], "max_tokens": 7, "temperature": 0, "user": "u", "n": 1,
                               "decoder": "lookahead:W=4:N=3:G=4", "stop": "x", "stream": true,
                               "stream_options": {"include_usage": true}, "seed": 5})"),
      false, ctx);
  EXPECT_EQ(ok.prompt, (std::vector<int32_t>{1, 2, 3}));
  EXPECT_EQ(ok.gen.max_new_tokens, 7);
  EXPECT_EQ(ok.decoder.name, "lookahead");
  EXPECT_EQ(ok.decoder.window, 4);
  EXPECT_EQ(ok.stop, std::vector<std::string>{"x"});
  EXPECT_TRUE(ok.stream && ok.include_usage);
  EXPECT_EQ(ok.gen.sampling.seed, 5u);

  // No seed: a fresh one per request (OpenAI's sampling is not repeatable without one).
  const auto unseeded = nlohmann::json::parse(R"({"prompt": [1], "temperature": 0.7})");
  const CompletionRequest r1 = parse_completion_request(unseeded, false, ctx), r2 = parse_completion_request(unseeded, false, ctx);
  EXPECT_FALSE(r1.seed_given || ok.seed_given == false);
  EXPECT_NE(r1.gen.sampling.seed, r2.gen.sampling.seed);

  ctx.default_decoder.name = "jacobi";  // greedy-only default, sampling request: its sampling counterpart
  EXPECT_EQ(parse_completion_request(nlohmann::json::parse(R"({"prompt": [1], "temperature": 0.7})"), false, ctx).decoder.name, "sjd");
  ctx.default_decoder.name = "multiblock", ctx.default_decoder.tree_nodes = 16;  // a tree default: sjd drops the tree
  EXPECT_EQ(parse_completion_request(nlohmann::json::parse(R"({"prompt": [1], "temperature": 0.7})"), false, ctx).decoder.name, "sjd");
  ctx.default_decoder.name = "jacobi";  // jacobi with draft trees samples itself
  const CompletionRequest tree = parse_completion_request(nlohmann::json::parse(R"({"prompt": [1], "temperature": 0.7})"), false, ctx);
  EXPECT_EQ(tree.decoder.name, "jacobi");
  EXPECT_EQ(tree.decoder.tree_nodes, 16);
}

}  // namespace
}  // namespace jf
