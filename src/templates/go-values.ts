/**
 * The Go value model used by the template executor, and Go's `fmt` / `encoding/json` printing of it.
 *
 * JS values stand for Go values as follows: `undefined`/`null` = nil (an invalid or nil interface value), string,
 * boolean, `bigint` = int, `number` = float64, arrays = slices, plain objects and `Map`s = maps (string keys, Go
 * iteration order = sorted keys), {@link GoStruct} = a struct (fields looked up by name, unknown field = error),
 * functions = funcs (for `call`). Values may carry a Go `String()` method via the {@link GO_STRING} symbol.
 */

export * from './go-values.kinds';
export * from './go-values.fmt';
export * from './go-values.json';
