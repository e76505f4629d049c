import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { lastValueFrom, toArray } from 'rxjs';
import {
  ContextLengthExceededError,
  InvalidRequestError,
  UnsupportedCapabilityError,
} from '../../../src/common/errors';
import { JSON_OBJECT_GRAMMAR } from '../../../src/generation/prompt/format';
import {
  ChatCommand,
  GenerateCommand,
  GenerationEvent,
  ToolDefinition,
} from '../../../src/generation/generation.types';
import { PROMPT_TOO_LONG_MESSAGE } from '../../../src/native';
import { NO_VISION_MESSAGE } from '../../../src/generation/prompt/media';
import { createInferenceTestbed, InferenceTestbed } from '../../utils/inference-testbed';

/**
 * Native mode (§8.1): chat/generate over the FakeBinding's renderChat + parser, with scripted token streams for
 * tool calls, thinking, logprobs, format and truncation.
 */

const TOOLS_JINJA = '{% if tools %}{{ tools }}{% endif %}{{ chatml }}';
const THINK_JINJA = '{{ chatml }}<think></think>';

const weather: ToolDefinition = {
  type: 'function',
  function: {
    name: 'get_weather',
    description: 'Weather of a city',
    parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  },
};

const chatCmd = (overrides: Partial<ChatCommand> = {}): ChatCommand => ({
  model: 'tools',
  messages: [{ role: 'user', content: 'Weather in Paris?' }],
  options: {},
  startedAt: process.hrtime.bigint(),
  ...overrides,
});

const genCmd = (overrides: Partial<GenerateCommand> = {}): GenerateCommand => ({
  model: 'plain',
  prompt: 'Hi',
  raw: false,
  options: {},
  startedAt: process.hrtime.bigint(),
  ...overrides,
});

const deltas = (events: GenerationEvent[]) => events.filter((e) => e.kind === 'delta');
const done = (events: GenerationEvent[]) => {
  const last = events.at(-1);
  assert.ok(last && last.kind === 'done');
  return last;
};

