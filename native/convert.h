// JS values -> C++ parameter structs. Type and range checks only; defaults live in the TS layer (binding.d.ts).
// Every function throws a Napi::Error with code LLAMA_INVALID_ARGUMENT on a bad value.
#ifndef LLAMAD_NATIVE_CONVERT_H_
#define LLAMAD_NATIVE_CONVERT_H_

#include <napi.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "llama.h"
#include "slot.h"

namespace llamad {

// binding.d.ts NativeModelParams.
struct ModelParams {
  std::optional<int32_t> n_gpu_layers;
  bool use_mmap = true;
  bool vocab_only = false;
  bool use_extra_bufts = true;           // llama_model_params.use_extra_bufts (AMX, repacked weights)
  std::vector<std::string> rpc_servers;  // rpc-server workers ("host:port") that hold layers (empty = none)
};

// binding.d.ts NativeContextParams.
struct ContextParams {
  uint32_t n_ctx = 0;
  std::optional<uint32_t> n_batch;
  std::optional<uint32_t> n_ubatch;
  uint32_t n_parallel = 1;
  std::optional<int32_t> n_threads;
  std::optional<int32_t> n_threads_batch;
  // Size of the CPU thread pools (default: the larger of n_threads and n_threads_batch): the most threads a later
  // Context.setThreads may ask for.
  std::optional<int32_t> n_threads_max;
  // One KV stream shared by every slot (n_ctx cells in all, each slot may use all of them) instead of n_ctx /
  // n_parallel cells per slot.
  bool kv_unified = false;
  llama_flash_attn_type flash_attn = LLAMA_FLASH_ATTN_TYPE_AUTO;
  ggml_type type_k = GGML_TYPE_F16;
  ggml_type type_v = GGML_TYPE_F16;
  bool embeddings = false;
  enum llama_pooling_type pooling = LLAMA_POOLING_TYPE_UNSPECIFIED;
  std::string projector_path;  // mmproj GGUF for images ('' = none)
  size_t cache_ram_bytes = 0;  // host-RAM prompt cache budget, bytes (0 = off; generation only)
};

ModelParams ToModelParams(Napi::Env env, Napi::Value value);
ContextParams ToContextParams(Napi::Env env, Napi::Value value);
TaskParams ToTaskParams(Napi::Env env, Napi::Value value);

// An Int32Array of token ids (copied).
std::vector<llama_token> ToTokens(Napi::Env env, Napi::Value value, const char* name);

// A JS string (UTF-8).
std::string ToString(Napi::Env env, Napi::Value value, const char* name);

// undefined/null -> fallback; otherwise a boolean.
bool ToOptionalBool(Napi::Env env, Napi::Value value, const char* name, bool fallback);

}  // namespace llamad

#endif  // LLAMAD_NATIVE_CONVERT_H_
