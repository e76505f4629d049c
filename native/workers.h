// Napi::AsyncWorkers: blocking work on the libuv pool, settled on the JS thread.
#ifndef LLAMAD_NATIVE_WORKERS_H_
#define LLAMAD_NATIVE_WORKERS_H_

#include <napi.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "llama.h"
#include "model.h"

namespace llamad {

// Loads a GGUF with llama_model_load_from_file. Progress goes through state->tsfn; the result is stored in `state`
// and the promise is settled by Model::FinishLoad once the progress function has drained (so every progress call
// happens before load() settles).
class LoadModelWorker : public Napi::AsyncWorker {
 public:
  // `rpc_servers`: workers probed before the load (docs/native.md "RPC") whose devices come first in params.devices.
  LoadModelWorker(Napi::Env env, std::string path, llama_model_params params, std::vector<std::string> rpc_servers,
                  std::shared_ptr<LoadState> state);
  void Execute() override;
  void OnOK() override;
  void OnError(const Napi::Error& error) override;

 private:
  void ReleaseProgress();
  static bool OnProgress(float progress, void* user_data);

  // The RPC workers' devices, then the local GPUs, null-terminated (params_.devices points here during the load).
  bool SelectRpcDevices();

  std::string path_;
  llama_model_params params_;
  std::vector<std::string> rpc_servers_;
  std::vector<ggml_backend_dev_t> devices_;
  std::shared_ptr<LoadState> state_;
};

// Runs `work` on the pool, then `done` on the JS thread (also when `work` threw; the exception is swallowed after
// being turned into `error` text for `done`).
class BackgroundWorker : public Napi::AsyncWorker {
 public:
  BackgroundWorker(Napi::Env env, std::function<void()> work, std::function<void(Napi::Env)> done);
  void Execute() override;
  void OnOK() override;
  void OnError(const Napi::Error& error) override;

 private:
  std::function<void()> work_;
  std::function<void(Napi::Env)> done_;
};

// One native job of a Model (Model::BeginJob was called): `work` on the pool, then on the JS thread the promise is
// resolved with `finish(env)` or rejected with the coded error `work` or `finish` threw (LlamaError keeps its code,
// others become `fallback`), and Model::EndJob is called (after `finish`, which may still use the model). A job
// abandoned at teardown (Model::JobsAbandoned) skips `work` and rejects with LLAMA_DISPOSED. Holds a reference to the
// JS Model so that it is not collected meanwhile.
class ModelJobWorker : public Napi::AsyncWorker {
 public:
  ModelJobWorker(Napi::Env env, const char* name, Model* model, Napi::Object model_object, ErrorCode fallback,
                 std::function<void()> work, std::function<Napi::Value(Napi::Env)> finish,
                 Napi::Promise::Deferred deferred);
  void Execute() override;
  void OnOK() override;
  void OnError(const Napi::Error& error) override;

 private:
  std::string name_;
  Model* model_;
  Napi::ObjectReference model_ref_;
  ErrorCode fallback_;
  std::function<void()> work_;
  std::function<Napi::Value(Napi::Env)> finish_;
  Napi::Promise::Deferred deferred_;
  bool failed_ = false;
  ErrorCode code_ = ErrorCode::kInternal;
  std::string message_;
};

// llama_model_quantize on the pool; resolves the promise, or rejects it with LLAMA_QUANTIZE_FAILED.
class QuantizeWorker : public Napi::AsyncWorker {
 public:
  QuantizeWorker(Napi::Env env, std::string input, std::string output, llama_ftype ftype, int32_t n_threads);
  Napi::Promise Promise() { return deferred_.Promise(); }
  void Execute() override;
  void OnOK() override;
  void OnError(const Napi::Error& error) override;

 private:
  std::string input_;
  std::string output_;
  llama_ftype ftype_;
  int32_t n_threads_;
  std::string failure_;
  Napi::Promise::Deferred deferred_;
};

}  // namespace llamad

#endif  // LLAMAD_NATIVE_WORKERS_H_
