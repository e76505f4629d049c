// A node:test reporter (https://nodejs.org/api/test.html#custom-reporters) that prints nothing while the tests run
// and, at the end, one block per failed or cancelled test: its file, its full name (suites › test) and the first
// lines of its error. scripts/test.mjs runs it beside the TAP reporter, so a log that keeps only its tail (CI) still
// says which test failed and why.
const MAX_ERROR_LINES = 12;

function errorText(error) {
  const inner = error?.cause ?? error;
  const text = inner instanceof Error ? (inner.stack ?? inner.message) : String(inner);
  // Node's own frames (node:internal/test_runner/…) say nothing about the test.
  const lines = text.split('\n').filter((line) => !/^\s+at .*(\(?node:|\(<anonymous>\)$)/.test(line));
  return lines.slice(0, MAX_ERROR_LINES).join('\n');
}

export default async function* failuresReporter(source) {
  const names = [];
  const failures = [];
  for await (const event of source) {
    if (event.type === 'test:start') {
      names.length = event.data.nesting;
      names.push(event.data.name);
    } else if (event.type === 'test:fail' && event.data.details?.type !== 'suite') {
      const path = [...names.slice(0, event.data.nesting), event.data.name].join(' › ');
      const where = event.data.file ? `${event.data.file}${event.data.line ? `:${event.data.line}` : ''}` : '(no file)';
      failures.push(`${where}\n  ${path}\n${errorText(event.data.details?.error).replace(/^/gm, '    ')}`);
    }
  }
  if (failures.length === 0) return;
  yield `\n# ${failures.length} failed test${failures.length === 1 ? '' : 's'}:\n`;
  for (const f of failures) yield `${f}\n\n`;
}
