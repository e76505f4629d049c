// JS class Model: one llama_model (binding.d.ts NativeModel).
#ifndef LLAMAD_NATIVE_MODEL_H_
#define LLAMAD_NATIVE_MODEL_H_

#include <napi.h>

#include <atomic>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "addon_data.h"
#include "chat_render.h"
#include "convert.h"
#include "error_code.h"
#include "llama.h"
#include "slot.h"

namespace llamad {

class Context;

// State shared by Model::Load, its worker thread and its progress thread-safe function.
struct LoadState {
  std::atomic<bool> abort{false};
  // Progress function: guarded so the loader thread never touches it after Node finalized it.
  std::mutex mutex;
  napi_threadsafe_function tsfn = nullptr;
  bool closed = false;
  float last_progress = -1.0f;
  // Written by the worker thread, read on the JS thread after the worker completed.
  llama_model* model = nullptr;
  bool failed = false;
  ErrorCode code = ErrorCode::kModelLoadFailed;
  std::string message;
  // JS thread only.
  Napi::FunctionReference on_progress;
  Napi::Promise::Deferred deferred;
  Model* owner = nullptr;

  explicit LoadState(Napi::Env env) : deferred(Napi::Promise::Deferred::New(env)) {}
};

// new Model(path, params?) creates an unloaded model; load() reads the GGUF on the libuv pool.
//
// States: unloaded -> loading -> loaded -> disposing -> disposed (abortLoad/failed load return to unloaded).
// Ownership: the Model owns its llama_model; each Context keeps a strong reference to its Model, and the Model
// tracks its live Contexts. dispose() disposes the contexts first, then frees the llama_model.
// Errors: LLAMA_DISPOSED after dispose(), LLAMA_INVALID_ARGUMENT for bad arguments or use before load().
class Model : public Napi::ObjectWrap<Model> {
 public:
  static Napi::Function Init(Napi::Env env);

  explicit Model(const Napi::CallbackInfo& info);
  ~Model() override;

  // The loaded model, or throws (LLAMA_DISPOSED / LLAMA_INVALID_ARGUMENT) on the JS thread.
  llama_model* RequireLoaded(Napi::Env env) const;
  bool vocab_only() const { return params_.vocab_only; }
  // The RPC workers the model was loaded over (NativeModelParams.rpcServers), in order.
  const std::vector<std::string>& rpc_servers() const { return params_.rpc_servers; }
  // NativeModelParams.nGpuLayers as given (absent: llama.cpp's default, every layer on the GPUs there are).
  std::optional<int32_t> n_gpu_layers() const { return params_.n_gpu_layers; }

  // The loaded LoRA adapter at `path` (Model.loadLora), or null when it is not loaded. Any thread (the registry is
  // guarded by a mutex). A task that applies it holds the handle, so that unloadLora waits for it.
  std::shared_ptr<LoraHandle> FindLora(const std::string& path);

  // Native jobs: work on the llama_model on the libuv pool (Context.create, tokenizeAsync, renderChatAsync, ...).
  // BeginJob (JS thread, after RequireLoaded) counts one; the job's Execute calls ExecuteDone when it stops touching
  // the model; EndJob (JS thread, in the job's completion) uncounts it and may complete a pending dispose():
  // dispose() frees the llama_model only once no job is counted. Execute must check JobsAbandoned() first (set at
  // environment teardown / process exit) and skip its work when it is.
  void BeginJob();
  void ExecuteDone();
  void EndJob(Napi::Env env);
  bool JobsAbandoned() const { return jobs_->abandoned.load(); }
  // JS thread, model loaded: BeginJob, then `work` on the pool (any thread, may throw LlamaError); the promise
  // resolves with `finish(env)` (JS thread) or rejects with the coded error (ModelJobWorker). `self` is this
  // Model's JS object.
  Napi::Promise StartJob(Napi::Env env, Napi::Object self, const char* name, ErrorCode fallback,
                         std::function<void()> work, std::function<Napi::Value(Napi::Env)> finish);
  // Process exit / teardown: marks queued jobs abandoned and waits (up to 30 s) for the running ones to finish.
  void AbandonJobs();
  // Whether dispose() was called (the model is disposing or disposed).
  bool disposing() const { return state_ == State::kDisposing || state_ == State::kDisposed; }
  llama_model* handle() const { return model_; }
  ChatTemplateCache& chat_templates() { return chat_templates_; }

  void AddContext(Context* context) { contexts_.insert(context); }
  // A child context finished disposing (or was collected); may complete a pending dispose().
  void OnContextGone(Napi::Env env, Context* context);

