#include "engine.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <exception>
#include <new>
#include <string>
#include <utility>

#include "backend_api.h"
#include "mtmd-helper.h"

namespace llamad {

namespace {

// The `aborting_` flag of the engine that owns the calling thread, or null on other threads.
thread_local const std::atomic<bool>* tls_aborting = nullptr;

// Whether `model` is a mixture of experts (`<architecture>.expert_count` > 0 in its GGUF metadata).
bool HasExperts(const llama_model* model) {
  char arch[64] = {0};
  if (llama_model_meta_val_str(model, "general.architecture", arch, sizeof(arch)) <= 0) return false;
  char count[32] = {0};
  const std::string key = std::string(arch) + ".expert_count";
  if (llama_model_meta_val_str(model, key.c_str(), count, sizeof(count)) <= 0) return false;
  return std::atoi(count) > 0;
}

// DraftSizeRatio (spec_cost.h) of a draft model for a target.
double PairSizeRatio(const llama_model* target, const llama_model* draft) {
  auto embd = [](const llama_model* model) {
    return static_cast<uint64_t>(llama_vocab_n_tokens(llama_model_get_vocab(model))) *
           static_cast<uint64_t>(std::max(llama_model_n_embd(model), 0));
  };
  return DraftSizeRatio(llama_model_n_params(draft), llama_model_n_params(target), llama_model_size(draft),
                        llama_model_size(target), embd(draft), embd(target), HasExperts(draft));
}

}  // namespace

Engine::Engine(llama_context* ctx, int32_t n_ctx_slot, EventSinkFn sink, EngineOptions options)
    : ctx_(ctx),
      mtmd_(options.mtmd),
      rpc_servers_(std::move(options.rpc_servers)),
      model_(llama_get_model(ctx)),
      vocab_(llama_model_get_vocab(model_)),
      vocab_pieces_(vocab_),
      memory_(llama_get_memory(ctx)),
      sink_(std::move(sink)),
      n_ctx_slot_(std::min(n_ctx_slot, static_cast<int32_t>(llama_n_ctx_seq(ctx)))),
      n_batch_(static_cast<int32_t>(llama_n_batch(ctx))),
      n_vocab_(llama_vocab_n_tokens(vocab_)),
      pooling_(llama_pooling_type(ctx)),
      encoder_only_(llama_model_has_encoder(model_) && !llama_model_has_decoder(model_)),
      n_embd_out_(pooling_ == LLAMA_POOLING_TYPE_RANK ? static_cast<int32_t>(llama_model_n_cls_out(model_))
                                                      : llama_model_n_embd_out(model_)),
      can_shift_(memory_ != nullptr && llama_memory_can_shift(memory_)),
      shared_cells_(options.shared_cells),
      draft_ctx_(options.draft_ctx),
      prompt_cache_(options.cache_ram_bytes > 0 ? std::make_unique<PromptCache>(options.cache_ram_bytes) : nullptr) {
  threads_now_.store(llama_n_threads(ctx));
  const uint32_t n_seq = llama_n_seq_max(ctx);
  slots_.reserve(n_seq);
  for (uint32_t i = 0; i < n_seq; ++i) slots_.emplace_back(static_cast<llama_seq_id>(i));
  batch_ = llama_batch_init(n_batch_, 0, 1);
  llama_set_abort_callback(ctx_, &Engine::AbortCallback, this);
  if (draft_ctx_ != nullptr) {
    draft_memory_ = llama_get_memory(draft_ctx_);
    draft_n_batch_ = static_cast<int32_t>(llama_n_batch(draft_ctx_));
    draft_batch_ = llama_batch_init(draft_n_batch_, 0, 1);
    llama_set_abort_callback(draft_ctx_, &Engine::AbortCallback, this);
    draft_size_ratio_ = PairSizeRatio(model_, llama_get_model(draft_ctx_));
  }
  thread_ = std::thread([this] { Run(); });
  if (mtmd_ != nullptr) media_thread_ = std::thread([this] { RunMedia(); });
}

Engine::~Engine() {
  RequestStop();
  Join();
  llama_batch_free(batch_);
  if (draft_ctx_ != nullptr) llama_batch_free(draft_batch_);
  if (mtmd_ != nullptr) mtmd_free(mtmd_);
}

void Engine::ValidatePrompt(const TaskParams& params) const {
  if (params.tokens.empty()) throw LlamaError(ErrorCode::kInvalidArgument, "tokens must not be empty");
  for (llama_token token : params.tokens) {
    if (params.media && token == LLAMA_TOKEN_NULL) continue;  // an image position
    if (token < 0 || token >= n_vocab_) {
      throw LlamaError(ErrorCode::kInvalidArgument,
                       "token id " + std::to_string(token) + " is out of range [0, " + std::to_string(n_vocab_) + ")");
    }
  }
  if (params.tokens.size() > static_cast<size_t>(n_ctx_slot_)) {
    throw LlamaError(ErrorCode::kExceedContext, "prompt of " + std::to_string(params.tokens.size()) +
                                                    " tokens exceeds the slot context of " +
                                                    std::to_string(n_ctx_slot_) + " tokens");
  }
}

uint32_t Engine::Submit(TaskParams params) {
  if (stop_requested_.load()) throw LlamaError(ErrorCode::kDisposed, "context is disposed");
  if (params.has_media && mtmd_ == nullptr)
    throw LlamaError(ErrorCode::kInvalidArgument, NoProjectorMessage(params.images));
  if (!params.has_media) ValidatePrompt(params);
  if (params.n_draft < 0) throw LlamaError(ErrorCode::kInvalidArgument, "the draft length must not be negative");
  if (params.n_draft > 0 && !params.draft_ngram && draft_ctx_ == nullptr) {
    throw LlamaError(ErrorCode::kInvalidArgument,
                     "drafting with a draft model needs a context created with one (params.draftModel)");
  }
  params.n_draft = std::min(params.n_draft, kMaxDraft);
  auto task = std::make_unique<Task>();
  for (const std::string& text : params.sampling.preserved_tokens) {
    // Only strings that are one (control) token: those are rendered as text instead of being dropped.
    llama_token ids[2];
    const int32_t n = llama_tokenize(vocab_, text.data(), static_cast<int32_t>(text.size()), ids, 2, false, true);
    if (n == 1) task->preserved.push_back(ids[0]);
  }
  static const std::vector<llama_token> kNoMask;
  task->sampler = std::make_unique<Sampler>(model_, params.sampling, n_ctx_slot_,
                                            params.ignore_eos ? EogTokens() : kNoMask, &vocab_pieces_);
  task->params = std::move(params);
  task->lora_key = LoraKey(task->params.loras);
  const bool media = task->params.has_media;

  uint32_t id = 0;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stop_requested_.load()) throw LlamaError(ErrorCode::kDisposed, "context is disposed");
    id = next_task_id_++;
    task->id = id;
    live_[id] = task.get();
    if (media) {
      media_queue_.push_back(std::move(task));
      ++media_pending_;
    } else {
      queue_.push_back(std::move(task));
    }
  }
  if (media) {
    media_wake_.notify_one();
  } else {
    wake_.notify_one();
  }
  return id;
}

