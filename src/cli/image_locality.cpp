// Held-out perplexity and the locality curve of `jf image-bench` (see image_bench.h).
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <set>

#include "base/error.h"
#include "base/rng.h"
#include "cli/image_bench.h"
#include "decode/options.h"
#include "model/perplexity.h"
#include "sample/sampler.h"
#include "viz/svg.h"

namespace jf::cli {

namespace {

constexpr int kReach = 48;  // distances measured after the changed token

// Logits of rows [first, first + n) of `seq` run from an empty cache; out[r] is the row's logits.
std::vector<std::vector<float>> row_logits(Session& s, std::span<const int32_t> seq, int first, int n) {
  s.cache().truncate(0);
  SequenceInput in;
  std::vector<int32_t> rows;
  for (int r = first; r < first + n; r++) rows.push_back(r);
  in.set_causal(&s.cache(), seq, rows);
  const ForwardResult out = s.forward(in);
  std::vector<std::vector<float>> logits;
  for (int r = 0; r < n; r++) logits.emplace_back(out.logits(r), out.logits(r) + s.vocab_size());
  s.cache().truncate(0);
  return logits;
}

// The sampling distribution of a row (temperature, top-k, ...) over `allowed` tokens (empty: all), dense.
std::vector<float> distribution(const std::vector<float>& logits, const SamplingParams& sp, const std::vector<bool>& allowed) {
  std::vector<float> l = logits;
  for (size_t t = 0; t < l.size() && !allowed.empty(); t++)
    if (!allowed[t]) l[t] = -INFINITY;
  Sampler sampler(sp, static_cast<int>(l.size()));
  Distribution d;
  sampler.distribution(l.data(), d);
  std::vector<float> p;
  d.to_dense(static_cast<int>(l.size()), p);
  return p;
}

double total_variation(const std::vector<float>& p, const std::vector<float>& q) {
  double s = 0;
  for (size_t i = 0; i < p.size(); i++) s += std::fabs(static_cast<double>(p[i]) - q[i]);
  return 0.5 * s;
}

// Adds, for each change point in `at` (indices into seq), TV(distance d) to sum[d - 1]; returns the count.
int add_locality(Session& s, const std::vector<int32_t>& seq, const std::vector<int>& at, const SamplingParams& sp,
                 const std::vector<bool>& allowed, Rng& rng, std::vector<double>& sum) {
  int n = 0;
  for (int i : at) {
    if (i + kReach >= static_cast<int>(seq.size())) continue;
    // the changed token: another draw from position i's distribution
    std::vector<float> p = distribution(row_logits(s, seq, i - 1, 1)[0], sp, allowed);
    p[seq[i]] = 0;
    double mass = 0;
    for (float w : p) mass += w;
    if (mass <= 0) continue;
    double r = rng.uniform() * mass;
    int32_t other = seq[i];
    for (size_t t = 0; t < p.size(); t++)
      if (p[t] > 0 && (r -= p[t]) < 0) {
        other = static_cast<int32_t>(t);
        break;
      }
    std::vector<int32_t> changed = seq;
    changed[i] = other;
    const auto a = row_logits(s, seq, i, kReach), b = row_logits(s, changed, i, kReach);
    for (int d = 0; d < kReach; d++) sum[d] += total_variation(distribution(a[d], sp, allowed), distribution(b[d], sp, allowed));
    n++;
  }
  return n;
}

std::vector<int32_t> sample_sequence(Session& s, std::span<const int32_t> prompt, const GenerationConfig& cfg) {
  std::unique_ptr<Decoder> ar = make_decoder(parse_decoder_spec("ar", DecoderOptions{}));
  std::vector<int32_t> seq(prompt.begin(), prompt.end());
  const GenerationResult r = ar->generate(s, prompt, cfg);
  seq.insert(seq.end(), r.tokens.begin(), r.tokens.end());
  return seq;
}

// Where `doc`'s image starts: the index of its marker (doc.size() when it has none).
size_t marker_at(const ImageModel& m, std::span<const int32_t> doc) {
  return static_cast<size_t>(std::find(doc.begin(), doc.end(), m.vocab.marker()) - doc.begin());
}

// The model's negative log-likelihood of `doc`'s image: its tokens after the marker, each given all before it.
NllSum image_nll(ImageModel& m, std::span<const int32_t> doc) {
  NllSum sum;
  const size_t first = marker_at(m, doc);
  if (first + 1 < doc.size())
    score_context(m.plain->forward_pass(), m.plain->cache(), {{doc.begin(), doc.end()}, static_cast<int>(first)}, sum);
  return sum;
}

// Document `doc`'s image (its marker and pixels) after the caption (and BOS) of document `other`.
std::vector<int32_t> under_caption_of(const ImageModel& m, const std::vector<int32_t>& doc, const std::vector<int32_t>& other) {
  std::vector<int32_t> out(other.begin(), other.begin() + static_cast<std::ptrdiff_t>(marker_at(m, other)));
  out.insert(out.end(), doc.begin() + static_cast<std::ptrdiff_t>(marker_at(m, doc)), doc.end());
  return out;
}

// How much a caption tells the model about its image, in nats an image: the mean over 96 of `docs` (evenly
// spread: neighbours in the emoji order are alike) of the image's NLL under the caption of the document half
// the sample away (or the next after it with another caption: a second art style repeats the captions) minus
// under its own. 0: the caption is ignored.
double caption_information(ImageModel& m, const std::vector<std::vector<int32_t>>& docs, const std::vector<std::string>& captions) {
  const size_t n = std::min<size_t>(docs.size(), 96);
  if (n < 2) return 0.0;
  auto at = [&](size_t i) { return i * docs.size() / n; };
  double gain = 0;
  size_t pairs = 0;
  for (size_t i = 0; i < n; i++) {
    size_t j = (i + n / 2) % n;
    while (j != i && captions[at(j)] == captions[at(i)]) j = (j + 1) % n;
    if (j == i) continue;
    const std::vector<int32_t>& own = docs[at(i)];
    gain += image_nll(m, under_caption_of(m, own, docs[at(j)])).nll - image_nll(m, own).nll;
    pairs++;
  }
  return pairs ? gain / static_cast<double>(pairs) : 0.0;
}

// Which caption the model finds an image most likely under: for each of (up to 96 of) `docs`, its image's NLL under
// every one of their captions; how often its own caption ranks first, and among the first five. Held-out pictures
// the model never saw: a caption-to-image association it learned, measured on real images, not its samples.
RankCounts caption_retrieval(ImageModel& m, const std::vector<std::vector<int32_t>>& docs, const std::vector<bool>& known) {
  RankCounts r;
  const size_t n = std::min<size_t>(docs.size(), 96);
  auto at = [&](size_t i) { return i * docs.size() / n; };
  for (size_t i = 0; i < n; i++) {
    const std::vector<int32_t>& own = docs[at(i)];
    const double own_nll = image_nll(m, own).nll;
    size_t better = 0;  // captions under which the image is strictly more likely than under its own
    for (size_t j = 0; j < n; j++)
      better += j != i && image_nll(m, under_caption_of(m, own, docs[at(j)])).nll < own_nll;
    r.add(better, known[at(i)]);
  }
  return r;
}

// A caption's words: its runs of letters and digits ("family: woman, girl" -> family, woman, girl).
std::vector<std::string> words_of(const std::string& caption) {
  std::vector<std::string> words;
  std::string w;
  for (char c : caption + " ") {
    if (std::isalnum(static_cast<unsigned char>(c))) {
      w += c;
    } else if (!w.empty()) {
      words.push_back(w);
      w.clear();
    }
  }
  return words;
}

}  // namespace

ImageData read_image_data(const ImageModel& m, const std::string& data_dir) {
  const Tokenizer& tok = *m.lm.tokenizer;
  const std::string& marker = tok.spec().tokens[m.vocab.marker()];
  auto docs = [&](const std::string& name, std::vector<std::string>& captions) {
    std::ifstream in(data_dir + "/" + name);
    if (!in) throw Error(data_dir + "/" + name + ": cannot read (scripts/image_data.sh writes it)");
    std::vector<std::vector<int32_t>> out;
    for (std::string line; std::getline(in, line);) {
      if (line.empty()) continue;
      out.push_back(tok.encode(line, true, false));
      captions.push_back(line.substr(0, line.find(marker)));
    }
    return out;
  };
  ImageData data;
  data.train = docs("train.txt", data.train_captions);
  data.heldout = docs("heldout.txt", data.heldout_captions);
  std::set<std::string> read;
  for (const std::string& c : data.train_captions)
    for (std::string& w : words_of(c)) read.insert(std::move(w));
  for (const std::string& c : data.heldout_captions) {
    const std::vector<std::string> words = words_of(c);
    data.heldout_known.push_back(std::all_of(words.begin(), words.end(), [&](const std::string& w) { return read.count(w) > 0; }));
  }
  size_t pixels = 0;
  for (const auto& d : data.heldout)
    for (size_t i = marker_at(m, d) + 1; i < d.size(); i++, pixels++)
      if (!m.vocab.is_colour(d[i])) throw Error(data_dir + "/heldout.txt: a token that is not a colour inside an image");
  if (pixels == 0) throw Error(data_dir + "/heldout.txt: no image tokens");
  return data;
}

nlohmann::json image_perplexity(ImageModel& m, const ImageData& data) {
  std::vector<double> unigram(m.vocab.palette().size(), 1.0);  // add-one
  double total = static_cast<double>(unigram.size());
  for (const auto& d : data.train)
    for (int32_t t : d)
      if (m.vocab.is_colour(t)) unigram[m.vocab.index_of(t)] += 1, total += 1;
  double nll = 0, nll_unigram = 0;
  int64_t n = 0;
  for (const auto& d : data.heldout) {
    for (size_t i = marker_at(m, d) + 1; i < d.size(); i++) nll_unigram += -std::log(unigram[m.vocab.index_of(d[i])] / total);
    const NllSum image = image_nll(m, d);
    nll += image.nll;
    n += image.count;
  }
  const double ppl = std::exp(nll / n), ppl_unigram = std::exp(nll_unigram / n);
  std::printf("\n## Held-out image tokens: %lld; perplexity %.2f (unigram baseline %.2f; %.2f bits a pixel vs %.2f)\n",
              static_cast<long long>(n), ppl, ppl_unigram, nll / n / std::log(2.0), nll_unigram / n / std::log(2.0));
  const double held = caption_information(m, data.heldout, data.heldout_captions);
  const double trained = caption_information(m, data.train, data.train_captions);
  std::printf("\n## What a caption tells about its image: %.1f nats an image held out, %.1f on training images "
              "(image NLL under another image's caption minus under its own)\n", held, trained);
  const RankCounts r = caption_retrieval(m, data.heldout, data.heldout_known);
  const double top1 = percent(r.top1, r.items), top5 = percent(r.top5, r.items);
  std::printf("\n## Caption retrieval on %zu held-out images: the image most likely under its own caption of the %zu for "
              "%.1f%% (chance %.1f%%), its own among the five likeliest for %.1f%% (chance %.1f%%)\n",
              r.items, r.items, top1, percent(1, r.items), top5, percent(std::min<size_t>(5, r.items), r.items));
  std::printf("   %zu of the %zu captions are made of words read in training (the rest name something the model never "
              "read, e.g. \"pear\"): top 1 %.1f%%, top 5 %.1f%% of those\n",
              r.known, r.items, percent(r.known_top1, r.known), percent(r.known_top5, r.known));
  return {{"tokens", n}, {"perplexity", ppl}, {"unigram_perplexity", ppl_unigram}, {"caption_nats_heldout", held},
          {"caption_nats_train", trained}, {"retrieval_images", r.items}, {"retrieval_top1_percent", top1},
          {"retrieval_top5_percent", top5}, {"retrieval_known_images", r.known},
          {"retrieval_known_top1_percent", percent(r.known_top1, r.known)},
          {"retrieval_known_top5_percent", percent(r.known_top5, r.known)}};
}

nlohmann::json locality_curves(ImageModel& m, const std::vector<std::string>& captions, const ModelOptions& text_model,
                               int samples, const SamplingParams& sampling, const std::string& out_dir) {
  Rng rng(sampling.seed + 7);
  std::vector<double> image(kReach, 0.0), text(kReach, 0.0);
  std::vector<bool> colours(static_cast<size_t>(m.lm.tokenizer->n_vocab()));
  for (int32_t t : m.vocab.colour_tokens()) colours[t] = true;
  int n_image = 0, n_text = 0;
  for (int k = 0; k < samples; k++) {
    SamplingParams sp = sampling;
    sp.seed = sampling.seed + static_cast<uint64_t>(k);
    const std::vector<int32_t> prompt = m.vocab.prompt(*m.lm.tokenizer, captions[static_cast<size_t>(k) % captions.size()]);
    const auto seq = sample_sequence(*m.session, prompt, image_generation(m.vocab, m.lm.tokenizer->n_vocab(), sp));
    std::vector<int> at;
    for (int px : {40, 72, 104, 136, 168}) at.push_back(static_cast<int>(prompt.size()) + px);
    n_image += add_locality(*m.session, seq, at, sp, colours, rng, image);
  }
  ImageModel t;  // the text side: samples of the text model from its BOS
  ModelOptions plain = text_model;
  plain.no_draft = true;
  t.lm = open_model(plain);
  if (!t.lm.tokenizer) throw Error(text_model.path + ": the text model has no tokenizer");
  t.forward = open_forward(text_model, *t.lm.model);
  t.session = std::make_unique<Session>(*t.forward, 512, DType::F32);
  for (int k = 0; k < samples; k++) {
    GenerationConfig g;
    g.max_new_tokens = 240;
    g.ignore_eos = true;
    g.sampling = sampling;
    g.sampling.seed = sampling.seed + static_cast<uint64_t>(k);
    const std::vector<int32_t> bos = {t.lm.tokenizer->bos() >= 0 ? t.lm.tokenizer->bos() : 0};
    const auto seq = sample_sequence(*t.session, bos, g);
    n_text += add_locality(*t.session, seq, {40, 72, 104, 136, 168}, g.sampling, {}, rng, text);
  }
  viz::LineChart c;
  c.title = "Locality: how far a changed token moves later distributions";
  c.x_label = "distance from the changed token (tokens; an image row is " + std::to_string(m.vocab.width()) + ")";
  c.y_label = "mean total-variation distance";
  viz::Series si{"image tokens (" + std::to_string(n_image) + " changes)", {}, {}}, st{"text tokens (" + std::to_string(n_text) + " changes)", {}, {}};
  std::printf("\n## Locality (mean TV distance by distance from a changed token)\n\n| distance | image | text |\n|---|---|---|\n");
  for (int d = 0; d < kReach; d++) {
    si.x.push_back(d + 1), st.x.push_back(d + 1);
    si.y.push_back(n_image ? image[d] / n_image : 0), st.y.push_back(n_text ? text[d] / n_text : 0);
    if (d < 4 || (d + 1) % 8 == 0 || d + 1 == m.vocab.width()) std::printf("| %d | %.3f | %.3f |\n", d + 1, si.y.back(), st.y.back());
  }
  c.series = {si, st};
  c.x_from = 0;
  if (!out_dir.empty()) viz::write_svg(out_dir + "/locality.svg", viz::line_chart_svg(c));
  return {{"distance", si.x}, {"image_tv", si.y}, {"text_tv", st.y}, {"image_changes", n_image}, {"text_changes", n_text}};
}

}  // namespace jf::cli
