// Chat rendering and output parsing through llama.cpp common/chat (binding.d.ts renderChat, NativeChatParser).
#ifndef LLAMAD_NATIVE_CHAT_RENDER_H_
#define LLAMAD_NATIVE_CHAT_RENDER_H_

#include <napi.h>

#include <map>
#include <memory>
#include <string>

#include "addon_data.h"
#include "chat.h"

namespace llamad {

// JS class ChatParser (binding.d.ts NativeChatParser): created only by Model.renderChat, bound to that render's
// format, generation prompt, reasoning format and PEG parser. parse() runs common_chat_parse on the JS thread.
class ChatParser : public Napi::ObjectWrap<ChatParser> {
 public:
  static Napi::Function Init(Napi::Env env);
  // A new parser object for `params` (JS thread).
  static Napi::Object Create(Napi::Env env, const common_chat_params& params);

  explicit ChatParser(const Napi::CallbackInfo& info);

 private:
  Napi::Value Parse(const Napi::CallbackInfo& info);

  std::unique_ptr<common_chat_parser_params> params_;
  common_chat_msg last_partial_;  // last successful partial parse: the fallback when a partial parse fails
};

// The chat templates of one model, per template override (JS thread only). common_chat_templates_init parses the
// Jinja source, so each override is parsed once.
class ChatTemplateCache {
 public:
  // Throws LlamaError(kTemplateFailed) when the template does not parse.
  const common_chat_templates* Get(const llama_model* model, const std::string& override_template);
  void Clear() { cache_.clear(); }

 private:
  std::map<std::string, common_chat_templates_ptr> cache_;
};

// Model.renderChat(request) on `model` (JS thread).
Napi::Value RenderChat(Napi::Env env, const llama_model* model, ChatTemplateCache& cache, Napi::Value request);

// Model.chatCapabilities(template?) (JS thread).
Napi::Value ChatCapabilities(Napi::Env env, const llama_model* model, ChatTemplateCache& cache, Napi::Value tmpl);

}  // namespace llamad

#endif  // LLAMAD_NATIVE_CHAT_RENDER_H_
