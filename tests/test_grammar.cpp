// Grammars: GBNF parsed and matched as text; token masks equal to trying every token; and every decoder,
// greedy or sampled, under a grammar, logit biases and penalties, gives exactly constrained `ar`'s tokens,
// while jump-forward sends the grammar's forced text as drafts that are accepted (more tokens a forward).
#include <cstdio>
#include <map>

#include "base/error.h"
#include "base/rng.h"
#include "decode/options.h"
#include "base/timer.h"
#include "formats/gguf.h"
#include "grammar/class_runs.h"
#include "grammar/json_schema.h"
#include "grammar/matcher.h"
#include "grammar/token_grammar.h"
#include "model/draft_file.h"
#include "model/loader.h"
#include "test_support.h"

namespace jf {
namespace {

bool accepts(const std::string& gbnf, const std::string& text) {
  const Grammar g = Grammar::parse(gbnf);
  return GrammarMatcher(g).accepts(text);
}

std::string parse_error(const std::string& gbnf) {
  try {
    Grammar::parse(gbnf);
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(Gbnf, LiteralsClassesGroupsAndRepetition) {
  const std::string g = R"(
    root ::= "{" ws pair ("," ws pair)* "}"   # pairs
    pair ::= [a-z]+ ":" ws ("yes" | "no")
    ws ::= [ \t\n]{0,2}
  )";
  EXPECT_TRUE(accepts(g, "{a:yes}"));
  EXPECT_TRUE(accepts(g, "{ ab: no,\n\tc:yes}"));
  EXPECT_FALSE(accepts(g, "{a:yes"));            // incomplete
  EXPECT_FALSE(accepts(g, "{a:maybe}"));
  EXPECT_FALSE(accepts(g, "{   a:yes}"));         // 3 > {0,2}
  EXPECT_FALSE(accepts(g, "{A:yes}"));
  EXPECT_FALSE(accepts(g, "{a:yes}x"));           // trailing text
  EXPECT_TRUE(accepts(R"(root ::= "a"{2,3} "b"? "c"{2})", "aacc"));
  EXPECT_TRUE(accepts(R"(root ::= "a"{2,3} "b"? "c"{2})", "aaabcc"));
  EXPECT_FALSE(accepts(R"(root ::= "a"{2,3} "b"? "c"{2})", "aaaacc"));
  EXPECT_TRUE(accepts(R"(root ::= "x"{2,})", "xxxxx"));
  EXPECT_FALSE(accepts(R"(root ::= "x"{2,})", "x"));
}

TEST(Gbnf, NegatedClassesAnyCharEscapesAndUtf8) {
  const std::string str = R"(root ::= "\"" ( [^"\\\x00-\x1F] | "\\" ["\\nt] )* "\"")";
  EXPECT_TRUE(accepts(str, R"("hi \"there\" \\ é 日本")"));
  EXPECT_FALSE(accepts(str, "\"a\nb\""));
  EXPECT_FALSE(accepts(str, R"("a\q")"));
  EXPECT_TRUE(accepts(R"(root ::= [α-ω]+ "→" . )", "αβγ→x"));
  EXPECT_TRUE(accepts(R"(root ::= "\u00e9\U0001F600")", "é😀"));
  EXPECT_FALSE(accepts(R"(root ::= [α-ω]+)", "abc"));
  // A code point read byte by byte: alive while some class takes a code point with those leading bits.
  const Grammar g = Grammar::parse(R"(root ::= "é")");
  GrammarMatcher m(g);
  GrammarState s = m.start();
  EXPECT_TRUE(m.advance(s, static_cast<uint8_t>(0xC3)));
  EXPECT_FALSE(m.complete(s));
  EXPECT_TRUE(m.advance(s, static_cast<uint8_t>(0xA9)));
  EXPECT_TRUE(m.complete(s));
  GrammarState t = m.start();
  EXPECT_FALSE(m.advance(t, static_cast<uint8_t>(0xE6)));  // a 3-byte lead: no such code point allowed
  // Overlong encodings of an allowed character are refused, at the first byte that rules them out.
  const Grammar az = Grammar::parse("root ::= [a-z]");
  GrammarMatcher ma(az);
  GrammarState o = ma.start();
  EXPECT_FALSE(ma.advance(o, std::string_view("\xC1\xA1")));
  o = ma.start();
  EXPECT_FALSE(ma.advance(o, static_cast<uint8_t>(0xF0)));  // 4 bytes encode U+10000 and up only
}

TEST(Gbnf, ClassesMatchRangesOfCodePoints) {
  CharClass c{{{'a', 'f'}, {'x', 'z'}}, false};
  EXPECT_TRUE(c.matches_any('e', 'h'));
  EXPECT_FALSE(c.matches_any('g', 'w'));
  CharClass n{{{'a', 'f'}, {'x', 'z'}}, true};
  EXPECT_FALSE(n.matches_any('b', 'e'));
  EXPECT_TRUE(n.matches_any('e', 'g'));
  EXPECT_FALSE(n.matches_any('x', 'z'));
  EXPECT_TRUE(n.matches_any('z', 'z' + 1));
}

// A grammar so ambiguous that a text keeps thousands of ways to continue (a counted repetition inside another,
// as a JSON Schema pattern like ^(.{1,100}){1,100}$ makes) is an error, not a matcher stalling on each character.
TEST(Gbnf, AnAmbiguousGrammarIsRefusedWhereItBlowsUp) {
  const Grammar g = Grammar::parse("root ::= ([a-z]{1,100}){1,100}");
  const GrammarMatcher m(g);
  GrammarState s = m.start();
  try {
    m.advance(s, std::string(300, 'a'));
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("ways to continue"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(accepts("root ::= [a-z]{1,100}", std::string(100, 'a')));  // (one count alone: fine)
}

TEST(Gbnf, BadGrammarsAreOneLineErrors) {
  EXPECT_NE(parse_error("root ::= \"a").find("line 1: unterminated string"), std::string::npos);
  EXPECT_NE(parse_error("root ::= a\n").find("rule 'a' is used but never defined"), std::string::npos);
  EXPECT_NE(parse_error("start ::= \"a\"").find("no rule named 'root'"), std::string::npos);
  EXPECT_NE(parse_error("root ::= root \"a\" | \"b\"").find("left recursion"), std::string::npos);
  EXPECT_NE(parse_error("root ::= x\nx ::= y \"a\"\ny ::= \"\" | x").find("left recursion"), std::string::npos);
  EXPECT_NE(parse_error("root ::= (\"a\"?)*").find("left recursion"), std::string::npos);  // a repeated empty item
  EXPECT_NE(parse_error("root ::= \"a\"\nroot ::= \"b\"").find("line 2: rule 'root' is defined twice"), std::string::npos);
  EXPECT_NE(parse_error("root ::= [z-a]").find("backwards"), std::string::npos);
  EXPECT_NE(parse_error("root ::= \"a\"{3,2}").find("n < m"), std::string::npos);
  EXPECT_NE(parse_error("root ::= \"\\q\"").find("unknown escape"), std::string::npos);
  EXPECT_NE(parse_error("root ::= *").find("follows nothing"), std::string::npos);
  // Bounded: a repetition that would unfold past the element limit is refused, quickly.
  std::string huge = "root ::=";
  for (int i = 0; i < 11; i++) huge += " \"abcdefghij\"{10000}";
  EXPECT_NE(parse_error(huge).find("too large"), std::string::npos);
}

// ---------------------------------------------------------------- against the code model's tokenizer

struct CodeModel {
  CodeModel() : lm(load_model(JF_SOURCE_DIR "/models/pycode-ar-q8_0.gguf")) {
    attach_draft_file(*lm.model, JF_SOURCE_DIR "/models/pycode-ar-q8_0.draft.gguf");
  }
  LoadedModel lm;
};

// An answer with fixed keys, an enum, a free string and a number: what a JSON schema compiles to.
const char* const kPersonGrammar = R"(
  root ::= "{\"name\": \"" name "\", \"kind\": \"" kind "\", \"age\": " age "}"
  name ::= [a-zA-Z_ ]{1,16}
  kind ::= "function" | "class" | "module"
  age ::= [1-9] [0-9]?
)";

TEST(TokenGrammar, MasksEqualTryingEveryToken) {
  CodeModel m;
  const Tokenizer& tok = *m.lm.tokenizer;
  // (The third loops in a string: masks there take whole subtrees of the vocabulary without walking them.)
  const char* grammars[] = {kPersonGrammar, R"(root ::= "\"" ( [^"\\] | "\\" ["\\n] ){0,30} "\"")",
                            R"(root ::= "\"" ( [^"\\] | "\\" ["\\n] )* "\" end" [a-z]*)",
                            R"(root ::= ("def " [a-z_]+ "(" [a-z, ]* "):\n") | [α-ω日本]+ "!")"};
  Rng rng(7);
  int checked = 0;
  for (const char* gbnf : grammars) {
    const std::shared_ptr<TokenGrammar> g = compile_grammar(gbnf, tok);
    for (int walk = 0; walk < 4; walk++) {
      TokenGrammar::State s = g->start();
      for (int step = 0; step < 24; step++) {
        const TokenMask mask = g->allowed(s);
        std::vector<int32_t> allowed;
        for (int32_t t = 0; t < tok.n_vocab(); t++) {
          // Tried from scratch with the matcher alone, not through the grammar's tables.
          GrammarState tried = g->state(s);
          const bool ok = tok.is_eog(t) ? g->matcher().complete(tried)
                                        : !tok.is_control(t) && g->matcher().advance(tried, tok.token_bytes(t));
          ASSERT_EQ(mask_has(mask, t), ok) << "token " << t << " '" << tok.token_bytes(t) << "' at step " << step;
          if (ok && !tok.is_eog(t)) allowed.push_back(t);
          checked++;
        }
        if (allowed.empty()) break;
        s = g->advance(s, allowed[rng.below(static_cast<uint32_t>(allowed.size()))]);
        ASSERT_FALSE(s.dead());
      }
    }
  }
  EXPECT_GT(checked, 100000);
}

// A grammar state's step is the matcher's, taken once per state and signature (which of its top classes
// take the code point): classes that overlap, multi-byte and partial code points, stepped byte by byte,
// leave the same stacks as the matcher alone; and a long text inside one class costs a few matcher steps.
TEST(TokenGrammar, StepsBySignatureAreTheMatchers) {
  const char* gbnf = R"(root ::= [a-mα-ω]+ "x" | [h-zα日-本]+ "y" | "é" [^"]* "\"")";
  const Grammar grammar = Grammar::parse(gbnf);
  GrammarMatcher matcher(grammar);
  JF_SHARED_PATH(path, "models/tokenizers/ggml-vocab-gpt-2.gguf");
  const std::unique_ptr<Tokenizer> tok = Tokenizer::from_gguf(GgufFile::open(path)->meta());
  const std::vector<std::string> pieces = {"a", "h", "n", "z", "α", "β", "ω", "日", "本", "é", "x", "y", "\"", "q", "\xce", "\x80",
                                           "\xe3\x81", "\xe6\x9c", "\xe6\x97", "\xe6\x80", "\xa5"};
  Rng rng(5);
  int compared = 0;
  for (int text = 0; text < 200; text++) {
    TokenGrammar g(grammar, *tok);
    TokenGrammar::State s = g.start();
    GrammarState m = matcher.start();
    for (int i = 0; i < 12 && !s.dead(); i++) {
      // Mostly a piece the grammar takes (so texts grow), sometimes any (so they also die).
      std::string piece = pieces[rng.below(static_cast<uint32_t>(pieces.size()))];
      for (int tries = 0; tries < 20 && rng.below(5) > 0; tries++) {
        GrammarState probe = m;
        if (matcher.advance(probe, piece)) break;
        piece = pieces[rng.below(static_cast<uint32_t>(pieces.size()))];
      }
      for (char c : piece) {
        s = g.advance(s, std::string_view(&c, 1));
        const bool alive = matcher.advance(m, static_cast<uint8_t>(c));
        ASSERT_EQ(s.dead(), !alive) << "text " << text << " byte " << int(static_cast<uint8_t>(c));
        if (!alive) break;
        const GrammarState got = g.state(s);
        ASSERT_EQ(got.stacks, m.stacks);
        ASSERT_EQ(std::make_tuple(got.partial, got.partial_left), std::make_tuple(m.partial, m.partial_left));
        if (m.partial_left > 0) {  // (the matcher keeps a stale size after)
          ASSERT_EQ(got.partial_size, m.partial_size);
        }
        compared++;
      }
    }
  }
  EXPECT_GT(compared, 1000);
  // 2,000 characters of the first class, of 26 kinds: the matcher steps a few, once per signature.
  TokenGrammar g(grammar, *tok);
  TokenGrammar::State s = g.start();
  for (int i = 0; i < 1000; i++) s = g.advance(s, std::string_view(i % 2 ? "\xce\xb1" : "abcdefghijklm") .substr(0, i % 2 ? 2 : 1 + i % 13));
  ASSERT_FALSE(s.dead());
  EXPECT_LE(g.matcher_steps(), 12);
}