void Engine::Cancel(uint32_t task_id) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = live_.find(task_id);
    if (it != live_.end()) {
      it->second->cancelled.store(true);
      cancel_pending_ = true;
    } else {
      auto embed = live_embeds_.find(task_id);
      if (embed == live_embeds_.end()) return;
      embed->second->store(true);  // read by the decode thread between batches and by AbortCallback
      return;
    }
  }
  wake_.notify_one();
}

EngineStats Engine::Stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  EngineStats stats;
  stats.active_slots = active_slots_.load();
  stats.queued_tasks = static_cast<int32_t>(queue_.size()) + media_pending_;
  stats.embed_jobs = static_cast<int32_t>(live_embeds_.size());
  stats.decode_steps = decode_steps_.load();
  stats.graphs_reused = graphs_reused_.load();
  stats.cells_used = cells_used_.load();
  stats.cells_cached = cells_cached_.load();
  stats.paused_slots = paused_slots_.load();
  const int32_t wanted = threads_wanted_.load();
  stats.n_threads = wanted > 0 ? wanted : threads_now_.load();
  FillRamCacheStats(stats);
  stats.draft_tokens = draft_tokens_.load();
  stats.draft_accepted = draft_accepted_.load();
  return stats;
}

void Engine::RequestStop() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_requested_.store(true);
  }
  wake_.notify_all();
  media_wake_.notify_all();
}

