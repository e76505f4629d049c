// The decode engine of one llama_context: a dedicated thread, a FIFO task queue and continuous batching over slots.
// Pure C++ (no napi.h): results leave through an EventSinkFn.
#ifndef LLAMAD_NATIVE_ENGINE_H_
#define LLAMAD_NATIVE_ENGINE_H_

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "error_code.h"
#include "llama.h"
#include "prompt_cache.h"
#include "slot.h"

namespace llamad {

// One alternative of a logprobs entry.
struct TokenLogprob {
  llama_token token = -1;
  std::string bytes;  // the token's piece (may be an incomplete UTF-8 sequence)
  float logprob = 0.0f;
};

// One event of one task (binding.d.ts NativeEvent). A task emits zero or more kToken then exactly one kDone or kError.
// An embed job (Engine::SubmitEmbed) ends with exactly one kEmbed or kError.
struct EngineEvent {
  enum class Type { kToken, kDone, kError, kEmbed };

  Type type = Type::kToken;
  uint32_t task_id = 0;
  // kToken
  std::string text;  // valid UTF-8, possibly empty
  llama_token token = -1;
  bool has_logprobs = false;  // task.logprobs was given
  std::string bytes;          // the sampled token's piece
  float logprob = 0.0f;
  std::vector<TokenLogprob> top_logprobs;  // most likely first
  // kEmbed: one vector of n_embd floats per input, concatenated
  std::vector<float> embeddings;
  int32_t n_embd = 0;
  // kDone
  StopReason reason = StopReason::kEog;
  std::string stop_string;  // when reason is kStop
  Timings timings;
  // kError
  ErrorCode code = ErrorCode::kInternal;
  std::string message;
};

// The LLAMA_INVALID_ARGUMENT message of a media task on a context without projector: worded for audio when one of the
// task's files is audio (IsAudioFile), else for images.
std::string NoProjectorMessage(const std::vector<std::string>& files);

// Identity of a task's adapter set: its adapters with non-zero scales (llama.cpp leaves zero scales out), sorted by
// path; '' = the base weights.
std::string LoraKey(const std::vector<TaskLora>& loras);

// Receives the events of one decode step, in order, on the decode thread. Must not block.
using EventSinkFn = std::function<void(std::vector<EngineEvent>&& events)>;

struct EngineStats {
  int32_t active_slots = 0;
  int32_t queued_tasks = 0;   // waiting for a slot, including media tasks whose images are being prepared
  int32_t embed_jobs = 0;     // embed jobs queued or running
  int32_t decode_steps = 0;   // llama_decode calls of generation steps
  int32_t graphs_reused = 0;  // of their ubatches, how many reused the previous compute graph
  int32_t cells_used = 0;     // KV cells held by the sequences of active slots (after the last step)
  int32_t cells_cached = 0;   // KV cells idle slots keep for prefix reuse
  int32_t paused_slots = 0;   // active slots waiting for KV cells (shared cells only)
  int32_t n_threads = 0;      // threads of the next generation step (llama_n_threads)
  // Host-RAM prompt cache (EngineOptions::cache_ram_bytes): sequences kept now and their state bytes; since the
  // engine started: how many prompts were served from it and the prompt tokens those restores spared evaluating.
  int32_t ram_cache_entries = 0;
  int64_t ram_cache_bytes = 0;
  int64_t ram_cache_hits = 0;
  int64_t ram_cache_tokens = 0;
  int64_t draft_tokens = 0;    // tokens drafted and verified so far (speculative decoding)
  int64_t draft_accepted = 0;  // of those, tokens the target model accepted
};

// What an Engine is built with besides its context (Engine::Engine).
struct EngineOptions {
  // The projector of a vision model (mtmd_init_from_file on the same llama_model), or null. The engine owns it and
  // frees it after the decode thread exited; media tasks need it.
  mtmd_context* mtmd = nullptr;
  // The RPC workers the model's layers live on (NativeModelParams.rpcServers): after each decode the engine checks
  // that none of their connections broke (vendor/patches/0001) and fails the batch if one did.
  std::vector<std::string> rpc_servers;
  // The context has one unified KV stream (kv_unified) that all slots share (see Engine::Engine).
  bool shared_cells = false;
  // Host-RAM prompt cache budget, bytes (0 = off): when a slot drops the KV of a sequence for another prompt, the
  // sequence's state (llama_state_seq_get_data) is kept in process memory, least recently used out first, and
  // restored when a later prompt extends it (docs/native.md "Host-RAM prompt cache").
  size_t cache_ram_bytes = 0;
  // The draft model's context for speculative decoding (same vocabulary as the target; one unified KV stream with
  // room for every slot's tokens plus their drafts), or null: tasks may then draft by n-gram lookup only. Not owned:
  // the caller frees it after Join(), as it frees the target context.
  llama_context* draft_ctx = nullptr;
};

// Owns the decode thread of a llama_context (not the context itself). After construction every llama call on `ctx`
// happens on that thread; the caller frees `ctx` only after Join().
//
// Each step: start queued tasks in free slots (prefix reuse), put the next token of every generating slot plus prompt
// chunks of prefilling slots into one llama_batch (at most n_batch tokens), llama_decode once, sample per slot,
// hand the step's events to the sink.
class Engine {
 public:
  // `n_ctx_slot`: tokens each slot may hold; capped at llama_n_ctx_seq(ctx) (llama.cpp rounds its per-sequence size
  // up to a multiple of 256, the engine keeps to what was asked for).
  //
  // `options.shared_cells`: the context has one unified KV stream (kv_unified) that all slots share. Each slot may then
  // grow to n_ctx_slot cells, and the engine keeps the sum within n_ctx_slot cells (docs/native.md "Parallel slots"): a
  // queued task starts only when its prompt fits the cells not held by running tasks; when a running task needs a cell
  // and none is free, idle slots' prefix caches are dropped first, then the most recently started task is paused
  // (its KV dropped, its output held) and resumed, by re-evaluating its tokens, once the cells are free again. The
  // oldest running task is never paused: a lone request always has the whole context.
  Engine(llama_context* ctx, int32_t n_ctx_slot, EventSinkFn sink, EngineOptions options = {});
  ~Engine();  // RequestStop() + Join(), then mtmd_free
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // Per-slot context in tokens.
  int32_t n_ctx_slot() const { return n_ctx_slot_; }
  int32_t n_slots() const { return static_cast<int32_t>(slots_.size()); }
  bool shared_cells() const { return shared_cells_; }

