#include "decode/draft_init.h"

namespace jf {

std::string draft_init_name(DraftInit d) {
  switch (d) {
    case DraftInit::Context: return "context";
    case DraftInit::Random: return "random";
    case DraftInit::Repeat: return "repeat";
  }
  return "?";
}

bool draft_init_from_name(const std::string& s, DraftInit* out) {
  for (DraftInit d : {DraftInit::Context, DraftInit::Random, DraftInit::Repeat})
    if (s == draft_init_name(d)) {
      *out = d;
      return true;
    }
  return false;
}

void add_guesses(DraftInit how, std::span<const int32_t> history, int vocab, Rng& rng, int n, std::vector<int32_t>& out) {
  for (int i = 0; i < n; i++) {
    if (how == DraftInit::Random || history.empty())
      out.push_back(static_cast<int32_t>(rng.below(static_cast<uint32_t>(vocab))));
    else if (how == DraftInit::Repeat)
      out.push_back(history.back());
    else
      out.push_back(history[rng.below(static_cast<uint32_t>(history.size()))]);
  }
}

}  // namespace jf
