// Per-environment state of the addon (one per Node.js environment: main thread or worker thread).
#ifndef LLAMAD_NATIVE_ADDON_DATA_H_
#define LLAMAD_NATIVE_ADDON_DATA_H_

#include <napi.h>

#include <memory>
#include <set>

namespace llamad {

class Model;
class Context;

// Owned through std::shared_ptr by the environment's instance data and by every Model/Context, so it outlives
// all of them whatever order Node tears things down in. JS thread only.
struct AddonData {
  Napi::FunctionReference model_constructor;
  Napi::FunctionReference context_constructor;
  Napi::FunctionReference chat_parser_constructor;  // not exported: parsers come from Model.renderChat()
  std::set<Model*> models;                          // live Model objects (for the env cleanup hook)
  std::set<Context*> contexts;                      // live Context objects
  bool torn_down = false;  // the env cleanup hook ran: native handles are gone, JS must not be touched

  static std::shared_ptr<AddonData> Get(Napi::Env env);
};

}  // namespace llamad

#endif  // LLAMAD_NATIVE_ADDON_DATA_H_