void Engine::Join() {
  std::lock_guard<std::mutex> lock(join_mutex_);
  if (thread_.joinable()) thread_.join();
  if (media_thread_.joinable()) media_thread_.join();
}

bool Engine::CurrentThreadIsAborting() { return tls_aborting != nullptr && tls_aborting->load(); }

bool Engine::AbortCallback(void* data) {
  auto* self = static_cast<Engine*>(data);
  bool abort = self->stop_requested_.load(std::memory_order_relaxed);
  if (!abort && self->embed_cancelled_ != nullptr) abort = self->embed_cancelled_->load(std::memory_order_relaxed);
  if (!abort && !self->batch_tasks_.empty()) {
    abort = std::all_of(self->batch_tasks_.begin(), self->batch_tasks_.end(),
                        [](const Task* task) { return task->cancelled.load(std::memory_order_relaxed); });
  }
  if (abort) self->aborting_.store(true);
  return abort;
}

void Engine::Run() {
  tls_aborting = &aborting_;
  for (;;) {
    bool stopping = false;
    std::vector<std::unique_ptr<Task>> starting;
    std::vector<std::unique_ptr<Task>> dropped;
    std::deque<EmbedJob> embed_jobs;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      auto idle_slots = [this] {
        return static_cast<size_t>(
            std::count_if(slots_.begin(), slots_.end(), [](const Slot& s) { return s.state == Slot::State::kIdle; }));
      };
      wake_.wait(lock, [&] {
        return stop_requested_.load() || cancel_pending_ || active_slots_.load() > 0 || !embed_queue_.empty() ||
               (!queue_.empty() && idle_slots() > 0);
      });
      stopping = stop_requested_.load();
      embed_jobs.swap(embed_queue_);
      cancel_pending_ = false;
      for (auto it = queue_.begin(); it != queue_.end();) {
        if (stopping || (*it)->cancelled.load()) {
          live_.erase((*it)->id);
          dropped.push_back(std::move(*it));
          it = queue_.erase(it);
        } else {
          ++it;
        }
      }
      int32_t starting_cells = 0;
      for (size_t idle = idle_slots(); idle > 0 && !queue_.empty(); --idle) {
        // Shared cells: first come, first served; the front task waits (and those behind it) until its prompt fits.
        if (!stopping && !CanAdmit(*queue_.front(), starting_cells)) break;
        starting_cells += static_cast<int32_t>(queue_.front()->params.tokens.size()) + 1;
        starting.push_back(std::move(queue_.front()));
        queue_.pop_front();
        active_slots_.fetch_add(1);  // counted here so that active + queued never dips in Stats()
      }
    }
    for (const auto& task : dropped) EmitCancelledQueued(*task);
    for (const EmbedJob& job : embed_jobs) {
      if (stopping) {
        EngineEvent event;
        event.type = EngineEvent::Type::kError;
        event.task_id = job.id;
        event.code = ErrorCode::kDisposed;
        event.message = "context is disposed";
        events_.push_back(std::move(event));
      } else {
        RunEmbedJobSafely(job);
      }
      {
        std::lock_guard<std::mutex> lock(mutex_);
        live_embeds_.erase(job.id);
      }
      FlushEvents();  // each job's result as soon as it is ready (a cancelled one must not wait for the next)
    }
    for (auto& task : starting) {
      const uint32_t id = task->id;
      try {
        StartTask(std::move(task));
      } catch (const std::exception& e) {
        EngineEvent event;
        event.type = EngineEvent::Type::kError;
        event.task_id = id;
        event.code = ErrorCode::kInternal;
        event.message = std::string("cannot start the task: ") + e.what();
        events_.push_back(std::move(event));
        {
          std::lock_guard<std::mutex> lock(mutex_);
          live_.erase(id);
        }
        active_slots_.fetch_sub(1);
      }
    }
    try {
      Step(stopping);
    } catch (...) {
      // Defensive: llama/common calls are not expected to throw here. Fail every running task and forget its KV.
      ErrorCode code = ErrorCode::kDecodeFailed;
      std::string message = "decode step failed";
      try {
        throw;
      } catch (const LlamaError& e) {
        code = e.code();
        message = e.what();
      } catch (const std::bad_alloc&) {
        code = ErrorCode::kOom;
        message = "out of memory in the decode step";
      } catch (const std::exception& e) {
        message = std::string("decode step failed: ") + e.what();
      } catch (...) {
        code = ErrorCode::kInternal;
      }
      batch_tasks_.clear();
      for (Slot& slot : slots_) {
        if (!slot.task) continue;
        llama_memory_seq_rm(memory_, slot.seq_id, -1, -1);
        slot.cache.clear();
        Fail(slot, code, message);
      }
    }
    ReleaseIdleLoras();
    UpdateCellStats();
    FlushEvents();
    if (stopping) break;
  }
}

