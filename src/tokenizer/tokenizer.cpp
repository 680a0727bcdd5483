// Tokenizer construction (validation, lookup tables), special-token partitioning, encode dispatch and decode.
#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstdio>

#include "base/error.h"
#include "tokenizer/internal.h"
#include "tokenizer/pretokenize.h"

namespace jf {

namespace {

std::string id_str(int64_t id) { return std::to_string(id); }

// "<0xAB>" -> 0xAB, or -1.
int parse_byte_token(const std::string& t) {
  if (t.size() != 6 || t[0] != '<' || t[1] != '0' || t[2] != 'x' || t[5] != '>') return -1;
  auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
  };
  int h = hex(t[3]), l = hex(t[4]);
  return h < 0 || l < 0 ? -1 : h * 16 + l;
}

void replace_all(std::string& s, std::string_view from, std::string_view to) {
  std::string out;
  out.reserve(s.size());
  size_t pos = 0;
  for (size_t hit; (hit = s.find(from, pos)) != std::string::npos; pos = hit + from.size()) {
    out.append(s, pos, hit - pos);
    out.append(to);
  }
  out.append(s, pos, std::string::npos);
  s = std::move(out);
}

}  // namespace

Tokenizer::Tokenizer(VocabSpec spec) : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  const size_t n = spec.tokens.size();
  if (n == 0) throw Error("tokenizer vocabulary is empty");
  if (n > static_cast<size_t>(INT32_MAX)) throw Error("tokenizer vocabulary is too large");
  if (spec.scores.empty()) spec.scores.assign(n, 0.0f);
  if (spec.types.empty()) spec.types.assign(n, TokenKind::Normal);
  if (spec.scores.size() != n)
    throw Error("tokenizer has " + id_str(n) + " tokens but " + id_str(spec.scores.size()) + " scores");
  if (spec.types.size() != n)
    throw Error("tokenizer has " + id_str(n) + " tokens but " + id_str(spec.types.size()) + " token types");
  for (size_t i = 0; i < n; i++) {
    int t = static_cast<int>(spec.types[i]);
    if (t < 1 || t > 6) spec.types[i] = TokenKind::Normal;  // llama.cpp treats undefined types as plain text
  }
  auto check_id = [&](int32_t id, const char* what) {
    if (id < -1 || id >= static_cast<int32_t>(n))
      throw Error(std::string("tokenizer ") + what + " id " + id_str(id) + " is outside the vocabulary of " + id_str(n));
  };
  check_id(spec.bos, "BOS");
  check_id(spec.eos, "EOS");
  check_id(spec.unk, "UNK");
  check_id(spec.pad, "padding");
  for (int32_t id : spec.eog) {
    if (id < 0 || id >= static_cast<int32_t>(n))
      throw Error("tokenizer end-of-generation id " + id_str(id) + " is outside the vocabulary of " + id_str(n));
  }
  std::sort(spec.eog.begin(), spec.eog.end());
  spec.eog.erase(std::unique(spec.eog.begin(), spec.eog.end()), spec.eog.end());
  spec.eog.erase(std::remove(spec.eog.begin(), spec.eog.end(), spec.eos), spec.eog.end());

  m.token_to_id.reserve(n);
  for (size_t i = 0; i < n; i++) {
    if (spec.tokens[i].empty()) spec.tokens[i] = "[EMPTY_" + id_str(i) + "]";  // as llama.cpp does
    m.token_to_id[spec.tokens[i]] = static_cast<int32_t>(i);
  }

  for (size_t i = 0; i < n; i++) {
    TokenKind k = spec.types[i];
    if (k == TokenKind::Control || k == TokenKind::UserDefined || k == TokenKind::Unknown)
      m.special_sorted.push_back(static_cast<int32_t>(i));
  }
  std::stable_sort(m.special_sorted.begin(), m.special_sorted.end(),
                   [&](int32_t a, int32_t b) { return spec.tokens[a].size() > spec.tokens[b].size(); });
  m.rstrip.assign(n, false);
  for (int32_t id : spec.rstrip) {
    if (id < 0 || id >= static_cast<int32_t>(n))
      throw Error("tokenizer whitespace-stripping id " + id_str(id) + " is outside the vocabulary of " + id_str(n));
    m.rstrip[static_cast<size_t>(id)] = true;
  }

  std::fill(std::begin(m.byte_ids), std::end(m.byte_ids), -1);
  std::fill(std::begin(m.bytelevel_ids), std::end(m.bytelevel_ids), -1);
  if (spec.kind == VocabKind::Spm) {
    for (int b = 0; b < 256; b++) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "<0x%02X>", b);
      int32_t id = m.find(buf);
      if (id < 0) id = m.find(std::string(1, static_cast<char>(b)));
      m.byte_ids[b] = id;
    }
  } else {
    const std::vector<std::string> regexes =
        spec.pre_regexes.empty() ? pre_tokenizer_regexes(spec.pre) : spec.pre_regexes;
    m.splitter = std::make_unique<RegexSplitter>(regexes);
    m.ignore_merges = pre_tokenizer_ignores_merges(spec.pre);
    for (int b = 0; b < 256; b++) m.bytelevel_ids[b] = m.find(tok::byte_to_unicode(static_cast<uint8_t>(b)));
    m.merges.reserve(spec.merges.size());
    std::string joined;
    for (size_t r = 0; r < spec.merges.size(); r++) {
      const std::string& mg = spec.merges[r];
      size_t sp = mg.find(' ', 1);
      if (sp == std::string::npos || sp + 1 >= mg.size())
        throw Error("tokenizer merge #" + id_str(r) + " '" + mg + "' is not of the form 'left right'");
      std::string_view left(mg.data(), sp), right(mg.data() + sp + 1, mg.size() - sp - 1);
      int32_t l = m.find(left), rt = m.find(right);
      if (l < 0 || rt < 0) continue;  // can never apply: both sides must be tokens
      joined.assign(left);
      joined.append(right);
      uint64_t key = (static_cast<uint64_t>(static_cast<uint32_t>(l)) << 32) | static_cast<uint32_t>(rt);
      m.merges.emplace(key, Impl::Merge{static_cast<int32_t>(r), m.find(joined)});
    }
  }

  m.pieces.resize(n);
  for (size_t i = 0; i < n; i++) {
    const std::string& t = spec.tokens[i];
    std::string& p = m.pieces[i];
    switch (spec.types[i]) {
      case TokenKind::Byte: {
        int b = parse_byte_token(t);
        if (b >= 0) {
          p.assign(1, static_cast<char>(b));
          break;
        }
        [[fallthrough]];
      }
      case TokenKind::Normal:
        if (spec.kind == VocabKind::Spm) {
          p = t;
          replace_all(p, tok::kSpace, " ");
        } else {
          size_t k = 0;
          while (k < t.size()) {
            size_t start = k;
            uint32_t cp;
            int b = tok::utf8_next(t, k, cp) ? tok::unicode_to_byte(cp) : -1;
            if (b >= 0) {
              p += static_cast<char>(b);
            } else {
              p.append(t, start, k - start);  // not in the byte alphabet: keep as written
            }
          }
        }
        break;
      case TokenKind::Unused:
        break;
      default:  // control, unknown, user-defined: their text
        p = t;
        break;
    }
  }
  m.spec = std::move(spec);
}

