// JS class Context: one llama_context with its decode Engine (binding.d.ts NativeContext).
#ifndef LLAMAD_NATIVE_CONTEXT_H_
#define LLAMAD_NATIVE_CONTEXT_H_

#include <napi.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "addon_data.h"
#include "convert.h"
#include "engine.h"
#include "event_sink.h"
#include "ggml.h"
#include "llama.h"
#include "memory_breakdown.h"

namespace llamad {

class Model;

// Persistent ggml CPU thread pools of one llama_context, attached as llama-server attaches its own (common/common.cpp
// common_threadpools): without them ggml creates and joins its worker threads for every graph it computes.
// One pool when n_threads == n_threads_batch, else a generation pool (starts paused) and a batch pool.
class CpuThreadPools {
 public:
  CpuThreadPools() = default;
  CpuThreadPools(const CpuThreadPools&) = delete;
  CpuThreadPools& operator=(const CpuThreadPools&) = delete;
  ~CpuThreadPools() { Free(); }

  // Creates the pools and attaches them to ctx. Returns false (and attaches nothing) when ggml cannot create them;
  // the context then keeps ggml's per-graph threads.
  bool Attach(llama_context* ctx, int32_t n_threads, int32_t n_threads_batch);
  // Attaches the same pools to another context run by the same thread (a draft model's context); no-op without pools.
  void AttachAlso(llama_context* ctx) const;
  // Frees the pools. Call only after llama_free of the context they are attached to.
  void Free();

 private:
  ggml_threadpool* generation_ = nullptr;
  ggml_threadpool* batch_ = nullptr;
};

// What creating a context needs, read and checked from the JS arguments on the JS thread (Context::Plan).
struct ContextPlan {
  Model* model = nullptr;
  llama_model* handle = nullptr;
  // params.draftModel (speculative decoding), or null.
  Model* draft_model = nullptr;
  llama_model* draft_handle = nullptr;
  ContextParams params;
  llama_context_params cp{};
};

// The most q heads per K/V head that ggml-cpu's grouped flash attention takes as one tile (GGML_FA_GQA_MAX of
// vendor/patches/0003-ggml-cpu-flash-attn-gqa-groups.patch).
constexpr int32_t kFlashAttnGroupMax = 16;
// Whether `model`'s attention is grouped-query with 2..kFlashAttnGroupMax q heads per K/V head (layer 0's counts).
bool FlashAttnGroupsQueryHeads(const llama_model* model);
// The flash attention of a context (llama_context_params.flash_attn_type): params.flashAttn, except that `auto`, for
// a generation context with an f16/f32 KV cache whose model runs on the CPU alone, is `on` when the model's attention
// is grouped-query (FlashAttnGroupsQueryHeads) and `off` otherwise. ggml's CPU flash attention takes a GQA group's q
// heads as one tile for short query runs (patch 0003): decoding is faster with it than with the plain attention's
// matrix products. Without groups it walks the KV cache once per query row and head with a vec_dot, an `expf` and an
// f16 vec_mad per cell, 1.3–2.4× slower than the matrix products for one token at 1,000–2,000 cells and 3–7× for 4
// (docs/native.md "Flash attention and KV cache type"); the price of `off` is the attention scores in the compute
// buffer (n_ubatch × n_ctx × n_head floats). A GPU, an RPC worker, an embedding context (whole inputs per batch) and
// a quantized V cache (it needs flash attention) keep llama.cpp's choice.
llama_flash_attn_type ResolveFlashAttn(const ContextParams& params, const Model& model);
// "auto", "on" or "off" (NativeContextStats.flashAttn).
const char* FlashAttnName(llama_flash_attn_type type);
// Bytes of the KV cache of `model` over `n_ctx` cells: per layer and cell, a K and a V row of n_head_kv × head_dim
// elements of their types.
int64_t EstimateKvBytes(const llama_model* model, uint32_t n_ctx, ggml_type type_k, ggml_type type_v);

// The native objects of a new context, made by Context::Build on any thread. Frees what it still owns.
struct ContextParts {
  llama_context* ctx = nullptr;
  llama_context* draft_ctx = nullptr;     // the draft model's context, or null
  std::unique_ptr<CpuThreadPools> pools;  // freed after ctx and draft_ctx
  mtmd_context* mtmd = nullptr;
  std::vector<MemoryEntry> memory;  // read right after creation (QueryMemoryBreakdown)

  ContextParts() = default;
  ContextParts(const ContextParts&) = delete;
  ContextParts& operator=(const ContextParts&) = delete;
  ~ContextParts();
};

// A Context.create() in flight: its plan, then (after the pool job) its parts.
struct ContextCreateJob {
  ContextCreateJob() = default;
  ContextCreateJob(const ContextCreateJob&) = delete;
  ContextCreateJob& operator=(const ContextCreateJob&) = delete;
  ~ContextCreateJob();  // JS thread: ends the job counted on the draft model

