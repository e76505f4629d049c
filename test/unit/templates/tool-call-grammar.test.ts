import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { QWEN_TOOLS_GO_TEMPLATE } from '../../../scripts/test-model-templates';
import {
  argumentsSchema,
  buildToolCallGrammar,
  gbnfCharClass,
  gbnfLiteral,
  GoTemplate,
  GrammarTool,
  inferToolCallSyntax,
  loadLibraryTemplate,
  prefixRules,
  ToolCallSyntax,
  ToolSchemaError,
  untilRules,
} from '../../../src/templates';
import { gbnfAccepts, parseGbnf } from './gbnf-matcher';
import * as TOOL_TEMPLATES from './tool-templates';

// buildToolCallGrammar and the GBNF helpers (src/templates/tool-call.grammar.ts, gbnf.ts): the grammar that forces a
// tool call in rendered mode (reference native-core.md grammars, ollama-api.md §8.5). Arguments grammars come from a
// stub standing in for llama.cpp's json_schema_to_grammar (the real one is exercised in test/native/); the produced
// grammars are checked with a small GBNF recognizer (./gbnf-matcher.ts). test/native/tool-call-grammar.test.ts runs
// them through llama.cpp itself.

/** json_schema_to_grammar's output for `{"type":"object"}` (any JSON object), as llama.cpp writes it. */
const ANY_OBJECT_GBNF = [
  'array ::= "[" space ( value ("," space value)* )? space "]"',
  'boolean ::= ("true" | "false")',
  'char ::= [^"\\\\\\x7F\\x00-\\x1F] | [\\\\] (["\\\\bfnrt] | "u" [0-9a-fA-F]{4})',
  'decimal-part ::= [0-9]{1,16}',
  'integral-part ::= [0] | [1-9] [0-9]{0,15}',
  'null ::= "null"',
  'number ::= ("-"? integral-part) ("." decimal-part)? ([eE] [-+]? integral-part)?',
  'object ::= "{" space ( string ":" space value ("," space string ":" space value)* )? space "}"',
  'root ::= object',
  'space ::= | " " | "\\n"{1,2} [ \\t]{0,20}',
  'string ::= "\\"" char* "\\""',
  'value ::= object | array | string | number | boolean | null',
].join('\n');

/** A stub json_schema_to_grammar: any JSON object, whatever the schema; records the schemas it was given. */
function stubToGrammar(): { toGrammar: (schema: string) => string; schemas: unknown[] } {
  const schemas: unknown[] = [];
  return {
    schemas,
    toGrammar: (schema) => {
      schemas.push(JSON.parse(schema));
      return ANY_OBJECT_GBNF;
    },
  };
}

const WEATHER: GrammarTool = {
  function: {
    name: 'get_weather',
    parameters: { type: 'object', properties: { city: { type: 'string' }, days: { type: 'integer' } } },
  },
};
const TIME: GrammarTool = { function: { name: 'get_time', parameters: { properties: { zone: { type: 'string' } } } } };

/** The text of one call as the template writes it (see tool-call-syntax.test.ts). */
function callText(s: ToolCallSyntax, name: string, args: unknown): string {
  return s.object
    .map((p) => (typeof p === 'string' ? p : p.slot === 'name' ? JSON.stringify(name) : JSON.stringify(args)))
    .join('');
}

/** `calls` written in the syntax: tagged one per line, list separated by `, `, json the first only. */
function callsText(s: ToolCallSyntax, calls: [string, unknown][]): string {
  const objects = calls.map(([n, a]) => callText(s, n, a));
  if (s.family === 'tagged') return objects.map((o) => s.open + o + s.close).join('\n');
  if (s.family === 'list') return s.open + objects.join(', ') + s.close;
  return objects.join('');
}

