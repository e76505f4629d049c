#include "chat_render.h"

#include <utility>
#include <vector>

#include "chat_parse_step.h"
#include "convert.h"
#include "errors.h"

namespace llamad {

namespace {

constexpr size_t kMaxCachedTemplates = 16;

bool IsMissing(const Napi::Value& value) { return value.IsUndefined() || value.IsNull(); }

Napi::Object RequireObject(Napi::Env env, Napi::Value value, const std::string& name) {
  if (!value.IsObject() || value.IsArray()) ThrowError(env, ErrorCode::kInvalidArgument, name + " must be an object");
  return value.As<Napi::Object>();
}

Napi::Array RequireArray(Napi::Env env, Napi::Value value, const std::string& name) {
  if (!value.IsArray()) ThrowError(env, ErrorCode::kInvalidArgument, name + " must be an array");
  return value.As<Napi::Array>();
}

std::string OptionalString(Napi::Env env, const Napi::Object& obj, const char* key, const std::string& name) {
  Napi::Value value = obj.Get(key);
  if (IsMissing(value)) return std::string();
  return ToString(env, value, name.c_str());
}

common_chat_msg ToMessage(Napi::Env env, Napi::Value value) {
  Napi::Object obj = RequireObject(env, value, "request.messages[i]");
  common_chat_msg msg;
  msg.role = ToString(env, obj.Get("role"), "request.messages[i].role");
  msg.content = ToString(env, obj.Get("content"), "request.messages[i].content");
  msg.reasoning_content = OptionalString(env, obj, "reasoningContent", "request.messages[i].reasoningContent");
  msg.tool_name = OptionalString(env, obj, "toolName", "request.messages[i].toolName");
  msg.tool_call_id = OptionalString(env, obj, "toolCallId", "request.messages[i].toolCallId");
  Napi::Value calls = obj.Get("toolCalls");
  if (!IsMissing(calls)) {
    Napi::Array array = RequireArray(env, calls, "request.messages[i].toolCalls");
    for (uint32_t i = 0; i < array.Length(); ++i) {
      Napi::Object call = RequireObject(env, array.Get(i), "request.messages[i].toolCalls[j]");
      common_chat_tool_call tool_call;
      tool_call.name = ToString(env, call.Get("name"), "request.messages[i].toolCalls[j].name");
      tool_call.arguments = ToString(env, call.Get("arguments"), "request.messages[i].toolCalls[j].arguments");
      tool_call.id = OptionalString(env, call, "id", "request.messages[i].toolCalls[j].id");
      msg.tool_calls.push_back(std::move(tool_call));
    }
  }
  return msg;
}

const char* TriggerTypeName(common_grammar_trigger_type type) {
  switch (type) {
    case COMMON_GRAMMAR_TRIGGER_TYPE_TOKEN:
      return "token";
    case COMMON_GRAMMAR_TRIGGER_TYPE_WORD:
      return "word";
    case COMMON_GRAMMAR_TRIGGER_TYPE_PATTERN:
      return "pattern";
    case COMMON_GRAMMAR_TRIGGER_TYPE_PATTERN_FULL:
      return "pattern_full";
  }
  return "word";
}

Napi::Array ToStringArray(Napi::Env env, const std::vector<std::string>& values) {
  Napi::Array out = Napi::Array::New(env, values.size());
  for (uint32_t i = 0; i < values.size(); ++i) out.Set(i, Napi::String::New(env, values[i]));
  return out;
}

Napi::Object ToParsed(Napi::Env env, const common_chat_msg& msg) {
  Napi::Object out = Napi::Object::New(env);
  out.Set("content", Napi::String::New(env, msg.content));
  out.Set("reasoningContent", Napi::String::New(env, msg.reasoning_content));
  Napi::Array calls = Napi::Array::New(env, msg.tool_calls.size());
  for (uint32_t i = 0; i < msg.tool_calls.size(); ++i) {
    Napi::Object call = Napi::Object::New(env);
    call.Set("id", Napi::String::New(env, msg.tool_calls[i].id));
    call.Set("name", Napi::String::New(env, msg.tool_calls[i].name));
    call.Set("arguments", Napi::String::New(env, msg.tool_calls[i].arguments));
    calls.Set(i, call);
  }
  out.Set("toolCalls", calls);
  return out;
}

}  // namespace

std::shared_ptr<const common_chat_templates> ChatTemplateCache::Get(const llama_model* model,
                                                                    const std::string& override_template) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = cache_.find(override_template);
  if (it != cache_.end()) return it->second;
  common_chat_templates_ptr templates = common_chat_templates_init(model, override_template);
  if (!templates) throw LlamaError(ErrorCode::kTemplateFailed, "cannot parse the chat template");
  if (cache_.size() >= kMaxCachedTemplates) cache_.clear();
  std::shared_ptr<const common_chat_templates> shared(templates.release(), common_chat_templates_deleter());
  cache_.emplace(override_template, shared);
  return shared;
}