TEST(TokenGrammar, CodeSetsOfClasses) {
  const Grammar g = Grammar::parse(R"(root ::= [^"\\\x00-\x1F] [a-cx-z0-9] [^a-z])");
  const CodeSet any_char = CodeSet::of(g.classes[0]), few = CodeSet::of(g.classes[1]), no_lower = CodeSet::of(g.classes[2]);
  EXPECT_EQ(any_char.size(), 0x110000u - 0x20 - 2);
  EXPECT_TRUE(any_char.contains('a') && any_char.contains(0x10FFFF) && !any_char.contains('"') && !any_char.contains(0x1F));
  EXPECT_EQ(few.ranges, (std::vector<std::pair<uint32_t, uint32_t>>{{'0', '9'}, {'a', 'c'}, {'x', 'z'}}));
  EXPECT_TRUE(few.subset_of(any_char));
  EXPECT_FALSE(any_char.subset_of(few));
  EXPECT_FALSE(few.disjoint(no_lower));  // the digits
  CharClass quote{{{'"', '"'}}, false};
  EXPECT_TRUE(CodeSet::of(quote).disjoint(any_char));
  EXPECT_FALSE(CodeSet::of(quote).disjoint(no_lower));
}

// Inside strings the masks come from the vocabulary's runs of the string's characters (class_runs.h), not a
// walk: on real byte-level and sentencepiece vocabularies (multi-byte characters, tokens that end inside one,
// byte tokens), with free, bounded and nearly full strings, they equal trying every token.
TEST(TokenGrammar, MasksFromRunsEqualTryingEveryToken) {
  nlohmann::ordered_json schema = {{"type", "object"},
                                   {"properties", {{"name", {{"type", "string"}, {"maxLength", 4}}},
                                                   {"note", {{"type", "string"}, {"minLength", 2}, {"maxLength", 40}}},
                                                   {"tags", {{"type", "array"}, {"items", {{"type", "string"}}}}}}},
                                   {"required", {"name", "note", "tags"}}, {"additionalProperties", false}};
  const std::string gbnf = json_schema_to_gbnf(schema, JsonWhitespace::Compact);
  // Where each walk starts: inside each string, some characters in.
  const char* starts[] = {"{\"name\":\"", "{\"name\":\"h\u00e9", "{\"name\":\"ab\",\"note\":\"",
                          "{\"name\":\"ab\",\"note\":\"\xe6\x97\xa5 x", "{\"name\":\"\",\"note\":\"12\",\"tags\":[\"a\\n"};
  Rng rng(11);
  for (const char* vocab : {"gpt-2", "llama-spm"}) {
    JF_SHARED_PATH(path, "models/tokenizers/ggml-vocab-" + std::string(vocab) + ".gguf");
    const std::unique_ptr<Tokenizer> tok = Tokenizer::from_gguf(GgufFile::open(path)->meta());
    const std::shared_ptr<TokenGrammar> g = compile_grammar(gbnf, *tok);
    for (const char* start : starts) {
      TokenGrammar::State s = g->advance(g->start(), std::string_view(start));
      ASSERT_FALSE(s.dead()) << start;
      for (int step = 0; step < 6 && !s.dead(); step++) {
        const TokenMask mask = g->allowed(s);
        std::vector<int32_t> allowed;
        for (int32_t t = 0; t < tok->n_vocab(); t++) {
          GrammarState tried = g->state(s);
          const bool ok = tok->is_eog(t) ? g->matcher().complete(tried)
                                         : !tok->is_control(t) && !tok->token_bytes(t).empty() &&  // (<unk>: never)
                                               g->matcher().advance(tried, tok->token_bytes(t));
          ASSERT_EQ(mask_has(mask, t), ok) << vocab << ": token " << t << " '" << tok->token_bytes(t) << "' after '" << start << "' + " << step;
          if (ok && !tok->is_eog(t)) allowed.push_back(t);
        }
        if (allowed.empty()) break;
        s = g->advance(s, allowed[rng.below(static_cast<uint32_t>(allowed.size()))]);
      }
    }
    EXPECT_GE(g->masks_by_runs(), 10) << vocab;  // the mechanism ran (most steps were inside a string)
  }
}

