#include "event_js.h"

#include <cstring>
#include <string>

#include "error_code.h"

namespace llamad {

namespace {

Napi::Uint8Array ToBytes(Napi::Env env, const std::string& bytes) {
  Napi::Uint8Array out = Napi::Uint8Array::New(env, bytes.size());
  if (!bytes.empty()) std::memcpy(out.Data(), bytes.data(), bytes.size());
  return out;
}

const char* EventTypeName(EngineEvent::Type type) {
  switch (type) {
    case EngineEvent::Type::kToken:
      return "token";
    case EngineEvent::Type::kDone:
      return "done";
    case EngineEvent::Type::kError:
      return "error";
    case EngineEvent::Type::kEmbed:
      return "embed";
  }
  return "error";
}

}  // namespace

Napi::Object EngineEventToJs(Napi::Env env, const EngineEvent& event) {
  Napi::Object obj = Napi::Object::New(env);
  obj.Set("type", EventTypeName(event.type));
  obj.Set("taskId", event.task_id);
  switch (event.type) {
    case EngineEvent::Type::kToken:
      obj.Set("text", Napi::String::New(env, event.text));
      obj.Set("token", event.token);
      if (event.has_logprobs) {
        obj.Set("bytes", ToBytes(env, event.bytes));
        obj.Set("logprob", event.logprob);
        Napi::Array top = Napi::Array::New(env, event.top_logprobs.size());
        for (uint32_t i = 0; i < event.top_logprobs.size(); ++i) {
          const TokenLogprob& entry = event.top_logprobs[i];
          Napi::Object item = Napi::Object::New(env);
          item.Set("token", entry.token);
          item.Set("bytes", ToBytes(env, entry.bytes));
          item.Set("logprob", entry.logprob);
          top.Set(i, item);
        }
        obj.Set("topLogprobs", top);
      }
      break;
    case EngineEvent::Type::kDone: {
      obj.Set("reason", StopReasonName(event.reason));
      if (event.reason == StopReason::kStop) obj.Set("stopString", Napi::String::New(env, event.stop_string));
      Napi::Object timings = Napi::Object::New(env);
      timings.Set("promptN", event.timings.prompt_n);
      timings.Set("promptTotal", event.timings.prompt_total);
      timings.Set("promptNs", static_cast<double>(event.timings.prompt_ns));
      timings.Set("predictedN", event.timings.predicted_n);
      timings.Set("predictedNs", static_cast<double>(event.timings.predicted_ns));
      if (event.timings.slot >= 0) timings.Set("slot", event.timings.slot);
      if (event.timings.draft_n > 0) {
        timings.Set("draftN", event.timings.draft_n);
        timings.Set("draftAcceptedN", event.timings.draft_accepted_n);
      }
      obj.Set("timings", timings);
      break;
    }
    case EngineEvent::Type::kError:
      obj.Set("code", ErrorCodeName(event.code));
      obj.Set("message", Napi::String::New(env, event.message));
      break;
    case EngineEvent::Type::kEmbed:
      break;
  }
  return obj;
}

}  // namespace llamad
