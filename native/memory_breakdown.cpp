#include "memory_breakdown.h"

#include "ggml-backend.h"
#include "llama-ext.h"

namespace llamad {

namespace {

const char* DeviceTypeName(enum ggml_backend_dev_type type) {
  switch (type) {
    case GGML_BACKEND_DEVICE_TYPE_CPU:
      return "cpu";
    case GGML_BACKEND_DEVICE_TYPE_GPU:
      return "gpu";
    case GGML_BACKEND_DEVICE_TYPE_IGPU:
      return "igpu";
    case GGML_BACKEND_DEVICE_TYPE_ACCEL:
      return "accel";
    case GGML_BACKEND_DEVICE_TYPE_META:
      return "meta";
  }
  return "";
}

}  // namespace

std::vector<MemoryEntry> QueryMemoryBreakdown(const llama_context* ctx) {
  std::vector<MemoryEntry> out;
  for (const auto& [buft, data] : llama_get_memory_breakdown(ctx)) {
    if (buft == nullptr || data.total() == 0) continue;
    MemoryEntry entry;
    entry.buffer = ggml_backend_buft_name(buft);
    ggml_backend_dev_t dev = ggml_backend_buft_get_device(buft);
    if (dev != nullptr) {
      entry.device = ggml_backend_dev_name(dev);
      entry.device_type = DeviceTypeName(ggml_backend_dev_type(dev));
      ggml_backend_reg_t reg = ggml_backend_dev_backend_reg(dev);
      if (reg != nullptr && std::string(ggml_backend_reg_name(reg)) == "RPC") {
        entry.endpoint = ggml_backend_dev_description(dev);
      }
    }
    entry.host = ggml_backend_buft_is_host(buft);
    entry.model = data.model;
    entry.context = data.context;
    entry.compute = data.compute;
    out.push_back(std::move(entry));
  }
  return out;
}

}  // namespace llamad