TEST(TokenGrammar, ForcedTokensSpellTheForcedText) {
  CodeModel m;
  const std::shared_ptr<TokenGrammar> g = compile_grammar(kPersonGrammar, *m.lm.tokenizer);
  TokenGrammar::State s = g->start();
  EXPECT_EQ(g->matcher().forced_text(g->state(s)), "{\"name\": \"");
  const std::vector<int32_t> forced = g->forced_tokens(s, 32);
  ASSERT_FALSE(forced.empty());
  EXPECT_EQ(m.lm.tokenizer->decode(forced), "{\"name\": \"");
  s = g->advance(s, std::string_view("{\"name\": \"Ada\", \"kind\": \"c"));
  ASSERT_FALSE(s.dead());
  EXPECT_EQ(g->matcher().forced_text(g->state(s)), "lass\", \"age\": ");
  s = g->advance(s, std::string_view("lass\", \"age\": 4"));
  ASSERT_FALSE(s.dead());
  EXPECT_EQ(g->matcher().forced_text(g->state(s)), "");  // a second digit or the closing brace
  EXPECT_EQ(g->forced_tokens(s, 32), std::vector<int32_t>{});
}

GenerationResult run(Session& s, const std::string& spec, const std::vector<int32_t>& prompt, const GenerationConfig& base,
                     int n) {
  DecoderOptions o = parse_decoder_spec(spec, DecoderOptions{});
  o.validate(base.sampling.greedy());
  GenerationConfig cfg = base;
  cfg.max_new_tokens = n;
  return make_decoder(o)->generate(s, prompt, cfg);
}

