// What the engine does with each sampled token: end-of-generation, stop strings, limits, context shift, logprobs, and
// how a task's slot is given back. Engine methods, run on the decode thread.
#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "engine.h"

namespace llamad {

const std::vector<llama_token>& Engine::EogTokens() {
  std::call_once(eog_once_, [this] {
    for (llama_token id = 0; id < n_vocab_; ++id) {
      if (llama_vocab_is_eog(vocab_, id)) eog_tokens_.push_back(id);
    }
  });
  return eog_tokens_;
}

void Engine::ProcessToken(Slot& slot, llama_token token) {
  const TaskParams& params = slot.task->params;
  if (token == LLAMA_TOKEN_NULL) {  // the grammar allows nothing more
    Finish(slot, StopReason::kEog);
    return;
  }
  const Clock::time_point now = Clock::now();
  if (slot.n_generated == 0) slot.first_sample = now;
  ++slot.n_generated;
  slot.timings.predicted_n = slot.n_generated;
  slot.timings.predicted_ns = Nanoseconds(now - slot.first_sample);

  EngineEvent event;
  event.type = EngineEvent::Type::kToken;
  event.task_id = slot.task->id;
  event.token = token;

  if (params.logprobs >= 0) AddLogprobs(slot, event);

  if (!params.ignore_eos && llama_vocab_is_eog(vocab_, token)) {
    event.text = slot.stream->Flush();
    events_.push_back(std::move(event));
    Finish(slot, StopReason::kEog);
    return;
  }
  const std::vector<llama_token>& preserved = slot.task->preserved;
  const bool special = !preserved.empty() && std::find(preserved.begin(), preserved.end(), token) != preserved.end();
  TextStream::Chunk chunk = slot.stream->Push(TokenToPiece(token, special));
  if (chunk.stopped) {
    event.text = std::move(chunk.text);
    events_.push_back(std::move(event));
    Finish(slot, StopReason::kStop, chunk.stop_string);
    return;
  }
  // Unlimited generation with context shift never fills the context: Ollama's safety cap of 10 x num_ctx tokens.
  int64_t max_generated = params.n_predict;  // negative: no limit
  if (max_generated < 0 && params.context_shift) max_generated = 10 * static_cast<int64_t>(n_ctx_slot_);
  const bool predicted_all = max_generated >= 0 && slot.n_generated >= max_generated;
  // The sampled token would be decoded at position cache.size(); past the slot context it cannot be, unless the
  // context is shifted first.
  bool full = slot.cache.size() >= static_cast<size_t>(n_ctx_slot_);
  if (full && !predicted_all && params.context_shift) full = !ShiftContext(slot);
  const bool limit = predicted_all || full;
  event.text = std::move(chunk.text);
  if (limit) event.text += slot.stream->Flush();
  events_.push_back(std::move(event));
  if (limit) {
    Finish(slot, StopReason::kLength);
    return;
  }
  slot.pending = token;
}

bool Engine::ShiftContext(Slot& slot) {
  // llama-server's context shift (server-context.cpp, --context-shift), which Ollama relies on (reference §4.4): keep
  // the first n_keep positions, discard half of the rest, move the tail down. Not for media tasks: an image spans
  // several positions that must stay together (llama-server disables the shift with a projector).
  const TaskParams& params = slot.task->params;
  if (!can_shift_ || params.media) return false;
  const int32_t n_past = static_cast<int32_t>(slot.cache.size());
  int64_t n_keep = 0;
  if (params.n_keep < 0) {
    n_keep = static_cast<int64_t>(params.tokens.size());  // the whole prompt
  } else {
    // Ollama keeps "the first num_keep (+BOS)" tokens: a BOS the prompt starts with does not count.
    const llama_token bos = llama_vocab_bos(vocab_);
    const bool starts_with_bos = bos != LLAMA_TOKEN_NULL && params.tokens.front() == bos;
    n_keep = static_cast<int64_t>(params.n_keep) + (starts_with_bos ? 1 : 0);
  }
  const int32_t keep = static_cast<int32_t>(std::max<int64_t>(0, std::min<int64_t>(n_keep, n_ctx_slot_ - 4)));
  const int32_t n_left = n_past - keep;
  const int32_t n_discard = std::min(n_left / 2, n_left - 1);
  if (n_discard <= 0) return false;
  if (!llama_memory_seq_rm(memory_, slot.seq_id, keep, keep + n_discard)) return false;
  llama_memory_seq_add(memory_, slot.seq_id, keep + n_discard, n_past, -n_discard);
  // `cache` mirrors the sequence (positions 0..size-1) so that prefix reuse stays correct.
  slot.cache.erase(slot.cache.begin() + keep, slot.cache.begin() + keep + n_discard);
  slot.shift_mark = slot.cache.size();
  return true;
}

void Engine::Finish(Slot& slot, StopReason reason, const std::string& stop_string) {
  EngineEvent event;
  event.type = EngineEvent::Type::kDone;
  event.task_id = slot.task->id;
  event.reason = reason;
  event.stop_string = stop_string;
  event.timings = slot.timings;
  events_.push_back(std::move(event));
  ReleaseSlot(slot);
}

void Engine::Fail(Slot& slot, ErrorCode code, const std::string& message) {
  EngineEvent event;
  event.type = EngineEvent::Type::kError;
  event.task_id = slot.task->id;
  event.code = code;
  event.message = message;
  events_.push_back(std::move(event));
  ReleaseSlot(slot);
}

void Engine::ReleaseSlot(Slot& slot) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    live_.erase(slot.task->id);
  }
  ClearMediaProgress(slot);
  slot.task.reset();
  slot.stream.reset();
  slot.state = Slot::State::kIdle;
  slot.last_used = next_use_++;
  slot.cell_grant = 0;
  slot.resume_tokens.clear();
  slot.draft.clear();
  slot.pending = -1;
  slot.output_index = -1;
  active_slots_.fetch_sub(1);
}

