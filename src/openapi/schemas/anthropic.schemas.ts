import {
  anyObject,
  arr,
  int,
  JsonSchema,
  keepAliveField,
  lit,
  nullable,
  num,
  obj,
  oneOfStr,
  ref,
  sseEvent,
  str,
} from './json-schema';

// The Anthropic Messages API (src/api/anthropic/anthropic.types.ts; reference/ollama-api.md §12.8, clients.md
// §1.3). Request bodies list the fields the request mapper reads; any other field is accepted and ignored.

const contentBlockIn = anyObject('A `text`, `image` (base64 source), `tool_use`, `tool_result` or `thinking` block.');

const requestFields: Record<string, JsonSchema> = {
  model: str(),
  messages: arr(
    obj(
      {
        role: oneOfStr('user', 'assistant'),
        content: { oneOf: [str(), arr(contentBlockIn)] },
      },
      ['role', 'content'],
      { open: true },
    ),
  ),
  system: { oneOf: [str(), arr(anyObject('A `text` block.'))] },
  tools: arr(anyObject('`{name, description, input_schema}`.')),
  tool_choice: anyObject('`{type: "auto" | "any" | "tool" | "none", name?}`.'),
  thinking: obj({ type: str('`enabled` or `disabled` (budget_tokens is ignored).'), budget_tokens: int() }, ['type'], {
    open: true,
  }),
  output_config: obj({ effort: str('`low`, `medium`, `high`, `max`: a thinking level.') }, [], { open: true }),
  keep_alive: keepAliveField,
};

export const ANTHROPIC_SCHEMAS: Record<string, JsonSchema> = {
  AnthropicError: obj(
    {
      type: lit('error'),
      error: obj({ type: str('e.g. `invalid_request_error`, `not_found_error`.'), message: str() }, [
        'type',
        'message',
      ]),
      request_id: str(),
    },
    ['type', 'error'],
  ),
  AnthropicMessagesRequest: obj(
    {
      ...requestFields,
      max_tokens: int(),
      stop_sequences: arr(str()),
      stream: { type: 'boolean', description: 'true: server-sent events.' },
      temperature: num(),
      top_p: num(),
      top_k: int(),
      metadata: anyObject(),
    },
    ['model', 'messages', 'max_tokens'],
    { open: true },
  ),
  AnthropicCountTokensRequest: obj(requestFields, ['model', 'messages'], { open: true }),
  AnthropicCountTokensResponse: obj({ input_tokens: int('The whole prompt, tokens.') }, ['input_tokens']),
  AnthropicUsage: obj(
    {
      input_tokens: int('Prompt tokens not read from the KV cache.'),
      cache_creation_input_tokens: int(),
      cache_read_input_tokens: int('Prompt tokens reused from the KV cache.'),
      output_tokens: int(),
    },
    ['input_tokens', 'cache_creation_input_tokens', 'cache_read_input_tokens', 'output_tokens'],
  ),
  AnthropicContentBlock: {
    oneOf: [
      obj({ type: lit('text'), text: str() }, ['type', 'text']),
      obj({ type: lit('tool_use'), id: str(), name: str(), input: anyObject() }, ['type', 'id', 'name', 'input']),
      obj({ type: lit('thinking'), thinking: str() }, ['type', 'thinking']),
    ],
  },
  AnthropicMessage: obj(
    {
      id: str('`msg_…`.'),
      type: lit('message'),
      role: lit('assistant'),
      model: str(),
      content: arr(ref('AnthropicContentBlock')),
      stop_reason: nullable(oneOfStr('end_turn', 'max_tokens', 'stop_sequence', 'tool_use')),
      stop_sequence: nullable(str()),
      usage: ref('AnthropicUsage'),
    },
    ['id', 'type', 'role', 'model', 'content', 'stop_reason', 'stop_sequence', 'usage'],
  ),
  AnthropicStreamEvent: sseEvent(
    obj(
      {
        type: str('Equals the `event` name.'),
        message: ref('AnthropicMessage'),
        index: int(),
        content_block: ref('AnthropicContentBlock'),
        delta: anyObject('`text_delta`, `input_json_delta`, `thinking_delta`; or `{stop_reason, stop_sequence}`.'),
        usage: anyObject(),
        error: anyObject(),
      },
      ['type'],
      { open: true },
    ),
    'A server-sent event of a streamed message: `message_start`, then per block `content_block_start`, ' +
      '`content_block_delta`…, `content_block_stop`, then `message_delta` and `message_stop`; `ping` at any time; ' +
      'a failure after the first event is an `error` event.',
    oneOfStr(
      'message_start',
      'content_block_start',
      'content_block_delta',
      'content_block_stop',
      'message_delta',
      'message_stop',
      'ping',
      'error',
    ),
  ),
};
