// Where a llama_context's memory lives: bytes per ggml buffer type (host RAM or a device such as CUDA0), split into
// model weights, context (KV cache) and compute buffers. Pure C++ (no napi.h).
#ifndef LLAMAD_NATIVE_MEMORY_BREAKDOWN_H_
#define LLAMAD_NATIVE_MEMORY_BREAKDOWN_H_

#include <cstdint>
#include <string>
#include <vector>

#include "llama.h"

namespace llamad {

// One buffer type of a context (binding.d.ts NativeMemoryEntry). Sizes in bytes.
struct MemoryEntry {
  std::string buffer;    // ggml_backend_buft_name: "CPU", "CPU_Mapped", "CUDA0", "CUDA_Host", "Vulkan0", ...
  std::string device;    // the device the buffer type belongs to ("CPU", "CUDA0", ...), empty when unknown
  bool host = true;      // ggml_backend_buft_is_host: the bytes are in system RAM (mmap'd weights, pinned buffers)
  std::string endpoint;  // an RPC device's worker ("host:port", its ggml description); empty for local devices
  // ggml_backend_dev_type of the device: "cpu" (also the CPU's extra buffer types: CPU_REPACK, AMX, ... which are not
  // host buffers), "gpu", "igpu", "accel", "meta"; empty when the buffer type names no device
  std::string device_type;
  uint64_t model = 0;
  uint64_t context = 0;
  uint64_t compute = 0;
};

// The breakdown of `ctx` from llama.cpp's llama_get_memory_breakdown (src/llama-ext.h, the sizes of the real
// backend buffers), one entry per buffer type with a non-zero size. Read it on the thread that owns `ctx`
// or before its decode thread starts (compute buffers may be re-reserved during a decode).
std::vector<MemoryEntry> QueryMemoryBreakdown(const llama_context* ctx);

}  // namespace llamad

#endif  // LLAMAD_NATIVE_MEMORY_BREAKDOWN_H_
