#include "grammar/vocab_index.h"

#include <algorithm>

#include "grammar/class_runs.h"
#include "tokenizer/tokenizer.h"

namespace jf {

namespace {
// Bytes a and b have in common at their start.
size_t common_prefix(const std::string& a, const std::string& b) {
  size_t n = 0;
  while (n < a.size() && n < b.size() && a[n] == b[n]) n++;
  return n;
}
// Character sets a vocabulary keeps runs for (a JSON grammar uses one or two).
constexpr size_t kMaxRunSets = 16;
}  // namespace

// The strings in byte order build the tree: the path to the previous one is kept, and each string's new
// nodes hang below the depth of the prefix it shares with that one.
PrefixTree PrefixTree::build(std::vector<std::pair<std::string, int32_t>> entries) {
  std::sort(entries.begin(), entries.end());
  PrefixTree t;
  t.nodes.assign(1, Node{});
  std::vector<int32_t> path(1, 0), last_child(1, -1);  // per depth: the node, and its last child so far
  std::vector<std::vector<int32_t>> node_ends(1);
  for (size_t i = 0; i < entries.size(); i++) {
    const std::string& b = entries[i].first;
    size_t depth = i ? std::min(common_prefix(entries[i - 1].first, b), path.size() - 1) : 0;
    path.resize(depth + 1);
    last_child.resize(depth + 1);
    for (; depth < b.size(); depth++) {
      const int32_t id = static_cast<int32_t>(t.nodes.size());
      t.nodes.push_back(Node{});
      t.nodes.back().byte = static_cast<uint8_t>(b[depth]);
      node_ends.emplace_back();
      const int32_t parent = path[depth];
      if (last_child[depth] < 0) t.nodes[parent].first_child = id;
      else t.nodes[last_child[depth]].next_sibling = id;
      last_child[depth] = id;
      path.push_back(id);
      last_child.push_back(-1);
    }
    node_ends[path[b.size()]].push_back(entries[i].second);
  }
  for (size_t n = 0; n < t.nodes.size(); n++) {
    t.nodes[n].end_begin = static_cast<int32_t>(t.ends.size());
    t.ends.insert(t.ends.end(), node_ends[n].begin(), node_ends[n].end());
    t.nodes[n].end_end = static_cast<int32_t>(t.ends.size());
  }
  // Children come after their parent (preorder): the bytes below, and where each subtree ends, bottom up.
  for (size_t n = t.nodes.size(); n-- > 0;) {
    Node& node = t.nodes[n];
    node.subtree_end = static_cast<int32_t>(n + 1);
    for (int32_t c = node.first_child; c >= 0; c = t.nodes[static_cast<size_t>(c)].next_sibling) {
      const Node& child = t.nodes[static_cast<size_t>(c)];
      node.subtree_end = std::max(node.subtree_end, child.subtree_end);
      node.below[0] |= child.below[0], node.below[1] |= child.below[1];
      node.below_high = node.below_high || child.below_high || child.byte >= 0x80;
      if (child.byte < 0x80) node.below[child.byte >> 6] |= uint64_t{1} << (child.byte & 63);
    }
  }
  return t;
}

VocabIndex::VocabIndex(const Tokenizer& tok) : n_vocab(tok.n_vocab()) {
  bytes.resize(static_cast<size_t>(n_vocab));
  eog.resize(static_cast<size_t>(n_vocab));
  std::vector<std::pair<std::string, int32_t>> entries;
  for (int32_t t = 0; t < n_vocab; t++) {
    eog[t] = tok.is_eog(t);
    if (eog[t]) eog_tokens.push_back(t);
    if (!eog[t] && !tok.is_control(t)) bytes[t] = tok.token_bytes(t);
    if (!bytes[t].empty()) entries.emplace_back(bytes[t], t);
  }
  tree = PrefixTree::build(std::move(entries));
}

std::shared_ptr<const VocabIndex> VocabIndex::of(const Tokenizer& tok) {
  static std::mutex mu;
  static std::map<const Tokenizer*, std::weak_ptr<const VocabIndex>> built;
  std::lock_guard lock(mu);
  std::shared_ptr<const VocabIndex> index = built[&tok].lock();
  // (Another tokenizer may since live at the same address: the index must still spell its tokens.)
  const int32_t probe = tok.n_vocab() / 2;
  if (!index || index->n_vocab != tok.n_vocab() ||
      (!index->bytes[probe].empty() && index->bytes[probe] != tok.token_bytes(probe))) {
    index = std::make_shared<const VocabIndex>(tok);
    built[&tok] = index;
  }
  static std::shared_ptr<const VocabIndex> last;  // (a process usually has one tokenizer: never index it twice)
  last = index;
  return index;
}

std::shared_ptr<const ClassRuns> VocabIndex::runs_of(const CodeSet& set) const {
  std::lock_guard lock(runs_mu_);
  const std::string key = set.key();
  const auto it = runs_.find(key);
  if (it != runs_.end()) return it->second;
  if (runs_.size() >= kMaxRunSets) return nullptr;
  return runs_[key] = std::make_shared<const ClassRuns>(*this, set);
}

}  // namespace jf
