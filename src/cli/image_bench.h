// Parts of `jf image-bench` (image_bench.cpp) kept apart: the held-out perplexity and the locality curve.
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli/image_common.h"

namespace jf::cli {

// scripts/image_data.sh's DATA/train.txt and DATA/heldout.txt, tokenized and checked (read before anything is
// measured, so bad data fails first).
struct ImageData {
  std::vector<std::vector<int32_t>> train, heldout;
  std::vector<std::string> train_captions, heldout_captions;  // the documents' captions, as text
  // Per held-out document: every word of its caption is in some training caption. A caption with a word the model
  // never read ("pear") can name its picture only by chance; one made of known words ("purple heart") can be composed.
  std::vector<bool> heldout_known;
};
ImageData read_image_data(const ImageModel& m, const std::string& data_dir);

// Ranks of items against their rivals (caption retrieval, picture match): how often an item's own answer came
// first and among the first five, counted by the rivals strictly better, over all items and over those whose
// captions are made of words read in training.
struct RankCounts {
  size_t items = 0, top1 = 0, top5 = 0, known = 0, known_top1 = 0, known_top5 = 0;
  void add(size_t better, bool is_known) {
    items++, top1 += better == 0, top5 += better < 5;
    if (is_known) known++, known_top1 += better == 0, known_top5 += better < 5;
  }
};
// 100 k / n, 0 when n is 0.
inline double percent(size_t k, size_t n) { return n ? 100.0 * static_cast<double>(k) / static_cast<double>(n) : 0.0; }

// Image-token perplexity of the held-out documents under the model, beside a unigram model of the training
// documents' colour tokens (add-one smoothed): how much the model knows beyond the colours' frequencies.
nlohmann::json image_perplexity(ImageModel& m, const ImageData& data);

// Whether `ar` samples look like their captions' pictures: for (up to 96) held-out and as many training captions,
// one image drawn from each caption (the bench's sampling, guidance included) and ranked by its RGB distance to
// every one of those captions' pictures; how often its own caption's picture is the nearest, and among the five
// nearest. An objective stand-in for a person judging the grid (chance 1 in 96).
nlohmann::json picture_match(ImageModel& m, const ImageData& data, const SamplingParams& sampling);

// The SJD-PAC paper's locality measurement: change one token of a sampled sequence (to another draw from its
// position's distribution) and measure the total-variation distance of each later position's distribution,
// by distance from the change; for images of this model and for text of `text_model`. Writes
// OUT/locality.svg when out_dir is given.
nlohmann::json locality_curves(ImageModel& m, const std::vector<std::string>& captions, const ModelOptions& text_model,
                               int samples, const SamplingParams& sampling, const std::string& out_dir);

}  // namespace jf::cli
