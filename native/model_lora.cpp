// Model: its LoRA adapters (binding.d.ts NativeModel.loadLora/unloadLora/loras). Adapters are loaded over the model's
// weights once and applied per task (NativeTaskParams.loras); the registry keeps one handle per file.
#include <chrono>
#include <thread>
#include <utility>

#include "convert.h"
#include "errors.h"
#include "model.h"

namespace llamad {

namespace {

// How long unloadLora waits for the tasks and engines still holding an adapter (a task holds it until it ends; an
// engine until it decodes another set or goes idle, within one decode step).
constexpr int kLoraUnloadWaitMs = 2000;
constexpr int kLoraUnloadPollMs = 2;

std::string LoraPathArg(const Napi::CallbackInfo& info, const char* method) {
  Napi::Env env = info.Env();
  if (info.Length() < 1 || !info[0].IsString()) {
    ThrowError(env, ErrorCode::kInvalidArgument, std::string(method) + ": path must be a string");
  }
  std::string path = info[0].As<Napi::String>().Utf8Value();
  if (path.empty()) ThrowError(env, ErrorCode::kInvalidArgument, std::string(method) + ": path must not be empty");
  return path;
}

}  // namespace

std::shared_ptr<LoraHandle> Model::FindLora(const std::string& path) {
  std::lock_guard<std::mutex> lock(lora_mutex_);
  auto it = lora_adapters_.find(path);
  return it == lora_adapters_.end() ? nullptr : it->second;
}

std::shared_ptr<LoraHandle> Model::LoadLoraNow(const std::string& path) {
  std::lock_guard<std::mutex> lock(lora_mutex_);
  auto it = lora_adapters_.find(path);
  if (it != lora_adapters_.end()) return it->second;
  std::string reason;
  llama_adapter_lora* adapter = nullptr;
  try {
    adapter = llama_adapter_lora_init(model_, path.c_str());  // logs llama.cpp's reason on failure
  } catch (const std::exception& e) {
    reason = e.what();
  } catch (...) {
    reason = "unknown error";
  }
  if (adapter == nullptr) {
    throw LlamaError(ErrorCode::kModelLoadFailed,
                     "cannot load the LoRA adapter " + path +
                         (reason.empty() ? " (missing file, not a LoRA GGUF, another architecture, or shapes that do "
                                           "not match the model)"
                                         : ": " + reason));
  }
  auto handle = std::make_shared<LoraHandle>();
  handle->adapter = adapter;
  handle->path = path;
  lora_adapters_.emplace(path, handle);
  return handle;
}

std::string Model::UnloadLoraNow(const std::string& path) {
  std::shared_ptr<LoraHandle> handle;
  {
    std::lock_guard<std::mutex> lock(lora_mutex_);
    auto it = lora_adapters_.find(path);
    if (it == lora_adapters_.end()) return "absent";
    handle = std::move(it->second);
    lora_adapters_.erase(it);  // no new task finds it from now on
  }
  // Tasks queued or running with it, and the engine that has it set on its context, hold further references.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(kLoraUnloadWaitMs);
  while (handle.use_count() > 1 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(kLoraUnloadPollMs));
  }
  std::lock_guard<std::mutex> lock(lora_mutex_);
  if (handle.use_count() > 1) {
    lora_adapters_.emplace(path, std::move(handle));  // still in use: it stays loaded
    return "busy";
  }
  llama_adapter_lora_free(handle->adapter);  // also removes it from the llama_model's adapter set
  handle->adapter = nullptr;
  return "unloaded";
}

Napi::Value Model::LoadLora(const Napi::CallbackInfo& info) {
  auto path = std::make_shared<std::string>();
  return RunJob(
      info, "loadLora", ErrorCode::kModelLoadFailed, [&](Napi::Env) { *path = LoraPathArg(info, "loadLora"); },
      [this, path] { LoadLoraNow(*path); }, [](Napi::Env env) -> Napi::Value { return env.Undefined(); });
}

Napi::Value Model::UnloadLora(const Napi::CallbackInfo& info) {
  auto path = std::make_shared<std::string>();
  auto outcome = std::make_shared<std::string>();
  return RunJob(
      info, "unloadLora", ErrorCode::kInternal, [&](Napi::Env) { *path = LoraPathArg(info, "unloadLora"); },
      [this, path, outcome] { *outcome = UnloadLoraNow(*path); },
      [outcome](Napi::Env env) -> Napi::Value { return Napi::String::New(env, *outcome); });
}

Napi::Value Model::Loras(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  std::lock_guard<std::mutex> lock(lora_mutex_);
  Napi::Array paths = Napi::Array::New(env, lora_adapters_.size());
  uint32_t i = 0;
  for (const auto& entry : lora_adapters_) paths.Set(i++, Napi::String::New(env, entry.first));
  return paths;
}

}  // namespace llamad