const SYNTAXES: [string, ToolCallSyntax][] = [
  ['test model (Hermes)', inferToolCallSyntax(GoTemplate.parse(QWEN_TOOLS_GO_TEMPLATE))],
  ['nemotron (tagged)', inferToolCallSyntax(GoTemplate.parse(TOOL_TEMPLATES.NEMOTRON))],
  ['llama3.2 (json)', inferToolCallSyntax(GoTemplate.parse(TOOL_TEMPLATES.LLAMA3_2))],
  ['mistral (list)', inferToolCallSyntax(GoTemplate.parse(TOOL_TEMPLATES.MISTRAL))],
  ['xlam (list in an object)', inferToolCallSyntax(GoTemplate.parse(TOOL_TEMPLATES.XLAM))],
  [
    'command-r (list, multi-line object)',
    inferToolCallSyntax(GoTemplate.parse(loadLibraryTemplate('command-r').template)),
  ],
];

const HERMES = SYNTAXES[0][1];
const ARGS = { city: 'Paris', days: 3 };

describe('buildToolCallGrammar', () => {
  it('writes root → tool-calls → the template call text with the tool name and args<i>-root (one call)', () => {
    const { toGrammar, schemas } = stubToGrammar();
    const grammar = buildToolCallGrammar(HERMES, [WEATHER], toGrammar)!;
    const lines = grammar.split('\n');
    assert.deepEqual(lines.slice(0, 5), [
      'root ::= tool-calls',
      'tool-calls ::= tool-call',
      'tool-call ::= "<tool_call>\\n" tool-call-object "\\n</tool_call>"',
      'tool-call-object ::= tool0',
      'tool0 ::= "{\\"name\\": " "\\"get_weather\\"" ", \\"arguments\\": " args0-root "}"',
    ]);
    // The arguments grammar follows, every rule prefixed; literals and classes untouched.
    assert.ok(lines.includes('args0-root ::= args0-object'));
    assert.ok(lines.includes('args0-string ::= "\\"" args0-char* "\\""'));
    assert.ok(grammar.endsWith('\n'));
    assert.deepEqual(schemas, [WEATHER.function!.parameters]);
    parseGbnf(grammar);
  });

  it('two tools: an alternation, each with its own schema rules; the schema gets type "object" when it lacks one', () => {
    const { toGrammar, schemas } = stubToGrammar();
    const grammar = buildToolCallGrammar(HERMES, [WEATHER, TIME], toGrammar)!;
    assert.match(grammar, /^tool-call-object ::= tool0 \| tool1$/m);
    assert.match(grammar, /^tool1 ::= .*"\\"get_time\\"".* args1-root "}"$/m);
    assert.match(grammar, /^args1-root ::= args1-object$/m);
    assert.deepEqual(schemas[1], { properties: { zone: { type: 'string' } }, type: 'object' });
    const g = parseGbnf(grammar);
    assert.ok(gbnfAccepts(g, callsText(HERMES, [['get_time', { zone: 'UTC' }]])));
    assert.ok(gbnfAccepts(g, callsText(HERMES, [['get_weather', ARGS]])));
  });

  for (const [name, syntax] of SYNTAXES) {
    describe(`${name}: ${syntax.family}`, () => {
      const g = parseGbnf(buildToolCallGrammar(syntax, [WEATHER, TIME], stubToGrammar().toGrammar)!);
      const gParallel = parseGbnf(
        buildToolCallGrammar(syntax, [WEATHER, TIME], stubToGrammar().toGrammar, { parallel: true })!,
      );
      const one = callsText(syntax, [['get_weather', ARGS]]);
      const two = callsText(syntax, [
        ['get_weather', ARGS],
        ['get_time', { zone: 'UTC' }],
      ]);

      it('accepts exactly one call as the template writes it', () => {
        assert.ok(gbnfAccepts(g, one), one);
        assert.ok(!gbnfAccepts(g, `Sure! ${one}`), 'no text before the call');
        assert.ok(!gbnfAccepts(g, `${one} Done.`), 'no text after the call');
        assert.ok(!gbnfAccepts(g, callsText(syntax, [['get_date', ARGS]])), 'only the tools of the request');
        assert.ok(!gbnfAccepts(g, callsText(syntax, [['get_weather', 'Paris']])), 'arguments are an object');
        assert.ok(!gbnfAccepts(g, one.slice(0, -1)), 'the call must be complete');
      });

      it('parallel: several calls only when asked (bare JSON: always one)', () => {
        if (syntax.family === 'json') {
          assert.ok(!gbnfAccepts(gParallel, two));
          assert.ok(gbnfAccepts(gParallel, one));
          return;
        }
        assert.ok(!gbnfAccepts(g, two), 'disable_parallel: one call');
        assert.ok(gbnfAccepts(gParallel, two), two);
        assert.ok(gbnfAccepts(gParallel, one));
      });
    });
  }

  it('thinking, optional: a thinking block up to the close tag may come first', () => {
    const thinking = { open: '<think>', close: '</think>', startInThinking: false };
    const grammar = buildToolCallGrammar(HERMES, [WEATHER], stubToGrammar().toGrammar, { thinking })!;
    assert.match(grammar, /^root ::= \("<think>" think-body-0 \[ \\t\\r\\n\]\{0,4\}\)\? tool-calls$/m);
    const g = parseGbnf(grammar);
    const call = callsText(HERMES, [['get_weather', ARGS]]);
    assert.ok(gbnfAccepts(g, call));
    assert.ok(gbnfAccepts(g, `<think>Paris, 3 days. <b>ok</b> </thin</think>\n\n${call}`));
    assert.ok(!gbnfAccepts(g, `<think>a</think>b</think>${call}`), 'the first close tag ends the block');
    assert.ok(!gbnfAccepts(g, `<think>unfinished ${call}`));
  });

  it('thinking, prompt ends inside the block: the rest of the block must come first', () => {
    const thinking = { open: '<think>', close: '</think>', startInThinking: true };
    const g = parseGbnf(buildToolCallGrammar(HERMES, [WEATHER], stubToGrammar().toGrammar, { thinking })!);
    const call = callsText(HERMES, [['get_weather', ARGS]]);
    assert.ok(gbnfAccepts(g, `Let me see.</think>\n${call}`));
    assert.ok(gbnfAccepts(g, `</think>${call}`));
    assert.ok(!gbnfAccepts(g, call));
  });

  it('no named tool: undefined; a repeated name is one alternative', () => {
    const { toGrammar, schemas } = stubToGrammar();
    assert.equal(buildToolCallGrammar(HERMES, [], toGrammar), undefined);
    assert.equal(buildToolCallGrammar(HERMES, [{ function: { name: '' } }, {}], toGrammar), undefined);
    const grammar = buildToolCallGrammar(HERMES, [WEATHER, { function: { name: 'get_weather' } }], toGrammar)!;
    assert.match(grammar, /^tool-call-object ::= tool0$/m);
    assert.equal(schemas.length, 1);
  });

  it('a tool name is a JSON string inside a GBNF literal (quotes and backslashes escaped twice)', () => {
    const odd: GrammarTool = { function: { name: 'say "hi"\\now' } };
    const grammar = buildToolCallGrammar(HERMES, [odd], stubToGrammar().toGrammar)!;
    assert.ok(gbnfAccepts(grammar, callsText(HERMES, [['say "hi"\\now', {}]])));
  });

  it('a schema json_schema_to_grammar rejects: ToolSchemaError naming the tool', () => {
    const failing = () => {
      throw new Error('Unrecognized schema: {"type":"nope"}');
    };
    assert.throws(
      () => buildToolCallGrammar(HERMES, [WEATHER], failing),
      (err: unknown) => {
        assert.ok(err instanceof ToolSchemaError);
        assert.equal(err.toolName, 'get_weather');
        assert.equal(
          err.message,
          'invalid JSON schema in the parameters of tool "get_weather": Unrecognized schema: {"type":"nope"}',
        );
        assert.ok(err.cause instanceof Error);
        return true;
      },
    );
  });
});