int32_t Engine::BuildBatch() {
  batch_.n_tokens = 0;
  batch_slots_.clear();
  batch_tasks_.clear();
  const size_t n = slots_.size();
  auto add = [this](llama_token token, llama_pos pos, llama_seq_id seq, bool logits) {
    const int32_t i = batch_.n_tokens++;
    batch_.token[i] = token;
    batch_.pos[i] = pos;
    batch_.n_seq_id[i] = 1;
    batch_.seq_id[i][0] = seq;
    batch_.logits[i] = logits ? 1 : 0;
    return i;
  };
  // The next token of every generating slot first: generation latency does not wait for prompts. Always in slot
  // order: the same sequences in the same order give the same ubatch, so llama.cpp reuses the previous step's graph
  // (llm_graph_params::allow_reuse compares the sequence ids); a rotating order rebuilt it at every step.
  for (size_t k = 0; k < n && batch_.n_tokens < n_batch_; ++k) {
    Slot& slot = slots_[k];
    if (slot.state != Slot::State::kGenerate || (shared_cells_ && slot.cell_grant < 1) || !InLoraGroup(slot)) continue;
    // The pending token, then its draft (speculative decoding), each position with logits to verify the next.
    const size_t room = static_cast<size_t>(n_batch_ - batch_.n_tokens - 1);
    if (slot.draft.size() > room) slot.draft.resize(room);
    const llama_pos pos = static_cast<llama_pos>(slot.cache.size());
    slot.batch_first = add(slot.pending, pos, slot.seq_id, true);
    for (size_t j = 0; j < slot.draft.size(); ++j)
      add(slot.draft[j], pos + 1 + static_cast<llama_pos>(j), slot.seq_id, true);
    slot.batch_count = 1 + static_cast<int32_t>(slot.draft.size());
    slot.output_index = slot.batch_first;
    batch_slots_.push_back(&slot);
  }
  // Then prompt chunks in the remaining room, starting from a rotating slot so that no prompt starves.
  for (size_t k = 0; k < n && batch_.n_tokens < n_batch_; ++k) {
    Slot& slot = slots_[(rotation_ + k) % n];
    if (slot.state != Slot::State::kPrefill && slot.state != Slot::State::kResume) continue;
    if ((shared_cells_ && slot.cell_grant < 1) || !InLoraGroup(slot)) continue;
    // A resuming slot re-evaluates what it held when it was paused (its position is its cache size).
    const bool resume = slot.state == Slot::State::kResume;
    const std::vector<llama_token>& prompt = resume ? slot.resume_tokens : slot.task->params.tokens;
    const size_t done = resume ? slot.cache.size() : slot.n_prompt_done;
    size_t take = std::min(prompt.size() - done, static_cast<size_t>(n_batch_ - batch_.n_tokens));
    // A media prompt: the rest of its current text chunk; none at an image or audio chunk (EvalMediaUnit's work).
    if (!resume && slot.task->params.media) {
      take = slot.media_unit_done ? 0 : std::min(take, MediaTextEnd(slot) - done);
    }
    if (take == 0) continue;
    if (shared_cells_) take = std::min(take, static_cast<size_t>(slot.cell_grant));
    if (!slot.prompt_started) {
      slot.prompt_started = true;
      slot.prompt_start = Clock::now();
    }
    slot.batch_first = batch_.n_tokens;
    slot.batch_count = static_cast<int32_t>(take);
    slot.output_index = -1;
    for (size_t j = 0; j < take; ++j) {
      const size_t p = done + j;
      const bool last = p + 1 == prompt.size();
      const int32_t i = add(prompt[p], static_cast<llama_pos>(p), slot.seq_id, last);
      if (last) slot.output_index = i;
    }
    batch_slots_.push_back(&slot);
  }
  rotation_ = n > 0 ? (rotation_ + 1) % n : 0;
  for (Slot* slot : batch_slots_) batch_tasks_.push_back(slot->task.get());
  return batch_.n_tokens;
}

