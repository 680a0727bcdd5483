// `jf image-data`: captioned emoji images (npm's emoji-datasource-google and -twitter, fetched by
// scripts/image_data.sh) as a text-to-image corpus: a caption, the image marker, then the image's colour tokens,
// one document a line; the vocabulary (a small BPE on the captions plus the palette's tokens) to train a model
// from scratch with, or an existing model's vocabulary reused. More than one art style gives each caption more
// than one picture, so a model must learn what the words mean rather than one pixel sequence per caption.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <nlohmann/json.hpp>

#include "base/error.h"
#include "base/mapped_file.h"
#include "cli/commands.h"
#include "formats/gguf.h"
#include "formats/image.h"
#include "tokenizer/bpe_train.h"
#include "tokenizer/image_vocab.h"

namespace jf::cli {

namespace {

struct ImageDataArgs {
  std::vector<std::string> emoji_dirs;
  std::string out_dir, vocab_from;
  int size = 16;
  int colours = 256;
  int text_vocab = 512;
  int heldout_every = 20;
  bool heldout_known_words = false;
  int shifts = 1;
  bool whole_words = false;
};

struct Captioned {
  std::string caption;
  Image image;   // size x size, opaque
  Image source;  // the package's 64x64 picture on white (what --shifts moves)
  bool heldout = false;
  bool shifted = false;  // a --shifts copy: trained on, but left out of the palette and the caption BPE
};

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// The art style a package ships: the one folder under img/ ("google", "twitter", ...).
std::string image_set(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir + "/img", ec))
    if (entry.is_directory() && fs::exists(entry.path() / "64")) return entry.path().filename().string();
  throw Error(dir + ": no emoji images found (expected emoji.json and img/SET/64/*.png)");
}

// Every emoji with an image in the package's set, in its sort order; every `heldout_every`-th held out.
std::vector<Captioned> read_emoji(const ImageDataArgs& a, const std::string& dir) {
  namespace fs = std::filesystem;
  const std::string set = image_set(dir);
  const std::string index = dir + "/emoji.json";
  nlohmann::json entries;
  try {
    entries = nlohmann::json::parse(read_text_file(index));
  } catch (const nlohmann::json::exception& e) {
    throw Error(index + ": not JSON (" + e.what() + ")");
  }
  if (!entries.is_array()) throw Error(index + ": expected an array of emoji");
  std::vector<const nlohmann::json*> order;
  for (const auto& e : entries)
    if (e.is_object() && e.value("has_img_" + set, false) && e.contains("name") && e["name"].is_string()) order.push_back(&e);
  std::stable_sort(order.begin(), order.end(), [](auto* x, auto* y) { return x->value("sort_order", 0) < y->value("sort_order", 0); });
  std::vector<Captioned> out;
  for (size_t i = 0; i < order.size(); i++) {
    const std::string file = dir + "/img/" + set + "/64/" + order[i]->value("image", "");
    if (!fs::exists(file)) continue;
    Captioned c;
    c.caption = lower((*order[i])["name"].get<std::string>());
    c.source = flatten(read_png(file), 0xffffff);
    c.image = box_resize(c.source, a.size, a.size);
    c.heldout = a.heldout_every > 0 && i % static_cast<size_t>(a.heldout_every) == static_cast<size_t>(a.heldout_every / 2);
    out.push_back(std::move(c));
  }
  if (out.empty()) throw Error(dir + ": no emoji images found (expected emoji.json and img/" + set + "/64/*.png)");
  return out;
}

std::vector<std::string> words_of(const std::string& caption) {
  std::istringstream in(caption);
  std::vector<std::string> words;
  for (std::string w; in >> w;) words.push_back(w);
  return words;
}

// --heldout-known-words: hold out every Nth of the captions made only of words that other captions use ("green
// book" beside "blue book" and "green apple"), each kept only if every word stays in some training caption. A
// model can draw only what its training captions name; these test whether it composes the words it learnt.
void hold_out_known_words(std::vector<Captioned>& emoji, int every) {
  std::map<std::string, int> uses;
  for (Captioned& c : emoji) {
    c.heldout = false;
    const std::vector<std::string> words = words_of(c.caption);
    for (const std::string& w : std::set<std::string>(words.begin(), words.end())) uses[w]++;
  }
  size_t candidate = 0;
  for (Captioned& c : emoji) {
    const std::vector<std::string> words = words_of(c.caption);
    if (words.empty() || !std::all_of(words.begin(), words.end(), [&](const std::string& w) { return uses[w] >= 2; })) continue;
    if (candidate++ % static_cast<size_t>(every) != static_cast<size_t>(every / 2)) continue;
    c.heldout = true;
    for (const std::string& w : std::set<std::string>(words.begin(), words.end())) uses[w]--;
  }
}

