#include "backend_api.h"

#include <mutex>

#ifdef LLAMAD_BACKEND_DL
#include <dlfcn.h>
#else
#include "ggml-rpc.h"
#endif

namespace llamad {

namespace {

std::string g_modules_dir;

// The registry of the backend `name` ("CPU", "RPC"), nullptr when it is not loaded.
void* ProcAddress(const char* backend, const char* function) {
  ggml_backend_reg_t reg = ggml_backend_reg_by_name(backend);
  return reg != nullptr ? ggml_backend_reg_get_proc_address(reg, function) : nullptr;
}

}  // namespace

void LoadBackendModules() {
#ifdef LLAMAD_BACKEND_DL
  if (!g_modules_dir.empty()) return;
  // The folder of this addon (llamad.node), where the prebuilt package puts libggml-cpu-<variant>.so and any GPU
  // backend module: ggml's own search (next to the executable, then the working directory) would look beside `node`.
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&LoadBackendModules), &info) == 0 || info.dli_fname == nullptr) return;
  std::string path = info.dli_fname;
  const size_t slash = path.find_last_of('/');
  g_modules_dir = slash == std::string::npos ? "." : path.substr(0, slash);
  ggml_backend_load_all_from_path(g_modules_dir.c_str());
#endif
}

const std::string& BackendModulesDir() { return g_modules_dir; }

ggml_threadpool* NewCpuThreadpool(ggml_threadpool_params* params) {
  using Fn = ggml_threadpool* (*)(ggml_threadpool_params*);
  static const Fn fn = reinterpret_cast<Fn>(ProcAddress("CPU", "ggml_threadpool_new"));
  return fn != nullptr ? fn(params) : nullptr;
}

void FreeCpuThreadpool(ggml_threadpool* pool) {
  using Fn = void (*)(ggml_threadpool*);
  static const Fn fn = reinterpret_cast<Fn>(ProcAddress("CPU", "ggml_threadpool_free"));
  if (pool != nullptr && fn != nullptr) fn(pool);
}

bool RpcServerBroken(const std::string& endpoint) {
#ifdef LLAMAD_BACKEND_DL
  // Added by vendor/patches/0001 and not offered through the RPC registry's proc addresses: looked up in the module
  // that ggml_backend_load_all_from_path already loaded (RTLD_NOLOAD: never a second copy).
  using Fn = bool (*)(const char*);
  static const Fn fn = [] {
    void* module = dlopen((g_modules_dir + "/libggml-rpc.so").c_str(), RTLD_NOW | RTLD_NOLOAD);
    return module != nullptr ? reinterpret_cast<Fn>(dlsym(module, "ggml_backend_rpc_server_broken")) : nullptr;
  }();
  return fn != nullptr && fn(endpoint.c_str());
#else
  return ggml_backend_rpc_server_broken(endpoint.c_str());
#endif
}

}  // namespace llamad
