import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { GoStruct, GoTemplate, TemplateError } from '../../../src/templates';
import { ItemType, lex } from '../../../src/templates/go-template.lexer';

function run(src: string, data: unknown = {}): string {
  return GoTemplate.parse(src).execute(data);
}

function parseError(src: string): string {
  try {
    GoTemplate.parse(src);
  } catch (e) {
    assert.ok(e instanceof TemplateError, `expected TemplateError, got ${String(e)}`);
    return e.message;
  }
  assert.fail(`expected a parse error for ${src}`);
}

function execError(src: string, data: unknown = {}): string {
  const t = GoTemplate.parse(src);
  try {
    t.execute(data);
  } catch (e) {
    assert.ok(e instanceof TemplateError, `expected TemplateError, got ${String(e)}`);
    return e.message;
  }
  assert.fail(`expected an execution error for ${src}`);
}

describe('Go template lexer', () => {
  it('splits text and actions, with trim markers removing surrounding whitespace', () => {
    const items = lex('a \n{{- .X -}}\n b');
    assert.deepEqual(
      items.map((i) => [ItemType[i.typ], i.val]),
      [
        ['Text', 'a'],
        ['LeftDelim', '{{'],
        ['Field', '.X'],
        ['RightDelim', '}}'],
        ['Text', 'b'],
        ['EOF', ''],
      ],
    );
  });
  it('treats {{-3}} as a number, not a trim marker', () => {
    assert.equal(run('x {{-3}}'), 'x -3');
  });
  it('tracks line numbers across newlines', () => {
    const items = lex('a\nb\n{{ .X }}');
    assert.equal(items.find((i) => i.typ === ItemType.Field)?.line, 3);
  });
});

describe('Go template text and trimming', () => {
  it('trims only on the marked side', () => {
    assert.equal(run('a  {{- "x" }}  b'), 'ax  b');
    assert.equal(run('a  {{ "x" -}}  b'), 'a  xb');
    assert.equal(run('a \n\t {{- "x" -}} \n\t b'), 'axb');
  });
  it('drops comments, honouring trim markers', () => {
    assert.equal(run('{{/* comment */}}x{{- /* c2 */ -}}  y'), 'xy');
    assert.equal(run('a {{/* multi\nline */}} b'), 'a  b');
  });
  it('handles string literals: escapes, raw strings, char constants', () => {
    assert.equal(run('{{ "a\\tb\\n\\"q\\" \\u00e9 \\x41" }}'), 'a\tb\n"q" é A');
    assert.equal(run('{{ `raw\\n` }}'), 'raw\\n');
    assert.equal(run("{{ 'a' }}"), '97');
  });
});

describe('Go template actions and data', () => {
  it('resolves field chains, $ and dot', () => {
    assert.equal(run('{{ .A.B }} {{ $.A.B }} {{ with .A }}{{ .B }}{{ end }}', { A: { B: 'v' } }), 'v v v');
  });
  it('missingkey=zero: missing map keys print <no value> and are falsy', () => {
    assert.equal(
      run('{{ .Missing }}|{{ .M.x }}|{{ if .Nope }}y{{ else }}n{{ end }}', { M: {} }),
      '<no value>|<no value>|n',
    );
    assert.equal(run('{{ index .M "zz" }}', { M: {} }), '<no value>');
  });
  it('reports unknown struct fields like Go', () => {
    const data = { A: new GoStruct('api.Message', { Role: 'user' }) };
    assert.equal(run('{{ .A.Role }}', data), 'user');
    assert.equal(
      execError('{{ .A.Bad }}', data),
      'template: :1:3: executing "" at <.A.Bad>: can\'t evaluate field Bad in type api.Message',
    );
  });
  it('Go truthiness: empty string, 0, nil, empty slice/map are false', () => {
    const src = '{{ if .V }}T{{ else }}F{{ end }}';
    for (const v of ['', 0, 0n, null, [], {}, false]) assert.equal(run(src, { V: v }), 'F', `value ${String(v)}`);
    for (const v of ['x', 1, 2n, [0], { a: 1 }, true, new GoStruct('S', {})]) assert.equal(run(src, { V: v }), 'T');
  });
  it('prints values like fmt %v', () => {
    assert.equal(
      run('{{ .L }} {{ .M }} {{ .T }} {{ .N }}', { L: [1, 'a'], M: { b: 2, a: [1] }, T: true, N: 2.5 }),
      '[1 a] map[a:[1] b:2] true 2.5',
    );
    assert.equal(
      run('{{ 1e6 }} {{ 123456.0 }} {{ 0x10 }} {{ 1.5 }} {{ .F }}', { F: 1e-5 }),
      '1e+06 123456 16 1.5 1e-05',
    );
  });
  it('parenthesised pipelines and | chaining', () => {
    assert.equal(run('{{ (len .L) }} {{ "a" | printf "%s!" }} {{ .L | len | printf "%d" }}', { L: [1, 2] }), '2 a! 2');
  });
});