// Copies of each training picture moved by a fraction of a pixel (--shifts N: the first N of these offsets, in
// the package's 64-pixel units, 4 to an output pixel at 16x16): the same emoji drawn a little differently, so a
// caption has to name a shape rather than one sequence of pixels.
std::vector<Captioned> shifted_copies(const std::vector<Captioned>& emoji, int shifts, int size) {
  static const int kOffsets[][2] = {{0, 0}, {2, 2}, {-2, -2}, {2, -2}, {-2, 2}, {2, 0}, {-2, 0}, {0, 2}, {0, -2}};
  std::vector<Captioned> out;
  for (const Captioned& c : emoji) {
    if (c.heldout) continue;
    for (int s = 1; s < shifts; s++) {
      Captioned copy{c.caption, {}, {}, false, true};
      Image moved(c.source.width, c.source.height, 0xffffffffu);
      for (int y = 0; y < moved.height; y++)
        for (int x = 0; x < moved.width; x++) {
          const int sx = x - kOffsets[s][0], sy = y - kOffsets[s][1];
          if (sx >= 0 && sy >= 0 && sx < c.source.width && sy < c.source.height) std::copy_n(c.source.at(sx, sy), 4, moved.at(x, y));
        }
      copy.image = box_resize(moved, size, size);
      out.push_back(std::move(copy));
    }
  }
  return out;
}

// Every package's emoji; a caption is held out in every style when the first package holds it out, and only
// the first package's pictures of held-out captions are kept (the held-out set stays one picture a caption).
std::vector<Captioned> read_all_emoji(const ImageDataArgs& a) {
  std::vector<Captioned> all = read_emoji(a, a.emoji_dirs[0]);
  if (a.heldout_known_words && a.heldout_every > 0) hold_out_known_words(all, a.heldout_every);
  std::set<std::string> heldout;
  for (const Captioned& c : all)
    if (c.heldout) heldout.insert(c.caption);
  for (size_t p = 1; p < a.emoji_dirs.size(); p++)
    for (Captioned& c : read_emoji(a, a.emoji_dirs[p]))
      if (!heldout.count(c.caption)) {
        c.heldout = false;
        all.push_back(std::move(c));
      }
  std::vector<Captioned> copies = shifted_copies(all, a.shifts, a.size);
  for (Captioned& c : all) c.source = Image();
  all.insert(all.end(), std::make_move_iterator(copies.begin()), std::make_move_iterator(copies.end()));
  return all;
}

// The captions' words without their spaces: a BPE fitted on these never merges a space into a word, so a word
// is the same tokens at a caption's start and inside it ("green" in "green heart" and "large green circle").
std::vector<std::string> caption_words(const std::vector<std::string>& captions) {
  std::vector<std::string> words;
  for (const std::string& c : captions)
    for (std::string& w : words_of(c)) words.push_back(std::move(w));
  return words;
}

// The vocabulary to write the documents in: a BPE fitted on the training captions plus a palette fitted on the
// training pixels, or (--vocab-from) an existing model's or vocabulary's, so that model can go on training.
std::unique_ptr<Tokenizer> corpus_vocabulary(const ImageDataArgs& a, const std::vector<Captioned>& data) {
  if (!a.vocab_from.empty()) {
    std::unique_ptr<Tokenizer> tok = Tokenizer::from_gguf(GgufFile::open(a.vocab_from)->meta());
    const std::optional<ImageVocab> iv = ImageVocab::find(*tok);
    if (!iv) throw Error(a.vocab_from + ": not a text-to-image vocabulary (no image marker)");
    if (iv->width() != a.size || iv->height() != a.size)
      throw Error(a.vocab_from + ": its images are " + std::to_string(iv->width()) + "x" + std::to_string(iv->height()) +
                  ", not --size " + std::to_string(a.size));
    return tok;
  }
  std::vector<Rgb> pixels;
  std::vector<std::string> train_captions;
  for (const Captioned& c : data) {
    if (c.heldout || c.shifted) continue;
    train_captions.push_back(c.caption);
    for (size_t i = 0; i < c.image.rgba.size(); i += 4) pixels.push_back({c.image.rgba[i], c.image.rgba[i + 1], c.image.rgba[i + 2]});
  }
  const std::vector<Rgb> palette = fit_palette(pixels, a.colours, 12, 1);
  BpeTrainOptions bo;
  bo.vocab_size = a.text_vocab;
  bo.special_tokens = {"<|endoftext|>"};
  const std::vector<std::string> bpe_text = a.whole_words ? caption_words(train_captions) : train_captions;
  return std::make_unique<Tokenizer>(with_image_tokens(train_bpe(bo, bpe_text), palette, a.size, a.size));
}

std::string document(const Captioned& c, const Tokenizer& tok, const ImageVocab& iv) {
  std::string doc = c.caption + tok.spec().tokens[iv.marker()];
  for (int32_t t : iv.encode(c.image)) doc += tok.spec().tokens[t];
  return doc;
}

void write_lines(const std::string& path, const std::vector<std::string>& lines) {
  std::string text;
  for (const auto& l : lines) text += l + "\n";
  write_file_atomic(path, text.data(), text.size());
}

