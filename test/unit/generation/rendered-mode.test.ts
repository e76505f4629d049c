import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { lastValueFrom, toArray } from 'rxjs';
import { UnsupportedCapabilityError } from '../../../src/common/errors';
import { JSON_OBJECT_GRAMMAR } from '../../../src/generation/prompt/format';
import {
  ChatCommand,
  GenerateCommand,
  GenerationEvent,
  ToolDefinition,
} from '../../../src/generation/generation.types';
import { setGoTemplatesForTesting } from '../../../src/generation/prompt/go-template.port';
import { createInferenceTestbed, InferenceTestbed } from '../../utils/inference-testbed';

/**
 * Rendered mode (§8.1, §8.2, §8.5, §8.6): models with a Modelfile TEMPLATE are rendered with the Go template engine
 * (src/templates) and their output parsed by Ollama's ThinkingParser / ToolCallParser, over scripted token streams.
 */

const CHAT_TEMPLATE = `{{- if .Tools }}<|im_start|>system
Tools: {{ range .Tools }}{{ .Function.Name }} {{ end }}<|im_end|>
{{ end }}
{{- range $i, $_ := .Messages }}
{{- $last := eq (len (slice $.Messages $i)) 1 -}}
<|im_start|>{{ .Role }}
{{ if .Thinking }}<think>{{ .Thinking }}</think>{{ end }}{{ .Content }}
{{- if .ToolCalls }}{{ range .ToolCalls }}<tool_call>
{"name": "{{ .Function.Name }}", "arguments": {{ .Function.Arguments }}}
</tool_call>{{ end }}{{ end }}<|im_end|>
{{ if and $last (ne .Role "assistant") }}<|im_start|>assistant
{{ if $.Think }}<think>
{{ end }}{{ end }}
{{- end }}`;

const FIM_TEMPLATE = '<PRE> {{ .Prompt }} <SUF>{{ .Suffix }} <MID>';

const weather: ToolDefinition = {
  type: 'function',
  function: {
    name: 'get_weather',
    description: 'Weather',
    parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  },
};

const chatCmd = (overrides: Partial<ChatCommand> = {}): ChatCommand => ({
  model: 'go',
  messages: [{ role: 'user', content: 'Weather in Paris?' }],
  options: {},
  startedAt: process.hrtime.bigint(),
  ...overrides,
});

const genCmd = (overrides: Partial<GenerateCommand> = {}): GenerateCommand => ({
  model: 'fim',
  prompt: 'def f(',
  raw: false,
  options: {},
  startedAt: process.hrtime.bigint(),
  ...overrides,
});

/** FakeBinding tokens (char codes, BOS 1) → text. */
const text = (tokens: ArrayLike<number>) => String.fromCharCode(...Array.from(tokens).filter((t) => t !== 1));
const deltas = (events: GenerationEvent[]) => events.filter((e) => e.kind === 'delta');

