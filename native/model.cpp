#include "model.h"

#include <cstring>
#include <exception>
#include <limits>
#include <utility>

#include "chat.h"
#include "context.h"
#include "errors.h"
#include "rpc.h"
#include "workers.h"

namespace llamad {

namespace {

void CallProgress(napi_env env, napi_value /*js_callback*/, void* context, void* data) {
  std::unique_ptr<float> progress(static_cast<float*>(data));
  auto* state = static_cast<LoadState*>(context);
  if (env == nullptr || state == nullptr || state->on_progress.IsEmpty()) return;
  Napi::Env napi_env(env);
  try {
    Napi::HandleScope scope(napi_env);
    state->on_progress.Call({Napi::Number::New(napi_env, *progress)});
  } catch (const Napi::Error& e) {
    napi_fatal_exception(env, e.Value());  // a throwing callback is an uncaught exception, as in JS
  } catch (...) {
  }
}

void FinalizeLoad(napi_env env, void* finalize_data, void* /*hint*/) {
  std::unique_ptr<std::shared_ptr<LoadState>> keep(static_cast<std::shared_ptr<LoadState>*>(finalize_data));
  std::shared_ptr<LoadState> state = *keep;
  {
    std::lock_guard<std::mutex> lock(state->mutex);
    state->closed = true;
    state->tsfn = nullptr;
  }
  if (env == nullptr || state->owner == nullptr) {
    if (state->model != nullptr) llama_model_free(state->model);
    state->model = nullptr;
    return;
  }
  try {
    Napi::HandleScope scope(env);
    state->owner->FinishLoad(Napi::Env(env), state);
  } catch (...) {
  }
}

std::string MetaString(int32_t (*getter)(const llama_model*, int32_t, char*, size_t), const llama_model* model,
                       int32_t index) {
  std::vector<char> buffer(256);
  int32_t n = getter(model, index, buffer.data(), buffer.size());
  if (n < 0) return std::string();
  if (static_cast<size_t>(n) >= buffer.size()) {
    buffer.resize(static_cast<size_t>(n) + 1);
    n = getter(model, index, buffer.data(), buffer.size());
    if (n < 0) return std::string();
  }
  return std::string(buffer.data(), static_cast<size_t>(n));
}

// llama_tokenize of `text` (any thread). Throws LlamaError.
std::vector<llama_token> TokenizeText(const llama_model* model, const std::string& text, bool add_special,
                                      bool parse_special) {
  const llama_vocab* vocab = llama_model_get_vocab(model);
  const int32_t length = static_cast<int32_t>(text.size());
  std::vector<llama_token> out(text.size() + 4);
  int32_t n = llama_tokenize(vocab, text.data(), length, out.data(), static_cast<int32_t>(out.size()), add_special,
                             parse_special);
  if (n < 0 && n != std::numeric_limits<int32_t>::min()) {
    out.resize(static_cast<size_t>(-n));
    n = llama_tokenize(vocab, text.data(), length, out.data(), static_cast<int32_t>(out.size()), add_special,
                       parse_special);
  }
  if (n < 0) throw LlamaError(ErrorCode::kInvalidArgument, "tokenization failed (result too large)");
  out.resize(static_cast<size_t>(n));
  return out;
}

// llama_detokenize of `tokens` (any thread; ids already range-checked). Throws LlamaError.
std::string DetokenizeTokens(const llama_model* model, const std::vector<llama_token>& tokens, bool remove_special,
                             bool unparse_special) {
  const llama_vocab* vocab = llama_model_get_vocab(model);
  std::string out(tokens.size() * 8 + 16, '\0');
  const int32_t n_tokens = static_cast<int32_t>(tokens.size());
  int32_t n = llama_detokenize(vocab, tokens.data(), n_tokens, &out[0], static_cast<int32_t>(out.size()),
                               remove_special, unparse_special);
  if (n < 0) {
    out.resize(static_cast<size_t>(-n));
    n = llama_detokenize(vocab, tokens.data(), n_tokens, &out[0], static_cast<int32_t>(out.size()), remove_special,
                         unparse_special);
  }
  if (n < 0) throw LlamaError(ErrorCode::kInternal, "detokenization failed");
  out.resize(static_cast<size_t>(n));
  return out;
}

Napi::Int32Array ToInt32Array(Napi::Env env, const std::vector<llama_token>& tokens) {
  Napi::Int32Array array = Napi::Int32Array::New(env, tokens.size());
  if (!tokens.empty()) std::memcpy(array.Data(), tokens.data(), tokens.size() * sizeof(llama_token));
  return array;
}

// Arguments of tokenize(text, addSpecial, parseSpecial), checked on the JS thread.
struct TokenizeArgs {
  std::string text;
  bool add_special = false;
  bool parse_special = false;
};

TokenizeArgs ToTokenizeArgs(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  TokenizeArgs args;
  args.text = ToString(env, info[0], "text");
  args.add_special = ToOptionalBool(env, info[1], "addSpecial", false);
  args.parse_special = ToOptionalBool(env, info[2], "parseSpecial", false);
  if (args.text.size() > static_cast<size_t>(std::numeric_limits<int32_t>::max() / 2)) {
    ThrowError(env, ErrorCode::kInvalidArgument, "text is too long to tokenize");
  }
  return args;
}

// Arguments of detokenize(tokens, removeSpecial, unparseSpecial), checked (ids in range) on the JS thread.
struct DetokenizeArgs {
  std::vector<llama_token> tokens;
  bool remove_special = false;
  bool unparse_special = false;
};

DetokenizeArgs ToDetokenizeArgs(const Napi::CallbackInfo& info, const llama_model* model) {
  Napi::Env env = info.Env();
  DetokenizeArgs args;
  args.tokens = ToTokens(env, info[0], "tokens");
  args.remove_special = ToOptionalBool(env, info[1], "removeSpecial", false);
  args.unparse_special = ToOptionalBool(env, info[2], "unparseSpecial", false);
  const int32_t n_vocab = llama_vocab_n_tokens(llama_model_get_vocab(model));
  for (llama_token token : args.tokens) {
    if (token < 0 || token >= n_vocab) {
      ThrowError(env, ErrorCode::kInvalidArgument, "token id " + std::to_string(token) + " is out of range");
    }
  }
  return args;
}

// Arguments of applyChatTemplate(messages, options), read on the JS thread.
struct ApplyTemplateArgs {
  std::vector<common_chat_msg> messages;
  bool add_generation_prompt = true;
  std::string override_template;
};

ApplyTemplateArgs ToApplyTemplateArgs(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!info[0].IsArray()) ThrowError(env, ErrorCode::kInvalidArgument, "messages must be an array");
  ApplyTemplateArgs args;
  Napi::Array array = info[0].As<Napi::Array>();
  for (uint32_t i = 0; i < array.Length(); ++i) {
    Napi::Value item = array.Get(i);
    if (!item.IsObject()) ThrowError(env, ErrorCode::kInvalidArgument, "messages[i] must be an object");
    Napi::Object obj = item.As<Napi::Object>();
    common_chat_msg msg;
    msg.role = ToString(env, obj.Get("role"), "messages[i].role");
    msg.content = ToString(env, obj.Get("content"), "messages[i].content");
    args.messages.push_back(std::move(msg));
  }
  if (!info[1].IsUndefined() && !info[1].IsNull()) {
    if (!info[1].IsObject()) ThrowError(env, ErrorCode::kInvalidArgument, "options must be an object");
    Napi::Object options = info[1].As<Napi::Object>();
    args.add_generation_prompt =
        ToOptionalBool(env, options.Get("addGenerationPrompt"), "options.addGenerationPrompt", true);
    Napi::Value tmpl = options.Get("template");
    if (!tmpl.IsUndefined() && !tmpl.IsNull()) args.override_template = ToString(env, tmpl, "options.template");
  }
  return args;
}

// common_chat_templates_apply of `args` (any thread). Throws LlamaError(kTemplateFailed) or common/chat's exceptions.
std::string ApplyTemplate(const llama_model* model, ApplyTemplateArgs& args) {
  common_chat_templates_ptr templates = common_chat_templates_init(model, args.override_template);
  if (!templates) throw LlamaError(ErrorCode::kTemplateFailed, "cannot parse the chat template");
  const llama_vocab* vocab = llama_model_get_vocab(model);
  common_chat_templates_inputs inputs;
  inputs.messages = std::move(args.messages);
  inputs.add_generation_prompt = args.add_generation_prompt;
  inputs.use_jinja = true;
  // As llama-server: drop a leading BOS / trailing EOS text that tokenize(addSpecial=true) adds anyway.
  inputs.add_bos = llama_vocab_get_add_bos(vocab);
  inputs.add_eos = llama_vocab_get_add_eos(vocab);
  return common_chat_templates_apply(templates.get(), inputs).prompt;
}

}  // namespace