describe('native mode: tools, thinking, logprobs, format, truncation', () => {
  let bed: InferenceTestbed;

  beforeEach(async () => {
    bed = await createInferenceTestbed({ config: { contextLength: 256 } });
    await bed.createModel('tools', '', { chatTemplate: TOOLS_JINJA });
    await bed.createModel('think', '', { chatTemplate: THINK_JINJA });
    await bed.createModel('plain', '', { chatTemplate: '{{ chatml }}' });
  });

  afterEach(() => bed.close());

  const chat = (cmd: ChatCommand) => lastValueFrom(bed.chat.chat(cmd).pipe(toArray()));
  const generate = (cmd: GenerateCommand) => lastValueFrom(bed.generate.generate(cmd).pipe(toArray()));

  it('passes tools to the template, applies the lazy tool grammar, and returns tool calls on the final event', async () => {
    bed.binding.script = () => ({
      pieces: ['<tool_call>{"name":"get_weather",', '"arguments":{"city":"Paris"}}', '</tool_call>'],
    });
    const events = await chat(chatCmd({ tools: [weather] }));
    const render = bed.binding.renderRequests[0];
    assert.equal(render.tools?.[0].name, 'get_weather');
    assert.deepEqual(JSON.parse(render.tools?.[0].parameters ?? ''), weather.function?.parameters);
    const sampling = bed.binding.submitted[0].sampling;
    assert.equal(sampling.grammar, 'root ::= tool-call');
    assert.equal(sampling.grammarLazy, true);
    assert.deepEqual(sampling.grammarTriggers, [{ type: 'word', value: '<tool_call>' }]);
    assert.deepEqual(sampling.preservedTokens, ['<tool_call>', '</tool_call>']);
    assert.equal(
      deltas(events)
        .map((e) => e.text)
        .join(''),
      '',
      'no raw tool-call text leaks as content',
    );
    const final = done(events);
    assert.equal(final.toolCalls?.length, 1);
    assert.deepEqual(final.toolCalls?.[0].function, { index: 0, name: 'get_weather', arguments: { city: 'Paris' } });
    assert.equal(final.toolCalls?.[0].id, 'fake_0');
  });

  it('sends an assistant tool call and the role:tool answer back to the template', async () => {
    await chat(
      chatCmd({
        tools: [weather],
        messages: [
          { role: 'user', content: 'Weather in Paris?' },
          {
            role: 'assistant',
            content: '',
            toolCalls: [{ id: 'call_1', function: { index: 0, name: 'get_weather', arguments: { city: 'Paris' } } }],
          },
          { role: 'tool', content: '22°C', toolName: 'get_weather', toolCallId: 'call_1' },
        ],
      }),
    );
    const msgs = bed.binding.renderRequests[0].messages;
    assert.deepEqual(msgs[1].toolCalls, [{ id: 'call_1', name: 'get_weather', arguments: '{"city":"Paris"}' }]);
    assert.equal(msgs[2].role, 'tool');
    assert.equal(msgs[2].toolName, 'get_weather');
    assert.equal(msgs[2].toolCallId, 'call_1');
  });

  it('rejects tools on a model whose template has none, with the full name', async () => {
    await assert.rejects(chat(chatCmd({ model: 'plain', tools: [weather] })), (e: unknown) => {
      assert.ok(e instanceof UnsupportedCapabilityError);
      assert.equal(e.message, 'registry.ollama.ai/library/plain:latest does not support tools');
      return true;
    });
  });

  it('thinks by default on thinking models: thinking deltas carry text "", content follows', async () => {
    bed.binding.chat.thinking = true;
    bed.binding.script = () => ({ pieces: ['Let me', ' see', '</think>', '\n', 'Four.'] });
    const events = await chat(chatCmd({ model: 'think', messages: [{ role: 'user', content: '2+2?' }] }));
    assert.equal(bed.binding.renderRequests[0].enableThinking, true);
    const ds = deltas(events);
    assert.deepEqual(
      ds.filter((d) => d.thinking).map((d) => [d.text, d.thinking]),
      [
        ['', 'Let me'],
        ['', ' see'],
      ],
    );
    assert.equal(ds.map((d) => d.text).join(''), 'Four.');
  });

  it('think:false turns thinking off; think levels reach the template', async () => {
    bed.binding.chat.thinking = true;
    bed.binding.script = () => ({ pieces: ['Four.'] });
    const events = await chat(chatCmd({ model: 'think', think: false }));
    assert.equal(bed.binding.renderRequests[0].enableThinking, false);
    assert.equal(deltas(events)[0].text, 'Four.');
    await chat(chatCmd({ model: 'think', think: 'high' }));
    assert.equal(bed.binding.renderRequests[1].templateKwargs?.reasoning_effort, '"high"');
  });

  it('generate splits thinking too', async () => {
    bed.binding.chat.thinking = true;
    bed.binding.script = () => ({ pieces: ['hmm', '</think>', 'Yes'] });
    const events = await generate(genCmd({ model: 'think' }));
    assert.equal(
      deltas(events)
        .map((d) => d.thinking ?? '')
        .join(''),
      'hmm',
    );
    assert.equal(
      deltas(events)
        .map((d) => d.text)
        .join(''),
      'Yes',
    );
  });

  it('reports logprobs per token with top alternatives', async () => {
    bed.binding.script = () => ({ pieces: ['He', 'llo'] });
    const events = await chat(chatCmd({ model: 'plain', topLogprobs: 2 }));
    assert.equal(bed.binding.submitted[0].logprobs, 2);
    const lps = deltas(events).flatMap((d) => d.logprobs ?? []);
    assert.equal(lps.length, 2);
    assert.deepEqual(lps[0], {
      token: 'He',
      logprob: -0.1,
      bytes: [72, 101],
      topLogprobs: [
        { token: 'alt0', logprob: -0.1, bytes: [97, 108, 116, 48] },
        { token: 'alt1', logprob: -1.1, bytes: [97, 108, 116, 49] },
      ],
    });
    await chat(chatCmd({ model: 'plain' }));
    assert.equal(bed.binding.submitted[1].logprobs, undefined, 'no logprobs unless asked');
  });

  it('enforces format: "json" with the JSON-object grammar and a schema through json_schema_to_grammar', async () => {
    await chat(chatCmd({ model: 'plain', format: { kind: 'json' } }));
    assert.equal(bed.binding.submitted[0].sampling.grammar, JSON_OBJECT_GRAMMAR);
    assert.ok(!bed.binding.submitted[0].sampling.grammarLazy);
    const schema = { type: 'object', properties: { n: { type: 'integer' } }, required: ['n'] };
    await generate(genCmd({ format: { kind: 'schema', schema } }));
    assert.deepEqual(JSON.parse(bed.binding.schemas[0]), schema);
    assert.equal(bed.binding.submitted[1].sampling.grammar, `root ::= ${JSON.stringify(schema)}`);
    await generate(genCmd({ raw: true, format: { kind: 'json' } }));
    assert.equal(bed.binding.submitted[2].sampling.grammar, JSON_OBJECT_GRAMMAR, 'raw prompts too');
  });

  it('applies a format grammar only after thinking ends (lazy, triggered after </think>)', async () => {
    bed.binding.chat.thinking = true;
    await chat(chatCmd({ model: 'think', format: { kind: 'json' } }));
    const s = bed.binding.submitted[0].sampling;
    assert.equal(s.grammar, JSON_OBJECT_GRAMMAR);
    assert.equal(s.grammarLazy, true);
    assert.equal(s.grammarTriggers?.[0].type, 'pattern');
    const re = new RegExp(s.grammarTriggers?.[0].value ?? '');
    assert.equal(re.exec('reasoning</think>\n{"a":1}')?.[1], '{"a":1}');
  });

  it('maps num_predict -1 to 10 × num_ctx, repeat_last_n -1 to num_ctx, and adds template stops', async () => {
    bed.binding.chat.additionalStops = ['<|eot|>'];
    await chat(chatCmd({ model: 'plain', options: { num_ctx: 128, repeat_last_n: -1, stop: ['X'] } }));
    const task = bed.binding.submitted[0];
    assert.equal(task.nPredict, 1280);
    assert.equal(task.sampling.repeatLastN, 128);
    assert.deepEqual(task.stop, ['X', '<|eot|>']);
  });

  it('truncate:false makes an over-long prompt a 400 instead of cutting it', async () => {
    const long = 'z'.repeat(300);
    await assert.rejects(generate(genCmd({ prompt: long, truncate: false })), (e: unknown) => {
      assert.ok(e instanceof ContextLengthExceededError);
      assert.equal(e.message, PROMPT_TOO_LONG_MESSAGE);
      return true;
    });
    await assert.rejects(
      chat(chatCmd({ model: 'plain', truncate: false, messages: [{ role: 'user', content: long }] })),
      ContextLengthExceededError,
    );
    const events = await generate(genCmd({ prompt: long }));
    assert.equal(done(events).reason, 'stop', 'truncated by default');
    assert.ok(bed.binding.submitted[0].tokens.length < 256);
  });

  it('rejects images for a model without vision with Ollama’s runner message', async () => {
    await assert.rejects(generate(genCmd({ images: ['aGk='] })), (e: unknown) => {
      assert.ok(e instanceof InvalidRequestError);
      assert.equal(e.message, NO_VISION_MESSAGE);
      return true;
    });
    await assert.rejects(
      chat(chatCmd({ model: 'plain', messages: [{ role: 'user', content: 'x', images: ['aGk='] }] })),
      InvalidRequestError,
    );
    assert.equal(bed.binding.models.length, 0, 'rejected before loading');
  });

  it('strips <think> blocks from earlier assistant turns of thinking models', async () => {
    await chat(
      chatCmd({
        model: 'think',
        messages: [
          { role: 'user', content: 'a' },
          { role: 'assistant', content: '<think>secret</think>\nB' },
          { role: 'user', content: 'c' },
        ],
      }),
    );
    assert.equal(bed.binding.renderRequests[0].messages[1].content, 'B');
  });
});
