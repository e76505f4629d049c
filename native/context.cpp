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
#include "draft_context.h"
#include "errors.h"
#include "model.h"
#include "workers.h"

namespace llamad {

namespace {

// Most sequences one embedding batch may hold (inputs of >= 8 tokens still fill a 512-token batch).
constexpr uint32_t kEmbedSeqMax = 64;

// Bytes of one row of `n` elements of `type`.
int64_t RowBytes(ggml_type type, int64_t n) {
  const int64_t block = ggml_blck_size(type);
  return static_cast<int64_t>(ggml_type_size(type)) * ((n + block - 1) / block);
}

int64_t MetaInt(const llama_model* model, const std::string& key, int64_t fallback) {
  char buffer[64] = {0};
  if (llama_model_meta_val_str(model, key.c_str(), buffer, sizeof(buffer)) <= 0) return fallback;
  try {
    return std::stoll(buffer);
  } catch (...) {
    return fallback;
  }
}

// Size of the KV cache: n_ctx cells per layer, K and V rows of n_head_kv * head_dim elements.
int64_t EstimateKvBytes(const llama_model* model, uint32_t n_ctx, ggml_type type_k, ggml_type type_v) {
  char arch[64] = {0};
  llama_model_meta_val_str(model, "general.architecture", arch, sizeof(arch));
  const int64_t n_head = std::max<int64_t>(1, llama_model_n_head(model));
  const int64_t n_head_kv = llama_model_n_head_kv(model);
  const int64_t default_dim = llama_model_n_embd(model) / n_head;
  const int64_t head_k = MetaInt(model, std::string(arch) + ".attention.key_length", default_dim);
  const int64_t head_v = MetaInt(model, std::string(arch) + ".attention.value_length", default_dim);
  const int64_t per_cell = RowBytes(type_k, n_head_kv * head_k) + RowBytes(type_v, n_head_kv * head_v);
  return per_cell * static_cast<int64_t>(n_ctx) * llama_model_n_layer(model);
}

Napi::Uint8Array ToBytes(Napi::Env env, const std::string& bytes) {
  Napi::Uint8Array out = Napi::Uint8Array::New(env, bytes.size());
  if (!bytes.empty()) std::memcpy(out.Data(), bytes.data(), bytes.size());
  return out;
}

const char* EventTypeName(EngineEvent::Type type) {
  switch (type) {
    case EngineEvent::Type::kToken:
      return "token";
    case EngineEvent::Type::kDone:
      return "done";
    case EngineEvent::Type::kError:
      return "error";
    case EngineEvent::Type::kEmbed:
      return "embed";
  }
  return "error";
}

Napi::Object ToJs(Napi::Env env, const EngineEvent& event) {
  Napi::Object obj = Napi::Object::New(env);
  obj.Set("type", EventTypeName(event.type));
  obj.Set("taskId", event.task_id);
  switch (event.type) {
    case EngineEvent::Type::kToken:
      obj.Set("text", Napi::String::New(env, event.text));
      obj.Set("token", event.token);
      if (event.has_logprobs) {
        obj.Set("bytes", ToBytes(env, event.bytes));
        obj.Set("logprob", event.logprob);
        Napi::Array top = Napi::Array::New(env, event.top_logprobs.size());
        for (uint32_t i = 0; i < event.top_logprobs.size(); ++i) {
          const TokenLogprob& entry = event.top_logprobs[i];
          Napi::Object item = Napi::Object::New(env);
          item.Set("token", entry.token);
          item.Set("bytes", ToBytes(env, entry.bytes));
          item.Set("logprob", entry.logprob);
          top.Set(i, item);
        }
        obj.Set("topLogprobs", top);
      }
      break;
    case EngineEvent::Type::kDone: {
      obj.Set("reason", StopReasonName(event.reason));
      if (event.reason == StopReason::kStop) obj.Set("stopString", Napi::String::New(env, event.stop_string));
      Napi::Object timings = Napi::Object::New(env);
      timings.Set("promptN", event.timings.prompt_n);
      timings.Set("promptTotal", event.timings.prompt_total);
      timings.Set("promptNs", static_cast<double>(event.timings.prompt_ns));
      timings.Set("predictedN", event.timings.predicted_n);
      timings.Set("predictedNs", static_cast<double>(event.timings.predicted_ns));
      if (event.timings.draft_n > 0) {
        timings.Set("draftN", event.timings.draft_n);
        timings.Set("draftAcceptedN", event.timings.draft_accepted_n);
      }
      obj.Set("timings", timings);
      break;
    }
    case EngineEvent::Type::kError:
      obj.Set("code", ErrorCodeName(event.code));
      obj.Set("message", Napi::String::New(env, event.message));
      break;
    case EngineEvent::Type::kEmbed:
      break;
  }
  return obj;
}

}  // namespace

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

bool CpuThreadPools::Attach(llama_context* ctx, int32_t n_threads, int32_t n_threads_batch) {
  Free();
  ggml_threadpool_params generation = ggml_threadpool_params_default(n_threads);
  ggml_threadpool_params batch = ggml_threadpool_params_default(n_threads_batch);
  if (!ggml_threadpool_params_match(&generation, &batch)) {
    batch_ = NewCpuThreadpool(&batch);
    if (batch_ == nullptr) return false;
    generation.paused = true;  // the batch pool runs first (prompt); ggml resumes this one on its first graph
  }
  generation_ = NewCpuThreadpool(&generation);
  if (generation_ == nullptr) {
    Free();
    return false;
  }
  llama_attach_threadpool(ctx, generation_, batch_);
  return true;
}

void CpuThreadPools::AttachAlso(llama_context* ctx) const {
  if (generation_ != nullptr) llama_attach_threadpool(ctx, generation_, batch_);
}

void CpuThreadPools::Free() {
  FreeCpuThreadpool(generation_);
  FreeCpuThreadpool(batch_);
  generation_ = nullptr;
  batch_ = nullptr;
}

ContextParts::~ContextParts() {
  if (mtmd != nullptr) mtmd_free(mtmd);
  if (ctx != nullptr) llama_free(ctx);
  if (draft_ctx != nullptr) llama_free(draft_ctx);
  pools.reset();  // after llama_free of the contexts they are attached to
}

ContextPlan Context::Plan(Napi::Env env, const std::shared_ptr<AddonData>& data, Napi::Value model_value,
                          Napi::Value params_value) {
  if (!model_value.IsObject() || !model_value.As<Napi::Object>().InstanceOf(data->model_constructor.Value())) {
    ThrowError(env, ErrorCode::kInvalidArgument, "model must be a Model");
  }
  ContextPlan plan;
  plan.model = Model::Unwrap(model_value.As<Napi::Object>());
  plan.handle = plan.model->RequireLoaded(env);
  if (plan.model->vocab_only()) {
    ThrowError(env, ErrorCode::kContextCreateFailed, "cannot create a context on a model loaded with vocabOnly");
  }
  plan.params = ToContextParams(env, params_value);
  const ContextParams& params = plan.params;
  Napi::Value draft = params_value.As<Napi::Object>().Get("draftModel");
  if (!draft.IsUndefined() && !draft.IsNull()) {
    if (!draft.IsObject() || !draft.As<Napi::Object>().InstanceOf(data->model_constructor.Value())) {
      ThrowError(env, ErrorCode::kInvalidArgument, "params.draftModel must be a Model");
    }
    if (params.embeddings) {
      ThrowError(env, ErrorCode::kInvalidArgument, "params.draftModel is for generation contexts, not embeddings");
    }
    plan.draft_model = Model::Unwrap(draft.As<Napi::Object>());
    plan.draft_handle = plan.draft_model->RequireLoaded(env);
    if (plan.draft_model->vocab_only()) {
      ThrowError(env, ErrorCode::kContextCreateFailed, "the draft model is loaded with vocabOnly");
    }
  }
  if (params.n_ctx < params.n_parallel) {
    ThrowError(env, ErrorCode::kInvalidArgument, "params.nCtx must be at least params.nParallel");
  }
  if (params.n_parallel > llama_max_parallel_sequences()) {
    ThrowError(env, ErrorCode::kInvalidArgument,
               "params.nParallel exceeds " + std::to_string(llama_max_parallel_sequences()));
  }

  llama_context_params& cp = plan.cp;
  cp = llama_context_default_params();
  cp.n_ctx = params.n_ctx;
  cp.n_batch = params.n_batch.value_or(512);
  cp.n_ubatch = std::min(params.n_ubatch.value_or(cp.n_batch), cp.n_batch);
  if (params.embeddings) {
    cp.embeddings = true;
    cp.pooling_type = params.pooling;
    cp.n_ubatch = cp.n_batch;  // non-causal models need a whole sequence in one ubatch
  }
  // An embedding context runs one embed job at a time and clears its memory before each batch, so it packs as many
  // whole inputs into one llama_decode as n_batch allows (up to kEmbedSeqMax sequences) over one unified KV stream;
  // its slots are never used for generation (submit() refuses embedding contexts).
  cp.n_seq_max = params.embeddings
                     ? std::max(params.n_parallel, std::min<uint32_t>(kEmbedSeqMax, llama_max_parallel_sequences()))
                     : params.n_parallel;
  const int32_t hardware = static_cast<int32_t>(std::max(1u, std::thread::hardware_concurrency()));
  cp.n_threads = params.n_threads.value_or(hardware);
  cp.n_threads_batch = params.n_threads_batch.value_or(cp.n_threads);
  cp.flash_attn_type = params.flash_attn;
  cp.type_k = params.type_k;
  cp.type_v = params.type_v;
  // Generation: one KV stream per slot, each slot gets n_ctx / n_parallel cells; or (kvUnified, llama-server's
  // `-np -1` auto mode) one stream of n_ctx cells that the slots share, handed out by the engine (Engine's cell
  // budget, docs/native.md "Parallel slots").
  cp.kv_unified = params.embeddings || params.kv_unified;
  cp.no_perf = true;
  return plan;
}

std::unique_ptr<ContextParts> Context::Build(const ContextPlan& plan) {
  const ContextParams& params = plan.params;
  const llama_context_params& cp = plan.cp;
  auto parts = std::make_unique<ContextParts>();
  parts->ctx = llama_init_from_model(plan.handle, cp);
  if (parts->ctx == nullptr) {
    throw LlamaError(ErrorCode::kContextCreateFailed,
                     "llama_init_from_model failed (out of memory, or an unsupported combination such as a quantized "
                     "V cache without flash attention)");
  }
  // Best effort: without pools ggml still computes, with a thread start-up per graph.
  parts->pools = std::make_unique<CpuThreadPools>();
  if (params.n_threads_max.has_value()) {
    // Pools sized for the most threads setThreads may ask for; each graph then runs on the current count.
    const int32_t pool = std::max({*params.n_threads_max, cp.n_threads, cp.n_threads_batch});
    parts->pools->Attach(parts->ctx, pool, pool);
    llama_set_n_threads(parts->ctx, cp.n_threads, cp.n_threads_batch);
  } else {
    parts->pools->Attach(parts->ctx, cp.n_threads, cp.n_threads_batch);
  }
  if (plan.draft_handle != nullptr) {
    parts->draft_ctx = CreateDraftContext(plan.handle, plan.draft_handle, cp);
    parts->pools->AttachAlso(parts->draft_ctx);
    if (params.n_threads_max.has_value()) llama_set_n_threads(parts->draft_ctx, cp.n_threads, cp.n_threads_batch);
  }
  if (!params.lora_adapters.empty()) {
    // Load (or reuse the model's cached) adapters, then attach them to this context only.
    std::vector<llama_adapter_lora*> adapters;
    std::vector<float> scales;
    for (const LoraAdapterParam& entry : params.lora_adapters) {
      adapters.push_back(plan.model->LoraAdapter(plan.handle, entry.path));
      scales.push_back(entry.scale);
    }
    const int32_t rc = llama_set_adapters_lora(parts->ctx, adapters.data(), adapters.size(), scales.data());
    if (rc != 0) {
      throw LlamaError(ErrorCode::kModelLoadFailed, "llama_set_adapters_lora failed with status " + std::to_string(rc) +
                                                        " for " + params.lora_adapters.front().path);
    }
  }
  if (!params.projector_path.empty()) {
    mtmd_context_params mp = mtmd_context_params_default();
    mp.n_threads = cp.n_threads_batch;
    mp.print_timings = false;
    mp.warmup = false;
    mp.flash_attn_type = cp.flash_attn_type;
    try {
      parts->mtmd = mtmd_init_from_file(params.projector_path.c_str(), plan.handle, mp);
    } catch (...) {
      parts->mtmd = nullptr;  // clip throws on malformed files; reported below
    }
    if (parts->mtmd == nullptr) {
      throw LlamaError(ErrorCode::kModelLoadFailed,
                       "cannot load the projector " + params.projector_path +
                           " (missing file, not an mmproj GGUF, or its embedding size does not match the model)");
    }
  }
  // Buffer sizes are final after llama_init_from_model (compute buffers reserved); read before the engine owns ctx.
  parts->memory = QueryMemoryBreakdown(parts->ctx);
  if (parts->draft_ctx != nullptr) {
    // The draft model's weights and context count as this context's: one entry per buffer type, summed.
    for (const MemoryEntry& extra : QueryMemoryBreakdown(parts->draft_ctx)) {
      auto same = std::find_if(parts->memory.begin(), parts->memory.end(),
                               [&](const MemoryEntry& e) { return e.buffer == extra.buffer; });
      if (same == parts->memory.end()) {
        parts->memory.push_back(extra);
      } else {
        same->model += extra.model;
        same->context += extra.context;
        same->compute += extra.compute;
      }
    }
  }
  return parts;
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
        if (job->plan.model->disposing() ||
            (job->plan.draft_model != nullptr && job->plan.draft_model->disposing())) {
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
      callback.Call({ToJs(env, event)});
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
  out.Set("draftTokens", static_cast<double>(stats.draft_tokens));
  out.Set("draftAccepted", static_cast<double>(stats.draft_accepted));
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
  auto* worker = new BackgroundWorker(env, [this] { StopAndFree(); }, [this](Napi::Env) { sink_->Release(); });
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
