/** Go's `fmt` printing of template values: %v (formatValue), Sprint, Sprintln and Sprintf. */
import { GO_STRING, GoStruct, goTypeName, kindOf, mapEntries } from './go-values.kinds';

/** Go's strconv.FormatFloat(f, 'g', -1, 64) as used by fmt's %v. */
export function formatFloatG(f: number, prec = -1): string {
  if (Number.isNaN(f)) return 'NaN';
  if (f === Infinity) return '+Inf';
  if (f === -Infinity) return '-Inf';
  if (f === 0) return Object.is(f, -0) ? '-0' : '0';
  const neg = f < 0;
  const a = Math.abs(f);
  const exp = prec < 0 ? a.toExponential() : a.toExponential(Math.max(prec - 1, 0));
  const [mant, e] = exp.split('e');
  let digits = mant.replace('.', '');
  if (prec >= 0) digits = digits.replace(/0+$/, '') || '0';
  const x = parseInt(e, 10);
  let eprec = prec < 0 ? 6 : prec === 0 ? 1 : prec;
  if (prec >= 0 && eprec > digits.length && digits.length >= x + 1) eprec = digits.length;
  let out: string;
  if (x < -4 || x >= eprec) {
    const m = digits.length > 1 ? digits[0] + '.' + digits.slice(1) : digits;
    out = m + 'e' + (x < 0 ? '-' : '+') + String(Math.abs(x)).padStart(2, '0');
  } else if (x < 0) {
    out = '0.' + '0'.repeat(-x - 1) + digits;
  } else if (digits.length <= x + 1) {
    out = digits + '0'.repeat(x + 1 - digits.length);
  } else {
    out = digits.slice(0, x + 1) + '.' + digits.slice(x + 1);
  }
  return (neg ? '-' : '') + out;
}

/**
 * fmt's %v of a value. `depth` 0 is the top level (nil there is handled by the template's printer as `<no value>`).
 */
export function formatValue(v: unknown, depth = 0): string {
  if ((typeof v === 'object' && v !== null) || typeof v === 'function') {
    const s = (v as { [GO_STRING]?: () => string })[GO_STRING];
    if (s) return s.call(v);
  }
  if (v instanceof GoStruct && v.options.string) return v.options.string();
  switch (kindOf(v)) {
    case 'invalid':
      return '<nil>';
    case 'string':
      return v as string;
    case 'bool':
      return (v as boolean) ? 'true' : 'false';
    case 'int':
      return (v as bigint).toString();
    case 'float':
      return formatFloatG(v as number);
    case 'slice':
      return '[' + Array.from(v as ArrayLike<unknown>, (e) => formatValue(e, depth + 1)).join(' ') + ']';
    case 'map':
      return (
        'map[' +
        mapEntries(v)
          .map(([k, e]) => `${formatValue(k, depth + 1)}:${formatValue(e, depth + 1)}`)
          .join(' ') +
        ']'
      );
    case 'struct':
      return (
        '{' +
        Object.values((v as GoStruct).fields)
          .map((e) => formatValue(e, depth + 1))
          .join(' ') +
        '}'
      );
    case 'func':
      return '0x0';
  }
}

// fmt.Sprint, Sprintln and Sprintf

/** Go's fmt.Sprint: operands separated by a space when neither side is a string. */
export function sprint(args: unknown[]): string {
  let out = '';
  for (let i = 0; i < args.length; i++) {
    if (i > 0 && typeof args[i] !== 'string' && typeof args[i - 1] !== 'string') out += ' ';
    out += formatValue(args[i], 1);
  }
  return out;
}

/** Go's fmt.Sprintln: always space-separated, newline terminated. */
export function sprintln(args: unknown[]): string {
  return args.map((a) => formatValue(a, 1)).join(' ') + '\n';
}

interface Spec {
  minus: boolean;
  plus: boolean;
  sharp: boolean;
  space: boolean;
  zero: boolean;
  width: number | null;
  prec: number | null;
}