const char* const kPrompts[] = {"# a record of the function below\nrecord = ", "def area(r):\n    info = ",
                                "class Point:\n    meta = "};

// Greedy: every decoder's tokens are constrained ar's; the text follows the grammar to its end; the
// grammar's forced text, sent as drafts, makes jacobi and pld commit more tokens a forward than ar can.
TEST(ConstrainedDecoding, GreedyDecodersGiveConstrainedArsTokens) {
  CodeModel m;
  Session s(*m.lm.model, 512);
  GenerationConfig cfg;
  cfg.eos_ids = m.lm.tokenizer->eog_ids();
  cfg.rules.grammar = compile_grammar(kPersonGrammar, *m.lm.tokenizer);
  // Every decoder at the fixed policy: priced on a loaded machine, a decoder may cut all its draft rows, and
  // then the grammar refuses none (the row pricing is tested elsewhere; here what is drafted must be masked).
  const char* decoders[] = {"jacobi:block=8:draft-policy=fixed", "jacobi:block=4:window-mode=running:draft-policy=fixed",
                            "pld:draft-policy=fixed", "lookahead:W=4:N=3:G=4:draft-policy=fixed",
                            "multiblock:block=8:draft-policy=fixed", "jacobi:tree=16:draft-policy=fixed"};
  int64_t ar_forwards = 0, jf_forwards = 0, pld_forwards = 0, tokens = 0;
  std::map<std::string, int64_t> refused;  // per decoder: draft tokens the grammar refused, not sent
  for (const char* p : kPrompts) {
    const std::vector<int32_t> prompt = m.lm.tokenizer->encode(p, true, false);
    const GenerationResult ar = run(s, "ar", prompt, cfg, 60);
    const std::string text = m.lm.tokenizer->decode(ar.tokens);
    EXPECT_EQ(ar.stop, StopReason::Eos) << text;
    EXPECT_TRUE(cfg.rules.grammar->matcher().accepts(text)) << text;
    std::printf("%s -> %s (%lld forwards)\n", p, text.c_str(), static_cast<long long>(ar.stats.n_forwards));
    for (const char* d : decoders) {
      const GenerationResult r = run(s, d, prompt, cfg, 60);
      ASSERT_EQ(r.tokens, ar.tokens) << d << " on " << p;
      EXPECT_EQ(r.stop, ar.stop) << d;
      refused[d] += r.stats.counter("draft_tokens_refused");
      if (std::string(d) == decoders[0]) {
        jf_forwards += r.stats.n_forwards;
        EXPECT_GT(r.stats.counter("jump_forward_tokens"), 0);
      }
      if (std::string(d) == decoders[2]) pld_forwards += r.stats.n_forwards;
    }
    ar_forwards += ar.stats.n_forwards;
    tokens += static_cast<int64_t>(ar.tokens.size());
  }
  // Without jump-forward the same decoders find the forced text only where their drafts guess it.
  GenerationConfig plain = cfg;
  plain.rules.jump_forward = false;
  int64_t no_jump = 0;
  for (const char* p : kPrompts) no_jump += run(s, decoders[0], m.lm.tokenizer->encode(p, true, false), plain, 60).stats.n_forwards;
  std::printf("tokens a forward under the grammar: ar %.2f, jacobi %.2f (%.2f without jump-forward), pld %.2f\n",
              double(tokens) / ar_forwards, double(tokens) / jf_forwards, double(tokens) / no_jump, double(tokens) / pld_forwards);
  EXPECT_GE(double(ar_forwards) / jf_forwards, 1.5);
  EXPECT_LT(jf_forwards, no_jump);
  // Drafts are masked before they are sent: every decoder met tokens the grammar refuses and left them out.
  for (const auto& [d, n] : refused) {
    std::printf("  %s: %lld draft tokens refused by the grammar, not sent\n", d.c_str(), static_cast<long long>(n));
    EXPECT_GT(n, 0) << d;
  }
}

