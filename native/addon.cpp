// Module entry: registers Model, Context and the free functions; per-environment AddonData; env cleanup hook.
#include <napi.h>

#include <algorithm>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>

#include "addon_abi.h"
#include "addon_data.h"
#include "backend_api.h"
#include "chat_render.h"
#include "context.h"
#include "convert.h"
#include "errors.h"
#include "ggml-backend.h"
#include "json-schema-to-grammar.h"
#include "llama.h"
#include "logger.h"
#include "model.h"
#include "workers.h"

namespace llamad {

namespace {

// llama_backend_init / llama_backend_free are process-wide: count the environments using them.
std::mutex g_backend_mutex;
int g_backend_users = 0;

void AcquireBackend() {
  std::lock_guard<std::mutex> lock(g_backend_mutex);
  if (g_backend_users++ == 0) {
    InstallLogCallback();
    LoadBackendModules();
    llama_backend_init();
  }
}

void ReleaseBackend() {
  std::lock_guard<std::mutex> lock(g_backend_mutex);
  if (--g_backend_users == 0) llama_backend_free();
}

// Holder stored as the environment's instance data.
struct InstanceData {
  std::shared_ptr<AddonData> data;
};

// Runs when the environment exits: frees every native handle still alive (contexts before models), then the backend.
// ObjectWrap destructors that run later see `torn_down` and do nothing.
void CleanupEnv(void* arg) {
  auto* holder = static_cast<InstanceData*>(arg);
  std::shared_ptr<AddonData> data = holder->data;
  const std::set<Context*> contexts = data->contexts;
  for (Context* context : contexts) context->ReleaseNative();
  const std::set<Model*> models = data->models;
  for (Model* model : models) model->ReleaseNative();
  data->contexts.clear();
  data->models.clear();
  data->torn_down = true;
  data->model_constructor.Reset();
  data->context_constructor.Reset();
  data->chat_parser_constructor.Reset();
  ReleaseBackend();
}

// process.on('exit') listener. process.exit() ends the process with exit() without running environment cleanup
// hooks, so decode threads would still be inside llama_decode while static destructors run: stop and join every
// decode thread here (the abort callback makes that quick) and free the contexts. The cleanup hook does the rest.
Napi::Value OnProcessExit(const Napi::CallbackInfo& info) {
  auto* holder = static_cast<InstanceData*>(info.Data());
  const std::set<Context*> contexts = holder->data->contexts;
  for (Context* context : contexts) context->ReleaseNative();
  const std::set<Model*> models = holder->data->models;
  for (Model* model : models) {
    model->AbortPendingLoad();
    model->AbandonJobs();  // exit() must not free llama.cpp state under a context creation or a tokenize job
  }
  return info.Env().Undefined();
}

Napi::Value SystemInfo(const Napi::CallbackInfo& info) {
  return Napi::String::New(info.Env(), llama_print_system_info());
}

Napi::Value Devices(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Napi::Array out = Napi::Array::New(env);
  const size_t count = ggml_backend_dev_count();
  for (size_t i = 0; i < count; ++i) {
    ggml_backend_dev_t device = ggml_backend_dev_get(i);
    const char* name = device != nullptr ? ggml_backend_dev_name(device) : nullptr;
    out.Set(static_cast<uint32_t>(out.Length()), Napi::String::New(env, name != nullptr ? name : "?"));
  }
  return out;
}

Napi::Value JsonSchemaToGrammar(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const std::string schema = ToString(env, info[0], "schema");
  std::string grammar = GuardJs(env, ErrorCode::kInvalidArgument, "jsonSchemaToGrammar",
                                [&] { return json_schema_to_grammar(common_json::parse(schema)); });
  return Napi::String::New(env, grammar);
}

Napi::Value Quantize(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  static const std::map<std::string, llama_ftype> kTypes = {
      {"F32", LLAMA_FTYPE_ALL_F32},          {"F16", LLAMA_FTYPE_MOSTLY_F16},
      {"BF16", LLAMA_FTYPE_MOSTLY_BF16},     {"Q8_0", LLAMA_FTYPE_MOSTLY_Q8_0},
      {"Q4_0", LLAMA_FTYPE_MOSTLY_Q4_0},     {"Q4_1", LLAMA_FTYPE_MOSTLY_Q4_1},
      {"Q5_0", LLAMA_FTYPE_MOSTLY_Q5_0},     {"Q5_1", LLAMA_FTYPE_MOSTLY_Q5_1},
      {"Q4_K_S", LLAMA_FTYPE_MOSTLY_Q4_K_S}, {"Q4_K_M", LLAMA_FTYPE_MOSTLY_Q4_K_M},
      {"Q5_K_S", LLAMA_FTYPE_MOSTLY_Q5_K_S}, {"Q5_K_M", LLAMA_FTYPE_MOSTLY_Q5_K_M},
      {"Q6_K", LLAMA_FTYPE_MOSTLY_Q6_K},     {"Q3_K_M", LLAMA_FTYPE_MOSTLY_Q3_K_M},
      {"Q2_K", LLAMA_FTYPE_MOSTLY_Q2_K},
  };
  const std::string input = ToString(env, info[0], "input");
  const std::string output = ToString(env, info[1], "output");
  if (!info[2].IsObject()) ThrowError(env, ErrorCode::kInvalidArgument, "params must be an object");
  Napi::Object params = info[2].As<Napi::Object>();
  const std::string type = ToString(env, params.Get("type"), "params.type");
  auto it = kTypes.find(type);
  if (it == kTypes.end()) ThrowError(env, ErrorCode::kInvalidArgument, "unknown quantization type \"" + type + "\"");
  int32_t n_threads = static_cast<int32_t>(std::max(1u, std::thread::hardware_concurrency()));
  Napi::Value threads = params.Get("nThreads");
  if (!threads.IsUndefined() && !threads.IsNull()) {
    if (!threads.IsNumber() || threads.As<Napi::Number>().Int32Value() < 1) {
      ThrowError(env, ErrorCode::kInvalidArgument, "params.nThreads must be a positive integer");
    }
    n_threads = threads.As<Napi::Number>().Int32Value();
  }
  auto* worker = new QuantizeWorker(env, input, output, it->second, n_threads);
  Napi::Promise promise = worker->Promise();
  worker->Queue();
  return promise;
}

Napi::Object Init(Napi::Env env, Napi::Object exports) {
  AcquireBackend();
  auto* holder = new InstanceData{std::make_shared<AddonData>()};
  env.SetInstanceData<InstanceData>(holder);
  napi_add_env_cleanup_hook(env, &CleanupEnv, holder);

  Napi::Function model = Model::Init(env);
  Napi::Function context = Context::Init(env);
  holder->data->model_constructor = Napi::Persistent(model);
  holder->data->context_constructor = Napi::Persistent(context);
  holder->data->chat_parser_constructor = Napi::Persistent(ChatParser::Init(env));

  Napi::Value process = env.Global().Get("process");
  if (process.IsObject()) {
    Napi::Value on = process.As<Napi::Object>().Get("on");
    if (on.IsFunction()) {
      on.As<Napi::Function>().Call(
          process, {Napi::String::New(env, "exit"), Napi::Function::New(env, &OnProcessExit, "llamadOnExit", holder)});
    }
  }

  exports.Set("Model", model);
  exports.Set("Context", context);
  exports.Set("systemInfo", Napi::Function::New<SystemInfo>(env, "systemInfo"));
  exports.Set("devices", Napi::Function::New<Devices>(env, "devices"));
  exports.Set("setLogger", Napi::Function::New<SetLogger>(env, "setLogger"));
  exports.Set("quantize", Napi::Function::New<Quantize>(env, "quantize"));
  exports.Set("jsonSchemaToGrammar", Napi::Function::New<JsonSchemaToGrammar>(env, "jsonSchemaToGrammar"));
  // What loadBinding() compares with the JavaScript before using anything else (native/addon_abi.h)
  exports.Set("version", Napi::String::New(env, LLAMAD_VERSION));
  exports.Set("abi", Napi::Number::New(env, LLAMAD_ADDON_ABI));
  return exports;
}

}  // namespace

std::shared_ptr<AddonData> AddonData::Get(Napi::Env env) { return env.GetInstanceData<InstanceData>()->data; }

}  // namespace llamad

namespace {

Napi::Object InitModule(Napi::Env env, Napi::Object exports) { return llamad::Init(env, exports); }

}  // namespace

NODE_API_MODULE(llamad, InitModule)