Napi::Function Model::Init(Napi::Env env) {
  return DefineClass(env, "Model",
                     {
                         InstanceMethod<&Model::Load>("load"),
                         InstanceMethod<&Model::AbortLoad>("abortLoad"),
                         InstanceAccessor<&Model::GetLoaded>("loaded"),
                         InstanceMethod<&Model::Info>("info"),
                         InstanceMethod<&Model::Metadata>("metadata"),
                         InstanceMethod<&Model::ChatTemplate>("chatTemplate"),
                         InstanceMethod<&Model::ApplyChatTemplate>("applyChatTemplate"),
                         InstanceMethod<&Model::RenderChat>("renderChat"),
                         InstanceMethod<&Model::ChatCapabilities>("chatCapabilities"),
                         InstanceMethod<&Model::Tokenize>("tokenize"),
                         InstanceMethod<&Model::Detokenize>("detokenize"),
                         InstanceMethod<&Model::TokenizeAsync>("tokenizeAsync"),
                         InstanceMethod<&Model::DetokenizeAsync>("detokenizeAsync"),
                         InstanceMethod<&Model::ApplyChatTemplateAsync>("applyChatTemplateAsync"),
                         InstanceMethod<&Model::RenderChatAsync>("renderChatAsync"),
                         InstanceMethod<&Model::Dispose>("dispose"),
                     });
}

