// Engine events as JS objects (binding.d.ts NativeEvent). Needs napi.h; JS thread only.
#ifndef LLAMAD_NATIVE_EVENT_JS_H_
#define LLAMAD_NATIVE_EVENT_JS_H_

#include <napi.h>

#include "engine.h"

namespace llamad {

// One engine event as the object handed to a task's callback: {type, taskId, ...} with the fields of its type
// (token: text, token and logprobs; done: reason, stopString and timings; error: code and message).
Napi::Object EngineEventToJs(Napi::Env env, const EngineEvent& event);

}  // namespace llamad

#endif  // LLAMAD_NATIVE_EVENT_JS_H_
