// The engine's cell budget over a unified KV cache (Engine shared_cells) and its thread count. Engine methods, run on
// the decode thread unless noted. The policy is described in docs/native.md "Parallel slots".
#include <algorithm>
#include <cstdint>
#include <vector>

#include "engine.h"

namespace llamad {

namespace {

// Cells an active slot holds now or will hold once its current phase is done (its prompt evaluated, its next token
// decoded, its paused tokens evaluated again).
int32_t Commitment(const Slot& slot) {
  const auto size = [](size_t n) { return static_cast<int32_t>(n); };
  switch (slot.state) {
    case Slot::State::kIdle:
      return 0;
    case Slot::State::kPrefill:
      return std::max(size(slot.cache.size()), size(slot.task->params.tokens.size()));
    case Slot::State::kGenerate:
      return size(slot.cache.size()) + 1;
    case Slot::State::kPaused:
      return slot.resume_tokens.empty() ? size(slot.task->params.tokens.size()) : size(slot.resume_tokens.size()) + 1;
    case Slot::State::kResume:
      return size(slot.resume_tokens.size()) + 1;
  }
  return 0;
}

}  // namespace

void Engine::SetThreads(int32_t n_threads, int32_t n_threads_batch) {
  threads_batch_wanted_.store(std::max(1, n_threads_batch));
  threads_wanted_.store(std::max(1, n_threads));
}

void Engine::ApplyThreads() {
  const int32_t wanted = threads_wanted_.exchange(0);
  if (wanted <= 0) return;
  const int32_t batch = std::max(1, threads_batch_wanted_.load());
  if (wanted != llama_n_threads(ctx_) || batch != llama_n_threads_batch(ctx_)) llama_set_n_threads(ctx_, wanted, batch);
  if (draft_ctx_ != nullptr && (wanted != llama_n_threads(draft_ctx_) || batch != llama_n_threads_batch(draft_ctx_))) {
    llama_set_n_threads(draft_ctx_, wanted, batch);
  }
  threads_now_.store(wanted);
}

int32_t Engine::CellsHeld() const {
  int32_t held = 0;
  for (const Slot& slot : slots_) held += static_cast<int32_t>(slot.cache.size());
  return held;
}

int32_t Engine::CellsCommitted() const {
  int32_t committed = 0;
  for (const Slot& slot : slots_) {
    if (slot.task) committed += Commitment(slot);
  }
  return committed;
}

bool Engine::CanAdmit(const Task& task, int32_t starting) const {
  if (!shared_cells_) return true;
  const int32_t committed = CellsCommitted();
  if (committed == 0 && starting == 0) return true;  // alone: ValidatePrompt kept it within the context
  for (const Slot& slot : slots_) {
    if (slot.state == Slot::State::kPaused) return false;  // paused tasks get the cells back first
  }
  const int32_t prompt = static_cast<int32_t>(task.params.tokens.size());
  return committed + starting + prompt + 1 <= n_ctx_slot_;
}

bool Engine::EvictIdleCache() {
  Slot* oldest = nullptr;
  for (Slot& slot : slots_) {
    if (slot.state != Slot::State::kIdle || slot.cache.empty()) continue;
    if (oldest == nullptr || slot.last_used < oldest->last_used) oldest = &slot;
  }
  if (oldest == nullptr) return false;
  SaveToRamCache(*oldest, 0);
  llama_memory_seq_rm(memory_, oldest->seq_id, -1, -1);
  oldest->cache.clear();
  return true;
}

void Engine::PauseSlot(Slot& slot) {
  if (slot.state == Slot::State::kGenerate) {
    slot.resume_tokens = slot.cache;  // prompt and generated tokens; `pending` is decoded after them
  } else if (slot.state == Slot::State::kPrefill) {
    slot.resume_tokens.clear();  // the prompt is evaluated again from its start
    slot.n_prompt_done = 0;
    slot.timings.prompt_n = static_cast<int32_t>(slot.task->params.tokens.size());
  }  // kResume keeps its resume_tokens
  llama_memory_seq_rm(memory_, slot.seq_id, -1, -1);
  slot.cache.clear();
  slot.cell_grant = 0;
  slot.state = Slot::State::kPaused;
}

bool Engine::MakeRoom(const Slot& for_slot, int32_t need, int32_t& budget) {
  while (budget < need) {
    if (EvictIdleCache()) {
      budget = n_ctx_slot_ - CellsHeld();
      continue;
    }
    // The most recently started task younger than `for_slot` that holds cells gives them up.
    Slot* victim = nullptr;
    for (Slot& slot : slots_) {
      if (!slot.task || slot.state == Slot::State::kPaused || slot.cache.empty()) continue;
      if (slot.start_seq <= for_slot.start_seq) continue;
      if (victim == nullptr || slot.start_seq > victim->start_seq) victim = &slot;
    }
    if (victim == nullptr) return false;
    if (victim->task->params.media) {
      // Image positions cannot be evaluated again from tokens: the task ends instead of waiting.
      llama_memory_seq_rm(memory_, victim->seq_id, -1, -1);
      victim->cache.clear();
      Fail(*victim, ErrorCode::kExceedContext,
           "the shared KV cache is full: a task with images cannot wait for cells (set OLLAMA_NUM_PARALLEL)");
    } else {
      PauseSlot(*victim);
    }
    budget = n_ctx_slot_ - CellsHeld();
  }
  return true;
}

void Engine::PlanCells() {
  std::vector<Slot*> active;
  for (Slot& slot : slots_) {
    slot.cell_grant = 0;
    if (slot.task) active.push_back(&slot);
  }
  std::sort(active.begin(), active.end(), [](const Slot* a, const Slot* b) { return a->start_seq < b->start_seq; });
  // Paused tasks resume oldest first, each once all it needs fits beside what the others are committed to.
  int32_t committed = 0;
  for (const Slot* slot : active) {
    if (slot->state != Slot::State::kPaused) committed += Commitment(*slot);
  }
  for (Slot* slot : active) {
    if (slot->state != Slot::State::kPaused) continue;
    const int32_t need = Commitment(*slot);
    if (committed > 0 && committed + need > n_ctx_slot_) break;
    slot->state = slot->resume_tokens.empty() ? Slot::State::kPrefill : Slot::State::kResume;
    committed += need;
  }
  // Cells for this step, oldest task first; a task that finds too few takes them from younger ones (MakeRoom).
  int32_t budget = n_ctx_slot_ - CellsHeld();
  for (Slot* slot : active) {
    if (!slot->task || slot->state == Slot::State::kPaused) continue;  // failed by MakeRoom, or paused
    int32_t want = 1;
    if (slot->state == Slot::State::kPrefill) {
      want = static_cast<int32_t>(slot->task->params.tokens.size() - slot->n_prompt_done);
    } else if (slot->state == Slot::State::kResume) {
      want = static_cast<int32_t>(slot->resume_tokens.size() - slot->cache.size());
    }
    // A prompt starts only when all of it fits: a half-evaluated prompt would hold cells without making progress.
    if (budget < want && !MakeRoom(*slot, want, budget)) continue;
    slot->cell_grant = want;
    budget -= want;
  }
  // Then room for drafts (speculative decoding), oldest first, from what is left: a draft never pauses anyone.
  for (Slot* slot : active) {
    if (!slot->task || slot->state != Slot::State::kGenerate || slot->cell_grant < 1) continue;
    if (slot->task->params.n_draft <= 0) continue;
    const int32_t extra = std::min(slot->task->params.n_draft, budget);
    if (extra <= 0) break;
    slot->cell_grant += extra;
    budget -= extra;
  }
}

bool Engine::PauseYoungest() {
  Slot* youngest = nullptr;
  uint64_t oldest = UINT64_MAX;
  for (Slot& slot : slots_) {
    if (!slot.task || slot.state == Slot::State::kPaused) continue;
    oldest = std::min(oldest, slot.start_seq);
    if (slot.task->params.media) continue;
    if (youngest == nullptr || slot.start_seq > youngest->start_seq) youngest = &slot;
  }
  // Never the oldest running task: it keeps the whole context.
  if (youngest == nullptr || youngest->start_seq == oldest) return false;
  PauseSlot(*youngest);
  return true;
}

void Engine::UpdateCellStats() {
  int32_t used = 0;
  int32_t cached = 0;
  int32_t paused = 0;
  for (const Slot& slot : slots_) {
    const int32_t held = static_cast<int32_t>(slot.cache.size());
    if (slot.task) {
      used += held;
    } else {
      cached += held;
    }
    if (slot.state == Slot::State::kPaused) ++paused;
  }
  cells_used_.store(used);
  cells_cached_.store(cached);
  paused_slots_.store(paused);
}

}  // namespace llamad