Napi::Function ChatParser::Init(Napi::Env env) {
  return DefineClass(env, "ChatParser",
                     {InstanceMethod<&ChatParser::Parse>("parse"), InstanceMethod<&ChatParser::ParseStep>("parseStep"),
                      InstanceMethod<&ChatParser::StepDelimiters>("stepDelimiters")});
}

ChatParser::ChatParser(const Napi::CallbackInfo& info) : Napi::ObjectWrap<ChatParser>(info) {}

Napi::Object ChatParser::Create(Napi::Env env, const common_chat_params& params) {
  Napi::Object obj = AddonData::Get(env)->chat_parser_constructor.New({});
  ChatParser* parser = ChatParser::Unwrap(obj);
  auto parser_params = std::make_unique<common_chat_parser_params>(params);
  parser_params->reasoning_format = COMMON_REASONING_FORMAT_DEEPSEEK;
  parser_params->reasoning_in_content = false;
  parser_params->parse_tool_calls = true;
  if (!params.parser.empty()) parser_params->parser.load(params.parser);
  if (parser_params->parser.empty())
    parser->content_only_ = std::make_unique<common_peg_arena>(ContentOnlyChatParser());
  parser->params_ = std::move(parser_params);
  parser->support_ = AnalyzeChatParser(parser->Arena(), parser->params_->format);
  return obj;
}

const common_peg_arena& ChatParser::Arena() const { return content_only_ ? *content_only_ : params_->parser; }

Napi::Value ChatParser::Parse(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!params_) ThrowError(env, ErrorCode::kInvalidArgument, "ChatParser objects come from Model.renderChat()");
  const std::string text = ToString(env, info[0], "text");
  const bool is_partial = ToOptionalBool(env, info[1], "isPartial", false);
  return ToParsed(env, Run(env, text, is_partial, nullptr));
}

Napi::Value ChatParser::ParseStep(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!params_) ThrowError(env, ErrorCode::kInvalidArgument, "ChatParser objects come from Model.renderChat()");
  const std::string text = ToString(env, info[0], "text");
  ChatFrontier frontier = ChatFrontier::kNone;
  Napi::Object out = ToParsed(env, Run(env, text, true, &frontier));
  out.Set("frontier", Napi::Number::New(env, static_cast<int>(frontier)));
  return out;
}

Napi::Value ChatParser::StepDelimiters(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!params_) ThrowError(env, ErrorCode::kInvalidArgument, "ChatParser objects come from Model.renderChat()");
  return ToStringArray(env, support_.delimiters);
}

common_chat_msg ChatParser::Run(Napi::Env env, const std::string& text, bool is_partial, ChatFrontier* frontier) {
  common_chat_msg msg;
  try {
    // The oracle is common_chat_parse itself; a step runs the same parse through ParseChatStep to see its AST.
    msg = frontier ? ParseChatStep(Arena(), *params_, support_, text, is_partial, frontier)
                   : common_chat_parse(text, is_partial, *params_);
  } catch (const std::bad_alloc&) {
    ThrowError(env, ErrorCode::kOom, "out of memory while parsing the chat output");
  } catch (const std::exception& e) {
    if (is_partial) return last_partial_;  // what was safe so far; the unparsed tail waits
    // A final output that does not parse (e.g. a malformed tool call): return it as plain content.
    msg = common_chat_msg();
    msg.content = text;
  } catch (...) {
    if (is_partial) return last_partial_;
    msg = common_chat_msg();
    msg.content = text;
  }
  if (is_partial && !msg.tool_calls.empty()) {
    // Withhold a tool call still being generated: its arguments are not yet a complete JSON value.
    const common_chat_tool_call& last = msg.tool_calls.back();
    if (last.name.empty() || common_json::parse_no_throw(last.arguments).is_discarded()) msg.tool_calls.pop_back();
  }
  if (is_partial) last_partial_ = msg;
  return msg;
}

