// NativeOutputParser's skipping rules on a scripted chat parser: which pieces go to the addon and which do not.
// (Equality with the whole-text parser on real templates: test/native/native-output-parser.test.ts.)
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { NativeChatParser, NativeChatStep } from '../../../../binding';
import { NativeOutputParser } from '../../../../src/generation/output';

/**
 * A parser whose whole output is content up to `<tool_call>`, then a tool call whose arguments are the rest; the
 * frontier is content before the marker, and "inside a JSON string" while the arguments have an odd number of `"`.
 */
function scripted(): { parser: NativeChatParser; steps: string[] } {
  const steps: string[] = [];
  const parse = (text: string): NativeChatStep => {
    const at = text.indexOf('<tool_call>');
    if (at < 0) {
      const partial = '<tool_call>'.startsWith(text.slice(text.lastIndexOf('<'))) && text.includes('<');
      const content = partial ? text.slice(0, text.lastIndexOf('<')) : text;
      return { content, reasoningContent: '', toolCalls: [], frontier: partial ? 0 : 1 };
    }
    const args = text.slice(at + '<tool_call>'.length);
    const inString = (args.match(/(?<!\\)"/g) ?? []).length % 2 === 1 && !args.endsWith('\\');
    return { content: text.slice(0, at), reasoningContent: '', toolCalls: [], frontier: inString ? 3 : 0 };
  };
  return {
    steps,
    parser: {
      parse: (text) => parse(text),
      parseStep: (text) => {
        steps.push(text);
        return parse(text);
      },
      stepDelimiters: () => ['<tool_call>'],
    },
  };
}

describe('NativeOutputParser skipping', () => {
  it('releases text pieces without parsing, and parses where a delimiter may start', () => {
    const { parser, steps } = scripted();
    const p = new NativeOutputParser(parser);
    assert.deepEqual(p.add('Hello'), { content: 'Hello', thinking: '', toolCalls: [] });
    assert.deepEqual(p.add(' world, a < b'), { content: ' world, a < b', thinking: '', toolCalls: [] });
    assert.equal(steps.length, 1, 'a "<" that cannot start <tool_call> within the piece is plain text');
    assert.deepEqual(p.add(' <tool'), { content: ' ', thinking: '', toolCalls: [] });
    assert.equal(steps.length, 2, 'a delimiter prefix cut off by the piece end is parsed');
  });

  it('skips a JSON string of arguments until a quote, an invalid escape or a lone surrogate', () => {
    const { parser, steps } = scripted();
    const p = new NativeOutputParser(parser);
    p.add('Hi <tool_call>{"content": "');
    const before = steps.length;
    for (const piece of ['abc', ' \\n', '\\', '"', '\\u00', 'e9 😀', 'x']) {
      assert.deepEqual(p.add(piece), { content: '', thinking: '', toolCalls: [] });
    }
    assert.equal(steps.length, before, 'plain text, split escapes and surrogate pairs stay in the string');
    p.add('\\q');
    assert.equal(steps.length, before + 1, 'an invalid escape is parsed');
    p.add('\ud83d');
    assert.equal(steps.length, before + 2, 'a lone surrogate is parsed');
    p.add('"}');
    assert.equal(steps.length, before + 3, 'the closing quote is parsed');
  });

  it('parses the prefix with the first piece, then skips inside its string', () => {
    const { parser, steps } = scripted();
    const p = new NativeOutputParser(parser, '<tool_call>{"a": "');
    p.add('x');
    p.add('y');
    assert.equal(steps.length, 1, 'the prefix is parsed in front of the first piece, then the string is skipped');
  });
});
