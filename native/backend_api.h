// Calls into ggml backends that are separate shared modules in a prebuilt build (GGML_BACKEND_DL: the CPU variants
// and RPC are dlopen'ed at start-up, so the addon cannot link their functions): resolved through the backend
// registry's ggml_backend_reg_get_proc_address, which works the same way in the static from-source build.
#ifndef LLAMAD_NATIVE_BACKEND_API_H_
#define LLAMAD_NATIVE_BACKEND_API_H_

#include <string>

#include "ggml-backend.h"
#include "ggml.h"

namespace llamad {

// Loads the backend modules that sit next to the addon (libggml-<backend>-*.so; for the CPU, the best variant for
// this processor) when the addon was built with GGML_BACKEND_DL, before llama_backend_init. Does nothing in a static
// build. Idempotent; call under the backend lock.
void LoadBackendModules();

// The folder the backend modules were loaded from, "" in a static build.
const std::string& BackendModulesDir();

// ggml_threadpool_new of the CPU backend, nullptr when the CPU backend does not offer it.
ggml_threadpool* NewCpuThreadpool(ggml_threadpool_params* params);
// ggml_threadpool_free of the CPU backend (pool may be nullptr).
void FreeCpuThreadpool(ggml_threadpool* pool);

// ggml_backend_rpc_server_broken: whether a worker connection that a loaded model holds has gone away. False when
// the RPC backend is not present.
bool RpcServerBroken(const std::string& endpoint);

}  // namespace llamad

#endif  // LLAMAD_NATIVE_BACKEND_API_H_