ChatRenderRequest ToChatRenderRequest(Napi::Env env, Napi::Value request) {
  Napi::Object obj = RequireObject(env, request, "request");
  ChatRenderRequest out;
  common_chat_templates_inputs& inputs = out.inputs;
  inputs.use_jinja = true;
  Napi::Array messages = RequireArray(env, obj.Get("messages"), "request.messages");
  for (uint32_t i = 0; i < messages.Length(); ++i) inputs.messages.push_back(ToMessage(env, messages.Get(i)));
  Napi::Value tools = obj.Get("tools");
  if (!IsMissing(tools)) {
    Napi::Array array = RequireArray(env, tools, "request.tools");
    for (uint32_t i = 0; i < array.Length(); ++i) {
      Napi::Object tool = RequireObject(env, array.Get(i), "request.tools[i]");
      common_chat_tool t;
      t.name = ToString(env, tool.Get("name"), "request.tools[i].name");
      t.description = OptionalString(env, tool, "description", "request.tools[i].description");
      t.parameters = OptionalString(env, tool, "parameters", "request.tools[i].parameters");
      if (t.parameters.empty()) t.parameters = "{}";
      inputs.tools.push_back(std::move(t));
    }
  }
  const std::string tool_choice = OptionalString(env, obj, "toolChoice", "request.toolChoice");
  if (tool_choice.empty() || tool_choice == "auto") {
    inputs.tool_choice = COMMON_CHAT_TOOL_CHOICE_AUTO;
  } else if (tool_choice == "none") {
    inputs.tool_choice = COMMON_CHAT_TOOL_CHOICE_NONE;
  } else if (tool_choice == "required") {
    inputs.tool_choice = COMMON_CHAT_TOOL_CHOICE_REQUIRED;
  } else {
    ThrowError(env, ErrorCode::kInvalidArgument, "request.toolChoice must be 'auto', 'none' or 'required'");
  }
  inputs.json_schema = OptionalString(env, obj, "jsonSchema", "request.jsonSchema");
  out.thinking_requested = ToOptionalBool(env, obj.Get("enableThinking"), "request.enableThinking", false);
  inputs.enable_thinking = out.thinking_requested;
  // Reasoning is always parsed out (as llama-server does by default): with thinking off, templates such as Qwen3's
  // put an empty <think></think> block in the generation prompt that would otherwise end up in the content.
  inputs.reasoning_format = COMMON_REASONING_FORMAT_DEEPSEEK;
  inputs.add_generation_prompt =
      ToOptionalBool(env, obj.Get("addGenerationPrompt"), "request.addGenerationPrompt", true);
  Napi::Value kwargs = obj.Get("templateKwargs");
  if (!IsMissing(kwargs)) {
    Napi::Object map = RequireObject(env, kwargs, "request.templateKwargs");
    Napi::Array keys = map.GetPropertyNames();
    for (uint32_t i = 0; i < keys.Length(); ++i) {
      const std::string key = keys.Get(i).ToString().Utf8Value();
      inputs.chat_template_kwargs[key] = ToString(env, map.Get(key), "request.templateKwargs[key]");
    }
  }
  out.override_template = OptionalString(env, obj, "template", "request.template");
  return out;
}