  // Any thread. Threads of the following decodes (llama_set_n_threads, applied on the decode thread before its next
  // llama_decode); at most the size of the context's thread pools (larger counts are clamped by ggml). Both >= 1.
  void SetThreads(int32_t n_threads, int32_t n_threads_batch);

  // Any thread. Validates `params`, builds its sampler and queues it; returns the task id (> 0).
  // Throws LlamaError: kInvalidArgument (empty prompt, token out of range, bad grammar, a media task on an engine
  // without projector), kExceedContext (prompt longer than the slot context), kDisposed (after RequestStop).
  // A media task (`params.has_media`) is queued for the engine's media thread, which decodes its images and tokenizes
  // `media_text` with mtmd (PrepareMedia) before the task joins the slot queue; its preparation failures arrive as the
  // task's kError event (kInvalidArgument: an image cannot be decoded, the number of markers differs from the number
  // of images, the prompt does not end with text; kExceedContext: text plus image positions exceed the slot), and a
  // cancel or a stop during preparation ends it with kDone/kCancelled.
  uint32_t Submit(TaskParams params);

  // Whether a projector was given (media tasks accepted).
  bool has_projector() const { return mtmd_ != nullptr; }
  // Whether the projector has a vision / an audio encoder (mtmd_support_vision / mtmd_support_audio); false without
  // projector. Any thread (they read the projector's hyperparameters only).
  bool supports_vision() const { return mtmd_ != nullptr && mtmd_support_vision(mtmd_); }
  bool supports_audio() const { return mtmd_ != nullptr && mtmd_support_audio(mtmd_); }

