#include "workers.h"

#include <chrono>
#include <exception>
#include <thread>
#include <utility>

#include "backend_api.h"
#include "errors.h"
#include "rpc.h"

namespace llamad {

namespace {
// How long the probe of one RPC worker may take (connect, then the handshake), milliseconds.
constexpr int kRpcProbeTimeoutMs = 5000;
// How long a load waits for a model holding a broken connection to the same worker to be freed: 30 × 100 ms.
constexpr int kRpcBrokenWaitSteps = 30;
}  // namespace

LoadModelWorker::LoadModelWorker(Napi::Env env, std::string path, llama_model_params params,
                                 std::vector<std::string> rpc_servers, std::shared_ptr<LoadState> state)
    : Napi::AsyncWorker(env, "llamad.loadModel"),
      path_(std::move(path)),
      params_(params),
      rpc_servers_(std::move(rpc_servers)),
      state_(std::move(state)) {
  params_.progress_callback = &LoadModelWorker::OnProgress;
  params_.progress_callback_user_data = state_.get();
}

bool LoadModelWorker::OnProgress(float progress, void* user_data) {
  auto* state = static_cast<LoadState*>(user_data);
  if (state->abort.load()) return false;  // llama.cpp stops loading
  std::lock_guard<std::mutex> lock(state->mutex);
  if (state->closed || state->tsfn == nullptr) return true;
  if (progress < 1.0f && progress - state->last_progress < 0.01f) return true;  // coalesce tiny steps
  state->last_progress = progress;
  auto* value = new float(progress);
  if (napi_call_threadsafe_function(state->tsfn, value, napi_tsfn_nonblocking) != napi_ok) delete value;
  return true;
}

void LoadModelWorker::Execute() {
  if (state_->abort.load()) {
    state_->failed = true;
    state_->code = ErrorCode::kCancelled;
    state_->message = "model load aborted";
    return;
  }
  try {
    if (!rpc_servers_.empty() && !SelectRpcDevices()) return;
    state_->model = llama_model_load_from_file(path_.c_str(), params_);
    if (state_->model == nullptr) {
      state_->failed = true;
      state_->code = state_->abort.load() ? ErrorCode::kCancelled : ErrorCode::kModelLoadFailed;
      state_->message = state_->abort.load() ? "model load aborted"
                                             : "llama_model_load_from_file failed for \"" + path_ +
                                                   "\" (missing or invalid GGUF, or unsupported architecture)";
    }
  } catch (...) {
    ErrorInfo info = DescribeException(std::current_exception(), ErrorCode::kModelLoadFailed,
                                       "llama_model_load_from_file(\"" + path_ + "\")");
    state_->failed = true;
    state_->code = info.code;
    state_->message = info.message;
  }
}

bool LoadModelWorker::SelectRpcDevices() {
  // ggml-rpc aborts the process when a worker cannot be reached or the handshake fails: probe each one first (an
  // endpoint that a loaded model of this process already holds is connected, and rpc-server takes one client at a
  // time, so it is not probed again).
  for (const std::string& endpoint : rpc_servers_) {
    // A model whose worker went away may still be being unloaded (the scheduler unloads it, then the next request
    // loads again): give its release a moment, so that the load probes the worker afresh.
    for (int i = 0; i < kRpcBrokenWaitSteps && RpcServerBroken(endpoint); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    if (RpcServerBroken(endpoint)) {  // still held by a loaded model whose worker went away
      state_->failed = true;
      state_->code = ErrorCode::kModelLoadFailed;
      state_->message = "rpc server " + endpoint + ": connection lost (a loaded model still holds it until unloaded)";
      return false;
    }
    if (RpcEndpointInUse(endpoint)) continue;
    const std::string reason = ProbeRpcServer(endpoint, kRpcProbeTimeoutMs);
    if (!reason.empty()) {
      state_->failed = true;
      state_->code = ErrorCode::kModelLoadFailed;
      state_->message = "rpc server " + endpoint + " unreachable: " + reason;
      return false;
    }
  }
  devices_ = RpcDevices(rpc_servers_);
  // Then the local accelerators, as llama.cpp's default selection adds them after RPC servers (discrete GPUs, else
  // integrated ones); the CPU is never in the list (it takes the layers that are not offloaded).
  std::vector<ggml_backend_dev_t> gpus;
  std::vector<ggml_backend_dev_t> igpus;
  for (size_t i = 0; i < ggml_backend_dev_count(); ++i) {
    ggml_backend_dev_t dev = ggml_backend_dev_get(i);
    const auto type = ggml_backend_dev_type(dev);
    if (type == GGML_BACKEND_DEVICE_TYPE_GPU) gpus.push_back(dev);
    if (type == GGML_BACKEND_DEVICE_TYPE_IGPU) igpus.push_back(dev);
  }
  devices_.insert(devices_.end(), gpus.begin(), gpus.end());
  if (gpus.empty()) devices_.insert(devices_.end(), igpus.begin(), igpus.end());
  devices_.push_back(nullptr);
  params_.devices = devices_.data();
  return true;
}

void LoadModelWorker::ReleaseProgress() {
  std::lock_guard<std::mutex> lock(state_->mutex);
  if (!state_->closed && state_->tsfn != nullptr) napi_release_threadsafe_function(state_->tsfn, napi_tsfn_release);
}

void LoadModelWorker::OnOK() { ReleaseProgress(); }

void LoadModelWorker::OnError(const Napi::Error& /*error*/) { ReleaseProgress(); }

BackgroundWorker::BackgroundWorker(Napi::Env env, std::function<void()> work, std::function<void(Napi::Env)> done)
    : Napi::AsyncWorker(env, "llamad.background"), work_(std::move(work)), done_(std::move(done)) {}

void BackgroundWorker::Execute() {
  try {
    work_();
  } catch (...) {
    // work_ is cleanup (join + free): nothing to report, the done callback runs regardless
  }
}

void BackgroundWorker::OnOK() {
  if (done_) done_(Env());
}

void BackgroundWorker::OnError(const Napi::Error& /*error*/) {
  if (done_) done_(Env());
}

ModelJobWorker::ModelJobWorker(Napi::Env env, const char* name, Model* model, Napi::Object model_object,
                               ErrorCode fallback, std::function<void()> work,
                               std::function<Napi::Value(Napi::Env)> finish, Napi::Promise::Deferred deferred)
    : Napi::AsyncWorker(env, "llamad.modelJob"),
      name_(name),
      model_(model),
      model_ref_(Napi::Persistent(model_object)),
      fallback_(fallback),
      work_(std::move(work)),
      finish_(std::move(finish)),
      deferred_(deferred) {}

void ModelJobWorker::Execute() {
  if (model_->JobsAbandoned()) {
    failed_ = true;
    code_ = ErrorCode::kDisposed;
    message_ = name_ + ": the addon is shutting down";
  } else {
    try {
      work_();
    } catch (...) {
      ErrorInfo info = DescribeException(std::current_exception(), fallback_, name_);
      failed_ = true;
      code_ = info.code;
      message_ = info.message;
    }
  }
  model_->ExecuteDone();
}

void ModelJobWorker::OnOK() {
  Napi::Env env = Env();
  if (failed_) {
    deferred_.Reject(MakeError(env, code_, message_).Value());
  } else {
    try {
      deferred_.Resolve(finish_(env));
    } catch (const Napi::Error& error) {
      deferred_.Reject(error.Value());
    } catch (...) {
      ErrorInfo info = DescribeException(std::current_exception(), fallback_, name_);
      deferred_.Reject(MakeError(env, info.code, info.message).Value());
    }
  }
  finish_ = nullptr;  // releases what the job produced before the model may be freed
  work_ = nullptr;
  model_->EndJob(env);
}

void ModelJobWorker::OnError(const Napi::Error& error) {
  deferred_.Reject(MakeError(Env(), ErrorCode::kInternal, name_ + ": " + error.Message()).Value());
  finish_ = nullptr;
  work_ = nullptr;
  model_->EndJob(Env());
}

QuantizeWorker::QuantizeWorker(Napi::Env env, std::string input, std::string output, llama_ftype ftype,
                               int32_t n_threads)
    : Napi::AsyncWorker(env, "llamad.quantize"),
      input_(std::move(input)),
      output_(std::move(output)),
      ftype_(ftype),
      n_threads_(n_threads),
      deferred_(Napi::Promise::Deferred::New(env)) {}

void QuantizeWorker::Execute() {
  try {
    llama_model_quantize_params params = llama_model_quantize_default_params();
    params.ftype = ftype_;
    params.nthread = n_threads_;
    const uint32_t rc = llama_model_quantize(input_.c_str(), output_.c_str(), &params);
    if (rc != 0) {
      failure_ =
          "llama_model_quantize(\"" + input_ + "\" -> \"" + output_ + "\") failed with status " + std::to_string(rc);
    }
  } catch (...) {
    failure_ = DescribeException(std::current_exception(), ErrorCode::kQuantizeFailed, "llama_model_quantize").message;
  }
}

void QuantizeWorker::OnOK() {
  Napi::Env env = Env();
  if (failure_.empty()) {
    deferred_.Resolve(env.Undefined());
  } else {
    deferred_.Reject(MakeError(env, ErrorCode::kQuantizeFailed, failure_).Value());
  }
}

void QuantizeWorker::OnError(const Napi::Error& error) {
  deferred_.Reject(MakeError(Env(), ErrorCode::kQuantizeFailed, error.Message()).Value());
}

}  // namespace llamad
