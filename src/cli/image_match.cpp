// `jf image-bench --data`'s picture match (image_bench.h): samples against the pictures their captions name.
#include <algorithm>
#include <cstdio>
#include <set>

#include "cli/image_bench.h"
#include "decode/decoder.h"

namespace jf::cli {

namespace {

struct Pictures {
  std::vector<std::string> captions;
  std::vector<std::vector<int32_t>> images;  // each picture's colour tokens
  std::vector<bool> known;                   // held out: its caption is made of words read in training
};

// Up to 96 documents spread evenly over `docs`, one a caption (a caption's first picture: its first art style).
Pictures pick_pictures(const ImageModel& m, const std::vector<std::vector<int32_t>>& docs, const std::vector<std::string>& captions,
                       const std::vector<bool>& known) {
  std::vector<size_t> firsts;
  std::set<std::string> seen;
  for (size_t i = 0; i < docs.size(); i++)
    if (seen.insert(captions[i]).second) firsts.push_back(i);
  Pictures p;
  const size_t n = std::min<size_t>(firsts.size(), 96);
  for (size_t j = 0; j < n; j++) {
    const size_t i = firsts[j * firsts.size() / n];
    const std::vector<int32_t>& d = docs[i];
    p.captions.push_back(captions[i]);
    p.images.emplace_back(d.end() - m.vocab.pixels(), d.end());
    p.known.push_back(known.empty() || known[i]);
  }
  return p;
}

// Squared RGB distance of two images given as colour tokens.
double distance(const ImageModel& m, const std::vector<int32_t>& a, const std::vector<int32_t>& b) {
  double d = 0;
  for (size_t i = 0; i < a.size(); i++) {
    const Rgb& x = m.vocab.palette()[m.vocab.index_of(a[i])];
    const Rgb& y = m.vocab.palette()[m.vocab.index_of(b[i])];
    for (int c = 0; c < 3; c++) d += (x[c] - y[c]) * (x[c] - y[c]);
  }
  return d;
}

RankCounts match(ImageModel& m, const Pictures& p, const SamplingParams& sampling) {
  std::unique_ptr<Decoder> ar = make_decoder(parse_decoder_spec("ar", DecoderOptions{}));
  RankCounts r;
  for (size_t i = 0; i < p.captions.size(); i++) {
    SamplingParams sp = sampling;
    sp.seed = sampling.seed + i;
    const ImageSample s = sample_image(m, *ar, p.captions[i], image_generation(m.vocab, m.lm.tokenizer->n_vocab(), sp));
    const double own = distance(m, s.tokens, p.images[i]);
    size_t nearer = 0;  // pictures strictly nearer the sample than its own caption's
    for (size_t j = 0; j < p.images.size(); j++) nearer += j != i && distance(m, s.tokens, p.images[j]) < own;
    r.add(nearer, p.known[i]);
  }
  return r;
}

}  // namespace

nlohmann::json picture_match(ImageModel& m, const ImageData& data, const SamplingParams& sampling) {
  const RankCounts held = match(m, pick_pictures(m, data.heldout, data.heldout_captions, data.heldout_known), sampling);
  const RankCounts train = match(m, pick_pictures(m, data.train, data.train_captions, {}), sampling);
  std::printf("\n## Samples against pictures: an `ar` sample for each caption nearest (RGB distance) its own caption's picture "
              "of the %zu: %.1f%% held out (top 5 %.1f%%; of the %zu made of known words %.1f%%, top 5 %.1f%%), %.1f%% of %zu "
              "training captions (top 5 %.1f%%); chance %.1f%%\n",
              held.items, percent(held.top1, held.items), percent(held.top5, held.items), held.known,
              percent(held.known_top1, held.known), percent(held.known_top5, held.known), percent(train.top1, train.items),
              train.items, percent(train.top5, train.items), percent(1, held.items));
  return {{"heldout_samples", held.items}, {"heldout_top1_percent", percent(held.top1, held.items)},
          {"heldout_top5_percent", percent(held.top5, held.items)}, {"heldout_known", held.known},
          {"heldout_known_top1_percent", percent(held.known_top1, held.known)},
          {"heldout_known_top5_percent", percent(held.known_top5, held.known)}, {"train_samples", train.items},
          {"train_top1_percent", percent(train.top1, train.items)}, {"train_top5_percent", percent(train.top5, train.items)}};
}

}  // namespace jf::cli
