#include "decode/options.h"

#include "base/error.h"
#include "decode/fastcot.h"
#include "decode/jacobi.h"
#include "decode/lookahead.h"
#include "decode/multiblock.h"
#include "decode/pld.h"
#include "decode/sjd.h"

namespace jf {

namespace {
void need(bool ok, const std::string& what) {
  if (!ok) throw Error(what);
}
}  // namespace

std::vector<std::string> decoder_names() { return {"ar", "jacobi", "lookahead", "pld", "multiblock", "sjd", "fastcot"}; }

void DecoderOptions::validate(bool greedy) const {
  bool known = false;
  for (const auto& n : decoder_names()) known |= n == name;
  need(known, "unknown decoder '" + name + "' (known: ar, jacobi, lookahead, pld, multiblock, sjd, fastcot)");
  need(block >= 1 && block <= 4096, "--block must be between 1 and 4096, got " + std::to_string(block));
  need(window >= 1 && window <= 256, "--W must be between 1 and 256, got " + std::to_string(window));
  need(ngram >= 2 && ngram <= 64, "--N must be between 2 and 64, got " + std::to_string(ngram));
  need(guesses >= 0 && guesses <= 256, "--G must be between 0 and 256, got " + std::to_string(guesses));
  need(draft_max >= 0 && draft_max <= 4096, "--draft-max must be between 0 and 4096, got " + std::to_string(draft_max));
  need(ngram_max >= 1 && ngram_max <= 16, "--ngram-max must be between 1 and 16, got " + std::to_string(ngram_max));
  need(ngram_memory >= 0 && ngram_memory <= (1 << 26),
       "--ngram-memory must be between 0 and 67108864 tokens, got " + std::to_string(ngram_memory));
  need(max_blocks >= 1 && max_blocks <= 64, "--K must be between 1 and 64, got " + std::to_string(max_blocks));
  need(spawn_ratio > 0.0f && spawn_ratio <= 1.0f, "--r must be in (0, 1], got " + std::to_string(spawn_ratio));
  need(pool >= 0 && pool <= 1024, "--pool must be between 0 and 1024, got " + std::to_string(pool));
  need(fastcot_iterations >= 0 && fastcot_iterations <= (1 << 20),
       "--fastcot-iters must be between 0 and 1048576, got " + std::to_string(fastcot_iterations));
  need(tree_nodes >= 0 && tree_nodes <= 1024, "--tree must be between 0 and 1024 rows, got " + std::to_string(tree_nodes));
  need(tree_depth >= 1 && tree_depth <= 64, "--tree-depth must be between 1 and 64, got " + std::to_string(tree_depth));
  need(tree_width >= 1 && tree_width <= 64, "--tree-width must be between 1 and 64, got " + std::to_string(tree_width));
  need(tree_beam >= 1 && tree_beam <= 64, "--tree-beam must be between 1 and 64, got " + std::to_string(tree_beam));
  need(tree_nodes == 0 || name == "jacobi" || name == "multiblock",
       "draft trees (tree=N) apply to the jacobi and multiblock decoders, not '" + name + "'");
  if ((name == "jacobi" && tree_nodes == 0) || name == "multiblock" || name == "fastcot")
    need(greedy, "decoder '" + name + "' is greedy only (--temp 0); for sampling use sjd, lookahead, pld or jacobi with a draft tree (jacobi:tree=N)");
  need(pac_tree_depth >= 0 && pac_tree_depth <= 64 && pac_tree_width >= 1 && pac_tree_width <= 64,
       "--pac-tree D,K needs 0 <= D <= 64 and 1 <= K <= 64, got " + std::to_string(pac_tree_depth) + "," +
           std::to_string(pac_tree_width));
  need(pac_tree_depth == 0 || name == "sjd", "--pac-tree applies to the sjd decoder only, not '" + name + "'");
  need(!pac_continue || name == "sjd", "--pac-continue applies to the sjd decoder only, not '" + name + "'");
  need(!pac_repeat_guess || pac_tree_depth > 0, "pac-guess adds to the proactive tree: it needs pac-tree D,K");
  if (name == "sjd") need(!greedy, "decoder 'sjd' is for sampling: give --temp > 0 (for greedy use jacobi)");
}

namespace {

int to_int(const std::string& key, const std::string& v) {
  try {
    size_t used = 0;
    int x = std::stoi(v, &used);
    if (used == v.size()) return x;
  } catch (const std::exception&) {
  }
  throw Error("decoder option " + key + "=" + v + ": not an integer");
}

float to_float(const std::string& key, const std::string& v) {
  try {
    size_t used = 0;
    float x = std::stof(v, &used);
    if (used == v.size()) return x;
  } catch (const std::exception&) {
  }
  throw Error("decoder option " + key + "=" + v + ": not a number");
}

}  // namespace

void parse_pac_tree(const std::string& v, int* depth, int* width) {
  const size_t sep = v.find_first_of(",x");
  if (sep == std::string::npos) throw Error("pac-tree must be D,K or DxK (depth, width; e.g. 3x4), got '" + v + "'");
  *depth = to_int("pac-tree", v.substr(0, sep));
  *width = to_int("pac-tree", v.substr(sep + 1));
}

DecoderOptions parse_decoder_spec(const std::string& spec, const DecoderOptions& base) {
  DecoderOptions o = base;
  size_t start = 0;
  bool first = true;
  while (start <= spec.size()) {
    size_t end = spec.find(':', start);
    if (end == std::string::npos) end = spec.size();
    const std::string part = spec.substr(start, end - start);
    start = end + 1;
    if (first) {
      o.name = part;
      first = false;
      continue;
    }
    const size_t eq = part.find('=');
    if (eq == std::string::npos) throw Error("decoder spec '" + spec + "': expected key=value, got '" + part + "'");
    const std::string k = part.substr(0, eq), v = part.substr(eq + 1);
    if (k == "block") o.block = to_int(k, v);
    else if (k == "window-mode") {
      if (v != "block" && v != "running") throw Error("window-mode must be block or running, got '" + v + "'");
      o.running_window = v == "running";
    } else if (k == "draft-init") {
      if (!draft_init_from_name(v, &o.init)) throw Error("draft-init must be context, random or repeat, got '" + v + "'");
    } else if (k == "W") o.window = to_int(k, v);
    else if (k == "N") o.ngram = to_int(k, v);
    else if (k == "G") o.guesses = to_int(k, v);
    else if (k == "draft-max") o.draft_max = to_int(k, v);
    else if (k == "ngram-max") o.ngram_max = to_int(k, v);
    else if (k == "draft-policy") {
      if (v != "adaptive" && v != "fixed") throw Error("draft-policy must be adaptive or fixed, got '" + v + "'");
      o.draft_adaptive = v == "adaptive";
    } else if (k == "ngram-memory") o.ngram_memory = to_int(k, v);
    else if (k == "ngram-corpus") o.ngram_corpus = v;
    else if (k == "K") o.max_blocks = to_int(k, v);
    else if (k == "r") o.spawn_ratio = to_float(k, v);
    else if (k == "pool") o.pool = to_int(k, v);
    else if (k == "fastcot-iters") o.fastcot_iterations = to_int(k, v);
    else if (k == "answer-trigger") o.answer_trigger = v;
    else if (k == "pac-continue") {
      if (v != "0" && v != "1") throw Error("pac-continue must be 0 or 1, got '" + v + "'");
      o.pac_continue = v == "1";
    } else if (k == "pac-guess") {
      o.pac_repeat_guess = to_int(k, v);
      if (o.pac_repeat_guess < 0 || o.pac_repeat_guess > 64) throw Error("pac-guess must be between 0 and 64, got '" + v + "'");
    } else if (k == "pac-tree") {
      parse_pac_tree(v, &o.pac_tree_depth, &o.pac_tree_width);
    } else if (k == "draft-head") {
      if (v != "0" && v != "1") throw Error("draft-head must be 0 or 1, got '" + v + "'");
      o.draft_head = v == "1";
    } else if (k == "draft-chain") {
      o.draft_chain = to_int(k, v);
      if (o.draft_chain < -1) throw Error("draft-chain must be -1 (the model's) or at least 0, got '" + v + "'");
    } else if (k == "tree") o.tree_nodes = to_int(k, v);
    else if (k == "tree-depth") o.tree_depth = to_int(k, v);
    else if (k == "tree-width") o.tree_width = to_int(k, v);
    else if (k == "tree-beam") o.tree_beam = to_int(k, v);
    else if (k == "spawn-init") {
      if (v != "copy" && v != "predict") throw Error("spawn-init must be copy or predict, got '" + v + "'");
      o.spawn_copy = v == "copy";
    }
    else throw Error("decoder spec '" + spec + "': unknown option '" + k + "'");
  }
  return o;
}

std::unique_ptr<Decoder> make_decoder(const DecoderOptions& o) {
  if (o.name == "jacobi") return std::make_unique<JacobiDecoder>(JacobiOptions{o.block, o.running_window, o.init, o.draft_seed, nullptr, o.draft_adaptive, o.draft_head, o.draft_chain,
                                                                     TreeShape{o.tree_nodes, o.tree_depth, o.tree_width, o.tree_beam}});
  if (o.name == "lookahead")
    return std::make_unique<LookaheadDecoder>(LookaheadOptions{o.window, o.ngram, o.guesses, o.pool_from_prompt, o.init, o.draft_seed, o.draft_adaptive});
  if (o.name == "pld")
    return std::make_unique<PldDecoder>(
        PldOptions{o.draft_max, o.ngram_max, o.draft_adaptive, o.ngram_memory, o.corpus_tokens, o.pld_memory});
  if (o.name == "multiblock")
    return std::make_unique<MultiblockDecoder>(
        MultiblockOptions{o.block, o.max_blocks, o.spawn_ratio, o.pool, o.init, o.draft_seed, o.spawn_copy, o.draft_adaptive, o.draft_head,
                          o.draft_chain, TreeShape{o.tree_nodes, o.tree_depth, o.tree_width, o.tree_beam}});
  if (o.name == "sjd") return std::make_unique<SjdDecoder>(SjdOptions{o.block, o.init, o.draft_seed, false, false, false, o.pac_continue,
                                                                o.pac_tree_depth, o.pac_tree_width, o.draft_adaptive,
                                                                o.pac_repeat_guess});
  if (o.name == "fastcot")
    return std::make_unique<FastCotDecoder>(FastCotOptions{o.block, o.fastcot_iterations, o.trigger_tokens, o.init, o.draft_seed});
  if (o.name == "ar") return std::make_unique<ArDecoder>();
  throw Error("unknown decoder '" + o.name + "'");
}

}  // namespace jf