function pad(s: string, sp: Spec): string {
  const w = sp.width ?? 0;
  if (w <= 0 || s.length >= w * 2) return s; // no padding possible (a rune is 1–2 UTF-16 units): skip the count
  const n = [...s].length;
  if (n >= w) return s;
  if (sp.minus) return s + ' '.repeat(w - n);
  if (sp.zero) {
    const m = /^([+-]?)(.*)$/s.exec(s);
    const sign = m ? m[1] : '';
    return sign + '0'.repeat(w - n) + (m ? m[2] : s);
  }
  return ' '.repeat(w - n) + s;
}

function badVerb(verb: string, arg: unknown): string {
  if (arg === null || arg === undefined) return `%!${verb}(<nil>)`;
  return `%!${verb}(${goTypeName(arg)}=${formatValue(arg, 1)})`;
}

function fmtInt(v: bigint, verb: string, sp: Spec): string {
  const neg = v < 0n;
  const a = neg ? -v : v;
  let s: string;
  switch (verb) {
    case 'd':
    case 'v':
      s = a.toString(10);
      break;
    case 'x':
      s = a.toString(16);
      if (sp.sharp) s = '0x' + s;
      break;
    case 'X':
      s = a.toString(16).toUpperCase();
      if (sp.sharp) s = '0X' + s;
      break;
    case 'o':
      s = a.toString(8);
      if (sp.sharp) s = '0' + s;
      break;
    case 'b':
      s = a.toString(2);
      break;
    case 'c':
      return pad(String.fromCodePoint(Number(v)), sp);
    case 'q':
      return pad("'" + String.fromCodePoint(Number(v)).replace(/'/g, "\\'") + "'", sp);
    case 'U':
      return pad('U+' + a.toString(16).toUpperCase().padStart(4, '0'), sp);
    default:
      return badVerb(verb, v);
  }
  if (sp.prec !== null) s = s.padStart(sp.prec, '0');
  const sign = neg ? '-' : sp.plus ? '+' : sp.space ? ' ' : '';
  return pad(sign + s, sp.prec !== null ? { ...sp, zero: false } : sp);
}

function fmtFloat(v: number, verb: string, sp: Spec): string {
  let s: string;
  const a = Math.abs(v);
  const p = sp.prec;
  if (!Number.isFinite(v)) {
    s = Number.isNaN(v) ? 'NaN' : 'Inf';
  } else {
    switch (verb) {
      case 'v':
      case 'g':
      case 'G':
        s = formatFloatG(a, p ?? -1);
        if (verb === 'G') s = s.toUpperCase();
        break;
      case 'f':
      case 'F':
        s = a.toFixed(p ?? 6);
        break;
      case 'e':
      case 'E': {
        const t = a.toExponential(p ?? 6);
        const [m, e] = t.split('e');
        const x = parseInt(e, 10);
        s = m + 'e' + (x < 0 ? '-' : '+') + String(Math.abs(x)).padStart(2, '0');
        if (verb === 'E') s = s.toUpperCase();
        break;
      }
      default:
        return badVerb(verb, v);
    }
  }
  const neg = v < 0 || Object.is(v, -0);
  const sign = neg ? '-' : sp.plus || (Number.isNaN(v) === false && !Number.isFinite(v)) ? '+' : sp.space ? ' ' : '';
  return pad(sign + s, Number.isFinite(v) ? sp : { ...sp, zero: false });
}

function fmtString(s: string, verb: string, sp: Spec, quote: (s: string) => string): string {
  if (sp.prec !== null) s = [...s].slice(0, sp.prec).join('');
  switch (verb) {
    case 's':
    case 'v':
      return pad(s, sp);
    case 'q':
      return pad(sp.sharp && !s.includes('`') ? '`' + s + '`' : quote(s), sp);
    case 'x':
    case 'X': {
      let h = Buffer.from(s).toString('hex');
      if (verb === 'X') h = h.toUpperCase();
      return pad(h, sp);
    }
    default:
      return badVerb(verb, s);
  }
}

/** Go's fmt `tooLarge` bound on a width or precision. */
const FMT_MAX_NUM = 1_000_000n;

/**
 * Go's fmt.Sprintf for the verbs templates use: %v %s %d %q %t %f %g %e %x %X %c %o %b %U %T %%, flags `-+# 0`,
 * width and precision (including `*`). Wrong types print as `%!d(string=hi)`, missing args as `%!d(MISSING)`,
 * extra args as `%!(EXTRA type=value)`, like Go.
 */
export function sprintf(format: string, args: unknown[], quote: (s: string) => string): string {
  let out = '';
  let argi = 0;
  let i = 0;
  while (i < format.length) {
    const c = format[i];
    if (c !== '%') {
      out += c;
      i++;
      continue;
    }
    i++;
    const sp: Spec = { minus: false, plus: false, sharp: false, space: false, zero: false, width: null, prec: null };
    for (; i < format.length; i++) {
      const f = format[i];
      if (f === '-') sp.minus = true;
      else if (f === '+') sp.plus = true;
      else if (f === '#') sp.sharp = true;
      else if (f === ' ') sp.space = true;
      else if (f === '0') sp.zero = !sp.minus;
      else break;
    }
    // Go's fmt refuses a width or precision over 1e6 (tooLarge): `*` → %!(BADWIDTH) / %!(BADPREC); a literal whose
    // digits overflow ends the format with %!(NOVERB). This also bounds what one printf can allocate.
    const readNum = (bad: string): number | null => {
      if (format[i] === '*') {
        i++;
        const a = args[argi++];
        if (typeof a === 'bigint' && a <= FMT_MAX_NUM && a >= -FMT_MAX_NUM) return Number(a);
        out += bad;
        return null;
      }
      let num = 0;
      let digits = 0;
      while (i < format.length && format[i] >= '0' && format[i] <= '9') {
        if (num > 1e6) {
          i = format.length;
          return null;
        }
        num = num * 10 + (format.charCodeAt(i) - 48);
        digits++;
        i++;
      }
      return digits > 0 ? num : null;
    };
    sp.width = readNum('%!(BADWIDTH)');
    if (format[i] === '.') {
      i++;
      const star = format[i] === '*';
      const prec = readNum('%!(BADPREC)');
      if (star && prec !== null && prec < 0) out += '%!(BADPREC)';
      sp.prec = prec !== null && prec >= 0 ? prec : star ? null : 0;
    }
    if (i >= format.length) {
      out += '%!(NOVERB)';
      break;
    }
    const verb = String.fromCodePoint(format.codePointAt(i) ?? 0);
    i += verb.length;
    if (verb === '%') {
      out += '%';
      continue;
    }
    if (argi >= args.length) {
      out += `%!${verb}(MISSING)`;
      continue;
    }
    const arg = args[argi++];
    out += formatOne(arg, verb, sp, quote);
  }
  if (argi < args.length) {
    out +=
      '%!(EXTRA ' +
      args
        .slice(argi)
        .map((a) => (a === null || a === undefined ? '<nil>' : `${goTypeName(a)}=${formatValue(a, 1)}`))
        .join(', ') +
      ')';
  }
  return out;
}

function formatOne(arg: unknown, verb: string, sp: Spec, quote: (s: string) => string): string {
  if (verb === 'T') return pad(goTypeName(arg), sp);
  if (arg === null || arg === undefined) return verb === 'v' ? pad('<nil>', sp) : badVerb(verb, arg);
  if ((typeof arg === 'object' || typeof arg === 'function') && 'vsqx'.includes(verb)) {
    const str =
      (arg as { [GO_STRING]?: () => string })[GO_STRING] ?? (arg instanceof GoStruct ? arg.options.string : undefined);
    if (str) return fmtString(str.call(arg), verb, sp, quote);
  }
  switch (kindOf(arg) as string) {
    case 'string':
      return fmtString(arg as string, verb, sp, quote);
    case 'bool':
      return verb === 'v' || verb === 't' ? pad(String(arg), sp) : badVerb(verb, arg);
    case 'int':
      return fmtInt(arg as bigint, verb, sp);
    case 'float':
      return fmtFloat(arg as number, verb, sp);
    default:
      if (verb === 'v' || verb === 's') {
        if (Array.isArray(arg) && verb === 's') {
          return pad('[' + arg.map((e) => formatOne(e, 's', { ...sp, width: null }, quote)).join(' ') + ']', sp);
        }
        return pad(formatValue(arg, 1), sp);
      }
      return badVerb(verb, arg);
  }
}
