// Host-RAM prompt cache: KV states of sequences a slot had to drop, kept in process memory so that a conversation that
// comes back is restored instead of evaluated again (docs/native.md "Host-RAM prompt cache"). Pure C++, no llama calls:
// the engine serializes and restores the states (engine_prompt_cache.cpp). Not thread-safe: used only by the decode
// thread of one Engine.
#ifndef LLAMAD_NATIVE_PROMPT_CACHE_H_
#define LLAMAD_NATIVE_PROMPT_CACHE_H_

#include <cstddef>
#include <cstdint>
#include <list>
#include <optional>
#include <string>
#include <vector>

#include "llama.h"

namespace llamad {

// One kept sequence: the tokens at positions 0..tokens.size()-1, the bytes of llama_state_seq_get_data for them, and
// the cache scope of the task that filled it (TaskParams::cache_scope): only lookups of that scope ever see it.
struct PromptCacheEntry {
  std::vector<llama_token> tokens;
  std::vector<uint8_t> state;
  std::string scope;
};

// A byte-bounded, least-recently-used set of sequence states, looked up by the longest common token prefix within one
// cache scope (entries of other scopes never match, and never replace or get replaced by a scope's own entries; only
// the shared byte budget pushes the least recently used entry of any scope out).
class PromptCache {
 public:
  // `budget_bytes`: the most bytes of state all entries may hold together (0 = the cache keeps nothing).
  explicit PromptCache(size_t budget_bytes) : budget_(budget_bytes) {}

  size_t budget() const { return budget_; }
  size_t bytes() const { return bytes_; }
  size_t size() const { return entries_.size(); }

  // Whether a state of `state_bytes` bytes could be kept at all (not larger than the budget).
  bool Fits(size_t state_bytes) const { return state_bytes > 0 && state_bytes <= budget_; }

  // Whether an entry of `scope` already holds `tokens` or a sequence that starts with them (saving them again adds
  // nothing).
  bool Covers(const std::vector<llama_token>& tokens, const std::string& scope) const;

  // Keeps `tokens` with their `state` as the most recent entry of `scope`. Entries of the same scope whose tokens are a
  // prefix of `tokens` are dropped (the new one serves every prompt they would), then the least recently used ones of
  // any scope until the total fits the budget. Returns false (nothing kept) when `state` is empty or larger than the
  // whole budget.
  bool Insert(std::vector<llama_token> tokens, std::vector<uint8_t> state, std::string scope);

  // The length (tokens) of the longest common prefix of `prompt` with any entry of `scope`, and which entry (ties: the
  // most recent); no match when the cache holds no entry of `scope` that shares a first token with `prompt`.
  struct Match {
    size_t prefix = 0;
    std::list<PromptCacheEntry>::const_iterator entry;
  };
  std::optional<Match> Lookup(const std::vector<llama_token>& prompt, const std::string& scope) const;

  // Removes the entry of a Match (from Lookup, with no Insert/Take since) and returns it.
  PromptCacheEntry Take(std::list<PromptCacheEntry>::const_iterator entry);

  // Length of the common prefix of two token sequences.
  static size_t CommonPrefix(const std::vector<llama_token>& a, const std::vector<llama_token>& b);

 private:
  void EvictOldest();

  size_t budget_;
  size_t bytes_ = 0;
  std::list<PromptCacheEntry> entries_;  // least recently used first
};

}  // namespace llamad

#endif  // LLAMAD_NATIVE_PROMPT_CACHE_H_
