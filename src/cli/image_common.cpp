#include "cli/image_common.h"

#include <cstdint>
#include <cstdio>
#include <fstream>

#include "base/error.h"
#include "model/guided_forward.h"

namespace jf::cli {

void add_image_model_options(CLI::App* cmd, ImageModelOptions& io) {
  ModelOptions& o = io.model;
  cmd->add_option("-m,--model", o.path, "Text-to-image model (default: models/" + std::string(kImageModel) + ")");
  cmd->add_option("-t,--threads", o.threads, "Threads for the forward pass (default: all cores)")->check(CLI::Range(0, 1024));
  cmd->add_option("--device", o.device, "cpu, vulkan, vulkan:N or auto (default cpu)");
  char scale[32];
  std::snprintf(scale, sizeof scale, "%g", io.guidance);
  cmd->add_option("--cfg", io.guidance,
                  "Classifier-free guidance scale: logits u + s(c - u), u without the caption; 1 = off (needs a model "
                  "trained with some captions dropped: scripts/train_image_model.sh --guidance or --styles) (default " + std::string(scale) + ")");
  cmd->parse_complete_callback([&o] {
    if (o.path.empty()) o.path = bundled_model_path(kImageModel);
  });
}

std::vector<std::string> read_captions(const std::string& path, size_t max) {
  std::ifstream in(path);
  if (!in) throw Error(path + ": cannot read the captions file");
  std::vector<std::string> out;
  for (std::string line; out.size() < max && std::getline(in, line);)
    if (!line.empty()) out.push_back(line);
  if (out.empty()) throw Error(path + ": no captions (one a line)");
  return out;
}

ImageModel open_image_model(const ImageModelOptions& io) {
  const ModelOptions& o = io.model;
  if (o.path.empty())
    throw Error(std::string("no model given: pass -m MODEL (models/") + kImageModel + " was not found; scripts/train_image_model.sh makes it)");
  ImageModel m;
  ModelOptions plain = o;
  plain.no_draft = true;  // the decoders of images draft from their own sampling, not from a draft head
  m.lm = open_model(plain);
  if (!m.lm.tokenizer) throw Error(o.path + ": the model has no tokenizer");
  std::optional<ImageVocab> iv = ImageVocab::find(*m.lm.tokenizer);
  if (!iv) throw Error(o.path + ": not a text-to-image model (its vocabulary has no '<image WxH>' token)");
  m.vocab = std::move(*iv);
  m.forward = open_forward(o, *m.lm.model);
  const int ctx = context_size(o, *m.lm.model);
  if (ctx < m.vocab.pixels() + 64)
    throw Error("a context of " + std::to_string(ctx) + " tokens cannot hold a caption and " + std::to_string(m.vocab.pixels()) +
                " pixels (-c)");
  const DType kv = kv_type(o, *m.forward);
  m.plain = std::make_unique<Session>(*m.forward, ctx, kv);
  if (io.guidance != 1.0f)
    m.guided = std::make_unique<GuidedForward>(*m.forward, m.vocab.marker(), m.vocab.unconditional_prefix(*m.lm.tokenizer), io.guidance);
  m.session = std::make_unique<Session>(m.guided ? *m.guided : *m.forward, ctx, kv);
  return m;
}

GenerationConfig image_generation(const ImageVocab& iv, int n_vocab, const SamplingParams& sampling) {
  GenerationConfig g;
  g.max_new_tokens = iv.pixels();
  g.sampling = sampling;
  for (int32_t t : iv.other_tokens(n_vocab)) g.rules.bias[t] = -100.0f;  // -100: banned (LogitRulesSpec)
  g.eos_ids.clear();
  return g;
}

ImageSample sample_image(ImageModel& m, Decoder& decoder, const std::string& caption, const GenerationConfig& cfg) {
  const std::vector<int32_t> prompt = m.vocab.prompt(*m.lm.tokenizer, caption);
  if (static_cast<int>(prompt.size()) + m.vocab.pixels() > m.session->context_size())
    throw Error("the caption is too long: " + std::to_string(prompt.size()) + " tokens and " + std::to_string(m.vocab.pixels()) +
                " pixels exceed the context of " + std::to_string(m.session->context_size()));
  ImageSample s;
  int forward = 0;
  TokenSink sink = [&](std::span<const int32_t> toks) {
    for (size_t i = 0; i < toks.size(); i++) s.forward_of_token.push_back(forward);
    forward++;
  };
  GenerationResult r = decoder.generate(*m.session, prompt, cfg, sink);
  s.tokens = std::move(r.tokens);
  s.forward_of_token.resize(s.tokens.size());
  s.stats = r.stats;
  return s;
}

}  // namespace jf::cli
