#include "context.h"

#include <algorithm>
#include <cstring>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "backend_api.h"
#include "convert.h"
#include "errors.h"
#include "event_js.h"
#include "model.h"
#include "workers.h"

namespace llamad {

Napi::Function Context::Init(Napi::Env env) {
  return DefineClass(env, "Context",
                     {
                         InstanceMethod<&Context::Submit>("submit"),
                         InstanceMethod<&Context::Cancel>("cancel"),
                         InstanceMethod<&Context::Stats>("stats"),
                         InstanceMethod<&Context::Memory>("memory"),
                         InstanceMethod<&Context::SetThreads>("setThreads"),
                         InstanceMethod<&Context::Embed>("embed"),
                         InstanceMethod<&Context::Dispose>("dispose"),
                         StaticMethod<&Context::Create>("create"),
                     });
}

Context::Context(const Napi::CallbackInfo& info) : Napi::ObjectWrap<Context>(info), data_(AddonData::Get(info.Env())) {
  Napi::Env env = info.Env();
  if (info[1].IsExternal()) {
    // From Context.create(): the parts were built on the pool (JS code cannot make an External).
    ContextCreateJob* job = info[1].As<Napi::External<ContextCreateJob>>().Data();
    Adopt(env, info[0].As<Napi::Object>(), job->plan, std::move(job->parts));
    return;
  }
  const ContextPlan plan = Plan(env, data_, info[0], info[1]);
  std::unique_ptr<ContextParts> parts =
      GuardJs(env, ErrorCode::kContextCreateFailed, "new Context", [&] { return Build(plan); });
  Adopt(env, info[0].As<Napi::Object>(), plan, std::move(parts));
}

void Context::Adopt(Napi::Env env, Napi::Object model_object, const ContextPlan& plan,
                    std::unique_ptr<ContextParts> parts) {
  const ContextParams& params = plan.params;
  try {
    sink_ = EventSink::Create(
        env, "llamad.context", [this](Napi::Env e, std::vector<EngineEvent>& events) { Dispatch(e, events); },
        [this](Napi::Env e) { OnSinkFinalized(e); });
    sink_->Unref(env);
    std::shared_ptr<EventSink> sink = sink_;
    // A unified cache lets every slot grow to the whole context; the engine shares its cells out (shared_cells). An
    // embedding context clears its cache per batch: its inputs may then use all n_ctx, nothing to share out.
    const bool shared_cells = params.kv_unified && !params.embeddings;
    EngineOptions options;
    options.mtmd = parts->mtmd;
    options.rpc_servers = plan.model->rpc_servers();
    options.shared_cells = shared_cells;
    options.cache_ram_bytes = params.embeddings ? 0 : params.cache_ram_bytes;
    options.draft_ctx = parts->draft_ctx;
    engine_ = std::make_unique<Engine>(
        parts->ctx, static_cast<int32_t>(params.kv_unified ? params.n_ctx : params.n_ctx / params.n_parallel),
        [sink](std::vector<EngineEvent>&& events) { sink->Post(std::move(events)); }, std::move(options));
    parts->mtmd = nullptr;  // owned by the engine now
  } catch (...) {
    if (sink_) {
      sink_->Detach();
      sink_->Release();
    }
    ErrorInfo error = DescribeException(std::current_exception(), ErrorCode::kContextCreateFailed, "new Context");
    throw MakeError(env, error.code, error.message);  // `parts` frees the context
  }
  ctx_ = parts->ctx;
  draft_ctx_ = parts->draft_ctx;
  memory_ = std::move(parts->memory);
  parts->ctx = nullptr;
  parts->draft_ctx = nullptr;
  thread_pools_ = std::move(parts->pools);
  embeddings_ = params.embeddings;
  flash_attn_ = plan.cp.flash_attn_type;
  n_ctx_ = llama_n_ctx(ctx_);
  n_ctx_slot_ = static_cast<uint32_t>(engine_->n_ctx_slot());
  n_parallel_ = params.embeddings ? params.n_parallel : static_cast<uint32_t>(engine_->n_slots());
  kv_bytes_ = EstimateKvBytes(plan.handle, n_ctx_, params.type_k, params.type_v);
  if (kv_bytes_ > 0) {
    int64_t ignored = 0;
    napi_adjust_external_memory(env, kv_bytes_, &ignored);
  }
  model_ = plan.model;
  model_ref_ = Napi::Persistent(model_object);
  model_->AddContext(this);
  if (plan.draft_model != nullptr) {
    draft_model_ = plan.draft_model;
    draft_model_ref_ = Napi::Persistent(draft_model_->Value());
    draft_model_->AddContext(this);
  }
  data_->contexts.insert(this);
}

Napi::Value Context::Create(const Napi::CallbackInfo& info) {
  // Every failure rejects the promise (binding.d.ts): nothing is thrown synchronously.
  Napi::Env env = info.Env();
  std::shared_ptr<AddonData> data = AddonData::Get(env);
  auto job = std::make_shared<ContextCreateJob>();
  // Plan() checks the model argument first: StartJob needs a Model to count the job on.
  try {
    job->plan = Plan(env, data, info[0], info[1]);
  } catch (const Napi::Error& error) {
    Napi::Promise::Deferred failed = Napi::Promise::Deferred::New(env);
    failed.Reject(error.Value());
    return failed.Promise();
  }
  Model* model = job->plan.model;
  if (job->plan.draft_model != nullptr) {
    // The draft model must outlive the build as the model does: its dispose() waits for this job.
    job->plan.draft_model->BeginJob();
    job->draft_job_env = env;
  }
  return model->StartJob(
      env, info[0].As<Napi::Object>(), "Context.create", ErrorCode::kContextCreateFailed,
      [job] { job->parts = Build(job->plan); },
      [job, data](Napi::Env e) -> Napi::Value {
        if (job->plan.model->disposing() || (job->plan.draft_model != nullptr && job->plan.draft_model->disposing())) {
          job->parts.reset();  // before the model can be freed
          ThrowError(e, ErrorCode::kDisposed, "model was disposed while the context was being created");
        }
        try {
          return data->context_constructor.New(
              {job->plan.model->Value(), Napi::External<ContextCreateJob>::New(e, job.get())});
        } catch (...) {
          job->parts.reset();
          throw;
        }
      });
}

ContextCreateJob::~ContextCreateJob() {
  if (draft_job_env == nullptr) return;
  parts.reset();  // its draft context before the draft model may be freed
  plan.draft_model->ExecuteDone();
  plan.draft_model->EndJob(Napi::Env(draft_job_env));
}

Context::~Context() {
  if (data_->torn_down) {
    if (sink_) sink_->Detach();
    return;
  }
  if (state_ == State::kActive) {
    StopAndFree();  // blocks for at most one decode step: the engine aborts llama_decode when asked to stop
    sink_->Detach();
    sink_->Release();
    if (kv_bytes_ > 0) {
      int64_t ignored = 0;
      napi_adjust_external_memory(Env(), -kv_bytes_, &ignored);
    }
    if (model_ != nullptr) model_->OnContextGone(Env(), this);
    if (draft_model_ != nullptr) draft_model_->OnContextGone(Env(), this);
  }
  data_->contexts.erase(this);
}

void Context::ReleaseNative() {
  StopAndFree();
  if (sink_) sink_->Detach();
  state_ = State::kDisposed;
}

void Context::StopAndFree() {
  std::lock_guard<std::mutex> lock(native_mutex_);
  if (engine_) {
    engine_->RequestStop();
    engine_->Join();
    engine_.reset();
  }
  if (ctx_ != nullptr) {
    llama_free(ctx_);
    ctx_ = nullptr;
  }
  if (draft_ctx_ != nullptr) {
    llama_free(draft_ctx_);
    draft_ctx_ = nullptr;
  }
  thread_pools_.reset();
}

void Context::RequireActive(Napi::Env env) const {
  if (state_ != State::kActive) ThrowError(env, ErrorCode::kDisposed, "context is disposed");
}

Napi::Value Context::Submit(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  RequireActive(env);
  if (embeddings_) {
    ThrowError(env, ErrorCode::kInvalidArgument, "submit() is not available on an embedding context: use embed()");
  }
  TaskParams params = ToTaskParams(env, info[0]);
  if (!info[1].IsFunction()) ThrowError(env, ErrorCode::kInvalidArgument, "onEvent must be a function");
  for (TaskLora& lora : params.loras) {
    // Loaded beforehand off the JS thread (Model.loadLora); the task holds it until it ends.
    lora.handle = model_->FindLora(lora.path);
    if (!lora.handle) {
      ThrowError(env, ErrorCode::kInvalidArgument, "LoRA adapter " + lora.path + " is not loaded (Model.loadLora)");
    }
  }
  const uint32_t id =
      GuardJs(env, ErrorCode::kInvalidArgument, "submit", [&] { return engine_->Submit(std::move(params)); });
  callbacks_.emplace(id, Napi::Persistent(info[1].As<Napi::Function>()));
  BeginInFlight(env);
  return Napi::Number::New(env, id);
}

void Context::BeginInFlight(Napi::Env env) {
  if (in_flight_++ == 0) {
    sink_->Ref(env);
    Ref();
  }
}

void Context::EndInFlight(Napi::Env env) {
  if (--in_flight_ == 0) {
    if (state_ == State::kActive) sink_->Unref(env);
    Unref();
  }
}

Napi::Value Context::Embed(const Napi::CallbackInfo& info) {
  // Every failure rejects the promise (binding.d.ts): nothing is thrown synchronously.
  Napi::Env env = info.Env();
  Napi::Promise::Deferred deferred = Napi::Promise::Deferred::New(env);
  try {
    StartEmbed(info, deferred);
  } catch (const Napi::Error& error) {
    deferred.Reject(error.Value());
  }
  return deferred.Promise();
}

void Context::StartEmbed(const Napi::CallbackInfo& info, Napi::Promise::Deferred& deferred) {
  Napi::Env env = info.Env();
  RequireActive(env);
  if (!embeddings_) {
    ThrowError(env, ErrorCode::kInvalidArgument,
               "embed() needs an embedding context (new Context(model, { embeddings: true }))");
  }
  if (!info[0].IsArray()) ThrowError(env, ErrorCode::kInvalidArgument, "inputs must be an array of Int32Array");
  Napi::Array array = info[0].As<Napi::Array>();
  std::vector<std::vector<llama_token>> inputs;
  inputs.reserve(array.Length());
  for (uint32_t i = 0; i < array.Length(); ++i) inputs.push_back(ToTokens(env, array.Get(i), "inputs[i]"));
  const bool has_on_job = !info[1].IsUndefined() && !info[1].IsNull();
  if (has_on_job && !info[1].IsFunction()) ThrowError(env, ErrorCode::kInvalidArgument, "onJobId must be a function");
  if (inputs.empty()) {
    deferred.Resolve(Napi::Array::New(env));
    return;
  }
  const uint32_t id =
      GuardJs(env, ErrorCode::kInvalidArgument, "embed", [&] { return engine_->SubmitEmbed(std::move(inputs)); });
  if (has_on_job) {
    try {
      info[1].As<Napi::Function>().Call({Napi::Number::New(env, id)});
    } catch (...) {
      engine_->Cancel(id);  // no waiter yet: the job's final event is dropped by Dispatch
      throw;
    }
  }
  embed_waiters_.emplace(id, deferred);
  BeginInFlight(env);
}

void Context::SettleEmbed(Napi::Env env, const EngineEvent& event, Napi::Promise::Deferred& deferred) {
  if (event.type == EngineEvent::Type::kError) {
    deferred.Reject(MakeError(env, event.code, event.message).Value());
    return;
  }
  const size_t n_embd = static_cast<size_t>(event.n_embd);
  const size_t count = n_embd > 0 ? event.embeddings.size() / n_embd : 0;
  Napi::Array out = Napi::Array::New(env, count);
  for (size_t i = 0; i < count; ++i) {
    Napi::Float32Array vector = Napi::Float32Array::New(env, n_embd);
    std::memcpy(vector.Data(), event.embeddings.data() + i * n_embd, n_embd * sizeof(float));
    out.Set(static_cast<uint32_t>(i), vector);
  }
  deferred.Resolve(out);
}

void Context::Dispatch(Napi::Env env, std::vector<EngineEvent>& events) {
  std::optional<Napi::Error> first_error;
  for (const EngineEvent& event : events) {
    auto waiter = embed_waiters_.find(event.task_id);
    if (waiter != embed_waiters_.end()) {
      Napi::HandleScope scope(env);
      Napi::Promise::Deferred deferred = waiter->second;
      embed_waiters_.erase(waiter);
      try {
        SettleEmbed(env, event, deferred);
      } catch (const Napi::Error& error) {
        deferred.Reject(error.Value());
      }
      EndInFlight(env);
      continue;
    }
    auto it = callbacks_.find(event.task_id);
    if (it == callbacks_.end()) continue;
    Napi::HandleScope scope(env);
    const bool final = event.type != EngineEvent::Type::kToken;
    Napi::Function callback = it->second.Value();
    if (final) callbacks_.erase(it);  // `callback` stays valid in this scope
    try {
      callback.Call({EngineEventToJs(env, event)});
    } catch (const Napi::Error& error) {
      if (!first_error) first_error = error;
    }
    if (final) EndInFlight(env);
  }
  // A throwing callback is an uncaught exception, as it would be for a JS event emitter; the other events of the
  // batch were still delivered.
  if (first_error) napi_fatal_exception(env, first_error->Value());
}

Napi::Value Context::Cancel(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  RequireActive(env);
  if (!info[0].IsNumber()) ThrowError(env, ErrorCode::kInvalidArgument, "taskId must be a number");
  const double id = info[0].As<Napi::Number>().DoubleValue();
  if (id >= 0 && id <= 4294967295.0 && id == static_cast<double>(static_cast<uint32_t>(id))) {
    engine_->Cancel(static_cast<uint32_t>(id));
  }
  return env.Undefined();
}

Napi::Value Context::Stats(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  RequireActive(env);
  const EngineStats stats = engine_->Stats();
  Napi::Object out = Napi::Object::New(env);
  out.Set("nCtx", n_ctx_);
  out.Set("nCtxSlot", n_ctx_slot_);
  out.Set("nParallel", n_parallel_);
  out.Set("activeSlots", stats.active_slots);
  out.Set("queuedTasks", stats.queued_tasks);
  out.Set("embedJobs", stats.embed_jobs);
  out.Set("decodeSteps", stats.decode_steps);
  out.Set("graphsReused", stats.graphs_reused);
  out.Set("kvSize", static_cast<double>(kv_bytes_));
  out.Set("kvUnified", engine_->shared_cells());
  out.Set("kvCellsUsed", stats.cells_used);
  out.Set("kvCellsCached", stats.cells_cached);
  out.Set("pausedSlots", stats.paused_slots);
  out.Set("ramCacheEntries", stats.ram_cache_entries);
  out.Set("ramCacheBytes", static_cast<double>(stats.ram_cache_bytes));
  out.Set("ramCacheHits", static_cast<double>(stats.ram_cache_hits));
  out.Set("ramCacheTokens", static_cast<double>(stats.ram_cache_tokens));
  out.Set("nThreads", stats.n_threads);
  out.Set("flashAttn", FlashAttnName(flash_attn_));
  out.Set("draftTokens", static_cast<double>(stats.draft_tokens));
  out.Set("draftAccepted", static_cast<double>(stats.draft_accepted));
  out.Set("projectorVision", engine_->supports_vision());
  out.Set("projectorAudio", engine_->supports_audio());
  return out;
}

Napi::Value Context::SetThreads(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  RequireActive(env);
  const auto read = [&](size_t index, const char* name) -> int32_t {
    if (!info[index].IsNumber()) ThrowError(env, ErrorCode::kInvalidArgument, std::string(name) + " must be a number");
    const double value = info[index].As<Napi::Number>().DoubleValue();
    if (!(value >= 1 && value <= 1024) || value != static_cast<double>(static_cast<int32_t>(value))) {
      ThrowError(env, ErrorCode::kInvalidArgument, std::string(name) + " must be an integer in [1, 1024]");
    }
    return static_cast<int32_t>(value);
  };
  const int32_t n_threads = read(0, "nThreads");
  const int32_t n_threads_batch = info[1].IsUndefined() ? n_threads : read(1, "nThreadsBatch");
  engine_->SetThreads(n_threads, n_threads_batch);
  return env.Undefined();
}

Napi::Value Context::Memory(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  RequireActive(env);
  Napi::Array out = Napi::Array::New(env, memory_.size());
  for (uint32_t i = 0; i < memory_.size(); ++i) {
    const MemoryEntry& entry = memory_[i];
    Napi::Object item = Napi::Object::New(env);
    item.Set("buffer", entry.buffer);
    item.Set("device", entry.device);
    item.Set("host", entry.host);
    item.Set("endpoint", entry.endpoint);
    item.Set("deviceType", entry.device_type);
    item.Set("model", static_cast<double>(entry.model));
    item.Set("context", static_cast<double>(entry.context));
    item.Set("compute", static_cast<double>(entry.compute));
    out.Set(i, item);
  }
  return out;
}

Napi::Value Context::Dispose(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Napi::Promise::Deferred deferred = Napi::Promise::Deferred::New(env);
  if (state_ == State::kDisposed) {
    deferred.Resolve(env.Undefined());
  } else {
    dispose_waiters_.push_back(deferred);
    BeginDispose(env);
  }
  return deferred.Promise();
}

void Context::BeginDispose(Napi::Env env) {
  if (state_ != State::kActive) return;
  state_ = State::kDisposing;
  sink_->Ref(env);  // keep the loop alive until the last event and the promise are delivered
  Ref();
  {
    std::lock_guard<std::mutex> lock(native_mutex_);
    if (engine_) engine_->RequestStop();
  }
  // Join and llama_free off the JS thread; then release the sink: it finalizes once every queued event was
  // dispatched, and OnSinkFinalized settles the promise.
  auto* worker = new BackgroundWorker(
      env, [this] { StopAndFree(); }, [this](Napi::Env) { sink_->Release(); });
  worker->Queue();
}

void Context::OnSinkFinalized(Napi::Env env) {
  if (data_->torn_down) return;
  state_ = State::kDisposed;
  callbacks_.clear();
  for (auto& entry : embed_waiters_) {
    entry.second.Reject(MakeError(env, ErrorCode::kDisposed, "context is disposed").Value());
  }
  embed_waiters_.clear();
  if (in_flight_ > 0) {
    in_flight_ = 0;
    Unref();
  }
  if (kv_bytes_ > 0) {
    int64_t ignored = 0;
    napi_adjust_external_memory(env, -kv_bytes_, &ignored);
    kv_bytes_ = 0;
  }
  data_->contexts.erase(this);
  if (model_ != nullptr) {
    Model* model = model_;
    model_ = nullptr;
    model->OnContextGone(env, this);
  }
  model_ref_.Reset();
  if (draft_model_ != nullptr) {
    Model* draft = draft_model_;
    draft_model_ = nullptr;
    draft->OnContextGone(env, this);
  }
  draft_model_ref_.Reset();
  std::vector<Napi::Promise::Deferred> waiters;
  waiters.swap(dispose_waiters_);
  for (Napi::Promise::Deferred& waiter : waiters) waiter.Resolve(env.Undefined());
  Unref();  // balances BeginDispose
}

}  // namespace llamad