  // Any thread. Queues an embedding job (embedding contexts): the decode thread packs the inputs into batches, one
  // sequence each, and emits one kEmbed event with a pooled vector per input (or kError). Returns the job id (> 0,
  // shared with task ids). Throws LlamaError: kInvalidArgument (empty input, token out of range), kExceedContext
  // (input longer than n_ubatch or the slot context), kDisposed.
  uint32_t SubmitEmbed(std::vector<std::vector<llama_token>> inputs);

  // Floats per embedding vector (n_embd_out, or n_cls_out for rank pooling).
  int32_t n_embd_out() const { return n_embd_out_; }

  // Any thread. Marks the task cancelled; it ends with kDone/kCancelled within one decode step. An embed job ends with
  // kError/kCancelled: before its next batch, or sooner through the abort callback of its llama_decode/llama_encode.
  // Unknown (or already finished) ids: no-op.
  void Cancel(uint32_t task_id);

  EngineStats Stats() const;

  // Any thread, non-blocking. Cancels every task; the thread emits their final events and exits.
  void RequestStop();

  // Waits for the decode thread (and the media thread) to exit. Idempotent. Not from either of them.
  void Join();

  // True on a decode thread whose current llama_decode is being aborted on purpose (cancel or stop): llama.cpp then
  // logs "failed to decode" errors that are expected; the log callback demotes them.
  static bool CurrentThreadIsAborting();

 private:
  struct EmbedJob {
    uint32_t id = 0;
    std::vector<std::vector<llama_token>> inputs;
    std::shared_ptr<std::atomic<bool>> cancelled;  // set by Cancel()
  };

