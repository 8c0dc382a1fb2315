// Unmodified HIBP range clients against a running trustd node.
// Driven by http/passwords_clients_test.go, which starts the node, imports
// a corpus with known counts and passes:
//   TRUSTD_RANGE_BASE   {api}/v1/passwords/{sitekey}   (hibp baseUrl)
//   TRUSTD_UNKNOWN_BASE {api}/v1/passwords/{unknown key}
//   TRUSTD_EXPECT       JSON {password: count} of the imported SHA-1 corpus
// Prints one line per check and "N passed, N failed"; exits 1 on a failure.
import { createRequire } from 'node:module';
import { pwnedPassword, pwnedPasswordRange } from 'hibp';

// @zxcvbn-ts' ESM build calls require('crypto') and fails under Node ESM;
// the CommonJS build is the same code.
const require = createRequire(import.meta.url);
const { zxcvbnOptions, zxcvbnAsync } = require('@zxcvbn-ts/core');
const { matcherPwnedFactory, haveIBeenPwned } = require('@zxcvbn-ts/matcher-pwned');

const base = process.env.TRUSTD_RANGE_BASE;
const unknownBase = process.env.TRUSTD_UNKNOWN_BASE;
const expect = JSON.parse(process.env.TRUSTD_EXPECT || '{}');
if (!base || !unknownBase || Object.keys(expect).length === 0) {
  console.error('TRUSTD_RANGE_BASE, TRUSTD_UNKNOWN_BASE and TRUSTD_EXPECT are required');
  process.exit(2);
}

let passed = 0;
let failed = 0;
async function check(name, fn) {
  try {
    await fn();
    passed++;
    console.log(`ok   ${name}`);
  } catch (err) {
    failed++;
    console.log(`FAIL ${name}: ${err && err.message ? err.message : err}`);
  }
}
function assert(cond, msg) {
  if (!cond) throw new Error(msg);
}

const notListed = `trustd-not-listed-${process.pid}-${Date.now()}`;

// hibp: baseUrl carries the site key; it appends /range/{prefix}?mode=…
for (const [pw, count] of Object.entries(expect)) {
  await check(`hibp pwnedPassword(${JSON.stringify(pw)}) is the imported count ${count}`, async () => {
    const got = await pwnedPassword(pw, { baseUrl: base });
    assert(got === count, `got ${got}`);
  });
}
await check('hibp pwnedPassword of an unlisted password is 0', async () => {
  const got = await pwnedPassword(notListed, { baseUrl: base });
  assert(got === 0, `got ${got}`);
});
await check('hibp pwnedPassword with addPadding still finds password', async () => {
  const got = await pwnedPassword('password', { baseUrl: base, addPadding: true });
  assert(got === expect.password, `got ${got}`);
});
await check('hibp pwnedPasswordRange with addPadding: 800-1000 rows, padding rows count 0', async () => {
  const rows = await pwnedPasswordRange('5BAA6', { baseUrl: base, addPadding: true });
  const n = Object.keys(rows).length;
  const zero = Object.values(rows).filter((c) => c === 0).length;
  assert(n >= 800 && n <= 1000, `${n} rows`);
  assert(zero >= n - 10, `${zero} of ${n} rows are padding`);
  assert(rows['1E4C9B93F3F0682250B6CF8331B7EE68FD8'] === expect.password, 'password suffix missing');
  for (const s of Object.keys(rows)) assert(/^[0-9A-F]{35}$/.test(s), `suffix ${s}`);
});
await check('hibp pwnedPasswordRange accepts a lowercase prefix', async () => {
  const rows = await pwnedPasswordRange('5baa6', { baseUrl: base });
  assert(rows['1E4C9B93F3F0682250B6CF8331B7EE68FD8'] === expect.password, 'password suffix missing');
});
await check('hibp pwnedPasswordRange mode ntlm finds NTLM(password) = 8846F 7EAEE8FB117AD06BDD830B7586C', async () => {
  const rows = await pwnedPasswordRange('8846F', { baseUrl: base, mode: 'ntlm' });
  assert(rows['7EAEE8FB117AD06BDD830B7586C'] > 0, `rows ${JSON.stringify(rows).slice(0, 200)}`);
  for (const s of Object.keys(rows)) assert(/^[0-9A-F]{27}$/.test(s), `suffix ${s}`);
});
await check('hibp pwnedPasswordRange of a malformed prefix rejects with the server\'s 400 text', async () => {
  let err;
  try {
    await pwnedPasswordRange('ZZZZZ', { baseUrl: base });
  } catch (e) {
    err = e;
  }
  assert(err instanceof Error && err.message.includes('invalid-prefix'), `error ${err}`);
});
await check('hibp with an unknown site key rejects (404)', async () => {
  let err;
  try {
    await pwnedPassword('password', { baseUrl: unknownBase });
  } catch (e) {
    err = e;
  }
  assert(err instanceof Error, 'no error');
});

// zxcvbn-ts: url is a prefix the 5-character range is appended to; it
// always sends Add-Padding: true and splits on CRLF only.
const url = `${base}/range/`;
await check('zxcvbn-ts haveIBeenPwned finds password with its count', async () => {
  const line = await haveIBeenPwned('password', { universalFetch: fetch, url });
  assert(line === `1E4C9B93F3F0682250B6CF8331B7EE68FD8:${expect.password}`, `line ${JSON.stringify(line)}`);
});
await check('zxcvbn-ts haveIBeenPwned misses an unlisted password', async () => {
  const line = await haveIBeenPwned(notListed, { universalFetch: fetch, url });
  assert(line === undefined, `line ${JSON.stringify(line)}`);
});
await check('zxcvbn-ts sends 404 of an unknown site key to networkErrorHandler', async () => {
  let status = 0;
  await haveIBeenPwned('password', {
    universalFetch: fetch,
    url: `${unknownBase}/range/`,
    networkErrorHandler: (r) => {
      status = r.status;
      return false;
    },
  });
  assert(status === 404, `status ${status}`);
});
await check('zxcvbn-ts zxcvbnAsync with matcherPwnedFactory reports a pwned match and warning', async () => {
  zxcvbnOptions.addMatcher('pwned', matcherPwnedFactory(fetch, zxcvbnOptions, { url }));
  const res = await zxcvbnAsync('hunter2');
  const m = res.sequence.find((s) => s.pattern === 'pwned');
  assert(m && m.pwnedAmount === expect.hunter2, `sequence ${JSON.stringify(res.sequence)}`);
  assert(res.feedback.warning === 'pwned', `feedback ${JSON.stringify(res.feedback)}`);
  const clean = await zxcvbnAsync(notListed);
  assert(!clean.sequence.some((s) => s.pattern === 'pwned'), 'unlisted password matched pwned');
});

console.log(`${passed} passed, ${failed} failed`);
process.exit(failed === 0 ? 0 : 1);
