// How a queued task takes a slot: the idle slot of its cache scope with the longest common prefix (and the host-RAM
// cache; for a prompt with media: text and media chunks by content id); and the final event of a task cancelled while
// queued. Engine
// methods, run on the decode thread.
#include <algorithm>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "engine.h"

namespace llamad {

void Engine::EmitCancelledQueued(const Task& task) {
  EngineEvent event;
  event.type = EngineEvent::Type::kDone;
  event.task_id = task.id;
  event.reason = StopReason::kCancelled;
  event.timings.prompt_total = static_cast<int32_t>(task.params.tokens.size());
  events_.push_back(std::move(event));
}

void Engine::StartTask(std::unique_ptr<Task> task) {
  const std::vector<llama_token>& prompt = task->params.tokens;
  const std::string& scope = task->params.cache_scope;
  Slot* best = nullptr;
  size_t best_prefix = 0;
  if (task->params.media) {
    // Media task: the idle slot whose sequence starts with the longest part of this prompt, equal text tokens and the
    // same media chunks (content ids) at the same positions (MediaPrefix); on ties the one caching the least. The rest
    // of the prompt is evaluated by EvalMediaUnit and the shared batch, one unit per step (engine_media_eval.cpp).
    // No host-RAM cache: it never keeps sequences with media.
    for (Slot& slot : slots_) {
      if (slot.state != Slot::State::kIdle) continue;
      const size_t prefix = MediaPrefix(slot, task->params);
      if (best == nullptr || prefix > best_prefix ||
          (prefix == best_prefix && slot.cache.size() < best->cache.size())) {
        best = &slot;
        best_prefix = prefix;
      }
    }
    SaveToRamCache(*best, std::min(best_prefix, prompt.size() - 1));
  } else {
    // The idle slot that already holds the longest prefix of this prompt; on ties the one caching the least. The cache
    // of a slot another scope filled counts as no prefix (and is dropped if that slot is taken): a shared prefix would
    // show in this task's prompt counts and timings.
    for (Slot& slot : slots_) {
      if (slot.state != Slot::State::kIdle) continue;
      const size_t prefix = slot.cache_scope == scope ? slot.CommonPrefix(prompt) : 0;
      if (best == nullptr || prefix > best_prefix ||
          (prefix == best_prefix && slot.cache.size() < best->cache.size())) {
        best = &slot;
        best_prefix = prefix;
      }
    }
    best_prefix = ReuseRamCache(best, prompt, best_prefix, scope);  // may restore a kept sequence, into another slot
  }
  Slot& slot = *best;  // Run() only starts as many tasks as there are idle slots
  // Keep the common prefix, but always evaluate at least the last prompt token to get its logits.
  size_t keep = std::min(best_prefix, prompt.size() - 1);
  if (!llama_memory_seq_rm(memory_, slot.seq_id, static_cast<llama_pos>(keep), -1)) {
    llama_memory_seq_rm(memory_, slot.seq_id, -1, -1);  // partial removal unsupported (SWA, recurrent)
    keep = 0;
  }
  slot.cache.resize(keep);
  // Media chunks the sequence no longer holds in full.
  auto& spans = slot.media_spans;
  spans.erase(
      std::remove_if(spans.begin(), spans.end(), [&](const Slot::MediaSpan& m) { return m.pos + m.n_pos > keep; }),
      spans.end());
  ClaimSlotScope(slot, scope);
  slot.n_prompt_done = keep;
  slot.stream = std::make_unique<TextStream>(task->params.stop);
  slot.pending = -1;
  slot.n_generated = 0;
  slot.output_index = -1;
  slot.timings = Timings();
  slot.timings.slot = slot.seq_id;
  slot.timings.prompt_total = static_cast<int32_t>(prompt.size());
  slot.timings.prompt_n = static_cast<int32_t>(prompt.size() - keep);
  slot.prompt_started = false;
  slot.start_seq = next_start_++;
  slot.spec = DraftGate();
  slot.cell_grant = 0;
  slot.resume_tokens.clear();
  slot.task = std::move(task);
  slot.state = Slot::State::kPrefill;
}

void Engine::ClaimSlotScope(Slot& slot, const std::string& scope) {
  if (slot.cache_scope == scope) return;
  if (draft_memory_ != nullptr && !slot.draft_cache.empty()) {
    llama_memory_seq_rm(draft_memory_, slot.seq_id, -1, -1);
  }
  slot.draft_cache.clear();
  slot.cache_scope = scope;
}

}  // namespace llamad
