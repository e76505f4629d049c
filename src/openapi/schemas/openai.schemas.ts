import {
  anyObject,
  arr,
  bool,
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

// The OpenAI-compatible layer (src/api/openai/openai.types.ts, src/api/openai/responses/responses.types.ts;
// reference/ollama-api.md §12.2–§12.6). Request bodies list the fields the request mappers read; any other field is
// accepted and ignored (`additionalProperties: true`). Responses are exact.

const stringOrArray = { oneOf: [str(), arr(str())] };
const streamOptions = nullable(obj({ include_usage: bool('Send a final chunk with `usage` and `choices: []`.') }));
const finishReason = oneOfStr('stop', 'length', 'tool_calls');
const done = { ...lit('[DONE]'), description: 'The last event of the stream.' };

/** Sampling fields shared by chat and completions. */
const sampling: Record<string, JsonSchema> = {
  max_tokens: int(),
  temperature: num(),
  top_p: num(),
  stop: stringOrArray,
  seed: int(),
  frequency_penalty: num(),
  presence_penalty: num(),
};

/** llama-server's per-request `lora` (beyond OpenAI; api/ollama/dto/lora-request.dto.ts, at most 8 entries). */
const lora = arr(
  obj(
    {
      id: int("Index into the model's adapters (its Modelfile ADAPTER lines, in order)."),
      name: str('A model over the same weights with ADAPTER layers: its adapters are applied.'),
      scale: num("Multiplier of the adapter's delta, -100..100; 0 = not applied."),
    },
    ['scale'],
  ),
  "LoRA adapters for this request instead of the model's own (llama-server's `lora`): exactly one of `id` and " +
    '`name` per entry; adapters not listed are not applied, `[]` = the base weights.',
);

const message = obj(
  {
    role: oneOfStr('system', 'developer', 'user', 'assistant', 'tool'),
    content: {
      oneOf: [
        str(),
        arr(
          obj(
            {
              type: oneOfStr('text', 'image_url', 'input_audio'),
              text: str(),
              image_url: {},
              input_audio: obj({ data: str(), format: oneOfStr('wav', 'mp3', 'flac') }, ['data']),
            },
            ['type'],
          ),
        ),
        { type: 'null' },
      ],
      description:
        'Text, or parts of type `text` / `image_url` (data URLs for images) / `input_audio` (base64 WAV, MP3 or FLAC).',
    },
    name: str(),
    reasoning: str(),
    tool_calls: arr(ref('OpenAIToolCall')),
    tool_call_id: str(),
  },
  ['role'],
  { open: true },
);

const usage: JsonSchema = ref('OpenAIUsage');

export const OPENAI_SCHEMAS: Record<string, JsonSchema> = {
  OpenAIError: obj(
    {
      error: obj({ message: str(), type: str(), param: nullable(str()), code: nullable(str()) }, [
        'message',
        'type',
        'param',
        'code',
      ]),
    },
    ['error'],
    { description: 'Error body of the /v1 routes (400 invalid_request_error, 404 not_found_error, else api_error).' },
  ),
  OpenAIToolCall: obj(
    {
      id: str(),
      index: int(),
      type: lit('function'),
      function: obj({ name: str(), arguments: str('JSON text.') }, ['name', 'arguments']),
    },
    ['id', 'type', 'function'],
  ),
  OpenAIUsage: obj(
    {
      prompt_tokens: int(),
      completion_tokens: int(),
      total_tokens: int(),
      prompt_tokens_details: obj({ cached_tokens: int('Prompt tokens reused from the KV cache.') }, ['cached_tokens']),
    },
    ['prompt_tokens', 'completion_tokens', 'total_tokens', 'prompt_tokens_details'],
  ),
  OpenAILogprobs: nullable(
    obj(
      {
        content: arr(
          obj(
            {
              token: str(),
              logprob: num(),
              bytes: arr(int()),
              top_logprobs: arr(obj({ token: str(), logprob: num(), bytes: arr(int()) })),
            },
            ['token', 'logprob', 'bytes', 'top_logprobs'],
          ),
        ),
      },
      ['content'],
    ),
  ),
  OpenAIChatRequest: obj(
    {
      model: str(),
      messages: arr(message),
      stream: bool('Default false; true: server-sent `chat.completion.chunk` events.'),
      stream_options: streamOptions,
      ...sampling,
      max_completion_tokens: int(),
      response_format: obj(
        { type: oneOfStr('text', 'json_object', 'json_schema'), json_schema: anyObject('`{name, schema, strict}`.') },
        ['type'],
      ),
      tools: arr(anyObject('`{type: "function", function: {name, description, parameters}}`.')),
      tool_choice: { oneOf: [oneOfStr('none', 'auto', 'required'), anyObject()] },
      logprobs: bool(),
      top_logprobs: int(),
      reasoning_effort: str('`none` (thinking off), `minimal`, `low`, `medium`, `high`, `xhigh`.'),
      reasoning: nullable(obj({ effort: str() }, [], { open: true })),
      lora,
      keep_alive: keepAliveField,
    },
    ['model', 'messages'],
    { open: true },
  ),
  OpenAIChatCompletion: obj(
    {
      id: str('`chatcmpl-…`.'),
      object: lit('chat.completion'),
      created: int('Unix seconds.'),
      model: str(),
      system_fingerprint: str(),
      choices: arr(
        obj(
          {
            index: int(),
            message: obj(
              { role: lit('assistant'), content: str(), reasoning: str(), tool_calls: arr(ref('OpenAIToolCall')) },
              ['role', 'content'],
            ),
            finish_reason: finishReason,
            logprobs: ref('OpenAILogprobs'),
          },
          ['index', 'message', 'finish_reason', 'logprobs'],
        ),
      ),
      usage,
    },
    ['id', 'object', 'created', 'model', 'system_fingerprint', 'choices', 'usage'],
  ),
  OpenAIChatCompletionChunk: obj(
    {
      id: str(),
      object: lit('chat.completion.chunk'),
      created: int(),
      model: str(),
      system_fingerprint: str(),
      choices: arr(
        obj(
          {
            index: int(),
            delta: obj({
              role: lit('assistant'),
              content: str(),
              reasoning: str(),
              tool_calls: arr(ref('OpenAIToolCall')),
            }),
            finish_reason: nullable(finishReason),
            logprobs: ref('OpenAILogprobs'),
          },
          ['index', 'delta', 'finish_reason'],
        ),
      ),
      usage,
    },
    ['id', 'object', 'created', 'model', 'system_fingerprint', 'choices'],
  ),
  OpenAIChatCompletionEvent: sseEvent(
    { oneOf: [ref('OpenAIChatCompletionChunk'), done] },
    'A server-sent event of a streamed chat completion: `data: <chunk JSON>`, last `data: [DONE]`.',
  ),
  OpenAICompletionRequest: obj(
    {
      model: str(),
      prompt: {
        oneOf: [str(), arr(str()), arr(int()), arr(arr(int()))],
        description: 'Text, texts (one choice each), token ids, or arrays of token ids.',
      },
      suffix: str(),
      stream: bool(),
      stream_options: streamOptions,
      ...sampling,
      logprobs: int('Return this many alternatives per token.'),
      lora,
      keep_alive: keepAliveField,
    },
    ['model', 'prompt'],
    { open: true },
  ),
  OpenAICompletion: obj(
    {
      id: str('`cmpl-…`.'),
      object: lit('text_completion'),
      created: int(),
      model: str(),
      system_fingerprint: str(),
      choices: arr(
        obj({ text: str(), index: int(), finish_reason: nullable(finishReason), logprobs: { type: 'null' } }, [
          'text',
          'index',
          'finish_reason',
          'logprobs',
        ]),
      ),
      usage,
    },
    ['id', 'object', 'created', 'model', 'system_fingerprint', 'choices'],
    { description: 'A text completion, or one streamed chunk of it.' },
  ),
  OpenAICompletionEvent: sseEvent(
    { oneOf: [ref('OpenAICompletion'), done] },
    'A server-sent event of a streamed completion: `data: <chunk JSON>`, last `data: [DONE]`.',
  ),
  OpenAIEmbeddingRequest: obj(
    {
      model: str(),
      input: { oneOf: [str(), arr(str()), arr(int()), arr(arr(int()))] },
      encoding_format: oneOfStr('float', 'base64'),
      dimensions: int(),
      keep_alive: keepAliveField,
    },
    ['model', 'input'],
    { open: true },
  ),
  OpenAIEmbeddingResponse: obj(
    {
      object: lit('list'),
      data: arr(
        obj(
          {
            object: lit('embedding'),
            embedding: { oneOf: [arr(num()), str('Base64 of little-endian float32.')] },
            index: int(),
          },
          ['object', 'embedding', 'index'],
        ),
      ),
      model: str(),
      usage: obj({ prompt_tokens: int(), total_tokens: int() }, ['prompt_tokens', 'total_tokens']),
    },
    ['object', 'data', 'model', 'usage'],
  ),
  OpenAIModel: obj(
    {
      id: str(),
      object: lit('model'),
      created: int('Unix seconds.'),
      owned_by: str(),
      root: str('Only on a model with LoRA adapters (vLLM): its first adapter blob digest, `sha256:<hex>`.'),
      parent: str(
        'Only on a model with LoRA adapters (vLLM): the listed model over the same weights without adapters, if any.',
      ),
      context_length: int(
        'Beyond OpenAI: the context a request gets, tokens — the loaded num_ctx (per slot, as /api/ps) when loaded, ' +
          'else the num_ctx a load would use now.',
      ),
      max_context_length: int("Beyond OpenAI: the model's trained context (GGUF `<arch>.context_length`), tokens."),
    },
    ['id', 'object', 'created', 'owned_by'],
  ),
  OpenAIModelList: obj({ object: lit('list'), data: arr(ref('OpenAIModel')) }, ['object', 'data']),
  ...responsesSchemas(),
};

/** The Responses API (`/v1/responses`). */
function responsesSchemas(): Record<string, JsonSchema> {
  const inputItem = anyObject(
    'A message `{role, content}` (content text or `input_text` / `input_image` / `input_audio` parts), a ' +
      '`function_call` or a `function_call_output` item, or a bare `input_audio` part.',
  );
  const outputItem = obj(
    {
      id: str(),
      type: oneOfStr('message', 'reasoning', 'function_call'),
      status: oneOfStr('in_progress', 'completed', 'incomplete'),
      role: lit('assistant'),
      content: arr(anyObject('`output_text` (message) or `reasoning_text` (reasoning) part.')),
      summary: arr(anyObject()),
      call_id: str(),
      name: str(),
      arguments: str('JSON text.'),
    },
    ['id', 'type'],
  );
  return {
    ResponsesRequest: obj(
      {
        model: str(),
        input: { oneOf: [str(), arr(inputItem)] },
        instructions: nullable(str()),
        tools: arr(anyObject('Function tools `{type: "function", name, description, parameters, strict}`.')),
        tool_choice: { oneOf: [oneOfStr('none', 'auto', 'required'), anyObject()] },
        parallel_tool_calls: bool(),
        text: obj({ format: anyObject('`{type: "text" | "json_object" | "json_schema", …}`.') }, [], { open: true }),
        reasoning: nullable(obj({ effort: nullable(str()), summary: nullable(str()) }, [], { open: true })),
        max_output_tokens: nullable(int()),
        temperature: nullable(num()),
        top_p: nullable(num()),
        stream: bool('Default false; true: server-sent events.'),
        store: bool('Default true: kept in memory for GET and previous_response_id.'),
        metadata: nullable({ type: 'object', additionalProperties: { type: 'string' } }),
        user: str(),
        previous_response_id: nullable(str()),
        prompt_cache_key: nullable(str()),
        safety_identifier: nullable(str()),
        keep_alive: keepAliveField,
      },
      ['model', 'input'],
      { open: true },
    ),
    ResponseUsage: obj(
      {
        input_tokens: int(),
        input_tokens_details: obj({ cached_tokens: int(), cache_write_tokens: int() }, [
          'cached_tokens',
          'cache_write_tokens',
        ]),
        output_tokens: int(),
        output_tokens_details: obj({ reasoning_tokens: int() }, ['reasoning_tokens']),
        total_tokens: int(),
      },
      ['input_tokens', 'input_tokens_details', 'output_tokens', 'output_tokens_details', 'total_tokens'],
    ),
    ResponseObject: obj(
      {
        id: str('`resp_…`.'),
        object: lit('response'),
        created_at: int('Unix seconds.'),
        completed_at: nullable(int()),
        status: oneOfStr('in_progress', 'completed', 'incomplete'),
        error: { type: 'null' },
        incomplete_details: nullable(obj({ reason: lit('max_output_tokens') }, ['reason'])),
        model: str(),
        instructions: nullable(str()),
        output: arr(outputItem),
        usage: ref('ResponseUsage'),
        max_output_tokens: nullable(int()),
        metadata: { type: 'object', additionalProperties: { type: 'string' } },
        parallel_tool_calls: bool(),
        previous_response_id: nullable(str()),
        reasoning: nullable(anyObject()),
        store: bool(),
        temperature: num(),
        text: anyObject(),
        tool_choice: {},
        tools: arr({}),
        top_p: nullable(num()),
      },
      ['id', 'object', 'created_at', 'status', 'model', 'output'],
      { open: true, description: 'A Response object (further fields echo the request).' },
    ),
    ResponseDeleted: obj({ id: str(), object: lit('response'), deleted: { type: 'boolean', const: true } }, [
      'id',
      'object',
      'deleted',
    ]),
    ResponseStreamEvent: sseEvent(
      obj(
        {
          type: str('Equals the `event` name.'),
          sequence_number: int(),
          response: ref('ResponseObject'),
          item: outputItem,
          item_id: str(),
          output_index: int(),
          content_index: int(),
          delta: str(),
          text: str(),
          arguments: str(),
        },
        ['type', 'sequence_number'],
        { open: true },
      ),
      'A server-sent event of a streamed response, from `response.created` to `response.completed` (or ' +
        '`response.incomplete`); a failure after the first event is an `error` event.',
      oneOfStr(
        'response.created',
        'response.in_progress',
        'response.output_item.added',
        'response.content_part.added',
        'response.output_text.delta',
        'response.output_text.done',
        'response.reasoning_text.delta',
        'response.reasoning_text.done',
        'response.function_call_arguments.delta',
        'response.function_call_arguments.done',
        'response.content_part.done',
        'response.output_item.done',
        'response.completed',
        'response.incomplete',
        'error',
      ),
    ),
  };
}
