// The one path from a decode thread to JS: a Node-API thread-safe function carrying batches of engine events.
#ifndef LLAMAD_NATIVE_EVENT_SINK_H_
#define LLAMAD_NATIVE_EVENT_SINK_H_

#include <napi.h>

#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include "engine.h"

namespace llamad {

// Wraps one napi_threadsafe_function with an unbounded queue. Post() never blocks and is safe from any thread at any
// time, even after Node has closed the function during environment teardown (events are then dropped).
// Batches are dispatched in order on the JS thread through `dispatch`.
class EventSink {
 public:
  using DispatchFn = std::function<void(Napi::Env env, std::vector<EngineEvent>& events)>;
  using FinalizeFn = std::function<void(Napi::Env env)>;

  // JS thread. `on_finalize` runs on the JS thread after Release() once every queued batch was dispatched
  // (not during environment teardown).
  static std::shared_ptr<EventSink> Create(Napi::Env env, const char* name, DispatchFn dispatch,
                                           FinalizeFn on_finalize);

  // Any thread. Queues one batch (one decode step).
  void Post(std::vector<EngineEvent>&& events);

  // JS thread: whether the function keeps the event loop alive.
  void Ref(Napi::Env env);
  void Unref(Napi::Env env);

  // JS thread: drops the callbacks (their owner is going away); queued batches are then discarded.
  void Detach();

  // Any thread, idempotent: no more Post() from the owner; the function finalizes after draining its queue.
  void Release();

 private:
  EventSink() = default;
  static void CallJs(napi_env env, napi_value js_callback, void* context, void* data);
  static void Finalize(napi_env env, void* finalize_data, void* finalize_hint);

  std::mutex mutex_;
  napi_threadsafe_function tsfn_ = nullptr;
  bool closed_ = false;    // finalized by Node: tsfn_ is gone
  bool released_ = false;  // Release() was called
  DispatchFn dispatch_;    // JS thread only
  FinalizeFn on_finalize_;
};

}  // namespace llamad

#endif  // LLAMAD_NATIVE_EVENT_SINK_H_