  void Run();
  void RunMedia();
  void ValidatePrompt(const TaskParams& params) const;
  void RunEmbedJob(const EmbedJob& job);
  void RunEmbedJobSafely(const EmbedJob& job);  // RunEmbedJob, its exceptions turned into the job's kError
  void AddLogprobs(const Slot& slot, EngineEvent& event);
  void Step(bool stopping);
  void StartTask(std::unique_ptr<Task> task);
  // Media tasks (engine_media.cpp, media thread): decodes the task's files into mtmd bitmaps and tokenizes its text
  // (LlamaError kInvalidArgument on a file that cannot be decoded, too long audio, audio without an audio encoder,
  // ...).
  void PrepareMedia(TaskParams& params);
  // An audio file (IsAudioFile) of entry `index` as an mtmd audio bitmap named by its sha256 (owned by the caller).
  mtmd_bitmap* DecodeAudioBitmap(const std::string& bytes, size_t index, double max_seconds);
  // Media prompts in a slot (engine_media_eval.cpp, decode thread), one unit of work per step so that other slots go on
  // in between. MediaTextEnd: where the text chunk at the slot's prompt position ends (positions; that position itself
  // when a media chunk comes next: BuildBatch then leaves the slot out). EvalMediaUnit: the next unit of a slot at a
  // media chunk: its encode (mtmd_encode_chunk), or the decode of its next <= n_batch embeddings (failing only this
  // slot on an error); a complete chunk joins the slot's media_spans. ClearMediaProgress: forgets a partly evaluated
  // media chunk (its KV beyond `cache` too).
  size_t MediaTextEnd(const Slot& slot) const;
  // Length of the common prefix of `slot`'s sequence with media task `params` (positions): equal text tokens, and media
  // chunks with the same content id at the same position and span (Slot::media_spans). 0 for another cache scope.
  size_t MediaPrefix(const Slot& slot, const TaskParams& params) const;
  void EvalMediaUnit(Slot& slot);
  void ClearMediaProgress(Slot& slot);
  int32_t BuildBatch();
  void HandleDecodeFailure(int32_t rc);
  void RepairAfterPartialDecode();
  void ProcessToken(Slot& slot, llama_token token);
  bool ShiftContext(Slot& slot);
  void Finish(Slot& slot, StopReason reason, const std::string& stop_string = std::string());
  void Fail(Slot& slot, ErrorCode code, const std::string& message);
  void ReleaseSlot(Slot& slot);
  // Shared cells (engine_cells.cpp). KV cells of every sequence, idle slots' caches included; cells the active slots
  // hold or will hold; whether a queued task may start now (`starting`: cells of the tasks starting with it).
  int32_t CellsHeld() const;
  int32_t CellsCommitted() const;
  bool CanAdmit(const Task& task, int32_t starting) const;
  // Resumes paused slots that fit again and grants each active slot the cells of its next batch, oldest first.
  void PlanCells();
  // Drops the prefix cache of the idle slot released longest ago; false when no idle slot holds cells.
  bool EvictIdleCache();
  // Frees cells until `budget` >= `need`: idle caches first, then pausing tasks younger than `for_slot`.
  bool MakeRoom(const Slot& for_slot, int32_t need, int32_t& budget);
  void PauseSlot(Slot& slot);
  // After llama_decode status 1: pauses the youngest running task (never the oldest); false when none.
  bool PauseYoungest();
  void UpdateCellStats();
  // Host-RAM prompt cache (engine_prompt_cache.cpp). Called by StartTask with the idle slot chosen for a text
  // `prompt` of cache scope `scope` and the common prefix `prefix` (tokens) of the slot's cache with it (0 when the
  // slot's cache is of another scope), before the slot is trimmed: keeps the slot's sequence in the RAM cache when the
  // trim would drop enough of it, or restores a kept sequence of `scope` that shares a longer prefix with the prompt,
  // into the idle slot caching the least (`slot` then points to it, its `cache` holds the restored tokens). Returns
  // the common prefix of `slot`'s cache with the prompt, tokens. A failed save or restore is not an error: the prompt
  // is then evaluated as without the cache.
  size_t ReuseRamCache(Slot*& slot, const std::vector<llama_token>& prompt, size_t prefix, const std::string& scope);
  // Keeps the sequence of `slot` in the RAM cache, under the slot's cache scope, when it would lose at least a minimum
  // of tokens (all but the first `surviving`), holds no image positions and no pending context shift, and is not kept
  // already.
  void SaveToRamCache(const Slot& slot, size_t surviving);
  void FillRamCacheStats(EngineStats& stats) const;
  // Gives an idle slot to a task of cache scope `scope` (engine_tasks.cpp): a slot last filled by another scope
  // forgets the draft context's tokens of its sequence too (they would shorten the next draft catch-up), then takes
  // `scope`. The caller has already dropped (or restored) its target KV.
  void ClaimSlotScope(Slot& slot, const std::string& scope);
  // Applies a thread count set by SetThreads (decode thread, before a decode).
  void ApplyThreads();
  // LoRA adapters per task (engine_lora.cpp). Picks the adapter set this step decodes: with tasks of several sets
  // ready, each step serves the next set in turn (llama.cpp applies adapters per context, so one llama_decode has
  // one set); InLoraGroup says whether a slot's task has it. ApplyLoras sets a task's adapters on the context when
  // they differ from the ones set (the engine holds their handles meanwhile); ReleaseIdleLoras clears them once no
  // slot has a task, so that Model::UnloadLora can free them.
  void ChooseLoraGroup();
  bool InLoraGroup(const Slot& slot) const;
  void ApplyLoras(const Task* task);
  void ReleaseIdleLoras();
  // Speculative decoding (engine_spec.cpp). Tokens a generating slot may draft this step (0: none): its task's
  // n_draft within the slot context, n_predict and (shared cells) its cell grant.
  int32_t DraftLimit(const Slot& slot) const;
  // Fills `draft` of every generating slot whose task speculates (n-gram lookup, or the draft model), as long as the
  // cost model (GateDraft) lets it.
  void PrepareDrafts();
  // How many of at most `max_len` tokens `slot` drafts this step (0: none): the length with the best expected gain
  // when it is at least kMinGain, else 0, or a short probe when the slot's probe wait is over. `base`: tokens the
  // step holds so far (one per generating slot plus the drafts chosen before), `slots`: generating slots, `match`: the
  // n-gram match length of the proposed draft (0 for a draft model), which picks the acceptance track (DraftClass).
  int32_t GateDraft(Slot& slot, int32_t max_len, int32_t base, int32_t slots, int32_t match);
  // Records the wall time of this step's llama_decode in step_costs_ when the batch held generating slots only.
  void RecordStepCost(Clock::duration elapsed);
  // Drafts greedily with the draft model for `slots` (want: tokens each), after bringing each slot's draft sequence up
  // to its cache and pending token: at most kCatchUpChunk tokens of catch-up per call (engine step) over all slots; a
  // slot not caught up drafts nothing this time. A failed draft decode clears the draft context (drafts stay empty).
  void DraftWithModel(const std::vector<Slot*>& slots, const std::vector<int32_t>& want);
  // Measures draft_token_ns_ before the first draft: single-token decodes of the draft context over the next tokens
  // of `slot`'s catch-up (work a later draft keeps), their median. A draft that cannot pay even when always
  // accepted (the model as its own draft) is thus never drafted, and never catches the prompt up.
  void MeasureDraftCost(Slot& slot);
  void ResetDraftContext();
  // After the decode of `pending` + `draft`: samples each position in turn and keeps the drafted tokens the target
  // sampled too; the first other token becomes the new `pending` and the rest of the draft leaves the KV cache.
  void VerifyDraft(Slot& slot);
  void EmitCancelledQueued(const Task& task);
  void FlushEvents();
  std::string TokenToPiece(llama_token token, bool special = false);
  const std::vector<llama_token>& EogTokens();
  static bool AbortCallback(void* data);

