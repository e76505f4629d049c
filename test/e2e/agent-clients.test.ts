import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { FakeBinding } from '../utils/fake-binding';
import { writeTinyGguf } from '../utils/gguf-fixtures';
import { postJson } from '../utils/ndjson';
import { createTestApp, TestApp } from '../utils/test-app';

/** One SSE frame: its `event:` name and parsed `data:`. */
interface SseFrame {
  event: string;
  data: Record<string, unknown>;
}

function parseSse(text: string): SseFrame[] {
  return text
    .split('\n\n')
    .filter((block) => block.trim() !== '')
    .map((block) => {
      const event = /^event: (.*)$/m.exec(block)?.[1] ?? '';
      const data = /^data: (.*)$/m.exec(block)?.[1] ?? '{}';
      return { event, data: JSON.parse(data) as Record<string, unknown> };
    });
}

/** A tool the way Claude Code declares its built-in tools: JSON Schema draft 7 with `$schema`, no extra properties. */
function claudeCodeTool(name: string, index: number): Record<string, unknown> {
  return {
    name,
    description: `${name}: ${'does one job of the coding agent. '.repeat(6)}`,
    input_schema: {
      $schema: 'http://json-schema.org/draft-07/schema#',
      type: 'object',
      additionalProperties: false,
      required: ['path'],
      properties: {
        path: { type: 'string', description: 'absolute path' },
        limit: { type: 'number', description: 'lines' },
        mode: { type: 'string', enum: ['a', 'b', `c${index}`] },
        options: { type: 'object', properties: { force: { type: 'boolean' } } },
      },
    },
  };
}

const CLAUDE_CODE_TOOLS = [
  'Task',
  'Bash',
  'Glob',
  'Grep',
  'ExitPlanMode',
  'Read',
  'Edit',
  'MultiEdit',
  'Write',
  'NotebookEdit',
  'WebFetch',
  'TodoWrite',
  'WebSearch',
  'BashOutput',
  'KillShell',
  'SlashCommand',
  'ListMcpResourcesTool',
  'ReadMcpResourceTool',
  'mcp__ide__getDiagnostics',
  'mcp__ide__executeCode',
  'AskUserQuestion',
  'Skill',
  'EnterPlanMode',
  'LSP',
].map(claudeCodeTool);

/**
 * A streamed turn as the Claude Code CLI sends it (its documented request shape): `?beta=true`, a 3-block `system`
 * with `cache_control`, 24 tools, adaptive thinking, `context_management`, `output_config`, `metadata.user_id`, and
 * messages whose blocks carry `cache_control`.
 */
function claudeCodeBody(model: string): Record<string, unknown> {
  return {
    model,
    max_tokens: 32000,
    stream: true,
    temperature: 1,
    system: [
      {
        type: 'text',
        text: "You are Claude Code, Anthropic's official CLI for Claude.",
        cache_control: { type: 'ephemeral' },
      },
      { type: 'text', text: 'You are an interactive CLI tool that helps users with software engineering tasks.' },
      {
        type: 'text',
        text: 'Here is useful information about the environment.',
        cache_control: { type: 'ephemeral', ttl: '1h' },
      },
    ],
    messages: [
      {
        role: 'user',
        content: [
          { type: 'text', text: '<system-reminder>This is a reminder.</system-reminder>' },
          { type: 'text', text: 'List the files here.', cache_control: { type: 'ephemeral' } },
        ],
      },
    ],
    tools: CLAUDE_CODE_TOOLS,
    thinking: { type: 'adaptive' },
    context_management: { edits: [{ type: 'clear_thinking_20251015', keep: 'all' }] },
    output_config: { effort: 'high' },
    metadata: { user_id: 'user_0123abcd_account_4567_session_89ef' },
  };
}

