/**
 * The extreme values every option is fuzzed with (issue 32 item 3), as JSON values: integers at and beyond int32,
 * 2^53, ±1e308, and every wrong JSON type (strings like "NaN", a bool, an array, an object).
 */
export const EXTREME_VALUES: readonly unknown[] = [
  0,
  -1,
  1,
  2 ** 31,
  -(2 ** 31),
  2 ** 53,
  1e308,
  -1e308,
  'NaN',
  'abc',
  '',
  true,
  [],
  {},
];

/** The numeric extremes as Modelfile PARAMETER text (what formatParams parses), and `NaN`. */
export const EXTREME_PARAMETER_TEXTS: readonly string[] = [
  '0',
  '-1',
  '1',
  '2147483648',
  '-2147483648',
  '9007199254740992',
  '1e308',
  '-1e308',
  'NaN',
];