Model::Model(const Napi::CallbackInfo& info) : Napi::ObjectWrap<Model>(info), data_(AddonData::Get(info.Env())) {
  Napi::Env env = info.Env();
  path_ = ToString(env, info[0], "path");
  params_ = ToModelParams(env, info[1]);
  data_->models.insert(this);
}

Model::~Model() {
  if (load_) load_->owner = nullptr;
  if (!data_->torn_down) {
    data_->models.erase(this);
    if (model_ != nullptr) FreeModel(Env());
  }
}

void Model::ReleaseNative() {
  AbandonJobs();  // no llama_model_free under a job still using the model
  if (load_) {
    load_->abort.store(true);
    load_->owner = nullptr;  // the loader finishes on its own; the env is gone by then
  }
  chat_templates_.Clear();
  lora_adapters_.clear();
  if (model_ != nullptr) {
    llama_model_free(model_);
    ReleaseRpcEndpoints(params_.rpc_servers);
  }
  model_ = nullptr;
  state_ = State::kDisposed;
}

llama_adapter_lora* Model::LoraAdapter(llama_model* model, const std::string& path) {
  std::lock_guard<std::mutex> lock(lora_mutex_);
  auto it = lora_adapters_.find(path);
  if (it != lora_adapters_.end()) return it->second;
  std::string reason;
  llama_adapter_lora* adapter = nullptr;
  try {
    adapter = llama_adapter_lora_init(model, path.c_str());  // logs llama.cpp's reason on failure
  } catch (const std::exception& e) {
    reason = e.what();
  } catch (...) {
    reason = "unknown error";
  }
  if (adapter == nullptr) {
    throw LlamaError(ErrorCode::kModelLoadFailed,
                     "cannot load the LoRA adapter " + path +
                         (reason.empty() ? " (missing file, not a LoRA GGUF, another architecture, or shapes that do "
                                           "not match the model)"
                                         : ": " + reason));
  }
  lora_adapters_.emplace(path, adapter);
  return adapter;
}