  llama_context* ctx_;
  mtmd_context* mtmd_;  // owned, may be null
  std::vector<std::string> rpc_servers_;
  // '' or "rpc server HOST:PORT: connection lost" when the connection to one of rpc_servers_ broke (waits for the
  // backends first: llama_synchronize).
  std::string LostRpcServer();
  const llama_model* model_;
  const llama_vocab* vocab_;
  VocabPieces vocab_pieces_;  // the vocabulary decoded for grammars, built by the first grammar task
  llama_memory_t memory_;
  EventSinkFn sink_;
  int32_t n_ctx_slot_;
  int32_t n_batch_;
  int32_t n_vocab_;
  enum llama_pooling_type pooling_;
  bool encoder_only_;
  int32_t n_embd_out_;
  bool can_shift_;  // llama_memory_can_shift: the KV positions of a sequence can be moved (context shift)
  bool shared_cells_;
  llama_context* draft_ctx_;  // may be null
  llama_memory_t draft_memory_ = nullptr;
  llama_batch draft_batch_{};
  int32_t draft_n_batch_ = 0;
  // The cost model of speculative decoding (native/spec_cost.h): the target's step times by batch size, the draft
  // model's cost per drafted token (0: not measured) and the least it can be as a share of a one-token target step
  // (DraftSizeRatio), the model pair's acceptance record and its probe backoff (0: its last draft paid).
  StepCosts step_costs_;
  double draft_token_ns_ = 0;
  double draft_size_ratio_ = 0;
  DraftAcceptance pair_acceptance_;
  int32_t pair_backoff_ = 0;
  // What the pair's probes cost and decode time has not repaid yet, nanoseconds (kProbeBudget): a draft model probes
  // only while it is 0.
  double probe_debt_ns_ = 0;
  uint64_t next_start_ = 1;  // start order of tasks (Slot::start_seq), decode thread
  uint64_t next_use_ = 1;    // release order of slots (Slot::last_used), decode thread

