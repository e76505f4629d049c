// Creating a context: the JS arguments checked and turned into llama_context parameters (Context::Plan, JS thread),
// then the llama_context, its thread pools, projector and draft model's context built (Context::Build,
// any thread).
#include <algorithm>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "backend_api.h"
#include "context.h"
#include "convert.h"
#include "draft_context.h"
#include "errors.h"
#include "model.h"

namespace llamad {

namespace {

// Most sequences one embedding batch may hold (inputs of >= 8 tokens still fill a 512-token batch).
constexpr uint32_t kEmbedSeqMax = 64;

}  // namespace

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

namespace {

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

// Whether every layer of `model` runs on this machine's CPU: no RPC workers, and no layer offloaded (nGpuLayers 0, or
// no GPU device registered, as in a CUDA build on a machine without the GPU).
bool RunsOnCpu(const Model& model) {
  if (!model.rpc_servers().empty()) return false;
  if (model.n_gpu_layers().value_or(-1) == 0) return true;
  for (size_t i = 0; i < ggml_backend_dev_count(); ++i) {
    const enum ggml_backend_dev_type type = ggml_backend_dev_type(ggml_backend_dev_get(i));
    if (type == GGML_BACKEND_DEVICE_TYPE_GPU || type == GGML_BACKEND_DEVICE_TYPE_IGPU) return false;
  }
  return true;
}

}  // namespace

bool FlashAttnGroupsQueryHeads(const llama_model* model) {
  const int32_t n_head = llama_model_n_head(model);
  const int32_t n_head_kv = llama_model_n_head_kv(model);
  if (n_head_kv <= 0 || n_head % n_head_kv != 0) return false;
  const int32_t group = n_head / n_head_kv;
  return group >= 2 && group <= kFlashAttnGroupMax;
}

llama_flash_attn_type ResolveFlashAttn(const ContextParams& params, const Model& model) {
  if (params.flash_attn != LLAMA_FLASH_ATTN_TYPE_AUTO || params.embeddings || ggml_is_quantized(params.type_v)) {
    return params.flash_attn;
  }
  if (!RunsOnCpu(model)) return LLAMA_FLASH_ATTN_TYPE_AUTO;
  const bool grouped = !ggml_is_quantized(params.type_k) && FlashAttnGroupsQueryHeads(model.handle());
  return grouped ? LLAMA_FLASH_ATTN_TYPE_ENABLED : LLAMA_FLASH_ATTN_TYPE_DISABLED;
}

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

const char* FlashAttnName(llama_flash_attn_type type) {
  if (type == LLAMA_FLASH_ATTN_TYPE_AUTO) return "auto";
  return type == LLAMA_FLASH_ATTN_TYPE_ENABLED ? "on" : "off";
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
  cp.flash_attn_type = ResolveFlashAttn(params, *plan.model);
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
  if (!params.projector_path.empty()) {
    mtmd_context_params mp = mtmd_context_params_default();
    mp.n_threads = cp.n_threads_batch;
    mp.print_timings = false;
    mp.warmup = false;
    mp.flash_attn_type = params.flash_attn;  // the encoder's batches are whole images: llama.cpp's own choice
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

}  // namespace llamad