Tokenizer::~Tokenizer() = default;
Tokenizer::Tokenizer(Tokenizer&&) noexcept = default;
Tokenizer& Tokenizer::operator=(Tokenizer&&) noexcept = default;

std::vector<int32_t> Tokenizer::encode(std::string_view text, bool add_special, bool parse_special) const {
  const Impl& m = *impl_;
  const VocabSpec& s = m.spec;

  // Split out special tokens, longest first (llama.cpp's tokenizer_st_partition). id < 0: raw text.
  struct Frag {
    int32_t id;
    size_t b, len;
  };
  std::vector<Frag> frags, next;
  if (!text.empty()) frags.push_back({-1, 0, text.size()});
  for (int32_t sid : m.special_sorted) {
    TokenKind k = s.types[sid];
    if (!parse_special && (k == TokenKind::Control || k == TokenKind::Unknown)) continue;
    const std::string& st = s.tokens[sid];
    bool any = false;
    for (const Frag& f : frags) {
      if (f.id < 0 && f.len >= st.size() && text.substr(f.b, f.len).find(st) != std::string_view::npos) {
        any = true;
        break;
      }
    }
    if (!any) continue;
    next.clear();
    for (const Frag& f : frags) {
      if (f.id >= 0) {
        next.push_back(f);
        continue;
      }
      std::string_view raw = text.substr(f.b, f.len);
      size_t pos = 0;
      for (size_t hit; (hit = raw.find(st, pos)) != std::string_view::npos;) {
        if (hit > pos) next.push_back({-1, f.b + pos, hit - pos});
        next.push_back({sid, 0, 0});
        pos = hit + st.size();
        while (m.rstrip[static_cast<size_t>(sid)] && pos < raw.size() && std::isspace(static_cast<unsigned char>(raw[pos])))
          pos++;
      }
      if (pos < raw.size()) next.push_back({-1, f.b + pos, raw.size() - pos});
    }
    std::swap(frags, next);
  }

  std::vector<int32_t> out;
  out.reserve(text.size() / 3 + 4);
  if (add_special && s.add_bos && s.bos >= 0) out.push_back(s.bos);
  if (s.kind == VocabKind::Spm) {
    bool prev_special = true;  // the dummy prefix goes before the first text and after every special token
    std::string buf;
    for (const Frag& f : frags) {
      if (f.id >= 0) {
        out.push_back(f.id);
        prev_special = true;
        continue;
      }
      buf.clear();
      if (s.add_space_prefix && prev_special) buf += ' ';
      buf.append(text.substr(f.b, f.len));
      replace_all(buf, " ", tok::kSpace);
      m.encode_spm(buf, out);
      prev_special = false;
    }
  } else {
    for (const Frag& f : frags) {
      if (f.id >= 0) {
        out.push_back(f.id);
      } else {
        m.encode_bpe(text.substr(f.b, f.len), out);
      }
    }
  }
  if (add_special && s.add_eos && s.eos >= 0) out.push_back(s.eos);
  return out;
}

