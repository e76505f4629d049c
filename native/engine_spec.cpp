// Speculative decoding of the engine: drafting (n-gram lookup or a draft model) and verification in the target's
// batch. Engine methods, run on the decode thread. The design is in docs/native.md "Speculative decoding".
#include <algorithm>
#include <cstdint>
#include <vector>

#include "engine.h"
#include "spec_ngram.h"

namespace llamad {

namespace {

// Probe schedule (DraftGate): the first wait after a probe, and the longest (n-gram lookups cost nothing to draft, so
// they probe more often than a draft model, whose probe also catches its context up over the tokens since the last).
constexpr int32_t kMinBackoff = 8;
constexpr int32_t kMaxBackoffNgram = 256;
constexpr int32_t kMaxBackoffModel = 1024;
// Tokens of a probe.
constexpr int32_t kProbeNgram = 4;
constexpr int32_t kProbeModel = 2;
// Prior acceptance of a task's first drafts and its weight in trials (DraftAcceptance::Rate); a draft-model task
// starts from its model pair's record, capped at kPairTrials trials.
constexpr double kPriorRate = 0.5;
constexpr double kPriorWeight = 0.5;
constexpr double kPairTrials = 8.0;
// Most tokens of draft-context catch-up per engine step (over all slots), so that a long prompt's catch-up never
// stalls the other slots' steps for long.
constexpr int32_t kCatchUpChunk = 256;
// Single-token draft decodes that measure a draft model's cost before its first draft (their median counts: the
// first decode of a fresh context also sets its graph up).
constexpr int32_t kMeasureDecodes = 3;

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
  return static_cast<int32_t>(std::max<int64_t>(0, limit));
}

int32_t Engine::GateDraft(Slot& slot, int32_t max_len, int32_t base, int32_t slots, int32_t match) {
  const TaskParams& params = slot.task->params;
  const bool model = !params.draft_ngram;
  slot.spec.draft_class = DraftClass(!model, match);
  if (params.draft_fixed) return max_len;
  if (!step_costs_.known()) return 0;  // the first plain step measures what a step costs
  DraftGate::Track& gate = slot.spec.tracks[slot.spec.draft_class];
  if (gate.backoff == 0) {  // the track's first look
    gate.backoff = kMinBackoff;
    if (model) {
      gate.acceptance = pair_acceptance_.Capped(kPairTrials);
      gate.backoff = std::max(kMinBackoff, pair_backoff_);
      gate.wait = pair_backoff_ > 0 ? pair_backoff_ / 2 : 0;  // the pair's probes failed: not at once
    }
  }
  // A draft model's cost is measured, not guessed from its size (a small model on a GPU is not proportionally
  // faster): by single-token decodes of the draft context before its first draft. Its size gives only a floor
  // (DraftSizeRatio × a one-token target step): a measurement that comes out below it met a quiet moment of a shared
  // machine. A pair whose floor alone leaves no draft length paying, even always accepted (the model as its own
  // draft), never drafts, never probes and never spends the measuring decodes.
  const double floor_ns = model ? draft_size_ratio_ * step_costs_.Estimate(1) : 0.0;
  if (model && ChooseDraft(step_costs_, 1.0, max_len, base, slots, floor_ns).gain < kMinGain) return 0;
  if (model && draft_token_ns_ <= 0) MeasureDraftCost(slot);
  if (model && draft_token_ns_ <= 0) return 0;  // the measuring decode failed: no draft this step
  const double draft_ns = model ? std::max(draft_token_ns_, floor_ns) : 0.0;
  const double p = gate.acceptance.Rate(kPriorRate, kPriorWeight);
  const DraftChoice choice = ChooseDraft(step_costs_, p, max_len, base, slots, draft_ns);
  slot.spec.probing = false;
  if (choice.gain >= kMinGain) {
    gate.wait = 0;
    gate.backoff = kMinBackoff;
    if (model) pair_backoff_ = 0;
    return choice.length;
  }
  if (gate.wait > 0) {
    --gate.wait;
    return 0;
  }
  // A draft model's earlier probes not yet repaid by decode time (kProbeBudget): the probe waits, step by step.
  if (model && probe_debt_ns_ > 0) return 0;
  // Probe: a short draft measures the acceptance again, then a longer wait. Not where even a draft that is always
  // accepted would not pay (a draft model as slow as the target): then only the wait grows.
  const int32_t max_backoff = model ? kMaxBackoffModel : kMaxBackoffNgram;
  gate.wait = gate.backoff;
  gate.backoff = std::min(gate.backoff * 2, max_backoff);
  if (model) pair_backoff_ = gate.backoff;
  if (ChooseDraft(step_costs_, 1.0, max_len, base, slots, draft_ns).gain < kMinGain) return 0;
  const int32_t length = std::min(max_len, model ? kProbeModel : kProbeNgram);
  if (model) {
    slot.spec.probing = true;
    slot.spec.probe_extra_ns = step_costs_.Estimate(base + length) - step_costs_.Estimate(base);
    slot.spec.probe_token_ns = step_costs_.Estimate(base) / std::max(slots, 1);
  }
  return length;
}

void Engine::PrepareDrafts() {
  // The generating slots of this step (BuildBatch takes the same), each one token before drafts.
  int32_t generating = 0;
  for (Slot& slot : slots_) {
    slot.draft.clear();
    if (slot.state == Slot::State::kGenerate && slot.task && InLoraGroup(slot) &&
        (!shared_cells_ || slot.cell_grant >= 1)) {
      ++generating;
    }
  }
  int32_t base = generating;
  std::vector<Slot*> model_slots;
  std::vector<int32_t> model_want;
  for (Slot& slot : slots_) {
    if (slot.state != Slot::State::kGenerate || !slot.task || !InLoraGroup(slot)) continue;
    const int32_t limit = DraftLimit(slot);
    if (limit <= 0) continue;
    if (slot.task->params.draft_ngram) {
      NgramMatch match = NgramDraft(slot.cache, slot.pending, limit);
      if (match.tokens.empty()) continue;  // nothing to propose: no cost, and no probe spent
      const int32_t n = GateDraft(slot, static_cast<int32_t>(match.tokens.size()), base, generating, match.match);
      match.tokens.resize(static_cast<size_t>(n));
      slot.draft = std::move(match.tokens);
      base += n;
    } else if (draft_ctx_ != nullptr) {
      // A catch-up in progress drafts what was decided when it began (nothing until it is done).
      const int32_t n = slot.spec.catch_up_length > 0 ? std::min(slot.spec.catch_up_length, limit)
                                                      : GateDraft(slot, limit, base, generating, 0);
      if (n <= 0) continue;
      model_slots.push_back(&slot);
      model_want.push_back(n);
      base += n;
    }
  }
  if (!model_slots.empty()) DraftWithModel(model_slots, model_want);
}

void Engine::RecordStepCost(Clock::duration elapsed) {
  // Only steps of generating slots (their pending tokens and drafts) describe what a draft adds to a step.
  for (const Slot* slot : batch_slots_) {
    if (slot->state != Slot::State::kGenerate) return;
  }
  step_costs_.Record(batch_.n_tokens, Nanoseconds(elapsed));
}

void Engine::MeasureDraftCost(Slot& slot) {
  size_t keep = slot.CommonPrefix(slot.draft_cache);
  if (keep < slot.draft_cache.size()) {
    if (!llama_memory_seq_rm(draft_memory_, slot.seq_id, static_cast<llama_pos>(keep), -1)) {
      ResetDraftContext();
      keep = 0;
    }
    slot.draft_cache.resize(keep);
  }
  std::vector<double> times;
  for (int32_t k = 0; k < kMeasureDecodes && slot.draft_cache.size() < slot.cache.size(); ++k) {
    const size_t pos = slot.draft_cache.size();
    draft_batch_.n_tokens = 1;
    draft_batch_.token[0] = slot.cache[pos];
    draft_batch_.pos[0] = static_cast<llama_pos>(pos);
    draft_batch_.n_seq_id[0] = 1;
    draft_batch_.seq_id[0][0] = slot.seq_id;
    draft_batch_.logits[0] = 1;  // a drafted token's decode computes its logits too
    const Clock::time_point started = Clock::now();
    const int32_t rc = llama_decode(draft_ctx_, draft_batch_);
    aborting_.store(false);
    if (rc != 0) {
      ResetDraftContext();
      return;
    }
    llama_synchronize(draft_ctx_);  // a GPU decode may still run
    const double ns = static_cast<double>(Nanoseconds(Clock::now() - started));
    slot.draft_cache.push_back(slot.cache[pos]);
    times.push_back(ns);
  }
  if (times.empty()) return;
  std::sort(times.begin(), times.end());
  draft_token_ns_ = times[times.size() / 2];
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
  // Catch-up: at most one chunk per engine step over all slots (kCatchUpChunk, within n_batch), so that a new prompt's
  // catch-up is spread over steps in which every slot goes on decoding. A slot whose missing tokens all fit reads its
  // first draft token from this decode; one that is still behind drafts nothing this step and goes on next step with
  // the length decided now (DraftGate::catch_up_length).
  const Clock::time_point started = Clock::now();
  // The probes' share of this work (their draft decodes and catch-up) goes to the pair's probe debt, on every return.
  const auto probes = std::count_if(slots.begin(), slots.end(), [](const Slot* s) { return s->spec.probing; });
  struct ChargeProbes {
    double& debt;
    double share;
    Clock::time_point started;
    ~ChargeProbes() {
      if (share > 0) debt += share * static_cast<double>(Nanoseconds(Clock::now() - started));
    }
  } charge{probe_debt_ns_, static_cast<double>(probes) / static_cast<double>(slots.size()), started};
  draft_batch_.n_tokens = 0;
  int32_t budget = std::min(draft_n_batch_, kCatchUpChunk);
  std::vector<Job*> drafting;
  for (Job& job : jobs) {
    Slot& slot = *job.slot;
    const size_t missing = job.target - slot.draft_cache.size();
    const bool fits = missing <= static_cast<size_t>(std::max(budget, 0));
    slot.spec.catch_up_length = fits ? 0 : job.want;
    while (budget > 0 && slot.draft_cache.size() < job.target) {
      const size_t pos = slot.draft_cache.size();
      const bool last = pos + 1 == job.target;
      const int32_t i = add(token_at(slot, pos), pos, slot.seq_id, last);
      slot.draft_cache.push_back(token_at(slot, pos));
      --budget;
      if (last) job.out = i;
    }
    if (fits) drafting.push_back(&job);
  }
  const int32_t catch_up_tokens = draft_batch_.n_tokens;
  if (catch_up_tokens == 0 || !decode()) return;
  for (Job* job : drafting) {
    const float* logits = llama_get_logits_ith(draft_ctx_, job->out);
    if (logits != nullptr) job->slot->draft.push_back(Argmax(logits, n_vocab));
  }
  // Then one token per slot and decode until every slot has its `want` tokens.
  size_t longest = drafting.empty() ? 0 : 1;
  for (int32_t k = 1;; ++k) {
    draft_batch_.n_tokens = 0;
    for (Job* job : drafting) {
      Slot& slot = *job->slot;
      if (static_cast<int32_t>(slot.draft.size()) != k || job->want <= k) continue;
      job->out = add(slot.draft[k - 1], job->target + k - 1, slot.seq_id, true);
      slot.draft_cache.push_back(slot.draft[k - 1]);
    }
    if (draft_batch_.n_tokens == 0) break;
    if (!decode()) return;  // the drafts so far stay valid proposals
    for (Job* job : drafting) {
      Slot& slot = *job->slot;
      if (static_cast<int32_t>(slot.draft.size()) != k || job->want <= k) continue;
      const float* logits = llama_get_logits_ith(draft_ctx_, job->out);
      if (logits != nullptr) slot.draft.push_back(Argmax(logits, n_vocab));
      longest = std::max(longest, slot.draft.size());
    }
  }
  // What one drafted token costs the step (the decodes are shared by the slots drafting together): measured on steps
  // without a long catch-up, whose first decode evaluates only the tokens accepted since the last draft.
  if (longest > 0 && drafting.size() == jobs.size() &&
      catch_up_tokens <= (kMaxDraft + 1) * static_cast<int32_t>(jobs.size())) {
    const double ns = static_cast<double>(Nanoseconds(Clock::now() - started)) / static_cast<double>(longest);
    draft_token_ns_ = draft_token_ns_ > 0 ? draft_token_ns_ + 0.2 * (ns - draft_token_ns_) : ns;
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
  const bool ngram = slot.task->params.draft_ngram;
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
  // The acceptance record of the task (and, for a draft model, of the model pair: the next task starts from it).
  if (slot.spec.probing) {
    probe_debt_ns_ += std::max(0.0, slot.spec.probe_extra_ns - accepted * slot.spec.probe_token_ns);
    slot.spec.probing = false;
  }
  if (slot.task && slot.task->id == task_id) slot.spec.tracks[slot.spec.draft_class].acceptance.Add(drafted, accepted);
  if (!ngram) pair_acceptance_.Add(drafted, accepted);
  draft_tokens_.fetch_add(drafted);
  draft_accepted_.fetch_add(accepted);
}

}  // namespace llamad
