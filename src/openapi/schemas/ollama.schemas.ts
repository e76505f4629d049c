import {
  anyObject,
  arr,
  bool,
  int,
  JsonSchema,
  lit,
  nullable,
  num,
  obj,
  oneOfStr,
  ref,
  sseEvent,
  str,
} from './json-schema';

// Response shapes of the native (Ollama) API: src/api/ollama/dto/generation-response.dto.ts,
// src/api/ollama/dto/model-responses.dto.ts, src/api/ollama/ps.controller.ts, src/registry/registry.types.ts
// (reference/ollama-api.md §3). Request bodies are the DTO classes themselves (@ApiProperty via the Go* decorators).

const NS = 'nanoseconds';

/** Metrics of a final chunk (omitted when zero, Go's omitempty). */
const metrics: Record<string, JsonSchema> = {
  total_duration: int(`Whole request, ${NS}.`),
  load_duration: int(`Loading the model, ${NS}.`),
  prompt_eval_count: int('Prompt tokens.'),
  prompt_eval_duration: int(`Prompt evaluation, ${NS}.`),
  eval_count: int('Generated tokens.'),
  eval_duration: int(`Generation, ${NS}.`),
};

const doneReason = { ...oneOfStr('stop', 'length', 'load', 'unload'), description: 'Final chunk only.' };
const createdAt = { type: 'string', format: 'date-time', description: 'RFC 3339 UTC.' };

