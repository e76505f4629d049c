// The engine's media tasks (prompts with images or audio, mtmd): preparation on the media thread. Engine methods, run
// on the media thread (their evaluation in a slot: engine_media_eval.cpp).
#include <cstdio>
#include <exception>
#include <new>
#include <string>
#include <utility>
#include <vector>

#include "audio_decode.h"
#include "engine.h"
#include "hash/hash.h"
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

// "12.5" for 12.5 s, "600" for 600 s: one decimal at most.
std::string FormatSeconds(double seconds) {
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "%.1f", seconds);
  std::string text(buffer);
  if (text.size() > 2 && text.compare(text.size() - 2, 2, ".0") == 0) text.resize(text.size() - 2);
  return text;
}

}  // namespace

std::string NoProjectorMessage(const std::vector<std::string>& files) {
  for (const std::string& bytes : files) {
    if (IsAudioFile(bytes)) return "this model is missing data required for audio input";
  }
  return "images need a context created with a projector (params.projectorPath)";
}

mtmd_bitmap* Engine::DecodeAudioBitmap(const std::string& bytes, size_t index, double max_seconds) {
  // No audio encoder in the projector (a vision-only mmproj): mtmd would not tokenize the clip.
  const int32_t rate = mtmd_support_audio(mtmd_) ? mtmd_get_audio_sample_rate(mtmd_) : -1;
  if (rate <= 0) throw LlamaError(ErrorCode::kInvalidArgument, "this model is missing data required for audio input");
  DecodedAudio audio = DecodeAudio(bytes, rate, max_seconds);
  switch (audio.status) {
    case DecodedAudio::Status::kOk:
      break;
    case DecodedAudio::Status::kUndecodable:
      throw LlamaError(ErrorCode::kInvalidArgument,
                       "images[" + std::to_string(index) + "] is not a decodable audio file (WAV, MP3 or FLAC)");
    case DecodedAudio::Status::kEmpty:
      throw LlamaError(ErrorCode::kInvalidArgument, "audio file is empty");
    case DecodedAudio::Status::kTooLong:
      throw LlamaError(ErrorCode::kInvalidArgument, "audio is " + FormatSeconds(audio.seconds) +
                                                        " s long; the limit is " + FormatSeconds(max_seconds) +
                                                        " s (LLAMAD_MAX_AUDIO_SECONDS)");
  }
  mtmd_bitmap* bitmap = mtmd_bitmap_init_from_audio(audio.samples.size(), audio.samples.data());
  if (bitmap == nullptr) throw std::bad_alloc();
  // The content hash names the chunk (mtmd_input_chunk_get_id), as mtmd_helper_bitmap_init_from_buf names images.
  mtmd_bitmap_set_id(bitmap, hash_sha256_hex(bytes.data(), bytes.size()).c_str());
  return bitmap;
}

void Engine::PrepareMedia(TaskParams& params) {
  if (mtmd_ == nullptr) throw LlamaError(ErrorCode::kInvalidArgument, NoProjectorMessage(params.images));
  struct BitmapList {
    std::vector<mtmd_bitmap*> items;
    ~BitmapList() {
      for (mtmd_bitmap* b : items) mtmd_bitmap_free(b);
    }
  } bitmaps;
  for (size_t i = 0; i < params.images.size(); ++i) {
    const std::string& bytes = params.images[i];
    if (IsAudioFile(bytes)) {
      bitmaps.items.push_back(DecodeAudioBitmap(bytes, i, params.max_audio_seconds));
      continue;
    }
    // No vision encoder in the projector (an audio-only mmproj): mtmd would refuse the image in mtmd_tokenize.
    if (!mtmd_support_vision(mtmd_)) {
      throw LlamaError(ErrorCode::kInvalidArgument, "this model is missing data required for image input");
    }
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
    media->chunk_pos.push_back(params.tokens.size());
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
  media->chunk_pos.push_back(params.tokens.size());
  params.media = std::move(media);
  params.images.clear();
  params.images.shrink_to_fit();
}

void Engine::RunMedia() {
  // mtmd_tokenize here runs while the decode thread may be evaluating another task's image with the same mtmd
  // context (EvalMediaUnit: mtmd_encode_chunk): llama-server does the same (it tokenizes multimodal prompts on its HTTP
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

}  // namespace llamad