  // Environment teardown: frees the llama_model without touching JS.
  void ReleaseNative();

  // Process exit: asks a load in progress to stop (its worker thread cannot be joined).
  void AbortPendingLoad() {
    if (load_) load_->abort.store(true);
  }

  // Called on the JS thread once a load finished (the progress function drained).
  void FinishLoad(Napi::Env env, const std::shared_ptr<LoadState>& state);

 private:
  enum class State { kUnloaded, kLoading, kLoaded, kDisposing, kDisposed };

  Napi::Value Load(const Napi::CallbackInfo& info);
  Napi::Value AbortLoad(const Napi::CallbackInfo& info);
  Napi::Value GetLoaded(const Napi::CallbackInfo& info);
  Napi::Value Info(const Napi::CallbackInfo& info);
  Napi::Value Metadata(const Napi::CallbackInfo& info);
  Napi::Value ChatTemplate(const Napi::CallbackInfo& info);
  Napi::Value ApplyChatTemplate(const Napi::CallbackInfo& info);
  Napi::Value RenderChat(const Napi::CallbackInfo& info);
  Napi::Value ChatCapabilities(const Napi::CallbackInfo& info);
  Napi::Value Tokenize(const Napi::CallbackInfo& info);
  Napi::Value Detokenize(const Napi::CallbackInfo& info);
  Napi::Value TokenizeAsync(const Napi::CallbackInfo& info);
  Napi::Value DetokenizeAsync(const Napi::CallbackInfo& info);
  Napi::Value ApplyChatTemplateAsync(const Napi::CallbackInfo& info);
  Napi::Value RenderChatAsync(const Napi::CallbackInfo& info);
  // Runs `work` (any thread, may throw LlamaError) as a native job on the pool and settles the returned promise
  // with `finish(env)` (JS thread) or the job's error. Errors of `prepare` (JS thread, argument checks) reject it.
  Napi::Value RunJob(const Napi::CallbackInfo& info, const char* name, ErrorCode fallback,
                     const std::function<void(Napi::Env)>& prepare, std::function<void()> work,
                     std::function<Napi::Value(Napi::Env)> finish);
  Napi::Value Dispose(const Napi::CallbackInfo& info);
  // LoRA adapters over this model (model_lora.cpp): loadLora(path), unloadLora(path), loras().
  Napi::Value LoadLora(const Napi::CallbackInfo& info);
  Napi::Value UnloadLora(const Napi::CallbackInfo& info);
  Napi::Value Loras(const Napi::CallbackInfo& info);
  // The adapter at `path`, loaded on first use (llama_adapter_lora_init) and kept in the registry until unloadLora or
  // the model is freed. Any thread inside a native job (which keeps the llama_model alive). Throws
  // LlamaError(kModelLoadFailed) (with the path and llama.cpp's reason) for a missing file, a non-adapter GGUF, another
  // architecture or mismatched shapes.
  std::shared_ptr<LoraHandle> LoadLoraNow(const std::string& path);
  // Removes the adapter at `path` from the registry and frees it once no task and no context holds it (waiting up to
  // kLoraUnloadWaitMs for them); "unloaded", "absent" (not loaded) or "busy" (still held: it stays loaded).
  std::string UnloadLoraNow(const std::string& path);

  void MaybeFinishDispose(Napi::Env env);
  void FreeModel(Napi::Env env);

  std::shared_ptr<AddonData> data_;
  std::string path_;
  ModelParams params_;
  State state_ = State::kUnloaded;
  llama_model* model_ = nullptr;
  int64_t external_bytes_ = 0;
  std::shared_ptr<LoadState> load_;
  std::set<Context*> contexts_;
  std::mutex lora_mutex_;  // guards lora_adapters_ (and llama_model's own adapter set, changed by init and free)
  std::map<std::string, std::shared_ptr<LoraHandle>> lora_adapters_;  // path -> loaded adapter
  // Native jobs in flight: `pending` on the JS thread (gates freeing), `running` for the teardown wait.
  struct Jobs {
    std::mutex mutex;
    std::condition_variable idle;
    int32_t running = 0;
    std::atomic<bool> abandoned{false};
  };
  std::shared_ptr<Jobs> jobs_ = std::make_shared<Jobs>();
  int32_t pending_jobs_ = 0;
  ChatTemplateCache chat_templates_;  // parsed Jinja templates per override (renderChat, chatCapabilities)
  std::vector<Napi::Promise::Deferred> dispose_waiters_;
};

}  // namespace llamad

#endif  // LLAMAD_NATIVE_MODEL_H_