void Model::BeginJob() {
  ++pending_jobs_;
  std::lock_guard<std::mutex> lock(jobs_->mutex);
  ++jobs_->running;
}

void Model::ExecuteDone() {
  {
    std::lock_guard<std::mutex> lock(jobs_->mutex);
    --jobs_->running;
  }
  jobs_->idle.notify_all();
}

void Model::EndJob(Napi::Env env) {
  --pending_jobs_;
  if (!data_->torn_down) MaybeFinishDispose(env);
}

void Model::AbandonJobs() {
  jobs_->abandoned.store(true);
  std::unique_lock<std::mutex> lock(jobs_->mutex);
  // Bounded: a job is one context creation or one tokenize/render; a queued job skips its work once abandoned.
  jobs_->idle.wait_for(lock, std::chrono::seconds(30), [this] { return jobs_->running == 0; });
}

void Model::FreeModel(Napi::Env env) {
  chat_templates_.Clear();
  {
    std::lock_guard<std::mutex> lock(lora_mutex_);
    lora_adapters_.clear();
  }
  if (external_bytes_ != 0) {
    int64_t ignored = 0;
    napi_adjust_external_memory(env, -external_bytes_, &ignored);
    external_bytes_ = 0;
  }
  if (model_ == nullptr) return;
  llama_model_free(model_);
  ReleaseRpcEndpoints(params_.rpc_servers);
  model_ = nullptr;
}

llama_model* Model::RequireLoaded(Napi::Env env) const {
  if (state_ == State::kDisposing || state_ == State::kDisposed)
    ThrowError(env, ErrorCode::kDisposed, "model is disposed");
  if (state_ != State::kLoaded || model_ == nullptr) {
    ThrowError(env, ErrorCode::kInvalidArgument, "model is not loaded: call load() first");
  }
  return model_;
}

Napi::Value Model::Load(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (state_ == State::kDisposing || state_ == State::kDisposed)
    ThrowError(env, ErrorCode::kDisposed, "model is disposed");
  if (state_ != State::kUnloaded) ThrowError(env, ErrorCode::kInvalidArgument, "load() was already called");
  Napi::Value callback = info[0];
  if (!callback.IsUndefined() && !callback.IsNull() && !callback.IsFunction()) {
    ThrowError(env, ErrorCode::kInvalidArgument, "onProgress must be a function");
  }

  auto state = std::make_shared<LoadState>(env);
  state->owner = this;
  if (callback.IsFunction()) state->on_progress = Napi::Persistent(callback.As<Napi::Function>());
  auto* keep = new std::shared_ptr<LoadState>(state);
  napi_status status =
      napi_create_threadsafe_function(env, nullptr, nullptr, Napi::String::New(env, "llamad.load"), 0, 1, keep,
                                      &FinalizeLoad, state.get(), &CallProgress, &state->tsfn);
  if (status != napi_ok) {
    delete keep;
    ThrowError(env, ErrorCode::kInternal, "cannot create the load progress function");
  }

  llama_model_params mp = llama_model_default_params();
  if (params_.n_gpu_layers.has_value()) mp.n_gpu_layers = *params_.n_gpu_layers;
  mp.load_mode = params_.use_mmap && llama_supports_mmap() ? LLAMA_LOAD_MODE_MMAP : LLAMA_LOAD_MODE_NONE;
  mp.vocab_only = params_.vocab_only;
  mp.use_extra_bufts = params_.use_extra_bufts;

  load_ = state;
  state_ = State::kLoading;
  Ref();
  (new LoadModelWorker(env, path_, mp, params_.rpc_servers, state))->Queue();
  return state->deferred.Promise();
}

