// `jf image-bench`: SJD and SJD-PAC on a text-to-image model, measured as the SJD-PAC paper does (docs/IMAGES.md):
// step compression and wall-clock speedup over `ar` for SJD, SJD + proactive drafting, SJD + adaptive
// continuation and SJD-PAC at each block length; the skew of SJD's acceptance lengths (share of forwards that
// commit one token); the held-out image-token perplexity against a unigram baseline; and the locality curve
// (image_locality.cpp).
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>

#include "base/error.h"
#include "base/mapped_file.h"
#include "cli/commands.h"
#include "cli/image_bench.h"
#include "cli/image_common.h"
#include "viz/svg.h"

namespace jf::cli {

namespace {

struct ImageBenchArgs {
  ImageModelOptions model;
  std::string captions_file, data_dir, text_model, out_dir;
  std::vector<int> blocks = {32, 64};
  std::string deep_tree = "32x8";  // one more SJD-PAC row with this PD tree (empty: none)
  std::vector<std::string> decoders;  // measured beside ar instead of the standard rows (empty: those)
  int images = 16;
  int locality_images = 8;
  SamplingParams sampling;
  ImageBenchArgs() {
    sampling.temperature = 1.0f;
    sampling.seed = 1;
  }
};

struct Config {
  std::string label, spec;
};

std::vector<Config> configs(const std::vector<int>& blocks, const std::string& deep_tree, const std::vector<std::string>& decoders) {
  std::vector<Config> out = {{"ar", "ar"}};
  for (const std::string& spec : decoders) out.push_back({spec, spec});
  if (!decoders.empty()) return out;
  for (int L : blocks) {
    const std::string sjd = "sjd:block=" + std::to_string(L) + ":draft-policy=fixed";
    const std::string at = " L=" + std::to_string(L);
    out.push_back({"SJD" + at, sjd});
    out.push_back({"SJD + PD" + at, sjd + ":pac-tree=3x4"});
    out.push_back({"SJD + AC" + at, sjd + ":pac-continue=1"});
    out.push_back({"SJD-PAC" + at, sjd + ":pac-continue=1:pac-tree=3x4"});
    out.push_back({"SJD-PAC + repeat guess" + at, sjd + ":pac-continue=1:pac-tree=3x4:pac-guess=1"});
    const std::string run = ":pac-guess=" + std::to_string(std::min(L, 64));  // the guess repeated as a run, as long as the draft
    out.push_back({"SJD-PAC + repeat run" + at, sjd + ":pac-continue=1:pac-tree=3x4" + run});
    if (!deep_tree.empty()) {
      out.push_back({"SJD-PAC + repeat guess, tree " + deep_tree + at, sjd + ":pac-continue=1:pac-tree=" + deep_tree + ":pac-guess=1"});
      out.push_back({"SJD-PAC + repeat run, tree " + deep_tree + at, sjd + ":pac-continue=1:pac-tree=" + deep_tree + run});
    }
  }
  return out;
}

struct Totals {
  int64_t tokens = 0, forwards = 0, rows = 0;
  double seconds = 0;
  std::vector<int64_t> histogram;  // [k]: forwards that committed k tokens
  std::map<std::string, int64_t> counters;
  void add(const GenerationStats& s) {
    tokens += s.n_tokens;
    forwards += s.n_forwards;
    rows += s.n_forward_rows;
    seconds += s.gen_seconds;
    if (histogram.size() < s.accepted_histogram.size()) histogram.resize(s.accepted_histogram.size());
    for (size_t k = 0; k < s.accepted_histogram.size(); k++) histogram[k] += s.accepted_histogram[k];
    for (const auto& [name, v] : s.counters) counters[name] += v;
  }
  double tpf() const { return forwards ? static_cast<double>(tokens) / forwards : 0; }
  double single_share() const { return forwards && histogram.size() > 1 ? static_cast<double>(histogram[1]) / forwards : 0; }
};

// Acceptance lengths as bars 1 .. 15 and "16+", each the share of forwards.
std::string histogram_svg(const std::string& title, const Totals& t) {
  std::vector<viz::Bar> bars;
  for (int k = 1; k <= 16; k++) {
    int64_t n = 0;
    for (size_t j = static_cast<size_t>(k); j < t.histogram.size() && (k == 16 || j == static_cast<size_t>(k)); j++) n += t.histogram[j];
    bars.push_back({k == 16 ? "16+" : std::to_string(k), t.forwards ? std::round(1000.0 * n / t.forwards) / 10 : 0});
  }
  return viz::bar_chart_svg(title, "% of forwards committing 1, 2, ... tokens", bars, NAN);
}

nlohmann::json speed_table(ImageModel& m, const ImageBenchArgs& a, const std::vector<std::string>& captions) {
  nlohmann::json rows = nlohmann::json::array();
  std::vector<Config> cs = configs(a.blocks, a.deep_tree, a.decoders);
  double ar_seconds_per_token = 0;
  std::printf("| decoder | step compression | single-token forwards | rows a forward | wall-clock speedup | tokens/s | pac kept | branch wins |\n");
  std::printf("|---|---|---|---|---|---|---|---|\n");
  for (const Config& c : cs) {
    std::unique_ptr<Decoder> dec = make_decoder(parse_decoder_spec(c.spec, DecoderOptions{}));
    Totals t;
    for (size_t i = 0; i < captions.size(); i++) {
      SamplingParams sp = a.sampling;
      sp.seed = a.sampling.seed + i;
      t.add(sample_image(m, *dec, captions[i], image_generation(m.vocab, m.lm.tokenizer->n_vocab(), sp)).stats);
    }
    const double spt = t.seconds / static_cast<double>(t.tokens);
    if (c.spec == "ar") ar_seconds_per_token = spt;
    const double speedup = ar_seconds_per_token / spt;
    const double rows_a_forward = t.forwards ? static_cast<double>(t.rows) / t.forwards : 0;
    std::printf("| %s | %.2fx | %.0f%% | %.0f | %.2fx | %.0f | %lld | %lld |\n", c.label.c_str(), t.tpf(), 100 * t.single_share(),
                rows_a_forward, speedup,
                1.0 / spt, static_cast<long long>(t.counters["pac_kept"]), static_cast<long long>(t.counters["pac_branch_wins"]));
    std::fflush(stdout);
    rows.push_back({{"decoder", c.label}, {"spec", c.spec}, {"step_compression", t.tpf()}, {"single_token_share", t.single_share()}, {"rows_per_forward", rows_a_forward},
                    {"speedup", speedup}, {"tokens_per_second", 1.0 / spt}, {"tokens", t.tokens}, {"forwards", t.forwards},
                    {"histogram", t.histogram}, {"counters", t.counters}});
    if (!a.out_dir.empty() && c.spec != "ar") {
      std::string name;  // "SJD + AC L=32" -> "sjd-ac-l-32"
      for (char ch : c.label) {
        if (std::isalnum(static_cast<unsigned char>(ch))) name += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
        else if (!name.empty() && name.back() != '-') name += '-';
      }
      viz::write_svg(a.out_dir + "/accept-" + name + ".svg", histogram_svg(c.label + ": tokens committed per forward", t));
    }
  }
  return rows;
}

int run_image_bench(ImageBenchArgs& a) {
  a.sampling.validate();
  if (a.sampling.greedy()) throw Error("image-bench measures sampling: --temp must be > 0");
  if (!a.out_dir.empty()) std::filesystem::create_directories(a.out_dir);
  if (a.captions_file.empty() && a.data_dir.empty()) throw Error("give --captions FILE or --data DIR (scripts/image_data.sh's output)");
  const std::string captions_path = a.captions_file.empty() ? a.data_dir + "/heldout_captions.txt" : a.captions_file;
  const std::vector<std::string> captions = read_captions(captions_path, static_cast<size_t>(a.images));
  for (const Config& c : configs(a.blocks, a.deep_tree, a.decoders)) {  // (a bad --deep-tree or --decoders spec)
    const DecoderOptions o = parse_decoder_spec(c.spec, DecoderOptions{});
    o.validate(false);
  }
  ImageModel m = open_image_model(a.model);
  const std::optional<ImageData> data = a.data_dir.empty() ? std::nullopt : std::optional(read_image_data(m, a.data_dir));
  nlohmann::json report;
  report["model"] = a.model.model.path;
  report["guidance"] = a.model.guidance;
  report["images"] = captions.size();
  report["sampling"] = {{"temperature", a.sampling.temperature}, {"top_k", a.sampling.top_k}, {"seed", a.sampling.seed}};
  std::printf("## %zu held-out captions, one image each (seeds %llu..), %s, guidance %g, temperature %g, top-k %d\n\n",
              captions.size(), static_cast<unsigned long long>(a.sampling.seed), a.model.model.path.c_str(),
              static_cast<double>(a.model.guidance), static_cast<double>(a.sampling.temperature), a.sampling.top_k);
  report["decoders"] = speed_table(m, a, captions);
  if (data) report["perplexity"] = image_perplexity(m, *data);
  if (data) report["picture_match"] = picture_match(m, *data, a.sampling);
  if (a.locality_images > 0) {
    ModelOptions text = a.model.model;
    text.path = a.text_model.empty() ? default_model_path() : a.text_model;
    report["locality"] = locality_curves(m, captions, text, a.locality_images, a.sampling, a.out_dir);
  }
  if (!a.out_dir.empty()) {
    const std::string s = report.dump(1);
    write_file_atomic(a.out_dir + "/image-bench.json", s.data(), s.size());
    std::fprintf(stderr, "jf: wrote %s/image-bench.json and the charts\n", a.out_dir.c_str());
  }
  return 0;
}

}  // namespace

Command add_image_bench_command(CLI::App& app) {
  auto a = std::make_shared<ImageBenchArgs>();
  CLI::App* cmd = app.add_subcommand("image-bench", "SJD and SJD-PAC on a text-to-image model: step compression, acceptance skew, perplexity, locality");
  add_image_model_options(cmd, a->model);
  cmd->add_option("--captions", a->captions_file, "Captions, one a line (default: DATA/heldout_captions.txt)");
  cmd->add_option("--data", a->data_dir,
                  "scripts/image_data.sh's output: held-out captions and images, for the perplexity, what a caption tells, "
                  "caption retrieval and picture match (~5 minutes on 2 cores)");
  cmd->add_option("--images", a->images, "Captions used, one image each per decoder (default 16)")->check(CLI::Range(1, 100000));
  cmd->add_option("--blocks", a->blocks, "Block lengths L for SJD (default 32 64)")->check(CLI::Range(2, 256));
  cmd->add_option("--locality-images", a->locality_images, "Images (and text samples) for the locality curve, 0 = skip (default 8)")
      ->check(CLI::Range(0, 10000));
  cmd->add_option("--deep-tree", a->deep_tree,
                  "One more row: SJD-PAC with the repeat guess and this proactive-drafting tree, DEPTHxWIDTH (default 32x8; "
                  "'' = none; the paper's is 3x4)");
  cmd->add_option("--decoders", a->decoders,
                  "Measure these decoder specs beside ar instead of the standard rows (e.g. "
                  "sjd:block=32:draft-policy=fixed:pac-continue=1:pac-tree=32x8:pac-guess=32)")
      ->delimiter(',');
  cmd->add_option("--text-model", a->text_model, "Text model for the locality curve's text side (default: the default model)");
  cmd->add_option("-o,--output", a->out_dir, "Directory for image-bench.json and the SVG charts");
  add_sampling_options(cmd, a->sampling);
  return [a] { return run_image_bench(*a); };
}

}  // namespace jf::cli
