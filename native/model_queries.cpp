// Model's queries on a loaded llama_model: info and GGUF metadata, the tokenizer, the chat templates, and their
// async forms (native jobs on the libuv pool, Model::RunJob). Split from model.cpp (loading, jobs, dispose).
#include <cstring>
#include <limits>
#include <utility>

#include "chat.h"
#include "errors.h"
#include "model.h"

namespace llamad {

namespace {

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

}  // namespace llamad