describe('rendered mode (Go TEMPLATE)', () => {
  let bed: InferenceTestbed;

  beforeEach(async () => {
    bed = await createInferenceTestbed({ config: { contextLength: 512 } });
    await bed.createModel('go', `TEMPLATE """${CHAT_TEMPLATE}"""`);
    await bed.createModel('fim', `TEMPLATE """${FIM_TEMPLATE}"""`);
  });

  afterEach(async () => {
    setGoTemplatesForTesting(undefined);
    await bed.close();
  });

  const chat = (cmd: ChatCommand) => lastValueFrom(bed.chat.chat(cmd).pipe(toArray()));
  const generate = (cmd: GenerateCommand) => lastValueFrom(bed.generate.generate(cmd).pipe(toArray()));

  it('renders with the Go template, not the GGUF Jinja one', async () => {
    bed.binding.script = () => ({ pieces: ['ok'] });
    await chat(chatCmd({ think: false }));
    assert.equal(bed.binding.renderRequests.length, 0, 'renderChat not used');
    assert.equal(
      text(bed.binding.submitted[0].tokens),
      '<|im_start|>user\nWeather in Paris?<|im_end|>\n<|im_start|>assistant\n',
    );
  });

  it('streams each tool call as soon as it is parsed, with call_ ids, and no tool text as content', async () => {
    bed.binding.script = () => ({
      pieces: ['<tool_call>\n{"name": "get_weather", ', '"arguments": {"city": "Paris"}}\n</tool_call>', '', ''],
    });
    const events = await chat(chatCmd({ tools: [weather], think: false }));
    assert.ok(text(bed.binding.submitted[0].tokens).includes('Tools: get_weather'));
    assert.deepEqual(bed.binding.submitted[0].sampling.preservedTokens, ['<tool_call>'], 'tool tag preserved');
    const withCalls = events.filter((e) => e.kind === 'delta' && e.toolCalls);
    assert.equal(withCalls.length, 1, 'tool call on a delta, before done');
    const call = withCalls[0].kind === 'delta' ? withCalls[0].toolCalls?.[0] : undefined;
    assert.deepEqual(call?.function, { index: 0, name: 'get_weather', arguments: { city: 'Paris' } });
    assert.match(call?.id ?? '', /^call_[a-z0-9]{8}$/);
    assert.equal(
      deltas(events)
        .map((d) => d.text)
        .join('')
        .trim(),
      '',
    );
  });

  it('renders an assistant tool call and the tool answer back into the prompt', async () => {
    await chat(
      chatCmd({
        tools: [weather],
        think: false,
        messages: [
          { role: 'user', content: 'Weather?' },
          {
            role: 'assistant',
            content: '',
            toolCalls: [{ function: { index: 0, name: 'get_weather', arguments: { city: 'Paris' } } }],
          },
          { role: 'tool', content: '22C', toolName: 'get_weather' },
        ],
      }),
    );
    const prompt = text(bed.binding.submitted[0].tokens);
    assert.ok(prompt.includes('<tool_call>\n{"name": "get_weather", "arguments": {"city":"Paris"}}\n</tool_call>'));
    assert.ok(prompt.includes('<|im_start|>tool\n22C<|im_end|>'));
  });

  it('thinks by default: the prompt opens <think> and the output is split with the inferred tags', async () => {
    bed.binding.script = () => ({ pieces: ['Let me', ' see.', '</think>', '\n\nParis is ', 'sunny.'] });
    const events = await chat(chatCmd());
    assert.ok(text(bed.binding.submitted[0].tokens).endsWith('<|im_start|>assistant\n<think>\n'));
    const ds = deltas(events);
    assert.equal(ds.map((d) => d.thinking ?? '').join(''), 'Let me see.');
    assert.equal(ds.map((d) => d.text).join(''), 'Paris is sunny.');
    assert.ok(
      ds.filter((d) => d.thinking).every((d) => d.text === ''),
      'thinking chunks have content ""',
    );
  });

  it('applies format after the thinking close tag, immediately with think:false', async () => {
    await chat(chatCmd({ format: { kind: 'json' } }));
    const lazy = bed.binding.submitted[0].sampling;
    assert.equal(lazy.grammar, JSON_OBJECT_GRAMMAR);
    assert.equal(lazy.grammarLazy, true);
    await chat(chatCmd({ format: { kind: 'json' }, think: false }));
    assert.ok(!bed.binding.submitted[1].sampling.grammarLazy);
  });

  it('fills in the middle through .Prompt / .Suffix', async () => {
    await generate(genCmd({ suffix: ') return 1' }));
    assert.equal(text(bed.binding.submitted[0].tokens), '<PRE> def f( <SUF>) return 1 <MID>');
  });

  it('rejects a suffix on a model without insert, with the full name', async () => {
    await assert.rejects(generate(genCmd({ model: 'go', suffix: 'x' })), (e: unknown) => {
      assert.ok(e instanceof UnsupportedCapabilityError);
      assert.equal(e.message, 'registry.ollama.ai/library/go:latest does not support insert');
      return true;
    });
  });

  it('uses a request template for generate', async () => {
    await generate(genCmd({ model: 'go', template: '[{{ .Prompt }}]', prompt: 'hey', think: false }));
    assert.equal(text(bed.binding.submitted[0].tokens), '[hey]');
  });

  it('passes images through as [img-N] markers (a vision-capable model)', async () => {
    const resolve = bed.models.resolve.bind(bed.models);
    bed.models.resolve = async (name, msg) => {
      const m = await resolve(name, msg);
      return { ...m, capabilities: [...m.capabilities, 'vision'] };
    };
    await chat(
      chatCmd({
        think: false,
        messages: [
          { role: 'user', content: 'first [img] then', images: ['aGk=', 'aGk='] },
          { role: 'user', content: 'again', images: ['aGk='] },
        ],
      }),
    );
    // [img-N] markers become the engine's media marker, the images (base64-decoded) follow the markers' order
    const task = bed.binding.submitted[0];
    const prompt = task.prompt ?? '';
    assert.ok(prompt.includes('<__media__>first <__media__> then'), prompt);
    assert.ok(prompt.includes('<__media__>again'), prompt);
    assert.equal(task.images?.length, 3);
    assert.equal(Buffer.from(task.images![0]).toString(), 'hi');
  });

  it('falls back to native mode when no Go engine is available', async () => {
    setGoTemplatesForTesting(null);
    await chat(chatCmd({ think: false }));
    assert.equal(bed.binding.renderRequests.length, 1);
  });
});