void Model::FinishLoad(Napi::Env env, const std::shared_ptr<LoadState>& state) {
  llama_model* loaded = state->model;
  state->model = nullptr;
  if (data_->torn_down) {
    if (loaded != nullptr) llama_model_free(loaded);
    return;
  }
  load_.reset();
  state->owner = nullptr;
  Unref();
  if (state_ == State::kDisposing) {
    if (loaded != nullptr) llama_model_free(loaded);
    state->deferred.Reject(MakeError(env, ErrorCode::kCancelled, "model was disposed while loading").Value());
    MaybeFinishDispose(env);
    return;
  }
  if (state->abort.load()) {
    if (loaded != nullptr) llama_model_free(loaded);
    state_ = State::kUnloaded;
    state->deferred.Reject(MakeError(env, ErrorCode::kCancelled, "model load aborted").Value());
    return;
  }
  if (loaded == nullptr) {
    state_ = State::kUnloaded;
    state->deferred.Reject(MakeError(env, state->code, state->message).Value());
    return;
  }
  model_ = loaded;
  state_ = State::kLoaded;
  AcquireRpcEndpoints(params_.rpc_servers);
  external_bytes_ = static_cast<int64_t>(llama_model_size(model_));
  if (external_bytes_ != 0) {
    int64_t ignored = 0;
    napi_adjust_external_memory(env, external_bytes_, &ignored);
  }
  state->deferred.Resolve(env.Undefined());
}

Napi::Value Model::AbortLoad(const Napi::CallbackInfo& info) {
  if (load_) load_->abort.store(true);
  return info.Env().Undefined();
}

Napi::Value Model::GetLoaded(const Napi::CallbackInfo& info) {
  return Napi::Boolean::New(info.Env(), state_ == State::kLoaded);
}

Napi::Value Model::Info(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const llama_model* model = RequireLoaded(env);
  return GuardJs(env, ErrorCode::kInternal, "info", [&]() -> Napi::Value {
    const llama_vocab* vocab = llama_model_get_vocab(model);
    char desc[256] = {0};
    llama_model_desc(model, desc, sizeof(desc));
    Napi::Object out = Napi::Object::New(env);
    out.Set("description", desc);
    out.Set("nParams", static_cast<double>(llama_model_n_params(model)));
    out.Set("size", static_cast<double>(llama_model_size(model)));
    out.Set("nCtxTrain", llama_model_n_ctx_train(model));
    out.Set("nEmbd", llama_model_n_embd(model));
    // A vocab-only model has no layer hparams, and llama_model_n_head() aborts without layers.
    const int32_t n_layer = params_.vocab_only ? 0 : llama_model_n_layer(model);
    out.Set("nLayer", n_layer);
    out.Set("nHead", n_layer > 0 ? llama_model_n_head(model) : 0);
    out.Set("nHeadKv", n_layer > 0 ? llama_model_n_head_kv(model) : 0);
    out.Set("nVocab", llama_vocab_n_tokens(vocab));
    out.Set("hasEncoder", llama_model_has_encoder(model));
    out.Set("hasDecoder", llama_model_has_decoder(model));
    out.Set("bos", llama_vocab_bos(vocab));
    out.Set("eos", llama_vocab_eos(vocab));
    out.Set("addBos", llama_vocab_get_add_bos(vocab));
    out.Set("addEos", llama_vocab_get_add_eos(vocab));
    return out;
  });
}

Napi::Value Model::Metadata(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const llama_model* model = RequireLoaded(env);
  return GuardJs(env, ErrorCode::kInternal, "metadata", [&]() -> Napi::Value {
    Napi::Object out = Napi::Object::New(env);
    const int32_t count = llama_model_meta_count(model);
    for (int32_t i = 0; i < count; ++i) {
      const std::string key = MetaString(&llama_model_meta_key_by_index, model, i);
      if (key.empty()) continue;
      out.Set(key, MetaString(&llama_model_meta_val_str_by_index, model, i));
    }
    return out;
  });
}

