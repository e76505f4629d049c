// Tasks and slots of the decode engine. Pure C++ (no napi.h).
#ifndef LLAMAD_NATIVE_SLOT_H_
#define LLAMAD_NATIVE_SLOT_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "llama.h"
#include "mtmd.h"
#include "sampler.h"
#include "spec_cost.h"
#include "text_stream.h"

namespace llamad {

using Clock = std::chrono::steady_clock;

// A duration in nanoseconds (Timings).
inline int64_t Nanoseconds(Clock::duration d) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(d).count();
}

// A multimodal prompt tokenized by mtmd_tokenize: text, image and audio chunks, evaluated by the engine one unit of
// work per step (engine_media_eval.cpp). Owns the chunks (freed with the object). Built on the media thread, then read
// only by the decode thread.
struct MediaPrompt {
  MediaPrompt() = default;
  ~MediaPrompt() {
    if (chunks != nullptr) mtmd_input_chunks_free(chunks);
  }
  MediaPrompt(const MediaPrompt&) = delete;
  MediaPrompt& operator=(const MediaPrompt&) = delete;

  mtmd_input_chunks* chunks = nullptr;
  std::vector<llama_token> text_tokens;  // the text chunks' tokens in order (penalty history)
  // Position (index into TaskParams::tokens) where each chunk starts, plus the total as a last entry.
  std::vector<size_t> chunk_pos;
};

// A LoRA adapter loaded over a model (Model::LoadLora). Shared by the model's registry, the tasks that apply it and
// the engine while it is set on the context: Model::UnloadLora frees it only once nothing else holds it.
struct LoraHandle {
  llama_adapter_lora* adapter = nullptr;  // owned: freed by Model::UnloadLora (or with the model)
  std::string path;
};

// One adapter of a task (binding.d.ts NativeTaskParams.loras): its file, its scale, and the loaded adapter
// (resolved by Context::Submit from the model's registry).
struct TaskLora {
  std::string path;
  float scale = 1.0f;
  std::shared_ptr<LoraHandle> handle;
};

// One generation request (binding.d.ts NativeTaskParams).
struct TaskParams {
  // Prompt, non-empty. For a media task: one entry per KV position of the evaluated prompt, the text tokens with
  // LLAMA_TOKEN_NULL at image positions (so prefix matching never reuses across images), filled by Engine::Submit.
  std::vector<llama_token> tokens;
  // Media task (binding.d.ts NativeTaskParams.prompt/images): the prompt text with mtmd media markers and the encoded
  // image or audio files (PNG/JPEG/... or WAV/MP3/FLAC bytes), one per marker. `media` is set from them on the media
  // thread (Engine::PrepareMedia).
  bool has_media = false;
  std::string media_text;
  std::vector<std::string> images;
  std::shared_ptr<MediaPrompt> media;
  // Longest audio file accepted, seconds (binding.d.ts NativeTaskParams.maxAudioSeconds); 0 = no bound.
  double max_audio_seconds = 0;
  // Max tokens to generate; negative: until EOG or the slot context is full (with context_shift: until EOG, capped at
  // 10 x the slot context, Ollama's safety cap).
  int32_t n_predict = -1;
  // Context shift (Ollama reference §4.4; llama-server --context-shift): when the slot context is full during
  // generation, keep the first n_keep tokens (plus a BOS the prompt starts with), drop half of the rest from the KV
  // cache and go on instead of ending with kLength. Ignored (kLength as without it) for media tasks and for memories
  // that cannot shift (llama_memory_can_shift false: M-RoPE, small SWA caches; or a refused partial seq_rm: recurrent).
  bool context_shift = false;
  // Tokens kept at the start of the sequence on a shift (Ollama's num_keep), not counting a leading BOS; negative:
  // the whole prompt. Clamped to the slot context - 4.
  int32_t n_keep = 4;
  SamplingParams sampling;
  std::vector<std::string> stop;  // stop strings
  bool ignore_eos = false;
  int32_t logprobs = -1;  // < 0: none; N >= 0: the sampled token's logprob plus the N most likely alternatives
  // Speculative decoding (binding.d.ts NativeTaskParams.draft): most tokens proposed per step after the sampled one,
  // 0 = none (capped at kMaxDraft); proposed by the engine's draft model, or with `draft_ngram` by prompt lookup (the
  // continuation of the longest earlier occurrence of the sequence's last tokens, native/spec_ngram.h). How many are
  // drafted each step the cost model decides (native/spec_cost.h), unless `draft_fixed`: then always as many as
  // allowed (tests and measurements of the mechanism). Ignored for media tasks.
  int32_t n_draft = 0;
  bool draft_ngram = false;
  bool draft_fixed = false;
  // Who may reuse the KV this task leaves behind (binding.d.ts NativeTaskParams.cacheScope): an opaque key, '' = the
  // shared scope. A slot or a host-RAM prompt cache entry filled by a task of one scope is never reused, even in part,
  // by a task of another (its prefix counts as 0), so prompt counts and timings never reveal another scope's prompts.
  std::string cache_scope;
  // LoRA adapters applied to this task's decode steps (empty: the base weights). Tasks with different sets never share
  // a llama_decode (the engine decodes one set per step, in turn); the caller keeps their KV apart with cache_scope.
  std::vector<TaskLora> loras;
};

// Most tokens drafted per step and slot (a longer draft_num_predict is capped).
constexpr int32_t kMaxDraft = 64;