describe('argumentsSchema', () => {
  it('arguments are always an object: type "object" added unless the schema says what it is', () => {
    assert.deepEqual(argumentsSchema(undefined), { type: 'object' });
    assert.deepEqual(argumentsSchema(null), { type: 'object' });
    assert.deepEqual(argumentsSchema('nope'), { type: 'object' });
    assert.deepEqual(argumentsSchema([]), { type: 'object' });
    assert.deepEqual(argumentsSchema({}), { type: 'object' });
    assert.deepEqual(argumentsSchema({ properties: { a: { type: 'string' } }, required: ['a'] }), {
      properties: { a: { type: 'string' } },
      required: ['a'],
      type: 'object',
    });
    const shaped = [
      { type: 'object', properties: {} },
      { $ref: '#/$defs/x', $defs: { x: { type: 'object' } } },
      { anyOf: [{ type: 'object' }] },
      { oneOf: [{ type: 'object' }] },
      { allOf: [{ type: 'object' }] },
      { enum: [{}] },
      { const: {} },
    ];
    for (const s of shaped) assert.equal(argumentsSchema(s), s);
  });
});

describe('GBNF helpers', () => {
  it('gbnfLiteral escapes quotes, backslashes and control characters, keeps other text', () => {
    assert.equal(gbnfLiteral('a"b\\c'), '"a\\"b\\\\c"');
    assert.equal(gbnfLiteral('\n\r\t'), '"\\n\\r\\t"');
    assert.equal(gbnfLiteral('\x01\x7f'), '"\\x01\\x7f"');
    assert.equal(gbnfLiteral('[TOOL_CALLS] 🔧 é'), '"[TOOL_CALLS] 🔧 é"');
    assert.ok(gbnfAccepts(`root ::= ${gbnfLiteral('a"\\\n\x01🔧')}`, 'a"\\\n\x01🔧'));
  });

  it('gbnfCharClass escapes every character as a code point', () => {
    assert.equal(gbnfCharClass(['<', ']']), '[\\x3c\\x5d]');
    assert.equal(gbnfCharClass(['é', '🔧'], true), '[^\\xe9\\U0001f527]');
    assert.ok(gbnfAccepts(`root ::= ${gbnfCharClass(['-', ']', '^'], true)}+`, 'abc'));
    assert.ok(!gbnfAccepts(`root ::= ${gbnfCharClass(['-', ']', '^'], true)}+`, 'a]c'));
  });

  it('prefixRules renames rule definitions and references only', () => {
    const src = [
      '# root comment stays',
      'root ::= item ("," space item)*',
      'item ::= "root" | [a-z-]{1,3} | space',
      'space ::= | " "',
    ].join('\n');
    assert.equal(
      prefixRules(src, 't0-'),
      [
        '# root comment stays',
        't0-root ::= t0-item ("," t0-space t0-item)*',
        't0-item ::= "root" | [a-z-]{1,3} | t0-space',
        't0-space ::= | " "',
      ].join('\n'),
    );
    assert.ok(gbnfAccepts(prefixRules(src, 't0-'), 'root,ab, xyz', 't0-root'));
  });

  it('untilRules: any text up to and including the first occurrence of the delimiter', () => {
    const grammar = (d: string) => ['root ::= until-0', ...untilRules('until', d)].join('\n');
    const aab = parseGbnf(grammar('aab'));
    for (const ok of ['aab', 'caab', 'aaab', 'abaab', 'aaaab', 'xyzaab']) assert.ok(gbnfAccepts(aab, ok), ok);
    for (const bad of ['', 'aa', 'aabx', 'aabaab', 'ab']) assert.ok(!gbnfAccepts(aab, bad), bad);
    const think = parseGbnf(grammar('</think>'));
    assert.ok(gbnfAccepts(think, 'I think <b>so</b> < / </thin</think>'));
    assert.ok(!gbnfAccepts(think, 'a</think>b</think>'));
    assert.ok(gbnfAccepts(parseGbnf(grammar('ß')), 'straße'.slice(0, 5)));
    assert.throws(() => untilRules('until', ''), /empty delimiter/);
  });
});
