// A deterministic stand-in for a transformer, for driving decoders through exact scenarios.
// Each row's logits are a function of the tokens the row can see (its cache slots, then its visible new
// tokens, in slot order). The fake also checks the geometry every decoder must respect: a row's position
// equals the number of tokens it sees before itself, and what it sees are positions 0, 1, 2, ... in order.
// It keeps each slot's token and position in its KV cache, so truncate/keep are exercised for real.
#pragma once
#include <algorithm>
#include <functional>
#include <span>
#include <stdexcept>
#include <vector>

#include "base/timer.h"
#include "model/kv_cache.h"
#include "model/transformer.h"
#include "wrapped_forward.h"

namespace jf::test {

// rule(visible tokens, logits out[vocab])
using NextTokenRule = std::function<void(std::span<const int32_t>, float*)>;

class FakeModel : public ForwardPass {
 public:
  FakeModel(int vocab, NextTokenRule rule, int context = 4096) : rule_(std::move(rule)) {
    cfg_.vocab_size = vocab;
    cfg_.dim = 1, cfg_.n_layers = 1, cfg_.n_heads = 1, cfg_.n_kv_heads = 1, cfg_.head_dim = 1, cfg_.ffn_dim = 1;
    cfg_.rope_dim = 0;
    cfg_.context_length = context;
  }
  const ModelConfig& config() const override { return cfg_; }
  int64_t rows_seen() const { return rows_; }
  // A draft head: its logits for a row are `rule` of what the row sees (returned when a sequence asks).
  // shift 1: they predict the token after the row's next one (a draft layer's, ForwardPass::draft_shift).
  void set_draft_rule(NextTokenRule rule, int shift = 0) {
    draft_rule_ = std::move(rule);
    draft_cfg_shift_ = shift;
    cfg_.draft_head = true;  // what a model with draft tensors says (decoders price its drafting by it)
    cfg_.draft_layer = shift > 0;
  }
  int draft_shift() const override { return draft_cfg_shift_; }
  // A draft chain trained to `depth` (ForwardResult::chain): draft j is `rule` of the verified text (the
  // cache), the row's next token, `first` and the chain's drafts before j.
  void set_draft_chain_rule(NextTokenRule rule, int depth) {
    chain_rule_ = std::move(rule);
    cfg_.draft_chain = depth;
  }

 protected:
  // ForwardResult::chain: as a draft layer's, from the verified text in row r's sequence's cache.
  int row_chain(int r, int32_t first, int count, int32_t* out) override {
    if (!chain_rule_) return 0;
    const int V = cfg_.vocab_size;
    const KvCache& cache = *row_cache_[static_cast<size_t>(r)];
    const float* logits = row_logits(r);
    std::vector<int32_t> seen;
    for (int j = 0; j < cache.size(); j++) seen.push_back(static_cast<int32_t>(cache.key(0, j, 0)));
    seen.push_back(static_cast<int32_t>(std::max_element(logits, logits + V) - logits));
    seen.push_back(first);
    std::vector<float> row(static_cast<size_t>(V));
    for (int j = 0; j < count; j++) {
      chain_rule_(seen, row.data());
      out[j] = static_cast<int32_t>(std::max_element(row.begin(), row.end()) - row.begin());
      seen.push_back(out[j]);
    }
    return count;
  }
  bool has_draft_logits() const override { return drafted_; }
  const float* row_logits(int r) override { return logits_.data() + static_cast<size_t>(r) * cfg_.vocab_size; }
  const float* row_draft_logits(int r) override {
    if (!drafted_ || static_cast<size_t>(r + 1) * cfg_.vocab_size > draft_logits_.size()) return nullptr;
    return draft_logits_.data() + static_cast<size_t>(r) * cfg_.vocab_size;
  }