// Why a task ended (binding.d.ts NativeStopReason).
enum class StopReason { kEog, kStop, kLength, kCancelled };
const char* StopReasonName(StopReason reason);

// Prompt and generation timings of one task; durations in nanoseconds (binding.d.ts NativeTimings).
struct Timings {
  int32_t prompt_n = 0;          // prompt tokens evaluated (after prefix reuse)
  int32_t prompt_total = 0;      // prompt tokens of the task
  int64_t prompt_ns = 0;         // time evaluating the prompt
  int32_t predicted_n = 0;       // tokens sampled
  int64_t predicted_ns = 0;      // first sampled token to last
  int32_t draft_n = 0;           // tokens drafted and verified (speculative decoding)
  int32_t draft_accepted_n = 0;  // of those, tokens the target sampled too (each saved one decode step)
  int32_t slot = -1;             // the slot (its sequence id) that ran the task; -1: none (failed before one)
};

// A queued or running task. `cancelled` is the only field touched by more than one thread.
struct Task {
  uint32_t id = 0;
  TaskParams params;
  std::unique_ptr<Sampler> sampler;
  std::vector<llama_token> preserved;  // control tokens rendered as text (sampling.preserved_tokens)
  // Identity of params.loras (paths and scales), '' for none: tasks with equal keys are decoded together.
  std::string lora_key;
  std::atomic<bool> cancelled{false};
};

// One sequence (seq_id) of the llama_context. Owned and used only by the decode thread.
struct Slot {
  // kPaused (shared cells only): the task gave its KV cells up and waits for them; kResume: it re-evaluates
  // `resume_tokens` (its prompt and the tokens it generated) and then generates on from `pending`.
  enum class State { kIdle, kPrefill, kGenerate, kPaused, kResume };

  explicit Slot(llama_seq_id id) : seq_id(id) {}

  // Length of the common prefix of `cache` and `tokens`.
  size_t CommonPrefix(const std::vector<llama_token>& tokens) const;

  llama_seq_id seq_id;
  State state = State::kIdle;
  // Tokens whose KV entries are in this sequence, at positions 0..cache.size()-1. Survives tasks (prefix reuse).
  std::vector<llama_token> cache;
  // TaskParams::cache_scope of the task that filled `cache` (and the draft context's `draft_cache`): only a task of the
  // same scope reuses them.
  std::string cache_scope;

  std::unique_ptr<Task> task;
  std::unique_ptr<TextStream> stream;
  size_t n_prompt_done = 0;  // prompt tokens already in the KV cache
  llama_token pending = -1;  // sampled token waiting to be decoded (kGenerate)
  int32_t n_generated = 0;   // tokens sampled for this task

  // Where this slot's tokens sit in the batch being decoded: [batch_first, batch_first + batch_count), and the
  // batch index of its output logits (-1 when none).
  int32_t batch_first = 0;
  int32_t batch_count = 0;
  int32_t output_index = -1;

  // Shared cells (Engine shared_cells): start order of the task (lower = older, never paused for a younger one),
  // release order of an idle slot (its cache is dropped first when lower), the cells this step may add, and what a
  // paused task re-evaluates (empty: it was paused during its prompt, which is evaluated again from the start).
  uint64_t start_seq = 0;
  uint64_t last_used = 0;
  int32_t cell_grant = 0;
  std::vector<llama_token> resume_tokens;
  // cache.size() right after the last context shift: llama.cpp applies the shift's K rotation at the next llama_decode,
  // so until the sequence has grown past this size its state may be unrotated and is not saved (host-RAM cache).
  size_t shift_mark = 0;

  // Speculative decoding (engine_spec.cpp): the tokens proposed after `pending` for this step (decoded with it and
  // verified), and the tokens whose KV entries the draft model's context holds in sequence `seq_id`.
  std::vector<llama_token> draft;
  std::vector<llama_token> draft_cache;
  // The task's acceptance record and probe schedule (engine_spec.cpp PrepareDrafts); reset when a task starts.
  DraftGate spec;

  // Media prompt progress (media tasks, engine_media_eval.cpp): the embeddings of chunk `media_chunk` of the task's
  // MediaPrompt once encoded (kNoChunk: none; a copy, since the next encode of any slot overwrites mtmd's output) and
  // how many of them are decoded into the sequence so far (those sit beyond `cache` until the chunk is complete).
  static constexpr size_t kNoChunk = static_cast<size_t>(-1);
  // The media chunks evaluated into this sequence (prefix reuse of media prompts, Engine::MediaPrefix): where each
  // starts, its positions and its content id (mtmd_input_chunk_get_id: the file's sha256). One counts only while
  // `cache` still holds LLAMA_TOKEN_NULL over its whole range (a later task may have overwritten it).
  struct MediaSpan {
    size_t pos = 0;
    size_t n_pos = 0;
    std::string id;
  };
  std::vector<MediaSpan> media_spans;
  std::vector<float> media_embd;
  size_t media_chunk = kNoChunk;
  int32_t media_embd_done = 0;
  bool media_unit_done = false;  // this step did its unit already (BuildBatch then leaves the slot out)

  Timings timings;
  bool prompt_started = false;
  Clock::time_point prompt_start;
  Clock::time_point first_sample;
};

}  // namespace llamad

#endif  // LLAMAD_NATIVE_SLOT_H_
