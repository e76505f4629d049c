#include "engine.h"

#include <algorithm>
#include <cmath>
#include <exception>
#include <new>
#include <utility>

#include "backend_api.h"
#include "mtmd-helper.h"

namespace llamad {

namespace {

int64_t Nanoseconds(Clock::duration d) { return std::chrono::duration_cast<std::chrono::nanoseconds>(d).count(); }

// The `aborting_` flag of the engine that owns the calling thread, or null on other threads.
thread_local const std::atomic<bool>* tls_aborting = nullptr;

struct CaughtError {
  ErrorCode code;
  std::string message;
};

// Code and message of a caught exception (LlamaError keeps its own; `what` prefixes the others).
CaughtError DescribeCaught(std::exception_ptr error, const std::string& what) {
  try {
    std::rethrow_exception(error);
  } catch (const LlamaError& e) {
    return {e.code(), e.what()};
  } catch (const std::bad_alloc&) {
    return {ErrorCode::kOom, what + ": out of memory"};
  } catch (const std::exception& e) {
    return {ErrorCode::kInternal, what + ": " + e.what()};
  } catch (...) {
    return {ErrorCode::kInternal, what};
  }
}

}  // namespace

Engine::Engine(llama_context* ctx, int32_t n_ctx_slot, EventSinkFn sink, EngineOptions options)
    : ctx_(ctx),
      mtmd_(options.mtmd),
      rpc_servers_(std::move(options.rpc_servers)),
      model_(llama_get_model(ctx)),
      vocab_(llama_model_get_vocab(model_)),
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

const std::vector<llama_token>& Engine::EogTokens() {
  std::call_once(eog_once_, [this] {
    for (llama_token id = 0; id < n_vocab_; ++id) {
      if (llama_vocab_is_eog(vocab_, id)) eog_tokens_.push_back(id);
    }
  });
  return eog_tokens_;
}

void Engine::PrepareMedia(TaskParams& params) {
  if (mtmd_ == nullptr) {
    throw LlamaError(ErrorCode::kInvalidArgument,
                     "images need a context created with a projector (params.projectorPath)");
  }
  struct BitmapList {
    std::vector<mtmd_bitmap*> items;
    ~BitmapList() {
      for (mtmd_bitmap* b : items) mtmd_bitmap_free(b);
    }
  } bitmaps;
  for (size_t i = 0; i < params.images.size(); ++i) {
    const std::string& bytes = params.images[i];
    mtmd_helper_bitmap_wrapper w =
        mtmd_helper_bitmap_init_from_buf(mtmd_, reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size(),
                                         false, mtmd_helper_init_opt_default());
    if (w.video_ctx != nullptr) mtmd_helper_video_free(w.video_ctx);
    if (w.bitmap == nullptr) {
      throw LlamaError(ErrorCode::kInvalidArgument,
                       "images[" + std::to_string(i) + "] is not a decodable image (PNG, JPEG, BMP, GIF, ...)");
    }
    bitmaps.items.push_back(w.bitmap);
  }
  auto media = std::make_shared<MediaPrompt>();
  media->chunks = mtmd_input_chunks_init();
  mtmd_input_text text{params.media_text.c_str(), params.media_text.size(), true, true};
  const int32_t rc = mtmd_tokenize(mtmd_, media->chunks, &text,
                                   const_cast<const mtmd_bitmap* const*>(bitmaps.items.data()), bitmaps.items.size());
  if (rc == 1) {
    throw LlamaError(ErrorCode::kInvalidArgument, "the prompt's media markers (" + std::string(mtmd_default_marker()) +
                                                      ") do not match the " + std::to_string(params.images.size()) +
                                                      " image(s)");
  }
  if (rc != 0)
    throw LlamaError(ErrorCode::kInvalidArgument,
                     "image preprocessing failed (mtmd_tokenize status " + std::to_string(rc) + ")");
  const size_t n_chunks = mtmd_input_chunks_size(media->chunks);
  params.tokens.clear();
  for (size_t c = 0; c < n_chunks; ++c) {
    const mtmd_input_chunk* chunk = mtmd_input_chunks_get(media->chunks, c);
    if (mtmd_input_chunk_get_type(chunk) == MTMD_INPUT_CHUNK_TYPE_TEXT) {
      size_t n = 0;
      const llama_token* tokens = mtmd_input_chunk_get_tokens_text(chunk, &n);
      params.tokens.insert(params.tokens.end(), tokens, tokens + n);
      media->text_tokens.insert(media->text_tokens.end(), tokens, tokens + n);
    } else {
      params.tokens.insert(params.tokens.end(), static_cast<size_t>(mtmd_input_chunk_get_n_pos(chunk)),
                           LLAMA_TOKEN_NULL);
    }
  }
  const mtmd_input_chunk* last = n_chunks > 0 ? mtmd_input_chunks_get(media->chunks, n_chunks - 1) : nullptr;
  if (last == nullptr || mtmd_input_chunk_get_type(last) != MTMD_INPUT_CHUNK_TYPE_TEXT ||
      mtmd_input_chunk_get_n_tokens(last) == 0) {
    throw LlamaError(ErrorCode::kInvalidArgument, "the prompt must end with text after its last image");
  }
  params.media = std::move(media);
  params.images.clear();
  params.images.shrink_to_fit();
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
  if (params.has_media && mtmd_ == nullptr) {
    throw LlamaError(ErrorCode::kInvalidArgument,
                     "images need a context created with a projector (params.projectorPath)");
  }
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
  task->sampler =
      std::make_unique<Sampler>(model_, params.sampling, n_ctx_slot_, params.ignore_eos ? EogTokens() : kNoMask);
  task->params = std::move(params);
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

void Engine::RunMedia() {
  // mtmd_tokenize here runs while the decode thread may be evaluating another task's image with the same mtmd
  // context (mtmd_helper_eval_chunks): llama-server does the same (it tokenizes multimodal prompts on its HTTP
  // threads); tokenizing only reads the projector's hyperparameters and the vocabulary.
  for (;;) {
    std::unique_ptr<Task> task;
    bool stopping = false;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      media_wake_.wait(lock, [this] { return stop_requested_.load() || !media_queue_.empty(); });
      if (media_queue_.empty()) return;  // stop requested and nothing left
      task = std::move(media_queue_.front());
      media_queue_.pop_front();
      stopping = stop_requested_.load();
    }
    EngineEvent event;
    event.task_id = task->id;
    bool failed = false;
    if (stopping || task->cancelled.load()) {
      event.type = EngineEvent::Type::kDone;
      event.reason = StopReason::kCancelled;
      failed = true;
    } else {
      try {
        PrepareMedia(task->params);
        ValidatePrompt(task->params);
      } catch (...) {
        const CaughtError info = DescribeCaught(std::current_exception(), "image preparation failed");
        event.type = EngineEvent::Type::kError;
        event.code = info.code;
        event.message = info.message;
        failed = true;
      }
    }
    {
      std::lock_guard<std::mutex> lock(mutex_);
      --media_pending_;
      if (!failed && (stop_requested_.load() || task->cancelled.load())) {
        event.type = EngineEvent::Type::kDone;
        event.reason = StopReason::kCancelled;
        failed = true;
      }
      if (failed) {
        live_.erase(task->id);
      } else {
        queue_.push_back(std::move(task));
      }
    }
    if (failed) {
      std::vector<EngineEvent> events;
      events.push_back(std::move(event));
      sink_(std::move(events));
    } else {
      wake_.notify_one();
    }
  }
}

uint32_t Engine::SubmitEmbed(std::vector<std::vector<llama_token>> inputs) {
  if (stop_requested_.load()) throw LlamaError(ErrorCode::kDisposed, "context is disposed");
  const size_t limit = std::min<size_t>(static_cast<size_t>(n_ctx_slot_), llama_n_ubatch(ctx_));
  for (size_t i = 0; i < inputs.size(); ++i) {
    const std::vector<llama_token>& input = inputs[i];
    const std::string name = "inputs[" + std::to_string(i) + "]";
    if (input.empty()) throw LlamaError(ErrorCode::kInvalidArgument, name + " must not be empty");
    for (llama_token token : input) {
      if (token < 0 || token >= n_vocab_) {
        throw LlamaError(ErrorCode::kInvalidArgument, name + ": token id " + std::to_string(token) +
                                                          " is out of range [0, " + std::to_string(n_vocab_) + ")");
      }
    }
    if (input.size() > limit) {
      throw LlamaError(ErrorCode::kExceedContext, name + " of " + std::to_string(input.size()) +
                                                      " tokens exceeds the embedding limit of " +
                                                      std::to_string(limit) + " tokens (n_ubatch / slot context)");
    }
  }
  uint32_t id = 0;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stop_requested_.load()) throw LlamaError(ErrorCode::kDisposed, "context is disposed");
    id = next_task_id_++;
    auto cancelled = std::make_shared<std::atomic<bool>>(false);
    live_embeds_[id] = cancelled;
    embed_queue_.push_back(EmbedJob{id, std::move(inputs), std::move(cancelled)});
  }
  wake_.notify_one();
  return id;
}