describe('Go template control structures', () => {
  it('if / else if / else', () => {
    const src = '{{ if eq .R "a" }}A{{ else if eq .R "b" }}B{{ else }}C{{ end }}';
    assert.equal(run(src, { R: 'a' }), 'A');
    assert.equal(run(src, { R: 'b' }), 'B');
    assert.equal(run(src, { R: 'z' }), 'C');
  });
  it('range over slices with index/element, and else when empty', () => {
    const src = '{{ range $i, $e := .L }}{{ $i }}={{ $e }};{{ else }}empty{{ end }}';
    assert.equal(run(src, { L: ['x', 'y'] }), '0=x;1=y;');
    assert.equal(run(src, { L: [] }), 'empty');
    assert.equal(run(src, {}), 'empty');
  });
  it('range over maps in sorted key order', () => {
    assert.equal(
      run('{{ range $k, $v := .M }}{{ $k }}:{{ $v }} {{ end }}', { M: { b: 2, a: 1, c: 3 } }),
      'a:1 b:2 c:3 ',
    );
  });
  it('range over an int, break and continue', () => {
    assert.equal(run('{{ range 3 }}{{ . }}{{ end }}'), '012');
    const src =
      '{{ range .L }}{{ if eq . 2 }}{{ continue }}{{ end }}{{ if eq . 4 }}{{ break }}{{ end }}{{ . }}{{ end }}';
    assert.equal(run(src, { L: [1n, 2n, 3n, 4n, 5n] }), '13');
  });
  it('with / else with / else', () => {
    const src = '{{ with .X }}x={{ . }}{{ else with .Y }}y={{ . }}{{ else }}none{{ end }}';
    assert.equal(run(src, { X: 'a' }), 'x=a');
    assert.equal(run(src, { Y: 'b' }), 'y=b');
    assert.equal(run(src, {}), 'none');
  });
  it('variable scoping: declarations end with their block, assignments persist', () => {
    assert.equal(run('{{ $x := 1 }}{{ if true }}{{ $x = 2 }}{{ $y := 3 }}{{ $y }}{{ end }}{{ $x }}'), '32');
    assert.equal(
      run('{{ $s := "" }}{{ range .L }}{{ $s = printf "%s%s" $s . }}{{ end }}{{ $s }}', { L: ['a', 'b', 'c'] }),
      'abc',
    );
    assert.match(parseError('{{ if true }}{{ $y := 1 }}{{ end }}{{ $y }}'), /undefined variable "\$y"/);
  });
  it('range variables are per iteration; $ stays the root', () => {
    assert.equal(run('{{ range .L }}{{ $.P }}{{ . }}{{ end }}', { L: ['a', 'b'], P: '-' }), '-a-b');
  });
  it('define / template / block', () => {
    assert.equal(
      run('{{ define "t" }}[{{ . }}]{{ end }}{{ template "t" "hi" }}{{ template "t" }}'),
      '[hi][<no value>]',
    );
    assert.equal(run('{{ block "b" .X }}<{{ . }}>{{ end }}', { X: 5 }), '<5>');
    assert.equal(run('{{ define "v" }}{{ $ }}{{ end }}{{ $x := 1 }}{{ template "v" 2 }}'), '2');
  });
});