int run_image_data(const ImageDataArgs& a) {
  std::filesystem::create_directories(a.out_dir);
  std::vector<Captioned> data = read_all_emoji(a);
  const size_t n_heldout = static_cast<size_t>(std::count_if(data.begin(), data.end(), [](const Captioned& c) { return c.heldout; }));
  const std::unique_ptr<Tokenizer> vocab = corpus_vocabulary(a, data);
  const size_t n_shifted = static_cast<size_t>(std::count_if(data.begin(), data.end(), [](const Captioned& c) { return c.shifted; }));
  std::fprintf(stderr, "jf: %zu images from %zu art style%s (%zu held out, %zu shifted copies)\n", data.size(), a.emoji_dirs.size(),
               a.emoji_dirs.size() == 1 ? "" : "s", n_heldout, n_shifted);
  const Tokenizer& tok = *vocab;
  const ImageVocab iv = *ImageVocab::find(tok);
  GgufWriter w;
  w.meta().set("general.architecture", GgufValue::of_string("llama"));
  w.meta().set("general.name", GgufValue::of_string("jf emoji text-to-image vocabulary"));
  tok.to_gguf(w.meta());
  w.write(a.out_dir + "/vocab.gguf");

  std::vector<std::string> train, heldout, heldout_captions;
  std::vector<Image> heldout_tiles;
  for (const Captioned& c : data) {
    (c.heldout ? heldout : train).push_back(document(c, tok, iv));
    if (!c.heldout) continue;
    heldout_captions.push_back(c.caption);
    heldout_tiles.push_back(upscale(iv.decode(iv.encode(c.image)), 4));
  }
  write_lines(a.out_dir + "/train.txt", train);
  write_lines(a.out_dir + "/heldout.txt", heldout);
  write_lines(a.out_dir + "/heldout_captions.txt", heldout_captions);
  write_png(a.out_dir + "/heldout_tokenized.png", grid(heldout_tiles, 16, 4, 0xe0e0e0));
  std::fprintf(stderr, "jf: wrote %s/{vocab.gguf (%d tokens: %d text, 1 marker, %zu colours), train.txt (%zu), heldout.txt (%zu), "
               "heldout_captions.txt, heldout_tokenized.png}\n", a.out_dir.c_str(), tok.n_vocab(),
               tok.n_vocab() - 1 - static_cast<int>(iv.palette().size()), iv.palette().size(), train.size(), heldout.size());
  return 0;
}

}  // namespace

Command add_image_data_command(CLI::App& app) {
  auto a = std::make_shared<ImageDataArgs>();
  CLI::App* cmd = app.add_subcommand("image-data", "Captioned emoji images as a text-to-image corpus and its vocabulary (scripts/image_data.sh)");
  cmd->add_option("--emoji", a->emoji_dirs,
                  "An emoji-datasource-SET package directory (emoji.json, img/SET/64/); repeat for more art styles, the "
                  "first deciding the held-out captions and giving their pictures")
      ->required();
  CLI::Option* vocab_from = cmd->add_option("--vocab-from", a->vocab_from,
                  "Write the documents in this model's or vocabulary's tokens (its palette and caption BPE) instead of "
                  "fitting new ones, so the model can go on training on them");
  cmd->add_option("-o,--output", a->out_dir, "Directory for vocab.gguf, train.txt, heldout.txt, ...")->required();
  cmd->add_option("--size", a->size, "Image side in pixels (tokens a row) (default 16)")->check(CLI::Range(2, 64));
  // A reused vocabulary brings its own palette and BPE: the options that fit new ones would be ignored.
  cmd->add_option("--colours", a->colours, "Palette colours, one token each (default 256)")->check(CLI::Range(2, 4096))->excludes(vocab_from);
  cmd->add_option("--text-vocab", a->text_vocab, "BPE vocabulary for the captions, bytes and <|endoftext|> included (default 512)")
      ->check(CLI::Range(259, 65536))
      ->excludes(vocab_from);
  cmd->add_flag("--whole-words", a->whole_words,
               "Fit the caption BPE on the words alone, so a word is the same tokens wherever it stands in a caption "
               "and a space is a token of its own (with --text-vocab 2048: each word seen twice one token)")
      ->excludes(vocab_from);
  cmd->add_option("--heldout-every", a->heldout_every, "Hold out every Nth emoji for evaluation, 0 = none (default 20)")
      ->check(CLI::Range(0, 1000000));
  cmd->add_flag("--heldout-known-words", a->heldout_known_words,
                "Hold out every Nth of the captions made of words other captions use (\"green book\" beside \"blue book\"), "
                "each word kept in some training caption: captions a model can compose from what it learnt");
  cmd->add_option("--shifts", a->shifts,
                  "Pictures a training emoji: the package's, then copies moved by half a pixel (up to 9; default 1)")
      ->check(CLI::Range(1, 9));
  return [a] { return run_image_data(*a); };
}

}  // namespace jf::cli
