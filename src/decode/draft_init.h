// Initial guesses for draft positions nothing has predicted yet.
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "base/rng.h"

namespace jf {

enum class DraftInit {
  Context,  // tokens drawn uniformly from the prompt and the text generated so far (reference default)
  Random,   // uniform over the vocabulary
  Repeat,   // the last token repeated
};
std::string draft_init_name(DraftInit d);
bool draft_init_from_name(const std::string& s, DraftInit* out);

// Appends n guesses to `out`.
void add_guesses(DraftInit how, std::span<const int32_t> history, int vocab, Rng& rng, int n, std::vector<int32_t>& out);

}  // namespace jf
