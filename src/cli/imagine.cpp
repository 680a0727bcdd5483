// `jf imagine`: images from captions with a text-to-image model (docs/IMAGES.md), by any decoder; several
// decoders side by side with the same seeds (their images differ draw by draw but follow one distribution).
#include <cstdio>
#include <fstream>

#include "base/error.h"
#include "base/mapped_file.h"
#include "base/timer.h"
#include "cli/commands.h"
#include "cli/image_common.h"
#include "viz/image_grid.h"
#include "viz/image_page.h"
#include "viz/svg.h"

namespace jf::cli {

namespace {

// SJD-PAC (decode/sjd.h): up to 32 rows a forward, adaptive continuation, a proactive-drafting tree of depth 3,
// width 4, and jf's repeat run; priced (decode/row_cost.h): it sends the part of the draft that pays on the
// device, its tree's rows priced with it: on this CPU almost none (0.89x `ar`'s speed, against 0.32x for the
// fixed 32-row draft), where rows are free the tree.
constexpr const char* kImageDecoder = "sjd:block=32:pac-continue=1:pac-tree=3x4:pac-guess=32";

struct ImagineArgs {
  ImageModelOptions model;
  std::vector<std::string> captions;
  std::string captions_file;
  std::string decoders = kImageDecoder;
  std::string output = "image.png";
  std::string viz_path;
  SamplingParams sampling;
  int samples = 1;
  int scale = 8;
  ImagineArgs() {
    sampling.temperature = 1.0f;
    sampling.top_k = 0;
    sampling.seed = 1;
  }
};

viz::ImageRun gallery_entry(const ImageVocab& iv, const std::string& caption, const std::string& decoder, uint64_t seed,
                            const ImageSample& s) {
  viz::ImageRun run;
  run.group = caption;
  run.caption = caption;
  run.decoder = decoder;
  run.seed = seed;
  run.width = iv.width();
  run.height = iv.height();
  const Image img = iv.decode(s.tokens);
  for (int i = 0; i < iv.pixels(); i++) {
    const uint8_t* p = img.at(i % iv.width(), i / iv.width());
    run.pixels.push_back({p[0], p[1], p[2]});
    run.forward_of_pixel.push_back(i < static_cast<int>(s.forward_of_token.size()) ? s.forward_of_token[i] : -1);
  }
  return run;
}

// A decoder's column label in a grid: "ar", "SJD", "SJD-PAC" (with the options that are not the paper's), or its spec.
std::string column_name(const std::string& spec) {
  if (!spec.starts_with("sjd")) return spec;
  const bool pac = spec.find("pac-continue=1") != std::string::npos && spec.find("pac-tree=") != std::string::npos;
  return pac ? "SJD-PAC" : "SJD";
}

int run_imagine(ImagineArgs& a) {
  a.sampling.validate();
  if (a.sampling.greedy()) throw Error("--temp 0 makes every image of a caption the same; images are sampled (--temp > 0)");
  check_output_path(a.output, "-o");
  check_output_path(a.viz_path, "--viz");
  if (!a.captions_file.empty()) {
    const std::vector<std::string> more = read_captions(a.captions_file);
    a.captions.insert(a.captions.end(), more.begin(), more.end());
  }
  if (a.captions.empty()) throw Error("no caption: give one (jf imagine \"green heart\") or --captions FILE");
  std::vector<std::unique_ptr<Decoder>> decoders;
  std::vector<std::string> specs = split_list(a.decoders);
  for (const std::string& spec : specs) {
    DecoderOptions d = parse_decoder_spec(spec, DecoderOptions{});
    d.validate(false);
    decoders.push_back(make_decoder(d));
  }
  ImageModel m = open_image_model(a.model);
  std::vector<Image> tiles;
  std::vector<viz::ImageRun> runs;
  for (const std::string& caption : a.captions) {
    for (size_t d = 0; d < decoders.size(); d++) {
      for (int k = 0; k < a.samples; k++) {
        SamplingParams sp = a.sampling;
        sp.seed = a.sampling.seed + static_cast<uint64_t>(k);
        const GenerationConfig cfg = image_generation(m.vocab, m.lm.tokenizer->n_vocab(), sp);
        const ImageSample s = sample_image(m, *decoders[d], caption, cfg);
        std::fprintf(stderr, "jf: \"%s\" seed %llu, %s: %lld forwards (%.2f tokens/forward), %.2f s\n", caption.c_str(),
                     static_cast<unsigned long long>(sp.seed), specs[d].c_str(), static_cast<long long>(s.stats.n_forwards),
                     s.stats.tpf(), s.stats.gen_seconds);
        tiles.push_back(upscale(m.vocab.decode(s.tokens), a.scale));
        if (!a.viz_path.empty()) runs.push_back(gallery_entry(m.vocab, caption, specs[d], sp.seed, s));
      }
    }
  }
  const int columns = static_cast<int>(decoders.size()) * a.samples;
  if (a.output.ends_with(".svg")) {
    viz::ImageGrid g{a.captions, {}, tiles};
    for (size_t d = 0; d < decoders.size(); d++)
      for (int k = 0; k < a.samples; k++)
        g.column_labels.push_back((decoders.size() > 1 ? column_name(specs[d]) + ", " : "") + "seed " + std::to_string(a.sampling.seed + k));
    viz::write_svg(a.output, viz::image_grid_svg(g));
  } else {
    write_png(a.output, tiles.size() == 1 ? tiles[0] : grid(tiles, columns, a.scale, 0xffffff));
  }
  std::fprintf(stderr, "jf: wrote %s (%zu image%s%s)\n", a.output.c_str(), tiles.size(), tiles.size() == 1 ? "" : "s",
               tiles.size() == 1 ? "" : ("; a row a caption, " + std::to_string(columns) + (columns == 1 ? " column" : " columns")).c_str());
  if (!a.viz_path.empty()) {
    viz::write_image_gallery(a.viz_path, "jf imagine: which forward committed each pixel", runs);
    std::fprintf(stderr, "jf: wrote %s\n", a.viz_path.c_str());
  }
  return 0;
}

}  // namespace

Command add_imagine_command(CLI::App& app) {
  auto a = std::make_shared<ImagineArgs>();
  CLI::App* cmd = app.add_subcommand("imagine", "Images from captions with a text-to-image model (default: models/emoji16-q8_0.gguf)");
  cmd->add_option("captions", a->captions, "Captions: emoji names, e.g. \"green heart\", \"dog face\"");
  cmd->add_option("--captions", a->captions_file, "More captions from a file, one a line");
  add_image_model_options(cmd, a->model);
  cmd->add_option("-o,--output", a->output,
                  "PNG to write: the image, or a grid (a row a caption); NAME.svg: the grid with its captions and columns "
                  "labelled (default image.png)");
  cmd->add_option("--decoder", a->decoders,
                  "Decoder spec, or several comma-separated for columns side by side (default SJD-PAC, priced: " +
                      std::string(kImageDecoder) + "; add draft-policy=fixed to send every draft row)");
  cmd->add_option("--samples", a->samples, "Images a caption and decoder, seeds --seed, --seed+1, ... (default 1)")->check(CLI::Range(1, 1000));
  cmd->add_option("--scale", a->scale, "Pixels a token in the PNG (default 8)")->check(CLI::Range(1, 64));
  cmd->add_option("--viz", a->viz_path, "Also write a page showing which forward committed each pixel (HTML)");
  add_sampling_options(cmd, a->sampling);
  return [a] { return run_imagine(*a); };
}

}  // namespace jf::cli