// Sampling: a grammar, biases and penalties shape the distribution every decoder draws from, so sample then
// match gives ar's very tokens for the seed; the text follows the grammar.
TEST(ConstrainedDecoding, SampledDecodersGiveConstrainedArsTokens) {
  CodeModel m;
  Session s(*m.lm.model, 512);
  GenerationConfig cfg;
  cfg.eos_ids = m.lm.tokenizer->eog_ids();
  cfg.sampling.temperature = 0.9f, cfg.sampling.top_k = 40;
  cfg.rules.grammar = compile_grammar(kPersonGrammar, *m.lm.tokenizer);
  cfg.rules.frequency_penalty = 0.5f, cfg.rules.presence_penalty = 0.3f, cfg.rules.repeat_penalty = 1.2f;
  for (int seed = 1; seed <= 6; seed++) {
    cfg.sampling.seed = static_cast<uint64_t>(seed);
    const std::vector<int32_t> prompt = m.lm.tokenizer->encode(kPrompts[seed % 3], true, false);
    const GenerationResult ar = run(s, "ar", prompt, cfg, 60);
    const std::string text = m.lm.tokenizer->decode(ar.tokens);
    EXPECT_TRUE(ar.stop != StopReason::Eos || cfg.rules.grammar->matcher().accepts(text)) << text;
    for (const char* d : {"pld", "lookahead", "jacobi:tree=16"})
      ASSERT_EQ(run(s, d, prompt, cfg, 60).tokens, ar.tokens) << d << " seed " << seed;
    const GenerationResult sjd = run(s, "sjd", prompt, cfg, 60);  // exact in distribution, not per seed
    const std::string sjd_text = m.lm.tokenizer->decode(sjd.tokens);
    EXPECT_TRUE(sjd.stop != StopReason::Eos || cfg.rules.grammar->matcher().accepts(sjd_text)) << sjd_text;
  }
}