export const OLLAMA_SCHEMAS: Record<string, JsonSchema> = {
  OllamaError: obj({ error: str() }, ['error'], {
    description: 'Error body of the native API; after a stream began, the last NDJSON line.',
  }),
  VersionResponse: obj({ version: str('The Ollama API level implemented, e.g. `0.33.0`.') }, ['version']),
  ToolCall: obj(
    {
      id: str(),
      function: obj({ index: int(), name: str(), arguments: anyObject('Parsed arguments.') }, [
        'index',
        'name',
        'arguments',
      ]),
    },
    ['function'],
  ),
  TokenLogprob: obj({ token: str(), logprob: num('Natural log.'), bytes: arr(int()) }, ['token', 'logprob']),
  Logprob: obj({ token: str(), logprob: num(), bytes: arr(int()), top_logprobs: arr(ref('TokenLogprob')) }, [
    'token',
    'logprob',
  ]),
  GenerateResponse: obj(
    {
      model: str(),
      created_at: createdAt,
      response: str('Text of this chunk (the whole text with `stream: false`).'),
      thinking: str(),
      done: bool(),
      done_reason: doneReason,
      context: arr(int(), 'Prompt + output token ids (final chunk, not in raw mode).'),
      tool_calls: arr(ref('ToolCall')),
      logprobs: arr(ref('Logprob')),
      ...metrics,
    },
    ['model', 'created_at', 'response', 'done'],
    { description: 'One NDJSON chunk of /api/generate, or the whole answer with `stream: false`.' },
  ),
  ChatResponse: obj(
    {
      model: str(),
      created_at: createdAt,
      message: obj({ role: lit('assistant'), content: str(), thinking: str(), tool_calls: arr(ref('ToolCall')) }, [
        'role',
        'content',
      ]),
      done: bool(),
      done_reason: doneReason,
      logprobs: arr(ref('Logprob')),
      ...metrics,
    },
    ['model', 'created_at', 'message', 'done'],
    { description: 'One NDJSON chunk of /api/chat, or the whole answer with `stream: false`.' },
  ),
  EmbedResponse: obj(
    {
      model: str(),
      embeddings: arr(arr(num()), 'One L2-normalized vector per input.'),
      total_duration: metrics.total_duration,
      load_duration: metrics.load_duration,
      prompt_eval_count: int('Tokens over all inputs.'),
    },
    ['model', 'embeddings'],
  ),
  EmbeddingsResponse: obj({ embedding: arr(num()) }, ['embedding']),
  TokenizeResponse: obj(
    {
      model: str(),
      tokens: arr(int(), 'Token ids.'),
      pieces: arr(str(), 'With `with_pieces`: the text of each token (special tokens rendered).'),
    },
    ['model', 'tokens'],
  ),
  DetokenizeResponse: obj({ model: str(), content: str() }, ['model', 'content']),
  LlamaServerTokenizeResponse: obj(
    {
      tokens: {
        oneOf: [arr(int()), arr(obj({ id: int(), piece: str() }, ['id', 'piece']))],
        description: 'Ids, or `{id, piece}` objects with `with_pieces`.',
      },
    },
    ['tokens'],
  ),
  LlamaServerDetokenizeResponse: obj({ content: str() }, ['content']),
  RerankResponse: obj(
    {
      model: str(),
      object: lit('list'),
      results: arr(
        obj(
          {
            index: int('Index into `documents`.'),
            relevance_score: num('The reranker score (unnormalized).'),
            document: obj({ text: str() }, ['text'], { description: 'With `return_documents`.' }),
          },
          ['index', 'relevance_score'],
        ),
        'Best first, cut to `top_n`.',
      ),
      usage: obj({ prompt_tokens: int(), total_tokens: int() }, ['prompt_tokens', 'total_tokens']),
    },
    ['model', 'object', 'results', 'usage'],
  ),
  ModelDetails: obj(
    {
      parent_model: str(),
      format: str(),
      family: str(),
      families: nullable(arr(str())),
      parameter_size: str(),
      quantization_level: str(),
    },
    ['parent_model', 'format', 'family', 'families', 'parameter_size', 'quantization_level'],
  ),
  ListResponse: obj(
    {
      models: arr(
        obj(
          {
            name: str(),
            model: str(),
            modified_at: { type: 'string', format: 'date-time' },
            size: int('Bytes.'),
            digest: str('Hex sha256 of the manifest.'),
            details: ref('ModelDetails'),
            capabilities: arr(str()),
          },
          ['name', 'model', 'modified_at', 'size', 'digest', 'details'],
        ),
      ),
    },
    ['models'],
  ),
  ShowResponse: obj(
    {
      license: str(),
      modelfile: str(),
      parameters: str(),
      template: str(),
      system: str(),
      details: ref('ModelDetails'),
      messages: arr(obj({ role: str(), content: str() }, ['role', 'content'])),
      model_info: anyObject('GGUF metadata (long arrays only with `verbose`).'),
      tensors: arr(obj({ name: str(), type: str(), shape: arr(int()) }, ['name', 'type', 'shape'])),
      capabilities: arr(oneOfStr('completion', 'embedding', 'vision', 'audio', 'tools', 'insert', 'thinking')),
      modified_at: { type: 'string', format: 'date-time' },
    },
    ['modelfile', 'details', 'model_info', 'capabilities', 'modified_at'],
  ),
  ProcessResponse: obj(
    {
      models: arr(
        obj(
          {
            name: str(),
            model: str(),
            size: int('Estimated resident bytes.'),
            digest: str(),
            details: ref('ModelDetails'),
            expires_at: { type: 'string', format: 'date-time' },
            size_vram: int(
              'Bytes in this machine’s accelerator memory (0 on a CPU build); layers on RPC workers are not counted.',
            ),
            context_length: int(),
            devices: arr(
              obj(
                {
                  name: str(
                    '`CPU` (system RAM), a local device (`CUDA0`, …) or an RPC worker device `RPC0[host:port]`.',
                  ),
                  size: int('Bytes on this device.'),
                  endpoint: str('For an RPC worker device: its `host:port`.'),
                },
                ['name', 'size'],
              ),
              'Beyond Ollama: where the bytes of `size` live, largest first. Absent when not measured.',
            ),
            pid: int(
              'Beyond Ollama: the OS process id of the model’s runner process (absent for an in-process runner).',
            ),
            loading: bool('Beyond Ollama: true on the row of a model still loading (absent once loaded).'),
            load_progress: num('Beyond Ollama: load progress in [0, 1] of a model still loading.'),
          },
          ['name', 'model', 'size', 'digest', 'details', 'expires_at', 'size_vram', 'context_length'],
        ),
      ),
    },
    ['models'],
  ),
  ProgressResponse: obj(
    {
      status: str('e.g. `pulling manifest`, `pulling layer <hex12>`, `success`.'),
      digest: str(),
      total: int('Bytes.'),
      completed: int('Bytes.'),
      done: bool('True on the final `success` record.'),
    },
    ['status', 'done'],
    { description: 'One progress record of /api/create, /api/pull or /api/push.' },
  ),
  StatusResponse: obj({ status: lit('success') }, ['status']),
  ModelEvent: sseEvent(
    obj(
      {
        model: str('The model, as /api/ps names it (`tiny:latest`).'),
        time: { type: 'string', format: 'date-time', description: 'RFC 3339 UTC.' },
        progress: num('`load.progress`: load progress in [0, 1] (llama.cpp), at most one event per 1 %.'),
        duration_ns: int(`\`load.ready\`: the load, ${NS}.`),
        error: str('`load.failed`: the error, as a request waiting for the load gets it.'),
        reason: oneOfStr('expired', 'evicted', 'requested', 'shutdown', 'failed'),
        status: str('`pull.progress`, `push.progress`, `create.step`: as the NDJSON records of those routes.'),
        digest: str(),
        total: int('Bytes.'),
        completed: int('Bytes.'),
      },
      ['model', 'time'],
    ),
    'One model lifecycle event (beyond Ollama): `id: <epoch>-<seq>`, `event: <type>`, `data: <JSON>`.',
    oneOfStr(
      'load.start',
      'load.progress',
      'load.ready',
      'load.failed',
      'unload',
      'pull.progress',
      'push.progress',
      'create.step',
    ),
  ),
};