Napi::Value Model::ChatTemplate(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const llama_model* model = RequireLoaded(env);
  const char* tmpl = llama_model_chat_template(model, nullptr);
  if (tmpl == nullptr) return env.Null();
  return Napi::String::New(env, tmpl);
}

Napi::Value Model::ApplyChatTemplate(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const llama_model* model = RequireLoaded(env);
  ApplyTemplateArgs args = ToApplyTemplateArgs(info);
  std::string prompt =
      GuardJs(env, ErrorCode::kTemplateFailed, "applyChatTemplate", [&] { return ApplyTemplate(model, args); });
  return Napi::String::New(env, prompt);
}

Napi::Value Model::RenderChat(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const llama_model* model = RequireLoaded(env);
  return llamad::RenderChat(env, model, chat_templates_, info[0]);
}

Napi::Value Model::ChatCapabilities(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const llama_model* model = RequireLoaded(env);
  return llamad::ChatCapabilities(env, model, chat_templates_, info[0]);
}

Napi::Value Model::Tokenize(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const llama_model* model = RequireLoaded(env);
  const TokenizeArgs args = ToTokenizeArgs(info);
  std::vector<llama_token> tokens = GuardJs(env, ErrorCode::kInternal, "tokenize", [&] {
    return TokenizeText(model, args.text, args.add_special, args.parse_special);
  });
  return ToInt32Array(env, tokens);
}

Napi::Value Model::Detokenize(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const llama_model* model = RequireLoaded(env);
  const DetokenizeArgs args = ToDetokenizeArgs(info, model);
  std::string text = GuardJs(env, ErrorCode::kInternal, "detokenize", [&] {
    return DetokenizeTokens(model, args.tokens, args.remove_special, args.unparse_special);
  });
  return Napi::String::New(env, text);
}

Napi::Value Model::RunJob(const Napi::CallbackInfo& info, const char* name, ErrorCode fallback,
                          const std::function<void(Napi::Env)>& prepare, std::function<void()> work,
                          std::function<Napi::Value(Napi::Env)> finish) {
  Napi::Env env = info.Env();
  try {
    RequireLoaded(env);
    prepare(env);
  } catch (const Napi::Error& error) {
    Napi::Promise::Deferred deferred = Napi::Promise::Deferred::New(env);
    deferred.Reject(error.Value());
    return deferred.Promise();
  }
  return StartJob(env, info.This().As<Napi::Object>(), name, fallback, std::move(work), std::move(finish));
}

Napi::Promise Model::StartJob(Napi::Env env, Napi::Object self, const char* name, ErrorCode fallback,
                              std::function<void()> work, std::function<Napi::Value(Napi::Env)> finish) {
  Napi::Promise::Deferred deferred = Napi::Promise::Deferred::New(env);
  BeginJob();
  auto* worker = new ModelJobWorker(env, name, this, self, fallback, std::move(work), std::move(finish), deferred);
  worker->Queue();
  return deferred.Promise();
}

Napi::Value Model::TokenizeAsync(const Napi::CallbackInfo& info) {
  auto args = std::make_shared<TokenizeArgs>();
  auto tokens = std::make_shared<std::vector<llama_token>>();
  const llama_model* model = model_;
  return RunJob(
      info, "tokenize", ErrorCode::kInternal, [&](Napi::Env) { *args = ToTokenizeArgs(info); },
      [args, tokens, model] { *tokens = TokenizeText(model, args->text, args->add_special, args->parse_special); },
      [tokens](Napi::Env env) -> Napi::Value { return ToInt32Array(env, *tokens); });
}

Napi::Value Model::DetokenizeAsync(const Napi::CallbackInfo& info) {
  auto args = std::make_shared<DetokenizeArgs>();
  auto text = std::make_shared<std::string>();
  const llama_model* model = model_;
  return RunJob(
      info, "detokenize", ErrorCode::kInternal, [&](Napi::Env) { *args = ToDetokenizeArgs(info, model); },
      [args, text, model] {
        *text = DetokenizeTokens(model, args->tokens, args->remove_special, args->unparse_special);
      },
      [text](Napi::Env env) -> Napi::Value { return Napi::String::New(env, *text); });
}