std::string Tokenizer::token_bytes(int32_t id, bool render_special) const {
  const Impl& m = *impl_;
  if (id < 0 || id >= n_vocab()) throw Error("token id " + id_str(id) + " is outside the vocabulary of " + id_str(n_vocab()));
  TokenKind k = m.spec.types[id];
  if (!render_special && (k == TokenKind::Control || k == TokenKind::Unknown)) return {};
  return m.pieces[id];
}

std::string Tokenizer::decode(std::span<const int32_t> ids, bool render_special) const {
  const Impl& m = *impl_;
  std::string out;
  bool strip = m.spec.kind == VocabKind::Spm && m.spec.add_space_prefix;
  for (int32_t id : ids) {
    std::string p = token_bytes(id, render_special);
    if (strip && m.spec.types[id] != TokenKind::Control) {
      if (!p.empty() && p[0] == ' ') p.erase(0, 1);  // SentencePiece drops the dummy prefix's space
      strip = false;
    }
    out += p;
  }
  return out;
}

const std::string& Tokenizer::token_text(int32_t id) const {
  if (id < 0 || id >= n_vocab()) throw Error("token id " + id_str(id) + " is outside the vocabulary of " + id_str(n_vocab()));
  return impl_->spec.tokens[id];
}

std::unique_ptr<Tokenizer> Tokenizer::padded(std::unique_ptr<Tokenizer> tok, int32_t n_vocab) {
  if (tok && tok->n_vocab() > n_vocab)
    throw Error("tokenizer has " + id_str(tok->n_vocab()) + " tokens but the model only " + id_str(n_vocab));
  if (!tok || tok->n_vocab() == n_vocab) return tok;
  VocabSpec s = tok->spec();
  for (int32_t id = tok->n_vocab(); id < n_vocab; id++) {
    s.tokens.push_back("[PAD" + std::to_string(id) + "]");
    s.types.push_back(TokenKind::Unused);
    if (!s.scores.empty()) s.scores.push_back(0.0f);
  }
  return std::make_unique<Tokenizer>(std::move(s));
}

int32_t Tokenizer::n_vocab() const { return static_cast<int32_t>(impl_->spec.tokens.size()); }
int32_t Tokenizer::bos() const { return impl_->spec.bos; }
int32_t Tokenizer::eos() const { return impl_->spec.eos; }

bool Tokenizer::is_eog(int32_t id) const {
  const VocabSpec& s = impl_->spec;
  return id >= 0 && (id == s.eos || std::binary_search(s.eog.begin(), s.eog.end(), id));
}

std::vector<int32_t> Tokenizer::eog_ids() const {
  std::vector<int32_t> ids;
  for (int32_t id = 0; id < n_vocab(); id++)
    if (is_eog(id)) ids.push_back(id);
  return ids;
}

bool Tokenizer::is_control(int32_t id) const {
  return id >= 0 && id < n_vocab() && impl_->spec.types[id] == TokenKind::Control;
}

const VocabSpec& Tokenizer::spec() const { return impl_->spec; }

std::string valid_utf8(std::string_view text) { return tok::utf8_sanitize(text); }

std::vector<std::string_view> text_pieces(std::string_view text, size_t max_bytes) {
  JF_CHECK(max_bytes > 0, "text pieces need a positive size");
  std::vector<std::string_view> pieces;
  for (size_t at = 0; at < text.size();) {
    size_t end = std::min(text.size(), at + max_bytes);
    if (end < text.size()) {
      const size_t nl = text.rfind('\n', end - 1);
      if (nl != std::string_view::npos && nl >= at) {
        end = nl + 1;
      } else {  // no newline: back up to the start of a character (continuation bytes are 10xxxxxx)
        size_t e = end;
        while (e > at && (static_cast<unsigned char>(text[e]) & 0xC0) == 0x80) e--;
        if (e > at) end = e;  // else one "character" longer than a piece (invalid UTF-8): cut anyway
      }
    }
    pieces.push_back(text.substr(at, end - at));
    at = end;
  }
  return pieces;
}

}  // namespace jf
