// The engine's media tasks (prompts with images, mtmd): preparation on the media thread, evaluation in a slot. Engine
// methods; PrepareMedia and RunMedia run on the media thread, EvalMedia on the decode thread.
#include <exception>
#include <new>
#include <string>
#include <utility>
#include <vector>

#include "engine.h"
#include "mtmd-helper.h"

namespace llamad {

namespace {

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

}  // namespace llamad