// Biases and penalties alone: applied exactly by every decoder (constrained ar's tokens), and they do act: a
// banned token never appears, and the penalties change the text.
TEST(ConstrainedDecoding, BiasAndPenaltiesAreAppliedByEveryDecoder) {
  CodeModel m;
  Session s(*m.lm.model, 512);
  GenerationConfig cfg;
  cfg.eos_ids = m.lm.tokenizer->eog_ids();
  const std::vector<int32_t> prompt = m.lm.tokenizer->encode("def fib(n):\n", true, false);
  const GenerationResult free_text = run(s, "ar", prompt, cfg, 48);
  ASSERT_GE(free_text.tokens.size(), 3u);
  GenerationConfig banned = cfg;
  banned.rules.bias[free_text.tokens[0]] = -100.0f;
  banned.rules.bias[free_text.tokens[2]] = 5.0f;
  const GenerationResult b = run(s, "ar", prompt, banned, 48);
  EXPECT_EQ(std::count(b.tokens.begin(), b.tokens.end(), free_text.tokens[0]), 0);
  EXPECT_NE(b.tokens, free_text.tokens);
  GenerationConfig penalised = cfg;
  penalised.rules.frequency_penalty = 1.5f, penalised.rules.repeat_penalty = 1.3f;
  const GenerationResult p = run(s, "ar", prompt, penalised, 48);
  EXPECT_NE(p.tokens, free_text.tokens);
  for (const char* d : {"jacobi:block=8", "pld", "lookahead", "multiblock", "jacobi:tree=16"}) {
    EXPECT_EQ(run(s, d, prompt, banned, 48).tokens, b.tokens) << d;
    EXPECT_EQ(run(s, d, prompt, penalised, 48).tokens, p.tokens) << d;
  }
  GenerationConfig bad = cfg;
  bad.rules.bias[999999] = 1.0f;
  EXPECT_THROW(run(s, "ar", prompt, bad, 4), Error);
  bad = cfg;
  bad.rules.presence_penalty = 3.0f;
  EXPECT_THROW(run(s, "ar", prompt, bad, 4), Error);
}