  void run(std::span<SequenceInput* const> seqs) override {
    logits_.clear();
    draft_logits_.clear();
    row_cache_.clear();
    drafted_ = draft_rule_ && std::any_of(seqs.begin(), seqs.end(), [](const SequenceInput* s) { return s->draft_logits; });
    std::vector<int32_t> visible;
    for (SequenceInput* s : seqs) {
      KvCache& c = *s->cache;
      const int past = c.size(), m = static_cast<int>(s->tokens.size());
      c.append(m);
      for (int i = 0; i < m; i++) {
        const float token = static_cast<float>(s->tokens[i]);
        c.store_key(0, past + i, &token);
        const float pos = static_cast<float>(s->positions.empty() ? past + i : s->positions[i]);
        c.store_value(0, past + i, &pos);
      }
      std::vector<std::vector<float>> rows(m), drafts(m);
      for (int i = 0; i < m; i++) {
        visible.clear();
        int expect_pos = 0;
        auto see = [&](int slot) {
          if (static_cast<int>(c.value(0, slot, 0)) != expect_pos)
            throw std::logic_error("fake model: a row sees position " + std::to_string(c.value(0, slot, 0)) +
                                   " where position " + std::to_string(expect_pos) + " belongs");
          expect_pos++;
          visible.push_back(static_cast<int32_t>(c.key(0, slot, 0)));
        };
        for (int j = 0; j < past; j++) see(j);
        for (int j = 0; j < m; j++)
          if (s->mask.size() == 0 ? j <= i : s->mask.get(i, j)) see(past + j);
        rows[i].assign(cfg_.vocab_size, 0.0f);
        rule_(visible, rows[i].data());
        if (drafted_) {
          drafts[i].assign(cfg_.vocab_size, 0.0f);
          draft_rule_(visible, drafts[i].data());
        }
        rows_++;
      }
      for (int r : s->logit_rows) logits_.insert(logits_.end(), rows[r].begin(), rows[r].end());
      row_cache_.insert(row_cache_.end(), s->logit_rows.size(), s->cache);
      if (drafted_)
        for (int r : s->logit_rows) draft_logits_.insert(draft_logits_.end(), drafts[r].begin(), drafts[r].end());
    }
  }

 private:
  ModelConfig cfg_;
  NextTokenRule rule_, draft_rule_, chain_rule_;
  int draft_cfg_shift_ = 0;
  std::vector<float> logits_, draft_logits_;
  std::vector<const KvCache*> row_cache_;  // each logit row's sequence's
  bool drafted_ = false;
  int64_t rows_ = 0;
};

// A machine that is busy for the first 30 ms after its first forward, then quiet: a forward of m rows
// takes m x 200 us, three times that while busy. For cost measurements, which must be fair to every row count.
class BusyThenQuiet : public WrappedForward {
 public:
  BusyThenQuiet() : WrappedForward(inner_) {}

 protected:
  void run(std::span<SequenceInput* const> seqs) override {
    if (start_ < 0) start_ = now_seconds();
    const double slow = now_seconds() - start_ < 0.03 ? 3.0 : 1.0;
    const double until = now_seconds() + slow * 200e-6 * static_cast<double>(seqs[0]->tokens.size());
    while (now_seconds() < until) {
    }
    WrappedForward::run(seqs);
  }

 private:
  FakeModel inner_{8, [](std::span<const int32_t>, float*) {}};
  double start_ = -1;
};

inline uint64_t mix(uint64_t h) {
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdull;
  h ^= h >> 33;
  h *= 0xc4ceb9fe1a85ec53ull;
  return h ^ (h >> 33);
}

// Greedy rule that follows `text` while the visible tokens are a prefix of it, else falls back to a
// function of the last two tokens (so wrong drafts lead somewhere deterministic). Peaked logits.
inline NextTokenRule oracle_rule(std::vector<int32_t> text, int vocab) {
  return [text = std::move(text), vocab](std::span<const int32_t> seen, float* logits) {
    int32_t next;
    if (seen.size() < text.size() && std::equal(seen.begin(), seen.end(), text.begin()))
      next = text[seen.size()];
    else
      next = static_cast<int32_t>(mix(seen.back() * 1315423911ull + (seen.size() > 1 ? seen[seen.size() - 2] : 7)) % vocab);
    for (int v = 0; v < vocab; v++) logits[v] = static_cast<float>(mix(v + 977) % 1000) / 1000.0f;
    logits[next] = 10.0f;
  };
}

// Greedy rule whose prediction depends only on the position: the next token is text[i] for a row that sees
// i tokens, whatever they are. Every Jacobi-style iteration is right at every position after one step, so
// what a strategy gains depends only on its drafting mechanics (the text is cycled past its end).
inline NextTokenRule position_rule(std::vector<int32_t> text, int vocab) {
  return [text = std::move(text), vocab](std::span<const int32_t> seen, float* logits) {
    for (int v = 0; v < vocab; v++) logits[v] = static_cast<float>(mix(v + 977) % 1000) / 1000.0f;
    logits[text[seen.size() % text.size()]] = 10.0f;
  };
}

// Sampling rule: a context-dependent, non-degenerate distribution over a small vocabulary.
// `spread`: the range of the logits (larger: more peaked, more different distributions between contexts).
inline NextTokenRule sampling_rule(int vocab, float spread = 2.5f) {
  return [vocab, spread](std::span<const int32_t> seen, float* logits) {
    uint64_t h = 1469598103934665603ull;
    for (size_t i = seen.size() >= 2 ? seen.size() - 2 : 0; i < seen.size(); i++) h = mix(h ^ static_cast<uint64_t>(seen[i]));
    for (int v = 0; v < vocab; v++) logits[v] = spread * static_cast<float>(mix(h + v) % 1000) / 1000.0f;
  };
}

}  // namespace jf::test
