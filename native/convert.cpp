#include "convert.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "errors.h"
#include "ggml-rpc.h"
#include "rpc.h"

namespace llamad {

namespace {

[[noreturn]] void Invalid(Napi::Env env, const std::string& message) {
  ThrowError(env, ErrorCode::kInvalidArgument, message);
}

bool IsMissing(const Napi::Value& value) { return value.IsUndefined() || value.IsNull(); }

double ToNumber(Napi::Env env, Napi::Value value, const std::string& name) {
  if (!value.IsNumber()) Invalid(env, name + " must be a number");
  const double number = value.As<Napi::Number>().DoubleValue();
  if (!std::isfinite(number)) Invalid(env, name + " must be finite");
  return number;
}

int64_t ToInteger(Napi::Env env, Napi::Value value, const std::string& name, int64_t min, int64_t max) {
  const double number = ToNumber(env, value, name);
  if (std::trunc(number) != number) Invalid(env, name + " must be an integer");
  if (number < static_cast<double>(min) || number > static_cast<double>(max)) {
    Invalid(env, name + " must be in [" + std::to_string(min) + ", " + std::to_string(max) + "]");
  }
  return static_cast<int64_t>(number);
}

Napi::Object ToObject(Napi::Env env, Napi::Value value, const std::string& name) {
  if (!value.IsObject() || value.IsArray() || value.IsFunction()) Invalid(env, name + " must be an object");
  return value.As<Napi::Object>();
}

float RequiredFloat(Napi::Env env, const Napi::Object& obj, const char* key, const std::string& prefix) {
  return static_cast<float>(ToNumber(env, obj.Get(key), prefix + key));
}

int64_t RequiredInt(Napi::Env env, const Napi::Object& obj, const char* key, const std::string& prefix, int64_t min,
                    int64_t max) {
  return ToInteger(env, obj.Get(key), prefix + key, min, max);
}

template <typename T>
std::optional<T> OptionalInt(Napi::Env env, const Napi::Object& obj, const char* key, const std::string& prefix,
                             int64_t min, int64_t max) {
  Napi::Value value = obj.Get(key);
  if (IsMissing(value)) return std::nullopt;
  return static_cast<T>(ToInteger(env, value, prefix + key, min, max));
}

ggml_type ToKvType(Napi::Env env, Napi::Value value, const std::string& name) {
  if (IsMissing(value)) return GGML_TYPE_F16;
  const std::string type = ToString(env, value, name.c_str());
  if (type == "f16") return GGML_TYPE_F16;
  if (type == "f32") return GGML_TYPE_F32;
  if (type == "bf16") return GGML_TYPE_BF16;
  if (type == "q8_0") return GGML_TYPE_Q8_0;
  if (type == "q4_0") return GGML_TYPE_Q4_0;
  if (type == "q4_1") return GGML_TYPE_Q4_1;
  if (type == "q5_0") return GGML_TYPE_Q5_0;
  if (type == "q5_1") return GGML_TYPE_Q5_1;
  Invalid(env, name + " must be one of f16, f32, bf16, q8_0, q4_0, q4_1, q5_0, q5_1 (got \"" + type + "\")");
}

}  // namespace

std::string ToString(Napi::Env env, Napi::Value value, const char* name) {
  if (!value.IsString()) Invalid(env, std::string(name) + " must be a string");
  return value.As<Napi::String>().Utf8Value();
}

bool ToOptionalBool(Napi::Env env, Napi::Value value, const char* name, bool fallback) {
  if (IsMissing(value)) return fallback;
  if (!value.IsBoolean()) Invalid(env, std::string(name) + " must be a boolean");
  return value.As<Napi::Boolean>().Value();
}

std::vector<llama_token> ToTokens(Napi::Env env, Napi::Value value, const char* name) {
  if (!value.IsTypedArray() || value.As<Napi::TypedArray>().TypedArrayType() != napi_int32_array) {
    Invalid(env, std::string(name) + " must be an Int32Array");
  }
  Napi::Int32Array array = value.As<Napi::Int32Array>();
  return std::vector<llama_token>(array.Data(), array.Data() + array.ElementLength());
}

ModelParams ToModelParams(Napi::Env env, Napi::Value value) {
  ModelParams params;
  if (IsMissing(value)) return params;
  Napi::Object obj = ToObject(env, value, "params");
  params.n_gpu_layers =
      OptionalInt<int32_t>(env, obj, "nGpuLayers", "params.", -1, std::numeric_limits<int32_t>::max());
  params.use_mmap = ToOptionalBool(env, obj.Get("useMmap"), "params.useMmap", true);
  params.vocab_only = ToOptionalBool(env, obj.Get("vocabOnly"), "params.vocabOnly", false);
  params.use_extra_bufts = ToOptionalBool(env, obj.Get("useExtraBufferTypes"), "params.useExtraBufferTypes", true);
  Napi::Value rpc = obj.Get("rpcServers");
  if (!IsMissing(rpc)) {
    if (!rpc.IsArray()) ThrowError(env, ErrorCode::kInvalidArgument, "params.rpcServers must be an array of strings");
    Napi::Array list = rpc.As<Napi::Array>();
    for (uint32_t i = 0; i < list.Length(); ++i) {
      const std::string endpoint = ToString(env, list.Get(i), "params.rpcServers[i]");
      if (!IsRpcEndpoint(endpoint)) {
        ThrowError(env, ErrorCode::kInvalidArgument,
                   "params.rpcServers: \"" + endpoint + "\" is not a host:port endpoint (IPv4 address or host name)");
      }
      if (std::find(params.rpc_servers.begin(), params.rpc_servers.end(), endpoint) != params.rpc_servers.end()) {
        ThrowError(env, ErrorCode::kInvalidArgument, "params.rpcServers: \"" + endpoint + "\" is listed twice");
      }
      params.rpc_servers.push_back(endpoint);
    }
    if (params.rpc_servers.size() > GGML_RPC_MAX_SERVERS) {
      ThrowError(env, ErrorCode::kInvalidArgument,
                 "params.rpcServers: at most " + std::to_string(GGML_RPC_MAX_SERVERS) + " workers");
    }
  }
  return params;
}

ContextParams ToContextParams(Napi::Env env, Napi::Value value) {
  ContextParams params;
  Napi::Object obj = ToObject(env, value, "params");
  const std::string p = "params.";
  constexpr int64_t kMaxTokens = 1 << 24;
  params.n_ctx = static_cast<uint32_t>(RequiredInt(env, obj, "nCtx", p, 1, kMaxTokens));
  params.n_batch = OptionalInt<uint32_t>(env, obj, "nBatch", p, 1, kMaxTokens);
  params.n_ubatch = OptionalInt<uint32_t>(env, obj, "nUbatch", p, 1, kMaxTokens);
  params.n_parallel = OptionalInt<uint32_t>(env, obj, "nParallel", p, 1, 256).value_or(1);
  params.n_threads = OptionalInt<int32_t>(env, obj, "nThreads", p, 1, 1024);
  params.n_threads_batch = OptionalInt<int32_t>(env, obj, "nThreadsBatch", p, 1, 1024);
  params.n_threads_max = OptionalInt<int32_t>(env, obj, "nThreadsMax", p, 1, 1024);
  params.kv_unified = ToOptionalBool(env, obj.Get("kvUnified"), "params.kvUnified", false);
  constexpr int64_t kMaxSafeInteger = (int64_t{1} << 53) - 1;
  params.cache_ram_bytes = OptionalInt<size_t>(env, obj, "cacheRamBytes", p, 0, kMaxSafeInteger).value_or(0);
  Napi::Value flash = obj.Get("flashAttn");
  if (!IsMissing(flash)) {
    const std::string mode = ToString(env, flash, "params.flashAttn");
    if (mode == "auto") {
      params.flash_attn = LLAMA_FLASH_ATTN_TYPE_AUTO;
    } else if (mode == "on") {
      params.flash_attn = LLAMA_FLASH_ATTN_TYPE_ENABLED;
    } else if (mode == "off") {
      params.flash_attn = LLAMA_FLASH_ATTN_TYPE_DISABLED;
    } else {
      Invalid(env, "params.flashAttn must be 'auto', 'on' or 'off'");
    }
  }
  params.type_k = ToKvType(env, obj.Get("typeK"), "params.typeK");
  params.type_v = ToKvType(env, obj.Get("typeV"), "params.typeV");
  Napi::Value projector = obj.Get("projectorPath");
  if (!IsMissing(projector)) params.projector_path = ToString(env, projector, "params.projectorPath");
  params.embeddings = ToOptionalBool(env, obj.Get("embeddings"), "params.embeddings", false);
  Napi::Value pooling = obj.Get("poolingType");
  if (!IsMissing(pooling)) {
    const std::string type = ToString(env, pooling, "params.poolingType");
    if (type == "none") {
      params.pooling = LLAMA_POOLING_TYPE_NONE;
    } else if (type == "mean") {
      params.pooling = LLAMA_POOLING_TYPE_MEAN;
    } else if (type == "cls") {
      params.pooling = LLAMA_POOLING_TYPE_CLS;
    } else if (type == "last") {
      params.pooling = LLAMA_POOLING_TYPE_LAST;
    } else if (type == "rank") {
      params.pooling = LLAMA_POOLING_TYPE_RANK;
    } else {
      Invalid(env, "params.poolingType must be 'none', 'mean', 'cls', 'last' or 'rank'");
    }
  }
  return params;
}

TaskParams ToTaskParams(Napi::Env env, Napi::Value value) {
  TaskParams params;
  Napi::Object obj = ToObject(env, value, "task");
  Napi::Value images = obj.Get("images");
  if (!IsMissing(images)) {
    // Media task: `prompt` (text with media markers) replaces `tokens`; each image is an encoded file.
    if (!images.IsArray()) Invalid(env, "task.images must be an array of Uint8Array");
    Napi::Array array = images.As<Napi::Array>();
    for (uint32_t i = 0; i < array.Length(); ++i) {
      Napi::Value item = array.Get(i);
      if (!item.IsTypedArray() || item.As<Napi::TypedArray>().TypedArrayType() != napi_uint8_array) {
        Invalid(env, "task.images[" + std::to_string(i) + "] must be a Uint8Array");
      }
      Napi::Uint8Array bytes = item.As<Napi::Uint8Array>();
      params.images.emplace_back(reinterpret_cast<const char*>(bytes.Data()), bytes.ElementLength());
    }
    params.media_text = ToString(env, obj.Get("prompt"), "task.prompt");
    params.has_media = true;
  } else {
    params.tokens = ToTokens(env, obj.Get("tokens"), "task.tokens");
  }
  Napi::Value max_audio = obj.Get("maxAudioSeconds");
  if (!IsMissing(max_audio)) {
    const double seconds = ToNumber(env, max_audio, "task.maxAudioSeconds");
    if (!std::isfinite(seconds) || seconds < 0) Invalid(env, "task.maxAudioSeconds must be a finite number >= 0");
    params.max_audio_seconds = seconds;
  }
  params.n_predict =
      static_cast<int32_t>(RequiredInt(env, obj, "nPredict", "task.", -1, std::numeric_limits<int32_t>::max()));

  Napi::Object s = ToObject(env, obj.Get("sampling"), "task.sampling");
  const std::string p = "task.sampling.";
  SamplingParams& sp = params.sampling;
  sp.temperature = RequiredFloat(env, s, "temperature", p);
  sp.top_k = static_cast<int32_t>(
      RequiredInt(env, s, "topK", p, std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max()));
  sp.top_p = RequiredFloat(env, s, "topP", p);
  sp.min_p = RequiredFloat(env, s, "minP", p);
  sp.typical_p = RequiredFloat(env, s, "typicalP", p);
  sp.repeat_penalty = RequiredFloat(env, s, "repeatPenalty", p);
  sp.repeat_last_n =
      static_cast<int32_t>(RequiredInt(env, s, "repeatLastN", p, -1, std::numeric_limits<int32_t>::max()));
  sp.presence_penalty = RequiredFloat(env, s, "presencePenalty", p);
  sp.frequency_penalty = RequiredFloat(env, s, "frequencyPenalty", p);
  // Any integer; negative means random. Non-negative seeds are used modulo 2^32.
  const double seed = ToNumber(env, s.Get("seed"), p + "seed");
  if (std::trunc(seed) != seed) Invalid(env, p + "seed must be an integer");
  sp.seed = seed < 0 ? -1 : static_cast<int64_t>(std::fmod(seed, 4294967296.0));
  if (sp.repeat_penalty <= 0.0f) Invalid(env, p + "repeatPenalty must be > 0");
  Napi::Value grammar = s.Get("grammar");
  if (!IsMissing(grammar)) sp.grammar = ToString(env, grammar, "task.sampling.grammar");
  sp.grammar_lazy = ToOptionalBool(env, s.Get("grammarLazy"), "task.sampling.grammarLazy", false);
  Napi::Value triggers = s.Get("grammarTriggers");
  if (!IsMissing(triggers)) {
    if (!triggers.IsArray()) Invalid(env, p + "grammarTriggers must be an array");
    Napi::Array array = triggers.As<Napi::Array>();
    for (uint32_t i = 0; i < array.Length(); ++i) {
      Napi::Object t = ToObject(env, array.Get(i), p + "grammarTriggers[i]");
      SamplingParams::Trigger trigger;
      const std::string type = ToString(env, t.Get("type"), "task.sampling.grammarTriggers[i].type");
      trigger.value = ToString(env, t.Get("value"), "task.sampling.grammarTriggers[i].value");
      if (type == "word") {
        trigger.type = SamplingParams::Trigger::Type::kWord;
      } else if (type == "pattern") {
        trigger.type = SamplingParams::Trigger::Type::kPattern;
      } else if (type == "pattern_full") {
        trigger.type = SamplingParams::Trigger::Type::kPatternFull;
      } else if (type == "token") {
        trigger.type = SamplingParams::Trigger::Type::kToken;
        trigger.token = static_cast<llama_token>(
            RequiredInt(env, t, "token", p + "grammarTriggers[i].", 0, std::numeric_limits<int32_t>::max()));
      } else {
        Invalid(env, p + "grammarTriggers[i].type must be 'word', 'pattern', 'pattern_full' or 'token'");
      }
      sp.grammar_triggers.push_back(std::move(trigger));
    }
  }
  Napi::Value preserved = s.Get("preservedTokens");
  if (!IsMissing(preserved)) {
    if (!preserved.IsArray()) Invalid(env, p + "preservedTokens must be an array of strings");
    Napi::Array array = preserved.As<Napi::Array>();
    for (uint32_t i = 0; i < array.Length(); ++i) {
      sp.preserved_tokens.push_back(ToString(env, array.Get(i), "task.sampling.preservedTokens[i]"));
    }
  }
  Napi::Value prefill = s.Get("grammarPrefill");
  if (!IsMissing(prefill)) sp.grammar_prefill = ToString(env, prefill, "task.sampling.grammarPrefill");

  Napi::Value stop = obj.Get("stop");
  if (!IsMissing(stop)) {
    if (!stop.IsArray()) Invalid(env, "task.stop must be an array of strings");
    Napi::Array array = stop.As<Napi::Array>();
    for (uint32_t i = 0; i < array.Length(); ++i) {
      params.stop.push_back(ToString(env, array.Get(i), "task.stop[i]"));
    }
  }
  params.ignore_eos = ToOptionalBool(env, obj.Get("ignoreEos"), "task.ignoreEos", false);
  params.context_shift = ToOptionalBool(env, obj.Get("contextShift"), "task.contextShift", false);
  Napi::Value n_keep = obj.Get("nKeep");
  if (!IsMissing(n_keep)) {
    params.n_keep = static_cast<int32_t>(ToInteger(env, n_keep, "task.nKeep", -1, std::numeric_limits<int32_t>::max()));
  }
  Napi::Value logprobs = obj.Get("logprobs");
  if (!IsMissing(logprobs)) params.logprobs = static_cast<int32_t>(ToInteger(env, logprobs, "task.logprobs", 0, 20));
  Napi::Value draft = obj.Get("draft");
  if (!IsMissing(draft)) {
    Napi::Object d = ToObject(env, draft, "task.draft");
    params.n_draft = static_cast<int32_t>(RequiredInt(env, d, "nMax", "task.draft.", 0, 1 << 20));
    params.draft_ngram = ToOptionalBool(env, d.Get("ngram"), "task.draft.ngram", false);
    params.draft_fixed = ToOptionalBool(env, d.Get("fixed"), "task.draft.fixed", false);
  }
  Napi::Value scope = obj.Get("cacheScope");
  if (!IsMissing(scope)) {
    params.cache_scope = ToString(env, scope, "task.cacheScope");
    constexpr size_t kMaxScopeBytes = 256;  // an opaque key (a hash), not data
    if (params.cache_scope.size() > kMaxScopeBytes) Invalid(env, "task.cacheScope must be at most 256 bytes");
  }
  Napi::Value loras = obj.Get("loras");
  if (!IsMissing(loras)) {
    if (!loras.IsArray()) Invalid(env, "task.loras must be an array");
    Napi::Array array = loras.As<Napi::Array>();
    constexpr uint32_t kMaxLoras = 64;
    if (array.Length() > kMaxLoras) Invalid(env, "task.loras must have at most 64 entries");
    for (uint32_t i = 0; i < array.Length(); ++i) {
      Napi::Object item = ToObject(env, array.Get(i), "task.loras[i]");
      TaskLora lora;
      lora.path = ToString(env, item.Get("path"), "task.loras[i].path");
      if (lora.path.empty()) Invalid(env, "task.loras[i].path must not be empty");
      Napi::Value scale = item.Get("scale");
      if (!IsMissing(scale)) {
        if (!scale.IsNumber()) Invalid(env, "task.loras[i].scale must be a number");
        const double value = scale.As<Napi::Number>().DoubleValue();
        if (!std::isfinite(value)) Invalid(env, "task.loras[i].scale must be finite");
        lora.scale = static_cast<float>(value);
      }
      params.loras.push_back(std::move(lora));
    }
  }
  return params;
}

}  // namespace llamad