describe('Go template builtins', () => {
  it('comparisons', () => {
    assert.equal(
      run('{{ eq 1 1 }} {{ eq "a" "b" "a" }} {{ ne 1 2 }} {{ lt 1 2 }} {{ le 2 2 }} {{ gt "b" "a" }} {{ ge 1 2 }}'),
      'true true true true true true false',
    );
    assert.equal(run('{{ eq .Missing "x" }}'), 'false');
    assert.equal(
      execError('{{ eq 1 "a" }}'),
      'template: :1:3: executing "" at <eq>: error calling eq: incompatible types for comparison',
    );
    assert.match(execError('{{ lt .L 1 }}', { L: [] }), /invalid type for comparison/);
  });
  it('and / or short-circuit and return operands; not', () => {
    assert.equal(run('{{ or 0 "" "x" }} {{ and 1 0 2 }} {{ not .E }} {{ and 1 2 }}', { E: [] }), 'x 0 true 2');
    // the failing call after a short-circuit is never evaluated
    assert.equal(run('{{ or 1 (index .L 9) }}', { L: [] }), '1');
  });
  it('len / index / slice (strings are bytes)', () => {
    assert.equal(
      run('{{ len "héllo" }} {{ slice "hello" 1 3 }} {{ index .L 1 }} {{ len .L }}', { L: [1, 2, 3] }),
      '6 el 2 3',
    );
    assert.equal(run('{{ slice .L 1 }} {{ index .M "k" 0 }}', { L: [1, 2, 3], M: { k: ['z'] } }), '[2 3] z');
    assert.equal(
      execError('{{ index .L 5 }}', { L: [1] }),
      'template: :1:3: executing "" at <index>: error calling index: index out of range: 5',
    );
  });
  it('printf verbs and Go error forms', () => {
    assert.equal(
      run('{{ printf "%s-%d-%v-%q-%5.2f|%-4s|%04d|%x|%t|%v" "s" 42 .F "q\\n" 3.14159 "ab" 7 255 true .L }}', {
        F: 1.5,
        L: [1n, 'a'],
      }),
      's-42-1.5-"q\\n"- 3.14|ab  |0007|ff|true|[1 a]',
    );
    assert.equal(
      run('{{ printf "%d %s" 1 }}|{{ printf "%d" 1 2 }}|{{ printf "%d" "x" }}'),
      '1 %!s(MISSING)|1%!(EXTRA int=2)|%!d(string=x)',
    );
    assert.equal(
      execError('{{ printf 1 }}'),
      'template: :1:10: executing "" at <1>: wrong type for value; expected string; got int',
    );
  });
  it('print / println / html / js / urlquery', () => {
    assert.equal(
      run('{{ print 1 2 "a" 3 }}|{{ println 1 "b" }}|{{ html "<a&b>" }}|{{ js "a\'b<" }}|{{ urlquery "a b&c" }}'),
      "1 2a3|1 b\n|&lt;a&amp;b&gt;|a\\'b\\u003C|a+b%26c",
    );
  });
  it('call invokes functions from data', () => {
    assert.equal(run('{{ call .F 2 }}', { F: (x: bigint) => x * 2n }), '4');
  });
  it("Ollama's json / toTypeScriptType / currentDate", () => {
    assert.equal(run('{{ json .M }}', { M: { b: '<x>', a: [1, 2.5] } }), '{"a":[1,2.5],"b":"\\u003cx\\u003e"}');
    assert.equal(run('{{ toTypeScriptType "x" }}'), 'any');
    assert.match(run('{{ currentDate }}'), /^\d{4}-\d{2}-\d{2}$/);
  });
  it('wrong argument counts', () => {
    assert.equal(
      execError('{{ len 1 2 }}'),
      'template: :1:3: executing "" at <len>: wrong number of args for len: want 1 got 2',
    );
  });
});

describe('Go template errors', () => {
  const cases: [string, string][] = [
    ['{{ .X }', 'template: :1: unexpected "}" in operand'],
    ['{{ .X', 'template: :1: unclosed action'],
    ['a\n{{ foo 1 }}', 'template: :2: function "foo" not defined'],
    ['{{ if .X }}a', 'template: :1: unexpected EOF'],
    ['{{ end }}', 'template: :1: unexpected {{end}}'],
    ['{{ else }}', 'template: :1: unexpected {{else}}'],
    ['{{ $x }}', 'template: :1: undefined variable "$x"'],
    ['{{ break }}', 'template: :1: {{break}} outside {{range}}'],
    ['{{ 1 | 2 }}', 'template: :1: non executable command in pipeline stage 2'],
    ['{{ if }}{{ end }}', 'template: :1: missing value for if'],
    ['{{/* x', 'template: :1: unclosed comment'],
    ['{{ "abc }}', 'template: :1: unterminated quoted string'],
    ['{{ ) }}', 'template: :1: unexpected right paren'],
    [
      '{{ define "a" }}x{{ end }}{{ define "a" }}y{{ end }}',
      'template: :1: template: multiple definition of template "a"',
    ],
  ];
  for (const [src, msg] of cases) {
    it(JSON.stringify(src), () => assert.equal(parseError(src), msg));
  }
  it('execution errors name the template position and node', () => {
    assert.equal(
      execError('{{ template "nope" }}'),
      'template: :1:12: executing "" at <{{template "nope"}}>: template "nope" not defined',
    );
    assert.match(execError('{{ range .S }}{{ end }}', { S: 'str' }), /range can't iterate over str/);
    assert.match(execError('{{ nil }}'), /nil is not a command/);
  });
});
