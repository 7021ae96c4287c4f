/**
 * jsonMembers() finds each top-level member of a JSON object's bytes as
 * JSON.parse reads them: past strings holding quotes, brackets and
 * backslashes, nested values, multi-byte characters and any spacing.
 */
import { deepStrictEqual, strictEqual } from "node:assert/strict";
import { jsonMembers } from "../../src/proxy/json_members.ts";

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** Each member as [key as written, value as written]. */
function members(text: string): [string, string][] | undefined {
  const bytes = encoder.encode(text);
  return jsonMembers(bytes)?.map((member) => [
    decoder.decode(member.rawKey),
    decoder.decode(bytes.subarray(member.start, member.end)),
  ]);
}

Deno.test("jsonMembers: every kind of value, as written", () => {
  deepStrictEqual(
    members(
      '{"a":1,"b":"x","c":[1,{"d":"]}"}],"e":{"f":[]},"g":true,"h":null,"i":-1.5e3}',
    ),
    [
      ['"a"', "1"],
      ['"b"', '"x"'],
      ['"c"', '[1,{"d":"]}"}]'],
      ['"e"', '{"f":[]}'],
      ['"g"', "true"],
      ['"h"', "null"],
      ['"i"', "-1.5e3"],
    ],
  );
});

Deno.test("jsonMembers: strings with escaped quotes and backslash runs", () => {
  const text = JSON.stringify({
    a: 'say "}" and \\',
    b: ["\\\\", '\\"', "\u00e9\u{1F600}"],
    max_tokens: 5,
  });
  deepStrictEqual(members(text)?.map(([key]) => key), [
    '"a"',
    '"b"',
    '"max_tokens"',
  ]);
  strictEqual(members(text)?.at(-1)?.[1], "5");
});

Deno.test("jsonMembers: spacing anywhere JSON allows it, and keys as written", () => {
  deepStrictEqual(
    members(' \n{ "a" :\t[ 1 , 2 ] ,\r\n "max\\u005ftokens" : 7 } '),
    [['"a"', "[ 1 , 2 ]"], ['"max\\u005ftokens"', "7"]],
  );
  deepStrictEqual(members("{}"), []);
  deepStrictEqual(members('{"a":1,"a":2}'), [['"a"', "1"], ['"a"', "2"]]);
});

Deno.test("jsonMembers: what is not an object gives undefined", () => {
  for (const text of ["[1]", '"x"', "", '{"a":1', '{"a" 1}', '{"a":"x}']) {
    strictEqual(members(text), undefined, text);
  }
});