const CLAUDE_CODE_HEADERS = {
  'content-type': 'application/json',
  'anthropic-version': '2023-06-01',
  'anthropic-beta':
    'claude-code-20250219,interleaved-thinking-2025-05-14,context-management-2025-06-27,fine-grained-tool-streaming-2025-05-14',
  'anthropic-dangerous-direct-browser-access': 'true',
  authorization: 'Bearer ollama',
  'x-app': 'cli',
  'user-agent': 'claude-cli/2.1.0 (external, cli)',
  'x-stainless-lang': 'js',
  'x-stainless-retry-count': '0',
};

// Issue 12 §4: the requests real agent CLIs send are answered validly; fields the daemon does not use are ignored.
describe('agent CLIs replayed (FakeBinding)', () => {
  let t: TestApp;
  const binding = new FakeBinding();

  before(async () => {
    // OLLAMA_CONTEXT_LENGTH unset (the daemon's 4,096 default): agents' prompts may grow the context to the trained one.
    t = await createTestApp({ binding, config: { contextLength: 0 } });
    const path = join(t.modelsDir, 'agent.gguf');
    await writeTinyGguf(path, {
      chatTemplate: '{% for tool in tools %}{{ tool }}{% endfor %}{{ chatml }}',
      contextLength: 32768,
    });
    const res = await postJson(`${t.baseUrl}/api/create`, { model: 'agent', modelfile: `FROM ${path}`, stream: false });
    assert.equal(res.status, 200, await res.text());
  });

  after(() => t.close());

  /** input_tokens + cache_read_input_tokens of the streamed Claude Code turn. */
  let streamedPromptTokens = 0;

  it('Claude Code: HEAD /, then a streamed /v1/messages?beta=true turn with its full request', async () => {
    const head = await fetch(`${t.baseUrl}/`, { method: 'HEAD' });
    assert.equal(head.status, 200);
    binding.script = () => ({ pieces: ['Here', ' are', ' the files.'] });
    const res = await fetch(`${t.baseUrl}/v1/messages?beta=true`, {
      method: 'POST',
      headers: CLAUDE_CODE_HEADERS,
      body: JSON.stringify(claudeCodeBody('agent')),
    });
    assert.equal(res.status, 200, await res.clone().text());
    assert.match(res.headers.get('content-type') ?? '', /^text\/event-stream/);
    const frames = parseSse(await res.text());
    const names = frames.map((f) => f.event).filter((e) => e !== 'ping');
    assert.equal(names[0], 'message_start');
    assert.equal(names.at(-1), 'message_stop');
    assert.ok(names.includes('content_block_delta'));
    const text = frames
      .filter((f) => f.event === 'content_block_delta')
      .map((f) => (f.data.delta as { text?: string }).text ?? '')
      .join('');
    assert.equal(text, 'Here are the files.');
    const start = frames.find((f) => f.event === 'message_start')!.data;
    const usage = (start.message as { usage: { input_tokens: number; cache_read_input_tokens?: number } }).usage;
    streamedPromptTokens = usage.input_tokens + (usage.cache_read_input_tokens ?? 0);
    assert.ok(streamedPromptTokens > 0);
    const delta = frames.find((f) => f.event === 'message_delta')!.data;
    assert.equal((delta.delta as { stop_reason: string }).stop_reason, 'end_turn');
    assert.equal(typeof (delta.usage as { output_tokens: number }).output_tokens, 'number');

    // Every tool and every system block reached the prompt: nothing was cut.
    const render = binding.renderRequests.at(-1);
    assert.ok(render, 'rendered through the model template');
    const prompt = JSON.stringify(render);
    for (const name of ['Task', 'LSP', 'mcp__ide__executeCode']) assert.match(prompt, new RegExp(name));
    assert.match(prompt, /official CLI for Claude/);
    assert.match(prompt, /useful information about the environment/);
  });

  it('Claude Code: count_tokens with the same body equals the prompt the turn reported', async () => {
    const body = claudeCodeBody('agent');
    delete body.stream;
    delete body.max_tokens;
    const res = await fetch(`${t.baseUrl}/v1/messages/count_tokens?beta=true`, {
      method: 'POST',
      headers: CLAUDE_CODE_HEADERS,
      body: JSON.stringify(body),
    });
    assert.equal(res.status, 200, await res.clone().text());
    const counted = (await res.json()) as { input_tokens: number };
    assert.equal(counted.input_tokens, streamedPromptTokens);
  });

  it('Codex --oss: GET /api/version, /api/tags and /v1/models find the model', async () => {
    const version = await fetch(`${t.baseUrl}/api/version`);
    assert.equal(version.status, 200);
    assert.match(((await version.json()) as { version: string }).version, /^\d+\.\d+\.\d+/);
    const tags = (await (await fetch(`${t.baseUrl}/api/tags`)).json()) as { models: { name: string }[] };
    assert.ok(tags.models.some((m) => m.name === 'agent:latest'));
    const models = (await (await fetch(`${t.baseUrl}/v1/models`)).json()) as { data: { id: string }[] };
    assert.ok(models.data.some((m) => m.id === 'agent:latest'));
  });

  it('Codex: a streamed /v1/responses turn with its full request ends in response.completed', async () => {
    binding.script = () => ({ pieces: ['I will', ' list', ' them.'] });
    const res = await fetch(`${t.baseUrl}/v1/responses`, {
      method: 'POST',
      headers: CODEX_HEADERS,
      body: JSON.stringify(codexBody('agent', CODEX_FIRST_TURN)),
    });
    assert.equal(res.status, 200, await res.clone().text());
    assert.match(res.headers.get('content-type') ?? '', /^text\/event-stream/);
    const frames = parseSse(await res.text());
    const names = frames.map((f) => f.event);
    assert.deepEqual(names.slice(0, 2), ['response.created', 'response.in_progress']);
    assert.equal(names.at(-1), 'response.completed');
    assert.deepEqual(
      frames.map((f) => f.data.sequence_number),
      frames.map((_, i) => i),
    );
    const text = frames
      .filter((f) => f.event === 'response.output_text.delta')
      .map((f) => f.data.delta as string)
      .join('');
    assert.equal(text, 'I will list them.');
    const done = frames.at(-1)!.data.response as {
      status: string;
      store: boolean;
      usage: { input_tokens: number; input_tokens_details: { cached_tokens: number } };
    };
    assert.equal(done.status, 'completed');
    assert.equal(done.store, false);
    assert.ok(done.usage.input_tokens > 0);
    assert.equal(typeof done.usage.input_tokens_details.cached_tokens, 'number');
    // The developer instructions, every function tool and the user's message reached the prompt.
    const prompt = JSON.stringify(binding.renderRequests.at(-1));
    for (const name of ['shell', 'update_plan', 'view_image', 'list_mcp_resources']) {
      assert.match(prompt, new RegExp(name));
    }
    assert.match(prompt, /You are Codex/);
    assert.match(prompt, /list the files in this repo/);
  });

  it('Codex: the next turn replays the call and its output (store: false, stateless) and is answered', async () => {
    binding.script = () => ({ pieces: ['There are two files.'] });
    const input = [
      ...CODEX_FIRST_TURN,
      { type: 'reasoning', summary: [], content: null, encrypted_content: null },
      {
        type: 'function_call',
        name: 'shell',
        arguments: JSON.stringify({ command: ['bash', '-lc', 'ls'], workdir: '/repo' }),
        call_id: 'call_codex_1',
      },
      { type: 'function_call_output', call_id: 'call_codex_1', output: 'README.md\nsrc\n' },
    ];
    const res = await fetch(`${t.baseUrl}/v1/responses`, {
      method: 'POST',
      headers: CODEX_HEADERS,
      body: JSON.stringify(codexBody('agent', input)),
    });
    assert.equal(res.status, 200, await res.clone().text());
    const frames = parseSse(await res.text());
    assert.equal(frames.at(-1)!.event, 'response.completed');
    const prompt = JSON.stringify(binding.renderRequests.at(-1));
    assert.match(prompt, /README\.md/);
    assert.match(prompt, /call_codex_1|shell/);
  });
});