void Engine::RunEmbedJobSafely(const EmbedJob& job) {
  try {
    RunEmbedJob(job);
  } catch (...) {
    embed_cancelled_ = nullptr;
    aborting_.store(false);
    EngineEvent event;
    event.type = EngineEvent::Type::kError;
    event.task_id = job.id;
    event.code = ErrorCode::kInternal;
    event.message = "embed failed";
    try {
      throw;
    } catch (const LlamaError& e) {
      event.code = e.code();
      event.message = e.what();
    } catch (const std::bad_alloc&) {
      event.code = ErrorCode::kOom;
      event.message = "out of memory while embedding";
    } catch (const std::exception& e) {
      event.message = std::string("embed failed: ") + e.what();
    } catch (...) {
    }
    events_.push_back(std::move(event));
  }
}

void Engine::RunEmbedJob(const EmbedJob& job) {
  ApplyThreads();
  EngineEvent result;
  result.type = EngineEvent::Type::kEmbed;
  result.task_id = job.id;
  result.n_embd = n_embd_out_;
  result.embeddings.resize(job.inputs.size() * static_cast<size_t>(n_embd_out_));
  const int32_t n_seq = static_cast<int32_t>(slots_.size());
  auto fail = [&](ErrorCode code, const std::string& message) {
    EngineEvent event;
    event.type = EngineEvent::Type::kError;
    event.task_id = job.id;
    event.code = code;
    event.message = message;
    events_.push_back(std::move(event));
  };
  std::vector<int32_t> last_index;   // batch index of each sequence's last token
  std::vector<size_t> batch_inputs;  // input index of each sequence of the batch
  std::vector<size_t> pending(job.inputs.size());
  for (size_t i = 0; i < pending.size(); ++i) pending[i] = i;
  // A causal model keeps the batch in its KV cache (one unified stream, cleared per batch): it must fit n_ctx.
  const int32_t max_tokens =
      memory_ != nullptr ? std::min(n_batch_, static_cast<int32_t>(llama_n_ctx_seq(ctx_))) : n_batch_;
  while (!pending.empty()) {
    if (job.cancelled->load()) {
      fail(ErrorCode::kCancelled, "embedding cancelled");
      return;
    }
    batch_.n_tokens = 0;
    last_index.clear();
    batch_inputs.clear();
    // First fit, in input order: every pending input that still fits max_tokens (n_batch = n_ubatch here) and
    // n_seq_max joins the batch as its own sequence; the others wait for the next batch.
    std::vector<size_t> later;
    for (size_t index : pending) {
      const std::vector<llama_token>& input = job.inputs[index];
      if (static_cast<int32_t>(last_index.size()) >= n_seq ||
          batch_.n_tokens + static_cast<int32_t>(input.size()) > max_tokens) {
        later.push_back(index);
        continue;
      }
      const llama_seq_id seq = static_cast<llama_seq_id>(last_index.size());
      for (size_t p = 0; p < input.size(); ++p) {
        const int32_t i = batch_.n_tokens++;
        batch_.token[i] = input[p];
        batch_.pos[i] = static_cast<llama_pos>(p);
        batch_.n_seq_id[i] = 1;
        batch_.seq_id[i][0] = seq;
        batch_.logits[i] = 1;
      }
      last_index.push_back(batch_.n_tokens - 1);
      batch_inputs.push_back(index);
    }
    pending.swap(later);
    if (last_index.empty()) {  // cannot happen: SubmitEmbed keeps inputs within n_ubatch = n_batch
      fail(ErrorCode::kExceedContext, "an input does not fit the batch");
      return;
    }
    if (memory_ != nullptr) llama_memory_clear(memory_, true);
    embed_cancelled_ = job.cancelled.get();  // a cancel aborts this batch's llama_decode/llama_encode
    const int32_t rc = encoder_only_ ? llama_encode(ctx_, batch_) : llama_decode(ctx_, batch_);
    embed_cancelled_ = nullptr;
    aborting_.store(false);
    const std::string lost = rpc_servers_.empty() ? "" : LostRpcServer();
    if (rc != 0 || !lost.empty()) {
      if (stop_requested_.load()) {
        fail(ErrorCode::kDisposed, "context is disposed");
      } else if (job.cancelled->load()) {
        fail(ErrorCode::kCancelled, "embedding cancelled");
      } else if (!lost.empty()) {
        fail(ErrorCode::kDecodeFailed, lost);
      } else {
        fail(ErrorCode::kDecodeFailed, std::string(encoder_only_ ? "llama_encode" : "llama_decode") +
                                           " failed with status " + std::to_string(rc));
      }
      return;
    }
    for (size_t s = 0; s < last_index.size(); ++s) {
      const float* vector = pooling_ == LLAMA_POOLING_TYPE_NONE
                                ? llama_get_embeddings_ith(ctx_, last_index[s])
                                : llama_get_embeddings_seq(ctx_, static_cast<llama_seq_id>(s));
      if (vector == nullptr) {
        fail(ErrorCode::kDecodeFailed, "no embeddings for input " + std::to_string(batch_inputs[s]));
        return;
      }
      std::copy(vector, vector + n_embd_out_, result.embeddings.begin() + batch_inputs[s] * n_embd_out_);
    }
  }
  events_.push_back(std::move(result));
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
    UpdateCellStats();
    FlushEvents();
    if (stopping) break;
  }
}

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
  if (task->params.media) {
    // Media task: the idle slot caching the least; its sequence is cleared (no KV reuse across images), and the whole
    // prompt is evaluated by EvalMedia at the start of the next step.
    Slot* slot = nullptr;
    for (Slot& s : slots_) {
      if (s.state == Slot::State::kIdle && (slot == nullptr || s.cache.size() < slot->cache.size())) slot = &s;
    }
    SaveToRamCache(*slot, 0);
    llama_memory_seq_rm(memory_, slot->seq_id, -1, -1);
    slot->cache.clear();
    slot->n_prompt_done = 0;
    slot->stream = std::make_unique<TextStream>(task->params.stop);
    slot->pending = -1;
    slot->n_generated = 0;
    slot->output_index = -1;
    slot->timings = Timings();
    slot->timings.prompt_total = static_cast<int32_t>(prompt.size());
    slot->timings.prompt_n = static_cast<int32_t>(prompt.size());
    slot->prompt_started = false;
    slot->start_seq = next_start_++;
    slot->cell_grant = 0;
    slot->resume_tokens.clear();
    slot->task = std::move(task);
    slot->state = Slot::State::kPrefill;
    return;
  }
  // The idle slot that already holds the longest prefix of this prompt; on ties the one caching the least.
  Slot* best = nullptr;
  size_t best_prefix = 0;
  for (Slot& slot : slots_) {
    if (slot.state != Slot::State::kIdle) continue;
    const size_t prefix = slot.CommonPrefix(prompt);
    if (best == nullptr || prefix > best_prefix || (prefix == best_prefix && slot.cache.size() < best->cache.size())) {
      best = &slot;
      best_prefix = prefix;
    }
  }
  best_prefix = ReuseRamCache(best, prompt, best_prefix);  // may restore a kept sequence, into another idle slot
  Slot& slot = *best;  // Run() only starts as many tasks as there are idle slots
  // Keep the common prefix, but always evaluate at least the last prompt token to get its logits.
  size_t keep = std::min(best_prefix, prompt.size() - 1);
  if (!llama_memory_seq_rm(memory_, slot.seq_id, static_cast<llama_pos>(keep), -1)) {
    llama_memory_seq_rm(memory_, slot.seq_id, -1, -1);  // partial removal unsupported (SWA, recurrent)
    keep = 0;
  }
  slot.cache.resize(keep);
  slot.n_prompt_done = keep;
  slot.stream = std::make_unique<TextStream>(task->params.stop);
  slot.pending = -1;
  slot.n_generated = 0;
  slot.output_index = -1;
  slot.timings = Timings();
  slot.timings.prompt_total = static_cast<int32_t>(prompt.size());
  slot.timings.prompt_n = static_cast<int32_t>(prompt.size() - keep);
  slot.prompt_started = false;
  slot.start_seq = next_start_++;
  slot.cell_grant = 0;
  slot.resume_tokens.clear();
  slot.task = std::move(task);
  slot.state = Slot::State::kPrefill;
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
    if (slot.state != Slot::State::kGenerate || (shared_cells_ && slot.cell_grant < 1)) continue;
    // The pending token, then its draft (speculative decoding), each position with logits to verify the next.
    const size_t room = static_cast<size_t>(n_batch_ - batch_.n_tokens - 1);
    if (slot.draft.size() > room) slot.draft.resize(room);
    const llama_pos pos = static_cast<llama_pos>(slot.cache.size());
    slot.batch_first = add(slot.pending, pos, slot.seq_id, true);
    for (size_t j = 0; j < slot.draft.size(); ++j) add(slot.draft[j], pos + 1 + static_cast<llama_pos>(j), slot.seq_id, true);
    slot.batch_count = 1 + static_cast<int32_t>(slot.draft.size());
    slot.output_index = slot.batch_first;
    batch_slots_.push_back(&slot);
  }
  // Then prompt chunks in the remaining room, starting from a rotating slot so that no prompt starves.
  for (size_t k = 0; k < n && batch_.n_tokens < n_batch_; ++k) {
    Slot& slot = slots_[(rotation_ + k) % n];
    if (slot.state != Slot::State::kPrefill && slot.state != Slot::State::kResume) continue;
    if (shared_cells_ && slot.cell_grant < 1) continue;
    // A resuming slot re-evaluates what it held when it was paused (its position is its cache size).
    const bool resume = slot.state == Slot::State::kResume;
    const std::vector<llama_token>& prompt = resume ? slot.resume_tokens : slot.task->params.tokens;
    const size_t done = resume ? slot.cache.size() : slot.n_prompt_done;
    size_t take = std::min(prompt.size() - done, static_cast<size_t>(n_batch_ - batch_.n_tokens));
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

void Engine::EvalMedia(Slot& slot) {
  const TaskParams& params = slot.task->params;
  slot.prompt_started = true;
  slot.prompt_start = Clock::now();
  batch_slots_.clear();
  batch_tasks_.assign(1, slot.task.get());  // a cancel aborts the decodes of this prompt
  llama_pos n_past = 0;
  const int32_t rc =
      mtmd_helper_eval_chunks(mtmd_, ctx_, params.media->chunks, 0, slot.seq_id, n_batch_, true, &n_past);
  aborting_.store(false);
  batch_tasks_.clear();
  if (rc != 0) {
    llama_memory_seq_rm(memory_, slot.seq_id, -1, -1);
    slot.cache.clear();
    if (slot.task->cancelled.load() || stop_requested_.load()) {
      Finish(slot, StopReason::kCancelled);
    } else {
      Fail(slot, ErrorCode::kDecodeFailed,
           "evaluating the prompt with images failed (mtmd_helper_eval_chunks status " + std::to_string(rc) + ")");
    }
    return;
  }
  slot.cache = params.tokens;
  slot.cache.resize(static_cast<size_t>(n_past), LLAMA_TOKEN_NULL);
  slot.n_prompt_done = params.tokens.size();
  slot.timings.prompt_ns = Nanoseconds(Clock::now() - slot.prompt_start);
  slot.task->sampler->AcceptPrompt(params.media->text_tokens);
  if (params.n_predict == 0) {
    Finish(slot, StopReason::kLength);
    return;
  }
  slot.state = Slot::State::kGenerate;
  slot.output_index = -1;  // the last output of the last decode: the prompt's last token
  llama_token token = LLAMA_TOKEN_NULL;
  try {
    token = slot.task->sampler->Sample(ctx_, -1);
  } catch (const std::exception& e) {
    Fail(slot, ErrorCode::kDecodeFailed, std::string("sampling failed: ") + e.what());
    return;
  }
  ProcessToken(slot, token);
}

void Engine::Step(bool stopping) {
  for (Slot& slot : slots_) {
    if (slot.task && (stopping || slot.task->cancelled.load())) Finish(slot, StopReason::kCancelled);
  }
  if (stopping) return;
  ApplyThreads();
  if (shared_cells_) PlanCells();
  // Media prompts first, one slot at a time, outside the shared batch (mtmd decodes image embeddings itself).
  for (Slot& slot : slots_) {
    if (slot.state == Slot::State::kPrefill && slot.task && slot.task->params.media &&
        (!shared_cells_ || slot.cell_grant > 0)) {
      EvalMedia(slot);
    }
  }
  PrepareDrafts();
  if (BuildBatch() == 0) return;

  const int32_t rc = llama_decode(ctx_, batch_);
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
      slot->task->sampler->AcceptPrompt(params.tokens);
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

void Engine::HandleDecodeFailure(int32_t rc) {
  RepairAfterPartialDecode();
  if (rc == 2) return;  // aborted: every task in the batch was cancelled (or the engine stops); the next step ends them
  // No room in a shared cache (the cell budget is conservative, so only with unusual memory layouts): the youngest
  // task gives its cells up and the others retry at the next step.
  if (rc == 1 && shared_cells_ && PauseYoungest()) return;
  std::string message = "llama_decode failed with status " + std::to_string(rc);
  if (rc == 1) message += " (no KV cache slot for the batch)";
  if (rc == -1) message += " (invalid batch)";
  if (!rpc_servers_.empty()) {
    const std::string lost = LostRpcServer();
    if (!lost.empty()) message = lost;
  }
  for (Slot* slot : batch_slots_) {
    if (slot->task) Fail(*slot, ErrorCode::kDecodeFailed, message);
  }
}

std::string Engine::LostRpcServer() {
  llama_synchronize(ctx_);
  for (const std::string& endpoint : rpc_servers_) {
    if (RpcServerBroken(endpoint)) return "rpc server " + endpoint + ": connection lost";
  }
  return "";
}

void Engine::RepairAfterPartialDecode() {
  // After an abort or a fatal error the ubatches already processed stay in the KV cache: bring `cache` in line with
  // what the memory really holds so that prefix reuse stays correct.
  for (Slot* slot : batch_slots_) {
    const llama_pos pos_max = llama_memory_seq_pos_max(memory_, slot->seq_id);
    size_t n_kv = pos_max < 0 ? 0 : static_cast<size_t>(pos_max) + 1;
    if (slot->state == Slot::State::kGenerate) {
      // A generating slot decodes its pending token (and draft) again at the next step: drop what this one stored.
      slot->draft.clear();
      if (n_kv > slot->cache.size()) {
        llama_memory_seq_rm(memory_, slot->seq_id, static_cast<llama_pos>(slot->cache.size()), -1);
        n_kv = slot->cache.size();
      }
    }
    if (n_kv < slot->cache.size()) {
      llama_memory_seq_rm(memory_, slot->seq_id, static_cast<llama_pos>(n_kv), -1);
      slot->cache.resize(n_kv);
    }
    for (int32_t k = 0; k < slot->batch_count && slot->cache.size() < n_kv; ++k) {
      slot->cache.push_back(batch_.token[slot->batch_first + k]);
    }
    if (slot->cache.size() != n_kv) {  // unexpected layout: forget the sequence
      llama_memory_seq_rm(memory_, slot->seq_id, -1, -1);
      slot->cache.clear();
    }
    if (slot->state == Slot::State::kPrefill) slot->n_prompt_done = slot->cache.size();
  }
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