Napi::Value Model::ApplyChatTemplateAsync(const Napi::CallbackInfo& info) {
  auto args = std::make_shared<ApplyTemplateArgs>();
  auto prompt = std::make_shared<std::string>();
  const llama_model* model = model_;
  return RunJob(
      info, "applyChatTemplate", ErrorCode::kTemplateFailed, [&](Napi::Env) { *args = ToApplyTemplateArgs(info); },
      [args, prompt, model] { *prompt = ApplyTemplate(model, *args); },
      [prompt](Napi::Env env) -> Napi::Value { return Napi::String::New(env, *prompt); });
}

Napi::Value Model::RenderChatAsync(const Napi::CallbackInfo& info) {
  auto request = std::make_shared<ChatRenderRequest>();
  auto params = std::make_shared<common_chat_params>();
  const llama_model* model = model_;
  ChatTemplateCache* cache = &chat_templates_;
  return RunJob(
      info, "renderChat", ErrorCode::kTemplateFailed,
      [&](Napi::Env env) { *request = ToChatRenderRequest(env, info[0]); },
      [request, params, model, cache] { *params = ComputeChatRender(model, *cache, *request); },
      [request, params](Napi::Env env) -> Napi::Value { return ChatRenderToJs(env, *request, *params); });
}

Napi::Value Model::Dispose(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Napi::Promise::Deferred deferred = Napi::Promise::Deferred::New(env);
  switch (state_) {
    case State::kDisposed:
      deferred.Resolve(env.Undefined());
      return deferred.Promise();
    case State::kUnloaded:
      state_ = State::kDisposed;
      data_->models.erase(this);
      deferred.Resolve(env.Undefined());
      return deferred.Promise();
    case State::kLoading:
      state_ = State::kDisposing;
      if (load_) load_->abort.store(true);
      dispose_waiters_.push_back(deferred);
      return deferred.Promise();  // FinishLoad completes the dispose
    case State::kLoaded: {
      state_ = State::kDisposing;
      dispose_waiters_.push_back(deferred);
      const std::set<Context*> children = contexts_;
      for (Context* context : children) context->BeginDispose(env);
      MaybeFinishDispose(env);
      return deferred.Promise();
    }
    case State::kDisposing:
      dispose_waiters_.push_back(deferred);
      return deferred.Promise();
  }
  return deferred.Promise();
}

void Model::OnContextGone(Napi::Env env, Context* context) {
  contexts_.erase(context);
  MaybeFinishDispose(env);
}

void Model::MaybeFinishDispose(Napi::Env env) {
  if (state_ != State::kDisposing || load_ || !contexts_.empty() || pending_jobs_ > 0) return;
  // llama_model_free runs on the libuv pool, not the JS thread: freeing even a vocab-only model (the daemon's chat
  // renderer) took 100-140 ms there, a stall for every stream at each reload (issue 32). The JS side forgets the
  // pointer now; the dispose promises settle once the pool has freed it (and released its RPC endpoints).
  llama_model* model = model_;
  std::vector<std::string> endpoints = params_.rpc_servers;
  model_ = nullptr;
  FreeModel(env);  // model_ is null: templates, adapters and the external-memory count only
  state_ = State::kDisposed;
  data_->models.erase(this);
  std::vector<Napi::Promise::Deferred> waiters;
  waiters.swap(dispose_waiters_);
  auto settle = [waiters](Napi::Env settle_env) {
    for (const Napi::Promise::Deferred& waiter : waiters) waiter.Resolve(settle_env.Undefined());
  };
  if (model == nullptr) {
    settle(env);
    return;
  }
  auto* worker = new BackgroundWorker(
      env,
      [model, endpoints] {
        llama_model_free(model);
        ReleaseRpcEndpoints(endpoints);
      },
      settle);
  worker->Queue();
}

}  // namespace llamad
