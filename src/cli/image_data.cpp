// `jf image-data`: captioned emoji images (npm's emoji-datasource-google, fetched by scripts/image_data.sh) as a
// text-to-image corpus: a caption, the image marker, then the image's colour tokens, one document a line; the
// vocabulary (a small BPE on the captions plus the palette's tokens) to train a model from scratch with.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
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
  std::string emoji_dir;
  std::string out_dir;
  int size = 16;
  int colours = 256;
  int text_vocab = 512;
  int heldout_every = 20;
};

struct Captioned {
  std::string caption;
  Image image;  // size x size, opaque
  bool heldout = false;
};

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// Every emoji with a Google image, in the package's sort order; every `heldout_every`-th held out.
std::vector<Captioned> read_emoji(const ImageDataArgs& a) {
  namespace fs = std::filesystem;
  const std::string index = a.emoji_dir + "/emoji.json";
  nlohmann::json entries;
  try {
    entries = nlohmann::json::parse(read_text_file(index));
  } catch (const nlohmann::json::exception& e) {
    throw Error(index + ": not JSON (" + e.what() + ")");
  }
  if (!entries.is_array()) throw Error(index + ": expected an array of emoji");
  std::vector<const nlohmann::json*> order;
  for (const auto& e : entries)
    if (e.is_object() && e.value("has_img_google", false) && e.contains("name") && e["name"].is_string()) order.push_back(&e);
  std::stable_sort(order.begin(), order.end(), [](auto* x, auto* y) { return x->value("sort_order", 0) < y->value("sort_order", 0); });
  std::vector<Captioned> out;
  for (size_t i = 0; i < order.size(); i++) {
    const std::string file = a.emoji_dir + "/img/google/64/" + order[i]->value("image", "");
    if (!fs::exists(file)) continue;
    Captioned c;
    c.caption = lower((*order[i])["name"].get<std::string>());
    c.image = box_resize(flatten(read_png(file), 0xffffff), a.size, a.size);
    c.heldout = a.heldout_every > 0 && i % static_cast<size_t>(a.heldout_every) == static_cast<size_t>(a.heldout_every / 2);
    out.push_back(std::move(c));
  }
  if (out.empty()) throw Error(a.emoji_dir + ": no emoji images found (expected emoji.json and img/google/64/*.png)");
  return out;
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
  std::vector<Captioned> data = read_emoji(a);
  std::vector<Rgb> pixels;
  std::vector<std::string> train_captions;
  for (const Captioned& c : data) {
    if (c.heldout) continue;
    train_captions.push_back(c.caption);
    for (size_t i = 0; i < c.image.rgba.size(); i += 4) pixels.push_back({c.image.rgba[i], c.image.rgba[i + 1], c.image.rgba[i + 2]});
  }
  const std::vector<Rgb> palette = fit_palette(pixels, a.colours, 12, 1);
  std::fprintf(stderr, "jf: %zu images (%zu held out), %zu training pixels -> %zu colours\n", data.size(),
               data.size() - train_captions.size(), pixels.size(), palette.size());

  BpeTrainOptions bo;
  bo.vocab_size = a.text_vocab;
  bo.special_tokens = {"<|endoftext|>"};
  VocabSpec spec = with_image_tokens(train_bpe(bo, train_captions), palette, a.size, a.size);
  Tokenizer tok(spec);
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
               tok.n_vocab() - 1 - static_cast<int>(palette.size()), palette.size(), train.size(), heldout.size());
  return 0;
}

}  // namespace

Command add_image_data_command(CLI::App& app) {
  auto a = std::make_shared<ImageDataArgs>();
  CLI::App* cmd = app.add_subcommand("image-data", "Captioned emoji images as a text-to-image corpus and its vocabulary (scripts/image_data.sh)");
  cmd->add_option("--emoji", a->emoji_dir, "The emoji-datasource-google package directory (emoji.json, img/google/64/)")->required();
  cmd->add_option("-o,--output", a->out_dir, "Directory for vocab.gguf, train.txt, heldout.txt, ...")->required();
  cmd->add_option("--size", a->size, "Image side in pixels (tokens a row) (default 16)")->check(CLI::Range(2, 64));
  cmd->add_option("--colours", a->colours, "Palette colours, one token each (default 256)")->check(CLI::Range(2, 4096));
  cmd->add_option("--text-vocab", a->text_vocab, "BPE vocabulary for the captions, bytes and <|endoftext|> included (default 512)")
      ->check(CLI::Range(259, 65536));
  cmd->add_option("--heldout-every", a->heldout_every, "Hold out every Nth emoji for evaluation, 0 = none (default 20)")
      ->check(CLI::Range(0, 1000000));
  return [a] { return run_image_data(*a); };
}

}  // namespace jf::cli
