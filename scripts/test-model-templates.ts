/**
 * Chat templates of the generated test models (scripts/make-test-models.ts), and the Go template that goes with the
 * tool-capable one for rendered-mode tests. Written for these tests; the formats (Llama-2 `[INST]`, ChatML with
 * Hermes-style `<tool_call>` JSON) are the public ones those model families use.
 */

/** The usual Llama-2-chat Jinja template ([INST] turns, <<SYS>> block folded into the first user turn). */
export const LLAMA2_CHAT_TEMPLATE =
  "{% if messages[0]['role'] == 'system' %}{% set loop_messages = messages[1:] %}" +
  "{% set system_message = messages[0]['content'] %}{% else %}{% set loop_messages = messages %}" +
  '{% set system_message = false %}{% endif %}{% for message in loop_messages %}' +
  "{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}" +
  "{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %}" +
  "{% if loop.index0 == 0 and system_message != false %}{% set content = '<<SYS>>\\n' + system_message + " +
  "'\\n<</SYS>>\\n\\n' + message['content'] %}{% else %}{% set content = message['content'] %}{% endif %}" +
  "{% if message['role'] == 'user' %}{{ bos_token + '[INST] ' + content.strip() + ' [/INST]' }}" +
  "{% elif message['role'] == 'assistant' %}{{ ' '  + content.strip() + ' ' + eos_token }}{% endif %}{% endfor %}";

/** How the tool-capable templates tell the model to call a function (shared by the Jinja and the Go template). */
const TOOL_INSTRUCTIONS =
  'Call a function by answering with a JSON object of its name and arguments inside <tool_call></tool_call> tags:\n' +
  '<tool_call>\n{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call>\n\nFunctions:\n<tools>';

/**
 * ChatML with Hermes-style tools (the Qwen 2.5 format): the tool list as JSON lines inside `<tools>` in the system
 * turn, assistant calls as `<tool_call>\n{"name": …, "arguments": {…}}\n</tool_call>`, tool results as a user turn
 * wrapped in `<tool_response>`. llama.cpp's common/chat recognizes it as a tool-call template (native mode).
 */
export const QWEN_TOOLS_JINJA_TEMPLATE =
  "{%- set sys = namespace(text='') -%}" +
  "{%- if messages and messages[0]['role'] == 'system' -%}{%- set sys.text = messages[0]['content'] -%}{%- endif -%}" +
  '{%- if tools -%}' +
  '<|im_start|>system\n{% if sys.text %}{{ sys.text }}\n\n{% endif %}# Tools\n\n' +
  `${TOOL_INSTRUCTIONS}\n` +
  '{% for tool in tools %}{{ tool | tojson }}\n{% endfor %}</tools><|im_end|>\n' +
  '{%- elif sys.text -%}<|im_start|>system\n{{ sys.text }}<|im_end|>\n{%- endif -%}' +
  '{%- for message in messages -%}' +
  "{%- if message['role'] == 'user' -%}\n<|im_start|>user\n{{ message['content'] }}<|im_end|>" +
  "{%- elif message['role'] == 'assistant' -%}\n<|im_start|>assistant\n" +
  "{%- if message['content'] %}\n{{ message['content'] }}{% endif -%}" +
  "{%- for call in message['tool_calls'] or [] -%}" +
  "{%- if call['function'] is defined %}{% set call = call['function'] %}{% endif %}\n<tool_call>\n" +
  '{"name": "{{ call[\'name\'] }}", "arguments": ' +
  "{% if call['arguments'] is string %}{{ call['arguments'] }}{% else %}{{ call['arguments'] | tojson }}{% endif %}}" +
  '\n</tool_call>' +
  '{%- endfor -%}<|im_end|>' +
  "{%- elif message['role'] == 'tool' -%}\n<|im_start|>user\n<tool_response>\n{{ message['content'] }}\n" +
  '</tool_response><|im_end|>' +
  '{%- endif -%}' +
  '{%- endfor -%}' +
  '{%- if add_generation_prompt %}\n<|im_start|>assistant\n{% endif -%}';

/**
 * The Go template (rendered mode, reference/ollama-api.md §8.2) of the same format, for a Modelfile `TEMPLATE` over
 * tiny-qwen2-tools.gguf: `.Tools` makes the model tools-capable and its `{{ if .ToolCalls }}` block shows the
 * `<tool_call>` syntax that the tool-call parser and the forced-call grammar read.
 */
export const QWEN_TOOLS_GO_TEMPLATE = `{{- if or .System .Tools }}<|im_start|>system
{{- if .System }}
{{ .System }}
{{- end }}
{{- if .Tools }}

# Tools

${TOOL_INSTRUCTIONS}
{{- range .Tools }}
{{ json . }}
{{- end }}
</tools>
{{- end }}<|im_end|>
{{ end }}
{{- range $i, $_ := .Messages }}
{{- $last := eq (len (slice $.Messages $i)) 1 }}
{{- if eq .Role "user" }}<|im_start|>user
{{ .Content }}<|im_end|>
{{ else if eq .Role "assistant" }}<|im_start|>assistant
{{ if .Content }}{{ .Content }}{{ end }}
{{- if .ToolCalls }}{{ range .ToolCalls }}
<tool_call>
{"name": "{{ .Function.Name }}", "arguments": {{ json .Function.Arguments }}}
</tool_call>
{{- end }}{{ end }}
{{- if not $last }}<|im_end|>
{{ end }}
{{- else if eq .Role "tool" }}<|im_start|>user
<tool_response>
{{ .Content }}
</tool_response><|im_end|>
{{ end }}
{{- if and (ne .Role "assistant") $last }}<|im_start|>assistant
{{ end }}
{{- end }}`;