common_chat_params ComputeChatRender(const llama_model* model, ChatTemplateCache& cache,
                                     const ChatRenderRequest& request) {
  common_chat_templates_inputs inputs = request.inputs;
  // Invalid JSON in tool parameters / kwargs / schema surfaces as a parse error: report it as a bad argument.
  for (const common_chat_tool& tool : inputs.tools) {
    if (common_json::parse_no_throw(tool.parameters).is_discarded()) {
      throw LlamaError(ErrorCode::kInvalidArgument, "tool '" + tool.name + "': parameters is not valid JSON");
    }
  }
  if (!inputs.json_schema.empty() && common_json::parse_no_throw(inputs.json_schema).is_discarded()) {
    throw LlamaError(ErrorCode::kInvalidArgument, "jsonSchema is not valid JSON");
  }
  for (const auto& entry : inputs.chat_template_kwargs) {
    if (common_json::parse_no_throw(entry.second).is_discarded()) {
      throw LlamaError(ErrorCode::kInvalidArgument, "templateKwargs." + entry.first + " is not valid JSON");
    }
  }
  const std::shared_ptr<const common_chat_templates> templates = cache.Get(model, request.override_template);
  const llama_vocab* vocab = llama_model_get_vocab(model);
  inputs.add_bos = llama_vocab_get_add_bos(vocab);
  inputs.add_eos = llama_vocab_get_add_eos(vocab);
  return common_chat_templates_apply(templates.get(), inputs);
}

Napi::Object ChatRenderToJs(Napi::Env env, const ChatRenderRequest& request, const common_chat_params& params) {
  const bool thinking = request.thinking_requested && params.supports_thinking;
  Napi::Object out = Napi::Object::New(env);
  out.Set("prompt", Napi::String::New(env, params.prompt));
  out.Set("format", Napi::String::New(env, common_chat_format_name(params.format)));
  out.Set("grammar", Napi::String::New(env, params.grammar));
  out.Set("grammarLazy", Napi::Boolean::New(env, params.grammar_lazy));
  Napi::Array triggers = Napi::Array::New(env, params.grammar_triggers.size());
  for (uint32_t i = 0; i < params.grammar_triggers.size(); ++i) {
    const common_grammar_trigger& trigger = params.grammar_triggers[i];
    Napi::Object t = Napi::Object::New(env);
    t.Set("type", TriggerTypeName(trigger.type));
    t.Set("value", Napi::String::New(env, trigger.value));
    if (trigger.type == COMMON_GRAMMAR_TRIGGER_TYPE_TOKEN) t.Set("token", trigger.token);
    triggers.Set(i, t);
  }
  out.Set("grammarTriggers", triggers);
  out.Set("preservedTokens", ToStringArray(env, params.preserved_tokens));
  out.Set("additionalStops", ToStringArray(env, params.additional_stops));
  out.Set("thinking", Napi::Boolean::New(env, thinking));
  out.Set("generationPrompt", Napi::String::New(env, params.generation_prompt));
  out.Set("parser", GuardJs(env, ErrorCode::kTemplateFailed, "renderChat parser",
                            [&] { return ChatParser::Create(env, params); }));
  return out;
}

Napi::Value RenderChat(Napi::Env env, const llama_model* model, ChatTemplateCache& cache, Napi::Value request) {
  const ChatRenderRequest parsed = ToChatRenderRequest(env, request);
  common_chat_params params =
      GuardJs(env, ErrorCode::kTemplateFailed, "renderChat", [&] { return ComputeChatRender(model, cache, parsed); });
  return ChatRenderToJs(env, parsed, params);
}

Napi::Value ChatCapabilities(Napi::Env env, const llama_model* model, ChatTemplateCache& cache, Napi::Value tmpl) {
  const std::string override_template = IsMissing(tmpl) ? std::string() : ToString(env, tmpl, "template");
  return GuardJs(env, ErrorCode::kTemplateFailed, "chatCapabilities", [&]() -> Napi::Value {
    const std::shared_ptr<const common_chat_templates> templates = cache.Get(model, override_template);
    const std::map<std::string, bool> caps = common_chat_templates_get_caps(templates.get());
    auto cap = [&caps](const char* key) {
      auto it = caps.find(key);
      return it != caps.end() && it->second;
    };
    Napi::Object out = Napi::Object::New(env);
    out.Set("tools", Napi::Boolean::New(env, cap("supports_tools") || cap("supports_tool_calls")));
    out.Set("thinking", Napi::Boolean::New(env, common_chat_templates_support_enable_thinking(templates.get())));
    return out;
  });
}

}  // namespace llamad
