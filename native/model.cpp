// Model: construction, loading (progress, abort), native jobs and dispose. Its queries (info,
// metadata, tokenizer, chat templates) are in model_queries.cpp, its LoRA adapters in model_lora.cpp.
#include "model.h"

#include <exception>
#include <utility>

#include "context.h"
#include "errors.h"
#include "rpc.h"
#include "workers.h"

namespace llamad {

namespace {

void CallProgress(napi_env env, napi_value /*js_callback*/, void* context, void* data) {
  std::unique_ptr<float> progress(static_cast<float*>(data));
  auto* state = static_cast<LoadState*>(context);
  if (env == nullptr || state == nullptr || state->on_progress.IsEmpty()) return;
  Napi::Env napi_env(env);
  try {
    Napi::HandleScope scope(napi_env);
    state->on_progress.Call({Napi::Number::New(napi_env, *progress)});
  } catch (const Napi::Error& e) {
    napi_fatal_exception(env, e.Value());  // a throwing callback is an uncaught exception, as in JS
  } catch (...) {
  }
}

void FinalizeLoad(napi_env env, void* finalize_data, void* /*hint*/) {
  std::unique_ptr<std::shared_ptr<LoadState>> keep(static_cast<std::shared_ptr<LoadState>*>(finalize_data));
  std::shared_ptr<LoadState> state = *keep;
  {
    std::lock_guard<std::mutex> lock(state->mutex);
    state->closed = true;
    state->tsfn = nullptr;
  }
  if (env == nullptr || state->owner == nullptr) {
    if (state->model != nullptr) llama_model_free(state->model);
    state->model = nullptr;
    return;
  }
  try {
    Napi::HandleScope scope(env);
    state->owner->FinishLoad(Napi::Env(env), state);
  } catch (...) {
  }
}

}  // namespace

Napi::Function Model::Init(Napi::Env env) {
  return DefineClass(env, "Model",
                     {
                         InstanceMethod<&Model::Load>("load"),
                         InstanceMethod<&Model::AbortLoad>("abortLoad"),
                         InstanceAccessor<&Model::GetLoaded>("loaded"),
                         InstanceMethod<&Model::Info>("info"),
                         InstanceMethod<&Model::Metadata>("metadata"),
                         InstanceMethod<&Model::ChatTemplate>("chatTemplate"),
                         InstanceMethod<&Model::ApplyChatTemplate>("applyChatTemplate"),
                         InstanceMethod<&Model::RenderChat>("renderChat"),
                         InstanceMethod<&Model::ChatCapabilities>("chatCapabilities"),
                         InstanceMethod<&Model::Tokenize>("tokenize"),
                         InstanceMethod<&Model::Detokenize>("detokenize"),
                         InstanceMethod<&Model::TokenizeAsync>("tokenizeAsync"),
                         InstanceMethod<&Model::DetokenizeAsync>("detokenizeAsync"),
                         InstanceMethod<&Model::ApplyChatTemplateAsync>("applyChatTemplateAsync"),
                         InstanceMethod<&Model::RenderChatAsync>("renderChatAsync"),
                         InstanceMethod<&Model::Dispose>("dispose"),
                         InstanceMethod<&Model::LoadLora>("loadLora"),
                         InstanceMethod<&Model::UnloadLora>("unloadLora"),
                         InstanceMethod<&Model::Loras>("loras"),
                     });
}

Model::Model(const Napi::CallbackInfo& info) : Napi::ObjectWrap<Model>(info), data_(AddonData::Get(info.Env())) {
  Napi::Env env = info.Env();
  path_ = ToString(env, info[0], "path");
  params_ = ToModelParams(env, info[1]);
  data_->models.insert(this);
}

Model::~Model() {
  if (load_) load_->owner = nullptr;
  if (!data_->torn_down) {
    data_->models.erase(this);
    if (model_ != nullptr) FreeModel(Env());
  }
}

void Model::ReleaseNative() {
  AbandonJobs();  // no llama_model_free under a job still using the model
  if (load_) {
    load_->abort.store(true);
    load_->owner = nullptr;  // the loader finishes on its own; the env is gone by then
  }
  chat_templates_.Clear();
  lora_adapters_.clear();
  if (model_ != nullptr) {
    llama_model_free(model_);
    ReleaseRpcEndpoints(params_.rpc_servers);
  }
  model_ = nullptr;
  state_ = State::kDisposed;
}

void Model::BeginJob() {
  ++pending_jobs_;
  std::lock_guard<std::mutex> lock(jobs_->mutex);
  ++jobs_->running;
}

void Model::ExecuteDone() {
  {
    std::lock_guard<std::mutex> lock(jobs_->mutex);
    --jobs_->running;
  }
  jobs_->idle.notify_all();
}

void Model::EndJob(Napi::Env env) {
  --pending_jobs_;
  if (!data_->torn_down) MaybeFinishDispose(env);
}

void Model::AbandonJobs() {
  jobs_->abandoned.store(true);
  std::unique_lock<std::mutex> lock(jobs_->mutex);
  // Bounded: a job is one context creation or one tokenize/render; a queued job skips its work once abandoned.
  jobs_->idle.wait_for(lock, std::chrono::seconds(30), [this] { return jobs_->running == 0; });
}

void Model::FreeModel(Napi::Env env) {
  chat_templates_.Clear();
  {
    std::lock_guard<std::mutex> lock(lora_mutex_);
    lora_adapters_.clear();
  }
  if (external_bytes_ != 0) {
    int64_t ignored = 0;
    napi_adjust_external_memory(env, -external_bytes_, &ignored);
    external_bytes_ = 0;
  }
  if (model_ == nullptr) return;
  llama_model_free(model_);
  ReleaseRpcEndpoints(params_.rpc_servers);
  model_ = nullptr;
}

llama_model* Model::RequireLoaded(Napi::Env env) const {
  if (state_ == State::kDisposing || state_ == State::kDisposed)
    ThrowError(env, ErrorCode::kDisposed, "model is disposed");
  if (state_ != State::kLoaded || model_ == nullptr) {
    ThrowError(env, ErrorCode::kInvalidArgument, "model is not loaded: call load() first");
  }
  return model_;
}

Napi::Value Model::Load(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (state_ == State::kDisposing || state_ == State::kDisposed)
    ThrowError(env, ErrorCode::kDisposed, "model is disposed");
  if (state_ != State::kUnloaded) ThrowError(env, ErrorCode::kInvalidArgument, "load() was already called");
  Napi::Value callback = info[0];
  if (!callback.IsUndefined() && !callback.IsNull() && !callback.IsFunction()) {
    ThrowError(env, ErrorCode::kInvalidArgument, "onProgress must be a function");
  }

  auto state = std::make_shared<LoadState>(env);
  state->owner = this;
  if (callback.IsFunction()) state->on_progress = Napi::Persistent(callback.As<Napi::Function>());
  auto* keep = new std::shared_ptr<LoadState>(state);
  napi_status status =
      napi_create_threadsafe_function(env, nullptr, nullptr, Napi::String::New(env, "llamad.load"), 0, 1, keep,
                                      &FinalizeLoad, state.get(), &CallProgress, &state->tsfn);
  if (status != napi_ok) {
    delete keep;
    ThrowError(env, ErrorCode::kInternal, "cannot create the load progress function");
  }

  llama_model_params mp = llama_model_default_params();
  if (params_.n_gpu_layers.has_value()) mp.n_gpu_layers = *params_.n_gpu_layers;
  mp.load_mode = params_.use_mmap && llama_supports_mmap() ? LLAMA_LOAD_MODE_MMAP : LLAMA_LOAD_MODE_NONE;
  mp.vocab_only = params_.vocab_only;
  mp.use_extra_bufts = params_.use_extra_bufts;

  load_ = state;
  state_ = State::kLoading;
  Ref();
  (new LoadModelWorker(env, path_, mp, params_.rpc_servers, state))->Queue();
  return state->deferred.Promise();
}

void Model::FinishLoad(Napi::Env env, const std::shared_ptr<LoadState>& state) {
  llama_model* loaded = state->model;
  state->model = nullptr;
  if (data_->torn_down) {
    if (loaded != nullptr) llama_model_free(loaded);
    return;
  }
  load_.reset();
  state->owner = nullptr;
  Unref();
  if (state_ == State::kDisposing) {
    if (loaded != nullptr) llama_model_free(loaded);
    state->deferred.Reject(MakeError(env, ErrorCode::kCancelled, "model was disposed while loading").Value());
    MaybeFinishDispose(env);
    return;
  }
  if (state->abort.load()) {
    if (loaded != nullptr) llama_model_free(loaded);
    state_ = State::kUnloaded;
    state->deferred.Reject(MakeError(env, ErrorCode::kCancelled, "model load aborted").Value());
    return;
  }
  if (loaded == nullptr) {
    state_ = State::kUnloaded;
    state->deferred.Reject(MakeError(env, state->code, state->message).Value());
    return;
  }
  model_ = loaded;
  state_ = State::kLoaded;
  AcquireRpcEndpoints(params_.rpc_servers);
  external_bytes_ = static_cast<int64_t>(llama_model_size(model_));
  if (external_bytes_ != 0) {
    int64_t ignored = 0;
    napi_adjust_external_memory(env, external_bytes_, &ignored);
  }
  state->deferred.Resolve(env.Undefined());
}

Napi::Value Model::AbortLoad(const Napi::CallbackInfo& info) {
  if (load_) load_->abort.store(true);
  return info.Env().Undefined();
}

Napi::Value Model::GetLoaded(const Napi::CallbackInfo& info) {
  return Napi::Boolean::New(info.Env(), state_ == State::kLoaded);
}

Napi::Value Model::RunJob(const Napi::CallbackInfo& info, const char* name, ErrorCode fallback,
                          const std::function<void(Napi::Env)>& prepare, std::function<void()> work,
                          std::function<Napi::Value(Napi::Env)> finish) {
  Napi::Env env = info.Env();
  try {
    RequireLoaded(env);
    prepare(env);
  } catch (const Napi::Error& error) {
    Napi::Promise::Deferred deferred = Napi::Promise::Deferred::New(env);
    deferred.Reject(error.Value());
    return deferred.Promise();
  }
  return StartJob(env, info.This().As<Napi::Object>(), name, fallback, std::move(work), std::move(finish));
}

Napi::Promise Model::StartJob(Napi::Env env, Napi::Object self, const char* name, ErrorCode fallback,
                              std::function<void()> work, std::function<Napi::Value(Napi::Env)> finish) {
  Napi::Promise::Deferred deferred = Napi::Promise::Deferred::New(env);
  BeginJob();
  auto* worker = new ModelJobWorker(env, name, this, self, fallback, std::move(work), std::move(finish), deferred);
  worker->Queue();
  return deferred.Promise();
}

Napi::Value Model::Dispose(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Napi::Promise::Deferred deferred = Napi::Promise::Deferred::New(env);
  switch (state_) {
    case State::kDisposed:
      deferred.Resolve(env.Undefined());
      return deferred.Promise();
    case State::kUnloaded:
      state_ = State::kDisposed;
      data_->models.erase(this);
      deferred.Resolve(env.Undefined());
      return deferred.Promise();
    case State::kLoading:
      state_ = State::kDisposing;
      if (load_) load_->abort.store(true);
      dispose_waiters_.push_back(deferred);
      return deferred.Promise();  // FinishLoad completes the dispose
    case State::kLoaded: {
      state_ = State::kDisposing;
      dispose_waiters_.push_back(deferred);
      const std::set<Context*> children = contexts_;
      for (Context* context : children) context->BeginDispose(env);
      MaybeFinishDispose(env);
      return deferred.Promise();
    }
    case State::kDisposing:
      dispose_waiters_.push_back(deferred);
      return deferred.Promise();
  }
  return deferred.Promise();
}

void Model::OnContextGone(Napi::Env env, Context* context) {
  contexts_.erase(context);
  MaybeFinishDispose(env);
}

void Model::MaybeFinishDispose(Napi::Env env) {
  if (state_ != State::kDisposing || load_ || !contexts_.empty() || pending_jobs_ > 0) return;
  // llama_model_free runs on the libuv pool, not the JS thread: freeing even a vocab-only model (the daemon's chat
  // renderer) took 100-140 ms there, a stall for every stream at each reload (issue 32). The JS side forgets the
  // pointer now; the dispose promises settle once the pool has freed it (and released its RPC endpoints).
  llama_model* model = model_;
  std::vector<std::string> endpoints = params_.rpc_servers;
  model_ = nullptr;
  FreeModel(env);  // model_ is null: templates, adapters and the external-memory count only
  state_ = State::kDisposed;
  data_->models.erase(this);
  std::vector<Napi::Promise::Deferred> waiters;
  waiters.swap(dispose_waiters_);
  auto settle = [waiters](Napi::Env settle_env) {
    for (const Napi::Promise::Deferred& waiter : waiters) waiter.Resolve(settle_env.Undefined());
  };
  if (model == nullptr) {
    settle(env);
    return;
  }
  auto* worker = new BackgroundWorker(
      env,
      [model, endpoints] {
        llama_model_free(model);
        ReleaseRpcEndpoints(endpoints);
      },
      settle);
  worker->Queue();
}

}  // namespace llamad
