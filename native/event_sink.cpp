#include "event_sink.h"

#include <utility>

namespace llamad {

std::shared_ptr<EventSink> EventSink::Create(Napi::Env env, const char* name, DispatchFn dispatch,
                                             FinalizeFn on_finalize) {
  std::shared_ptr<EventSink> sink(new EventSink());
  sink->dispatch_ = std::move(dispatch);
  sink->on_finalize_ = std::move(on_finalize);
  // The function's finalizer owns one reference so the sink outlives the napi_threadsafe_function.
  auto* keep_alive = new std::shared_ptr<EventSink>(sink);
  napi_value resource_name = Napi::String::New(env, name);
  napi_threadsafe_function tsfn = nullptr;
  napi_status status = napi_create_threadsafe_function(env, nullptr, nullptr, resource_name, 0, 1, keep_alive,
                                                       &EventSink::Finalize, sink.get(), &EventSink::CallJs, &tsfn);
  if (status != napi_ok) {
    delete keep_alive;
    NAPI_THROW_IF_FAILED(env, status, nullptr);
  }
  sink->tsfn_ = tsfn;
  return sink;
}

void EventSink::Post(std::vector<EngineEvent>&& events) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (closed_ || tsfn_ == nullptr) return;
  auto* batch = new std::vector<EngineEvent>(std::move(events));
  if (napi_call_threadsafe_function(tsfn_, batch, napi_tsfn_nonblocking) != napi_ok) delete batch;
}

void EventSink::Ref(Napi::Env env) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!closed_ && tsfn_ != nullptr) napi_ref_threadsafe_function(env, tsfn_);
}

void EventSink::Unref(Napi::Env env) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!closed_ && tsfn_ != nullptr) napi_unref_threadsafe_function(env, tsfn_);
}

void EventSink::Detach() {
  dispatch_ = nullptr;
  on_finalize_ = nullptr;
}

void EventSink::Release() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (released_ || closed_ || tsfn_ == nullptr) return;
  released_ = true;
  napi_release_threadsafe_function(tsfn_, napi_tsfn_release);
}

void EventSink::CallJs(napi_env env, napi_value /*js_callback*/, void* context, void* data) {
  std::unique_ptr<std::vector<EngineEvent>> batch(static_cast<std::vector<EngineEvent>*>(data));
  auto* self = static_cast<EventSink*>(context);
  if (env == nullptr || self == nullptr || !self->dispatch_) return;
  try {
    Napi::HandleScope scope(env);
    self->dispatch_(Napi::Env(env), *batch);
  } catch (...) {
    // dispatch reports JS errors itself; nothing may escape into Node
  }
}

void EventSink::Finalize(napi_env env, void* finalize_data, void* /*finalize_hint*/) {
  std::unique_ptr<std::shared_ptr<EventSink>> keep_alive(static_cast<std::shared_ptr<EventSink>*>(finalize_data));
  EventSink& self = **keep_alive;
  {
    std::lock_guard<std::mutex> lock(self.mutex_);
    self.closed_ = true;
    self.tsfn_ = nullptr;
  }
  FinalizeFn on_finalize = std::move(self.on_finalize_);
  self.on_finalize_ = nullptr;
  self.dispatch_ = nullptr;
  if (!on_finalize || env == nullptr) return;
  try {
    Napi::HandleScope scope(env);
    on_finalize(Napi::Env(env));
  } catch (...) {
    // during environment teardown settling a promise can fail; never let it escape into Node
  }
}

}  // namespace llamad