  // Decode-thread state.
  std::vector<Slot> slots_;
  llama_batch batch_;
  std::vector<Slot*> batch_slots_;
  std::vector<Task*> batch_tasks_;                      // read by AbortCallback during llama_decode
  std::atomic<bool> aborting_{false};                   // AbortCallback asked llama_decode to stop
  const std::atomic<bool>* embed_cancelled_ = nullptr;  // the running embed job's flag, read by AbortCallback
  std::vector<EngineEvent> events_;
  size_t rotation_ = 0;
  std::string piece_buffer_;
  std::vector<llama_token> logprob_ids_;
  // The llama_batch arrays of a media embeddings decode (EvalMediaUnit).
  std::vector<llama_pos> media_pos_;
  std::vector<int32_t> media_n_seq_id_;
  std::vector<llama_seq_id*> media_seq_ids_;
  std::vector<int8_t> media_logits_;
  llama_seq_id media_seq_ = 0;

  // Shared state, guarded by mutex_.
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::unique_ptr<Task>> queue_;
  std::deque<EmbedJob> embed_queue_;
  std::unordered_map<uint32_t, Task*> live_;  // preparing, queued and running tasks, for Cancel()
  std::unordered_map<uint32_t, std::shared_ptr<std::atomic<bool>>> live_embeds_;  // queued and running embed jobs
  // Media tasks waiting for (or in) preparation on the media thread.
  std::deque<std::unique_ptr<Task>> media_queue_;
  int32_t media_pending_ = 0;  // media_queue_ plus the one being prepared
  std::condition_variable media_wake_;
  bool cancel_pending_ = false;
  uint32_t next_task_id_ = 1;
  std::atomic<bool> stop_requested_{false};
  std::atomic<int32_t> active_slots_{0};
  std::atomic<int32_t> decode_steps_{0};
  std::atomic<int32_t> graphs_reused_{0};
  std::atomic<int32_t> cells_used_{0};
  std::atomic<int32_t> cells_cached_{0};
  std::atomic<int32_t> paused_slots_{0};
  std::atomic<int32_t> threads_wanted_{0};  // 0: unchanged since the last ApplyThreads
  std::atomic<int32_t> threads_batch_wanted_{0};
  std::atomic<int32_t> threads_now_{0};
  std::unique_ptr<PromptCache> prompt_cache_;  // null when EngineOptions::cache_ram_bytes is 0; decode thread
  std::atomic<int32_t> ram_cache_entries_{0};
  std::atomic<int64_t> ram_cache_bytes_{0};
  std::atomic<int64_t> ram_cache_hits_{0};
  std::atomic<int64_t> ram_cache_tokens_{0};
  std::atomic<int64_t> draft_tokens_{0};
  std::atomic<int64_t> draft_accepted_{0};

  // LoRA sets (decode thread): the set of this step when tasks of several sets are ready (lora_grouped_), the turn
  // counter that rotates between sets, and the set on the context now with its handles (kept alive while set).
  bool lora_grouped_ = false;
  std::string lora_group_;
  uint64_t lora_turn_ = 0;
  std::string applied_lora_key_;
  std::vector<std::shared_ptr<LoraHandle>> applied_loras_;

  std::once_flag eog_once_;
  std::vector<llama_token> eog_tokens_;

  std::mutex join_mutex_;
  std::thread thread_;
  // Media preparation (PrepareMedia) of this engine's media tasks, started only with a projector. Not the decode
  // thread: decoding a large image takes long and would stall every stream of the context; not the libuv pool: a
  // dispose joins this thread from a pool worker, which must never wait for another pool job.
  std::thread media_thread_;
};

}  // namespace llamad

#endif  // LLAMAD_NATIVE_ENGINE_H_
