// The engine's host-RAM prompt cache: saving the KV state of a sequence a slot drops, restoring it when a prompt
// extends it. Engine methods, run on the decode thread. The policy is described in docs/native.md "Host-RAM prompt
// cache".
#include <algorithm>
#include <cstdint>
#include <new>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "engine.h"

namespace llamad {

namespace {

// A sequence is kept only when a slot drops at least this many of its tokens: smaller states cost a copy and an entry
// for what a few decode steps evaluate again.
constexpr size_t kMinSavedTokens = 64;
// A kept sequence replaces a slot's cache only when it spares at least this many more prompt tokens than the slot's
// own prefix does (a restore copies the whole state, also the part beyond the prompt).
constexpr size_t kMinRestoreGain = 32;

}  // namespace

void Engine::SaveToRamCache(const Slot& slot, size_t surviving) {
  if (!prompt_cache_ || memory_ == nullptr) return;
  const std::vector<llama_token>& tokens = slot.cache;
  if (tokens.size() < surviving + kMinSavedTokens) return;
  // An unapplied context shift: the cells hold the new positions but K is still rotated for the old ones.
  if (slot.shift_mark != 0 && tokens.size() <= slot.shift_mark) return;
  // Image positions (media tasks) cannot be matched by tokens.
  if (std::find(tokens.begin(), tokens.end(), LLAMA_TOKEN_NULL) != tokens.end()) return;
  if (prompt_cache_->Covers(tokens, slot.cache_scope)) return;
  const size_t size = llama_state_seq_get_size(ctx_, slot.seq_id);
  if (!prompt_cache_->Fits(size)) return;
  try {
    std::vector<uint8_t> state(size);
    if (llama_state_seq_get_data(ctx_, state.data(), state.size(), slot.seq_id) != size) return;
    prompt_cache_->Insert(tokens, std::move(state), slot.cache_scope);
  } catch (const std::bad_alloc&) {
    // No host memory for it: the sequence is dropped as without the cache (this also runs inside a decode step,
    // whose exceptions would fail every running task).
  }
  ram_cache_entries_.store(static_cast<int32_t>(prompt_cache_->size()));
  ram_cache_bytes_.store(static_cast<int64_t>(prompt_cache_->bytes()));
}

size_t Engine::ReuseRamCache(Slot*& chosen, const std::vector<llama_token>& prompt, size_t prefix,
                             const std::string& scope) {
  if (!prompt_cache_ || memory_ == nullptr) return prefix;
  // StartTask keeps at most prompt.size() - 1 tokens (the last one is evaluated for its logits).
  const size_t last = prompt.size() - 1;
  const size_t keep = std::min(prefix, last);
  std::optional<PromptCache::Match> match = prompt_cache_->Lookup(prompt, scope);
  if (!match || std::min(match->prefix, last) < keep + kMinRestoreGain) {
    SaveToRamCache(*chosen, keep);
    return prefix;
  }
  // Into the idle slot caching the least (an empty one when there is one): the other idle slots keep their prefixes.
  for (Slot& s : slots_) {
    if (s.state == Slot::State::kIdle && s.cache.size() < chosen->cache.size()) chosen = &s;
  }
  Slot& slot = *chosen;
  // Out of the cache first: saving the slot (or an idle slot evicted for room) may push old entries out.
  PromptCacheEntry entry = prompt_cache_->Take(match->entry);
  SaveToRamCache(slot, 0);
  llama_memory_seq_rm(memory_, slot.seq_id, -1, -1);
  slot.cache.clear();
  slot.shift_mark = 0;
  if (shared_cells_) {
    // The restore places all of the entry's cells before StartTask trims them to the prompt: make room among the
    // idle slots' caches (each kept in the RAM cache in turn); running tasks are never touched.
    const int32_t need = static_cast<int32_t>(entry.tokens.size());
    while (n_ctx_slot_ - CellsHeld() < need && EvictIdleCache()) {
    }
    if (n_ctx_slot_ - CellsHeld() < need) {
      prompt_cache_->Insert(std::move(entry.tokens), std::move(entry.state), std::move(entry.scope));
      ram_cache_entries_.store(static_cast<int32_t>(prompt_cache_->size()));
      ram_cache_bytes_.store(static_cast<int64_t>(prompt_cache_->bytes()));
      return 0;
    }
  }
  const size_t restored = llama_state_seq_set_data(ctx_, entry.state.data(), entry.state.size(), slot.seq_id);
  ram_cache_entries_.store(static_cast<int32_t>(prompt_cache_->size()));
  ram_cache_bytes_.store(static_cast<int64_t>(prompt_cache_->bytes()));
  const llama_pos pos_max = llama_memory_seq_pos_max(memory_, slot.seq_id);
  if (restored == 0 || pos_max + 1 != static_cast<llama_pos>(entry.tokens.size())) {
    // Failed (llama.cpp found no room, or a state it does not accept): the entry is dropped, the prompt evaluated.
    llama_memory_seq_rm(memory_, slot.seq_id, -1, -1);
    return 0;
  }
  slot.cache = std::move(entry.tokens);  // of `scope`: StartTask's ClaimSlotScope gives the slot that scope
  ram_cache_hits_.fetch_add(1);
  ram_cache_tokens_.fetch_add(static_cast<int64_t>(std::min(match->prefix, last)));
  return match->prefix;
}

void Engine::FillRamCacheStats(EngineStats& stats) const {
  stats.ram_cache_entries = ram_cache_entries_.load();
  stats.ram_cache_bytes = ram_cache_bytes_.load();
  stats.ram_cache_hits = ram_cache_hits_.load();
  stats.ram_cache_tokens = ram_cache_tokens_.load();
}

}  // namespace llamad