/** A function tool the way the Codex CLI declares one (Responses flat shape, `strict: false`). */
function codexTool(name: string, properties: Record<string, unknown>, required: string[]): Record<string, unknown> {
  return {
    type: 'function',
    name,
    description: `${name}: ${'one of the coding agent tools. '.repeat(4)}`,
    strict: false,
    parameters: { type: 'object', properties, required, additionalProperties: false },
  };
}

const CODEX_TOOLS = [
  codexTool(
    'shell',
    {
      command: { type: 'array', items: { type: 'string' } },
      workdir: { type: 'string' },
      timeout_ms: { type: 'number' },
    },
    ['command'],
  ),
  codexTool(
    'update_plan',
    {
      explanation: { type: 'string' },
      plan: {
        type: 'array',
        items: {
          type: 'object',
          properties: { step: { type: 'string' }, status: { type: 'string' } },
          required: ['step', 'status'],
          additionalProperties: false,
        },
      },
    },
    ['plan'],
  ),
  codexTool('apply_patch', { input: { type: 'string' } }, ['input']),
  codexTool('view_image', { path: { type: 'string' } }, ['path']),
  codexTool('list_mcp_resources', { server: { type: 'string' }, cursor: { type: 'string' } }, []),
  codexTool('list_mcp_resource_templates', { server: { type: 'string' }, cursor: { type: 'string' } }, []),
  codexTool('read_mcp_resource', { server: { type: 'string' }, uri: { type: 'string' } }, ['server', 'uri']),
  codexTool('exec_command', { cmd: { type: 'string' }, yield_time_ms: { type: 'number' } }, ['cmd']),
  codexTool('write_stdin', { session_id: { type: 'number' }, chars: { type: 'string' } }, ['session_id']),
];

