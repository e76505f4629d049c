// Speculative decoding of the engine: drafting (n-gram lookup or a draft model) and verification in the target's
// batch. Engine methods, run on the decode thread. The design is in docs/native.md "Speculative decoding".
#include <algorithm>
#include <cstdint>
#include <vector>

#include "engine.h"

namespace llamad {

namespace {

// Longest and shortest n-gram (the sequence's last tokens) looked up in its earlier tokens.
constexpr size_t kNgramMax = 4;
constexpr size_t kNgramMin = 2;

// Prompt lookup: the tokens that followed the latest earlier occurrence of the last n tokens of `cache` + `pending`
// (longest n first, kNgramMax down to kNgramMin), at most `n_max` and 4 × n; empty when none occurred. llama-server's
// `--spec-type ngram-simple` (common/ngram-map.cpp) does the same with one n.
std::vector<llama_token> NgramDraft(const std::vector<llama_token>& cache, llama_token pending, int32_t n_max) {
  const size_t length = cache.size() + 1;
  auto at = [&](size_t i) { return i < cache.size() ? cache[i] : pending; };
  for (size_t n = kNgramMax; n >= kNgramMin; --n) {
    if (length <= n) continue;
    const size_t tail = length - n;  // the pattern is [tail, length)
    // Earlier occurrences start before `tail`; the latest first (a loop or a copy in progress is found at once).
    for (size_t start = tail; start-- > 0;) {
      if (at(start) == LLAMA_TOKEN_NULL) continue;
      size_t k = 0;
      while (k < n && at(start + k) == at(tail + k)) ++k;
      if (k < n) continue;
      // A longer match predicts further: at most 4 tokens per matched token (a 2-token match risks 8).
      const size_t limit = std::min(static_cast<size_t>(n_max), 4 * n);
      std::vector<llama_token> draft;
      for (size_t i = start + n; i < length && draft.size() < limit; ++i) {
        if (at(i) == LLAMA_TOKEN_NULL) break;
        draft.push_back(at(i));
      }
      return draft;
    }
  }
  return {};
}

// Steps a slot drafts nothing after its draft length fell to 0 (every draft rejected), before it tries one token.
constexpr int32_t kDraftPauseSteps = 16;

// Index of the largest of `n` logits.
llama_token Argmax(const float* logits, int32_t n) {
  return static_cast<llama_token>(std::max_element(logits, logits + n) - logits);
}

}  // namespace

int32_t Engine::DraftLimit(const Slot& slot) const {
  const TaskParams& params = slot.task->params;
  if (params.n_draft <= 0 || params.media) return 0;
  // The pending token goes to position cache.size(); its draft must stay within the slot context, so that a context
  // shift only ever happens with no draft left in the KV cache.
  int64_t limit = std::min<int64_t>(params.n_draft, static_cast<int64_t>(n_ctx_slot_) - slot.cache.size() - 1);
  int64_t max_generated = params.n_predict;  // as ProcessToken: negative = no limit, 10 x the context with a shift
  if (max_generated < 0 && params.context_shift) max_generated = 10 * static_cast<int64_t>(n_ctx_slot_);
  if (max_generated >= 0) limit = std::min<int64_t>(limit, max_generated - slot.n_generated - 1);
  if (shared_cells_) limit = std::min<int64_t>(limit, slot.cell_grant - 1);
  // What the task's drafts have earned so far (VerifyDraft).
  const int32_t earned = slot.draft_len > 0 ? slot.draft_len : params.n_draft;
  limit = std::min<int64_t>(limit, slot.draft_pause > 0 ? 0 : earned);
  return static_cast<int32_t>(std::max<int64_t>(0, limit));
}

void Engine::PrepareDrafts() {
  std::vector<Slot*> model_slots;
  std::vector<int32_t> model_want;
  for (Slot& slot : slots_) {
    slot.draft.clear();
    if (slot.state != Slot::State::kGenerate || !slot.task || !InLoraGroup(slot)) continue;
    if (slot.draft_pause > 0 && --slot.draft_pause == 0) slot.draft_len = 1;  // try again, one token
    const int32_t limit = DraftLimit(slot);
    if (limit <= 0) continue;
    if (slot.task->params.draft_ngram) {
      slot.draft = NgramDraft(slot.cache, slot.pending, limit);
    } else if (draft_ctx_ != nullptr) {
      model_slots.push_back(&slot);
      model_want.push_back(limit);
    }
  }
  if (!model_slots.empty()) DraftWithModel(model_slots, model_want);
}

void Engine::ResetDraftContext() {
  llama_memory_clear(draft_memory_, true);
  for (Slot& slot : slots_) slot.draft_cache.clear();
}

void Engine::DraftWithModel(const std::vector<Slot*>& slots, const std::vector<int32_t>& want) {
  const int32_t n_vocab = n_vocab_;
  // Every sequence of the draft context keeps at most what its slot holds: a prefix of the slot's tokens (and pending
  // token). The draft context thus never needs more cells than the target's plus one draft per slot.
  for (Slot& slot : slots_) {
    size_t keep = slot.CommonPrefix(slot.draft_cache);
    if (keep == slot.cache.size() && slot.state == Slot::State::kGenerate && slot.draft_cache.size() > keep &&
        slot.draft_cache[keep] == slot.pending) {
      ++keep;
    }
    if (keep < slot.draft_cache.size()) {
      if (!llama_memory_seq_rm(draft_memory_, slot.seq_id, static_cast<llama_pos>(keep), -1)) {
        ResetDraftContext();
        break;
      }
      slot.draft_cache.resize(keep);
    }
  }
  // Bring each drafting slot's sequence up to cache + pending; its last token is evaluated again when it is already
  // there (its logits give the first draft token).
  struct Job {
    Slot* slot;
    int32_t want;
    size_t target;     // tokens of cache + pending
    int32_t out = -1;  // batch index of the logits for the next draft token
  };
  std::vector<Job> jobs;
  for (size_t i = 0; i < slots.size(); ++i) {
    Slot& slot = *slots[i];
    Job job{&slot, want[i], slot.cache.size() + 1};
    if (slot.draft_cache.size() >= job.target) {
      llama_memory_seq_rm(draft_memory_, slot.seq_id, static_cast<llama_pos>(job.target - 1), -1);
      slot.draft_cache.resize(job.target - 1);
    }
    jobs.push_back(job);
  }
  auto token_at = [](const Slot& slot, size_t i) { return i < slot.cache.size() ? slot.cache[i] : slot.pending; };
  auto add = [this](llama_token token, size_t pos, llama_seq_id seq, bool logits) {
    const int32_t i = draft_batch_.n_tokens++;
    draft_batch_.token[i] = token;
    draft_batch_.pos[i] = static_cast<llama_pos>(pos);
    draft_batch_.n_seq_id[i] = 1;
    draft_batch_.seq_id[i][0] = seq;
    draft_batch_.logits[i] = logits ? 1 : 0;
    return i;
  };
  auto decode = [this]() {
    const int32_t rc = llama_decode(draft_ctx_, draft_batch_);
    aborting_.store(false);
    if (rc != 0) ResetDraftContext();
    return rc == 0;
  };
  // Catch-up: chunks of at most n_batch tokens over all slots; a slot's first draft token is read right after the
  // chunk that holds its last token (a later decode replaces the logits).
  for (;;) {
    draft_batch_.n_tokens = 0;
    std::vector<Job*> finishing;
    for (Job& job : jobs) {
      Slot& slot = *job.slot;
      while (slot.draft_cache.size() < job.target && draft_batch_.n_tokens < draft_n_batch_) {
        const size_t pos = slot.draft_cache.size();
        const bool last = pos + 1 == job.target;
        const int32_t i = add(token_at(slot, pos), pos, slot.seq_id, last);
        slot.draft_cache.push_back(token_at(slot, pos));
        if (last) {
          job.out = i;
          finishing.push_back(&job);
        }
      }
    }
    if (draft_batch_.n_tokens == 0) break;
    if (!decode()) return;
    for (Job* job : finishing) {
      const float* logits = llama_get_logits_ith(draft_ctx_, job->out);
      if (logits != nullptr) job->slot->draft.push_back(Argmax(logits, n_vocab));
    }
  }
  // Then one token per slot and decode until every slot has its `want` tokens.
  for (int32_t k = 1;; ++k) {
    draft_batch_.n_tokens = 0;
    for (Job& job : jobs) {
      Slot& slot = *job.slot;
      if (static_cast<int32_t>(slot.draft.size()) != k || job.want <= k) continue;
      job.out = add(slot.draft[k - 1], job.target + k - 1, slot.seq_id, true);
      slot.draft_cache.push_back(slot.draft[k - 1]);
    }
    if (draft_batch_.n_tokens == 0) break;
    if (!decode()) return;  // the drafts so far stay valid proposals
    for (Job& job : jobs) {
      Slot& slot = *job.slot;
      if (static_cast<int32_t>(slot.draft.size()) != k || job.want <= k) continue;
      const float* logits = llama_get_logits_ith(draft_ctx_, job.out);
      if (logits != nullptr) slot.draft.push_back(Argmax(logits, n_vocab));
    }
  }
}

void Engine::VerifyDraft(Slot& slot) {
  // Position i of the batch (the pending token, then draft[0..]) gives the distribution of the token after it. The
  // target samples each in turn, exactly as it would without a draft; while its token equals the drafted one, that
  // token's KV entry is already in place and the next position's logits are valid. llama-server's
  // common_sampler_sample_and_accept_n: greedy output is unchanged, and sampled output keeps its distribution.
  const std::vector<llama_token> draft = std::move(slot.draft);
  slot.draft.clear();
  slot.cache.push_back(slot.pending);
  const int32_t drafted = static_cast<int32_t>(draft.size());
  int32_t accepted = 0;
  const uint32_t task_id = slot.task->id;
  slot.timings.draft_n += drafted;  // before ProcessToken: a task that ends in this step reports its timings there
  for (int32_t i = 0; i <= drafted; ++i) {
    slot.output_index = slot.batch_first + i;
    llama_token token = LLAMA_TOKEN_NULL;
    try {
      token = slot.task->sampler->Sample(ctx_, slot.output_index);
    } catch (const LlamaError& e) {
      Fail(slot, e.code(), std::string("sampling failed: ") + e.what());
      break;
    } catch (const std::exception& e) {
      Fail(slot, ErrorCode::kInternal, std::string("sampling failed: ") + e.what());
      break;
    }
    const bool match = i < drafted && token == draft[i];
    if (match) {
      ++accepted;
      ++slot.timings.draft_accepted_n;
    }
    // The draft from here on is not the sequence: out of the KV cache before the token is processed (a context shift
    // in ProcessToken only happens once nothing drafted is left; DraftLimit).
    if (!match) llama_memory_seq_rm(memory_, slot.seq_id, static_cast<llama_pos>(slot.cache.size()), -1);
    ProcessToken(slot, token);
    if (!match || !slot.task || slot.task->id != task_id) break;
    slot.cache.push_back(token);  // decoded with this step's batch
  }
  // Ended (stop string, EOG, limit, failure) in the middle of the draft: the rest leaves the KV cache too.
  llama_memory_seq_rm(memory_, slot.seq_id, static_cast<llama_pos>(slot.cache.size()), -1);
  // Adapt the draft length (additive increase would be slower to recover after a rejected run of text): a draft that
  // is always rejected costs its verify positions (and the draft model's decodes) every step for nothing.
  if (slot.task && slot.task->id == task_id && drafted > 0) {
    const int32_t current = slot.draft_len > 0 ? slot.draft_len : slot.task->params.n_draft;
    if (accepted == drafted) {
      slot.draft_len = std::min(slot.task->params.n_draft, std::max(current, drafted) * 2);
    } else if (accepted == 0) {
      slot.draft_len = current / 2;
      if (slot.draft_len == 0) slot.draft_pause = kDraftPauseSteps;
    }
  }
  draft_tokens_.fetch_add(drafted);
  draft_accepted_.fetch_add(accepted);
}

}  // namespace llamad