void Engine::Step(bool stopping) {
  for (Slot& slot : slots_) {
    if (slot.task && (stopping || slot.task->cancelled.load())) Finish(slot, StopReason::kCancelled);
  }
  if (stopping) return;
  ApplyThreads();
  if (shared_cells_) PlanCells();
  ChooseLoraGroup();
  // Media prompts at an image or audio chunk: one unit each (an encode, or a decode of embeddings), outside the shared
  // batch; their text chunks join the shared batch like any prompt.
  for (Slot& slot : slots_) {
    slot.media_unit_done = false;
    if (slot.state == Slot::State::kPrefill && slot.task && slot.task->params.media &&
        (!shared_cells_ || slot.cell_grant > 0) && InLoraGroup(slot) && MediaTextEnd(slot) == slot.n_prompt_done) {
      ApplyLoras(slot.task.get());
      EvalMediaUnit(slot);
    }
  }
  PrepareDrafts();
  if (BuildBatch() == 0) return;

  ApplyLoras(batch_tasks_.front());
  const Clock::time_point decode_start = Clock::now();
  const int32_t rc = llama_decode(ctx_, batch_);
  if (rc == 0) {
    llama_synchronize(ctx_);  // a GPU decode may still run: the step's cost includes it
    const Clock::duration elapsed = Clock::now() - decode_start;
    RecordStepCost(elapsed);
    probe_debt_ns_ = std::max(0.0, probe_debt_ns_ - kProbeBudget * static_cast<double>(Nanoseconds(elapsed)));
  }
  aborting_.store(false);
  batch_tasks_.clear();
  decode_steps_.fetch_add(1);
  graphs_reused_.store(llama_perf_context(ctx_).n_reused);
  if (rc != 0) {
    HandleDecodeFailure(rc);
    return;
  }
  if (!rpc_servers_.empty()) {
    // A worker whose connection broke during this step answered with zeros: its logits must not be sampled.
    const std::string lost = LostRpcServer();
    if (!lost.empty()) {
      RepairAfterPartialDecode();
      for (Slot* slot : batch_slots_) {
        if (slot->task) Fail(*slot, ErrorCode::kDecodeFailed, lost);
      }
      return;
    }
  }
  const Clock::time_point now = Clock::now();
  for (Slot* slot : batch_slots_) {
    if (slot->state == Slot::State::kGenerate && !slot->draft.empty()) {
      VerifyDraft(*slot);
      continue;
    }
    for (int32_t k = 0; k < slot->batch_count; ++k) slot->cache.push_back(batch_.token[slot->batch_first + k]);
    const TaskParams& params = slot->task->params;
    if (slot->state == Slot::State::kResume) {
      // Back where it was paused: the next step decodes its pending token.
      if (slot->cache.size() >= slot->resume_tokens.size()) {
        slot->state = Slot::State::kGenerate;
        slot->resume_tokens.clear();
      }
      continue;
    }
    if (slot->state == Slot::State::kPrefill) {
      slot->n_prompt_done += static_cast<size_t>(slot->batch_count);
      if (slot->n_prompt_done < params.tokens.size()) continue;
      slot->timings.prompt_ns = Nanoseconds(now - slot->prompt_start);
      slot->task->sampler->AcceptPrompt(params.media ? params.media->text_tokens : params.tokens);
      if (params.n_predict == 0) {
        Finish(*slot, StopReason::kLength);
        continue;
      }
      slot->state = Slot::State::kGenerate;
    }
    llama_token token = LLAMA_TOKEN_NULL;
    try {
      token = slot->task->sampler->Sample(ctx_, slot->output_index);
    } catch (const LlamaError& e) {
      Fail(*slot, e.code(), std::string("sampling failed: ") + e.what());
      continue;
    } catch (const std::exception& e) {
      Fail(*slot, ErrorCode::kInternal, std::string("sampling failed: ") + e.what());
      continue;
    }
    ProcessToken(*slot, token);
  }
}

}  // namespace llamad