  ContextPlan plan;
  std::unique_ptr<ContextParts> parts;
  napi_env draft_job_env = nullptr;  // set while a job is counted on plan.draft_model (Model::BeginJob)
};

// new Context(model, params) creates the llama_context synchronously on the JS thread (throws
// LLAMA_CONTEXT_CREATE_FAILED, LLAMA_INVALID_ARGUMENT, LLAMA_DISPOSED, LLAMA_MODEL_LOAD_FAILED) and starts its decode
// thread. Context.create(model, params) does the same work (llama_init_from_model, thread pools, the
// projector) as a native job of the model on the libuv pool and resolves with the new Context; the JS-side checks
// (Plan) and the final step on the JS thread (Adopt) are shared by both. A model disposed while a create() runs:
// the model is freed only after the job (Model::BeginJob), and the create() rejects with LLAMA_DISPOSED after
// freeing what it built.
//
// submit() queues a task and returns its id; its events arrive on the JS thread through one thread-safe function,
// one batch per decode step, and are dispatched in order to the task's callback. While any task is in flight the
// function and the JS object are referenced (the process stays alive); when idle both are unreferenced.
// dispose() cancels every task, joins the thread on the libuv pool, frees the llama_context, then settles after the
// last event was delivered.
class Context : public Napi::ObjectWrap<Context> {
 public:
  static Napi::Function Init(Napi::Env env);

  explicit Context(const Napi::CallbackInfo& info);
  ~Context() override;

  // JS thread: checks `model_value` and `params_value` and derives the llama_context parameters. Throws JS errors.
  static ContextPlan Plan(Napi::Env env, const std::shared_ptr<AddonData>& data, Napi::Value model_value,
                          Napi::Value params_value);
  // Any thread (the plan's model kept alive): llama_init_from_model, thread pools, projector.
  // Throws LlamaError (kContextCreateFailed, kModelLoadFailed); frees what it made before throwing.
  static std::unique_ptr<ContextParts> Build(const ContextPlan& plan);

  // Starts disposing (idempotent); used by dispose() and by Model::dispose().
  void BeginDispose(Napi::Env env);

  // Environment teardown: stops the thread and frees the llama_context without touching JS.
  void ReleaseNative();

 private:
  enum class State { kActive, kDisposing, kDisposed };

  Napi::Value Submit(const Napi::CallbackInfo& info);
  Napi::Value Cancel(const Napi::CallbackInfo& info);
  Napi::Value Stats(const Napi::CallbackInfo& info);
  Napi::Value Memory(const Napi::CallbackInfo& info);
  Napi::Value SetThreads(const Napi::CallbackInfo& info);
  Napi::Value Embed(const Napi::CallbackInfo& info);
  void StartEmbed(const Napi::CallbackInfo& info, Napi::Promise::Deferred& deferred);
  Napi::Value Dispose(const Napi::CallbackInfo& info);
  static Napi::Value Create(const Napi::CallbackInfo& info);

  // JS thread: takes over `parts` (event sink, engine with its decode thread) and registers with the model.
  void Adopt(Napi::Env env, Napi::Object model_object, const ContextPlan& plan, std::unique_ptr<ContextParts> parts);

  void RequireActive(Napi::Env env) const;
  void Dispatch(Napi::Env env, std::vector<EngineEvent>& events);
  void SettleEmbed(Napi::Env env, const EngineEvent& event, Napi::Promise::Deferred& deferred);
  void BeginInFlight(Napi::Env env);
  void EndInFlight(Napi::Env env);
  void OnSinkFinalized(Napi::Env env);
  void StopAndFree();  // any thread; idempotent

  std::shared_ptr<AddonData> data_;
  Model* model_ = nullptr;
  Napi::ObjectReference model_ref_;
  Model* draft_model_ = nullptr;  // params.draftModel, kept alive as model_ is
  Napi::ObjectReference draft_model_ref_;
  State state_ = State::kActive;

  std::mutex native_mutex_;  // guards engine_ and ctx_ against the dispose worker and the env cleanup hook
  llama_context* ctx_ = nullptr;
  llama_context* draft_ctx_ = nullptr;
  std::unique_ptr<CpuThreadPools> thread_pools_;  // freed after ctx_ and draft_ctx_
  std::unique_ptr<Engine> engine_;
  std::shared_ptr<EventSink> sink_;

  std::unordered_map<uint32_t, Napi::FunctionReference> callbacks_;
  std::unordered_map<uint32_t, Napi::Promise::Deferred> embed_waiters_;  // pending embed() calls by job id
  bool embeddings_ = false;
  llama_flash_attn_type flash_attn_ = LLAMA_FLASH_ATTN_TYPE_AUTO;  // as created (ResolveFlashAttn)
  int32_t in_flight_ = 0;
  std::vector<Napi::Promise::Deferred> dispose_waiters_;

  uint32_t n_ctx_ = 0;
  uint32_t n_ctx_slot_ = 0;
  uint32_t n_parallel_ = 0;
  int64_t kv_bytes_ = 0;
  std::vector<MemoryEntry> memory_;  // read once, before the decode thread starts
};

}  // namespace llamad

#endif  // LLAMAD_NATIVE_CONTEXT_H_
