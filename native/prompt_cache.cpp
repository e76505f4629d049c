#include "prompt_cache.h"

#include <algorithm>
#include <utility>

namespace llamad {

size_t PromptCache::CommonPrefix(const std::vector<llama_token>& a, const std::vector<llama_token>& b) {
  const size_t n = std::min(a.size(), b.size());
  size_t i = 0;
  while (i < n && a[i] == b[i]) ++i;
  return i;
}

bool PromptCache::Covers(const std::vector<llama_token>& tokens, const std::string& scope) const {
  for (const PromptCacheEntry& entry : entries_) {
    if (entry.scope != scope) continue;
    if (entry.tokens.size() >= tokens.size() && CommonPrefix(entry.tokens, tokens) == tokens.size()) return true;
  }
  return false;
}

bool PromptCache::Insert(std::vector<llama_token> tokens, std::vector<uint8_t> state, std::string scope) {
  if (!Fits(state.size())) return false;
  for (auto it = entries_.begin(); it != entries_.end();) {
    if (it->scope == scope && it->tokens.size() <= tokens.size() &&
        CommonPrefix(it->tokens, tokens) == it->tokens.size()) {
      bytes_ -= it->state.size();
      it = entries_.erase(it);
    } else {
      ++it;
    }
  }
  while (!entries_.empty() && bytes_ + state.size() > budget_) EvictOldest();
  PromptCacheEntry entry;
  entry.tokens = std::move(tokens);
  entry.state = std::move(state);
  entry.scope = std::move(scope);
  entries_.push_back(std::move(entry));
  bytes_ += entries_.back().state.size();
  return true;
}

std::optional<PromptCache::Match> PromptCache::Lookup(const std::vector<llama_token>& prompt,
                                                      const std::string& scope) const {
  std::optional<Match> best;
  for (auto it = entries_.begin(); it != entries_.end(); ++it) {
    if (it->scope != scope) continue;
    const size_t prefix = CommonPrefix(it->tokens, prompt);
    if (prefix == 0) continue;
    // Entries are oldest first: >= prefers the more recent one on ties.
    if (!best || prefix >= best->prefix) best = Match{prefix, it};
  }
  return best;
}

PromptCacheEntry PromptCache::Take(std::list<PromptCacheEntry>::const_iterator entry) {
  PromptCacheEntry out = std::move(const_cast<PromptCacheEntry&>(*entry));
  bytes_ -= out.state.size();
  entries_.erase(entry);
  return out;
}

void PromptCache::EvictOldest() {
  bytes_ -= entries_.front().state.size();
  entries_.pop_front();
}

}  // namespace llamad