void Engine::FlushEvents() {
  if (events_.empty()) return;
  std::vector<EngineEvent> events;
  events.swap(events_);
  sink_(std::move(events));
}

void Engine::AddLogprobs(const Slot& slot, EngineEvent& event) {
  // log-softmax of the raw logits of the sampled position (before penalties, grammar and temperature).
  const float* logits = llama_get_logits_ith(ctx_, slot.output_index);
  if (logits == nullptr) return;
  const float max_logit = *std::max_element(logits, logits + n_vocab_);
  double sum = 0.0;
  for (int32_t i = 0; i < n_vocab_; ++i) sum += std::exp(static_cast<double>(logits[i] - max_logit));
  const float log_norm = max_logit + static_cast<float>(std::log(sum));
  event.has_logprobs = true;
  event.bytes = TokenToPiece(event.token, true);
  event.logprob = logits[event.token] - log_norm;
  const int32_t n_top = std::min(slot.task->params.logprobs, n_vocab_);
  if (n_top <= 0) return;
  std::vector<llama_token>& ids = logprob_ids_;
  ids.resize(n_vocab_);
  for (int32_t i = 0; i < n_vocab_; ++i) ids[i] = i;
  std::partial_sort(ids.begin(), ids.begin() + n_top, ids.end(), [logits](llama_token a, llama_token b) {
    return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
  });
  event.top_logprobs.reserve(n_top);
  for (int32_t k = 0; k < n_top; ++k) {
    TokenLogprob entry;
    entry.token = ids[k];
    entry.bytes = TokenToPiece(ids[k], true);
    entry.logprob = logits[ids[k]] - log_norm;
    event.top_logprobs.push_back(std::move(entry));
  }
}

std::string Engine::TokenToPiece(llama_token token, bool special) {
  if (piece_buffer_.size() < 64) piece_buffer_.resize(64);
  int32_t n =
      llama_token_to_piece(vocab_, token, &piece_buffer_[0], static_cast<int32_t>(piece_buffer_.size()), 0, special);
  if (n < 0) {
    piece_buffer_.resize(static_cast<size_t>(-n));
    n = llama_token_to_piece(vocab_, token, &piece_buffer_[0], static_cast<int32_t>(piece_buffer_.size()), 0, special);
  }
  return n > 0 ? std::string(piece_buffer_.data(), static_cast<size_t>(n)) : std::string();
}

}  // namespace llamad