/** The first turn's items as Codex sends them: developer permissions, user environment context, the user's message. */
const CODEX_FIRST_TURN: Record<string, unknown>[] = [
  {
    type: 'message',
    role: 'developer',
    content: [
      { type: 'input_text', text: '<permissions instructions>sandbox: workspace-write</permissions instructions>' },
    ],
  },
  {
    type: 'message',
    role: 'user',
    content: [
      { type: 'input_text', text: '<environment_context><cwd>/repo</cwd><shell>bash</shell></environment_context>' },
    ],
  },
  { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'list the files in this repo' }] },
];

/**
 * A turn as the Codex CLI sends it (its documented Responses request): `instructions`, message items, 9 function
 * tools, `tool_choice: "auto"`, `parallel_tool_calls`, `reasoning: {effort, summary: "auto"}`, `store: false`, `stream`,
 * `include: ["reasoning.encrypted_content"]`, `prompt_cache_key`, `text.verbosity` and `client_metadata`.
 */
function codexBody(model: string, input: Record<string, unknown>[]): Record<string, unknown> {
  return {
    model,
    instructions: 'You are Codex, a coding agent running in a terminal. Be concise.',
    input,
    tools: CODEX_TOOLS,
    tool_choice: 'auto',
    parallel_tool_calls: false,
    reasoning: { effort: 'medium', summary: 'auto' },
    store: false,
    stream: true,
    include: ['reasoning.encrypted_content'],
    prompt_cache_key: '0199a3c2-7f41-7d13-9a51-5e0c1b2d3e4f',
    text: { verbosity: 'medium' },
    client_metadata: { originator: 'codex_cli_rs' },
  };
}

const CODEX_HEADERS = {
  'content-type': 'application/json',
  accept: 'text/event-stream',
  authorization: 'Bearer ollama',
  originator: 'codex_cli_rs',
  'user-agent': 'codex_cli_rs/0.169.0 (Debian 12; x86_64) xterm-256color',
  'openai-beta': 'responses=experimental',
  session_id: '0199a3c2-7f41-7d13-9a51-5e0c1b2d3e4f',
  conversation_id: '0199a3c2-7f41-7d13-9a51-5e0c1b2d3e4f',
  version: '0.169.0',
};