// A grammar the model cannot finish within max_tokens stops at the length limit, its text a prefix of a
// sentence of the grammar.
TEST(ConstrainedDecoding, MaxTokensBeforeTheGrammarEndsStopsAtTheLength) {
  CodeModel m;
  Session s(*m.lm.model, 512);
  GenerationConfig cfg;
  cfg.eos_ids = m.lm.tokenizer->eog_ids();
  cfg.rules.grammar = compile_grammar(R"(root ::= "[" [0-9]{40} "]")", *m.lm.tokenizer);
  const std::vector<int32_t> prompt = m.lm.tokenizer->encode("x = ", true, false);
  for (const char* d : {"ar", "jacobi", "pld"}) {
    const GenerationResult r = run(s, d, prompt, cfg, 6);
    EXPECT_EQ(r.stop, StopReason::Length) << d;
    TokenGrammar& g = *cfg.rules.grammar;
    EXPECT_FALSE(g.advance(g.start(), std::string_view(m.lm.tokenizer->decode(r.tokens))).dead()) << d;
  }
}

// Fuzzing, seeded: thousands of mutated grammars and schemas (bytes deleted, duplicated, swapped for grammar
// punctuation). Each is a one-line jf::Error or a grammar whose masks and walks run; none crashes or takes
// long. (scripts/fuzz.sh grammar runs the same under libFuzzer with sanitizers.)
TEST(GrammarFuzz, MutatedGrammarsAndSchemasAreErrorsOrWork) {
  CodeModel m;
  const std::vector<std::string> grammars = {kPersonGrammar, R"(root ::= ("a" | [b-d]+ "e"?){1,3} x
x ::= "\"" ( [^"\\] | "\\" . )* "\"" | "."{2})", R"(root ::= obj
obj ::= "{" ( "\"k\":" (obj | [0-9]+) )? "}")"};
  const std::vector<std::string> schemas = {
      R"({"type":"object","properties":{"a":{"type":"string","maxLength":3},"b":{"enum":[1,"x",null]}},"required":["a"]})",
      R"({"type":"array","items":{"anyOf":[{"type":"integer","minimum":-5,"maximum":300},{"$ref":"#/$defs/s"}]},"maxItems":4,"$defs":{"s":{"type":"string","format":"date"}}})"};
  const char punct[] = "\"[]()|*+?{},:^-\\.#\n a0";
  Rng rng(2024);
  int errors = 0, worked = 0;
  double slowest = 0;
  for (int i = 0; i < 3000; i++) {
    const bool schema = i % 3 == 2;
    std::string text = schema ? schemas[i % schemas.size()] : grammars[i % grammars.size()];
    for (int e = 0, n = 1 + static_cast<int>(rng.below(4)); e < n && !text.empty(); e++) {
      const size_t at = rng.below(static_cast<uint32_t>(text.size()));
      switch (rng.below(3)) {
        case 0: text.erase(at, 1 + rng.below(3)); break;
        case 1: text.insert(at, text.substr(at, 1 + rng.below(8))); break;
        default: text[at] = punct[rng.below(sizeof punct - 1)]; break;
      }
    }
    const double t0 = now_seconds();
    try {
      std::string gbnf = text;
      if (schema) {
        const auto j = nlohmann::ordered_json::parse(text, nullptr, false);
        if (j.is_discarded()) continue;
        gbnf = json_schema_to_gbnf(j);
      }
      const std::shared_ptr<TokenGrammar> g = compile_grammar(gbnf, *m.lm.tokenizer);
      TokenGrammar::State s = g->start();
      for (int step = 0; step < 6 && !s.dead(); step++) {
        const TokenMask& mask = g->allowed(s);
        int32_t next = -1;
        for (int32_t t = 0; t < g->n_vocab() && next < 0; t++)
          if (mask_has(mask, t) && !m.lm.tokenizer->is_eog(t) && rng.below(8) == 0) next = t;
        if (next < 0) break;
        s = g->advance(s, next);
        ASSERT_FALSE(s.dead()) << "an allowed token left the grammar: " << gbnf;
      }
      worked++;
    } catch (const Error& e) {
      ASSERT_EQ(std::string(e.what()).find('\n'), std::string::npos) << "not a one-line error: " << e.what();
      errors++;
    }
    slowest = std::max(slowest, now_seconds() - t0);
  }
  std::printf("3000 mutations: %d errors, %d grammars that ran; slowest %.1f ms\n", errors, worked, slowest * 1e3);
  EXPECT_GT(errors, 300);
  EXPECT_GT(worked, 200);
  EXPECT_LT(slowest, 5.0);
}

}  // namespace
}  // namespace jf
