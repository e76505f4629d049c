#include "logger.h"

#include <cstdio>
#include <memory>
#include <mutex>
#include <string>

#include "engine.h"
#include "errors.h"
#include "llama.h"
#include "mtmd-helper.h"

namespace llamad {

namespace {

struct LogLine {
  int level;
  std::string text;
};

std::mutex g_mutex;
napi_threadsafe_function g_tsfn = nullptr;  // guarded by g_mutex

void LogCallback(ggml_log_level level, const char* text, void* /*user_data*/) {
  if (text == nullptr) return;
  std::lock_guard<std::mutex> lock(g_mutex);
  if (g_tsfn == nullptr) {
    // Errors go to stderr, except the ones llama.cpp logs when a decode is aborted on purpose.
    if (level == GGML_LOG_LEVEL_ERROR && !Engine::CurrentThreadIsAborting()) std::fputs(text, stderr);
    return;
  }
  auto* line = new LogLine{static_cast<int>(level), text};
  if (napi_call_threadsafe_function(g_tsfn, line, napi_tsfn_nonblocking) != napi_ok) delete line;
}

void CallJs(napi_env env, napi_value js_callback, void* /*context*/, void* data) {
  std::unique_ptr<LogLine> line(static_cast<LogLine*>(data));
  if (env == nullptr || js_callback == nullptr) return;
  Napi::Env napi_env(env);
  try {
    Napi::HandleScope scope(napi_env);
    Napi::Function fn(env, js_callback);
    fn.Call({Napi::Number::New(napi_env, line->level), Napi::String::New(napi_env, line->text)});
  } catch (const Napi::Error& e) {
    napi_fatal_exception(env, e.Value());
  } catch (...) {
  }
}

void Finalize(napi_env /*env*/, void* finalize_data, void* /*hint*/) {
  auto* tsfn = static_cast<napi_threadsafe_function>(finalize_data);
  std::lock_guard<std::mutex> lock(g_mutex);
  if (g_tsfn == tsfn) g_tsfn = nullptr;
}

}  // namespace

void InstallLogCallback() {
  llama_log_set(&LogCallback, nullptr);
  mtmd_helper_log_set(&LogCallback, nullptr);  // mtmd/clip and the mtmd helpers log through the same callback
}

Napi::Value SetLogger(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Napi::Value fn = info[0];
  if (!fn.IsFunction() && !fn.IsNull() && !fn.IsUndefined()) {
    ThrowError(env, ErrorCode::kInvalidArgument, "logger must be a function or null");
  }
  napi_threadsafe_function created = nullptr;
  if (fn.IsFunction()) {
    // The finalizer receives the function's own handle to know whether it is still the current logger; it is set
    // after creation, so pass a holder that is filled in right away.
    auto* holder = new napi_threadsafe_function(nullptr);
    napi_status status = napi_create_threadsafe_function(
        env, fn, nullptr, Napi::String::New(env, "llamad.log"), 0, 1, holder,
        [](napi_env e, void* data, void* hint) {
          std::unique_ptr<napi_threadsafe_function> h(static_cast<napi_threadsafe_function*>(data));
          Finalize(e, *h, hint);
        },
        nullptr, &CallJs, &created);
    if (status != napi_ok) {
      delete holder;
      ThrowError(env, ErrorCode::kInternal, "cannot create the logger function");
    }
    *holder = created;
    napi_unref_threadsafe_function(env, created);
  }
  napi_threadsafe_function previous = nullptr;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    previous = g_tsfn;
    g_tsfn = created;
  }
  if (previous != nullptr) napi_release_threadsafe_function(previous, napi_tsfn_release);
  return env.Undefined();
}

}  // namespace llamad
