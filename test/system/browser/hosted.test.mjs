// The hosted identity capture page in headless Chromium with a fake
// camera. test/system/identity_hosted_test.go starts an in-process dev node
// (with a test face engine) and runs this with
//   TRUSTD_API           the node's API base, e.g. http://127.0.0.1:41234/v1
//   TRUSTD_CREDENTIAL    a credential with identity.verify
//   TRUSTD_PASSPORT_PNG  a rendered passport page that screens as verify
//   TRUSTD_FAKE_VIDEO    a Y4M file the fake camera plays (a low-resolution page)

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { artifacts, launch, newPage } from './lib.mjs';

const api = process.env.TRUSTD_API;
const credential = process.env.TRUSTD_CREDENTIAL;
const passport = process.env.TRUSTD_PASSPORT_PNG;
const video = process.env.TRUSTD_FAKE_VIDEO;
if (!api || !credential || !passport || !video) {
  throw new Error('set TRUSTD_API, TRUSTD_CREDENTIAL, TRUSTD_PASSPORT_PNG and TRUSTD_FAKE_VIDEO (test/system/identity_hosted_test.go does)');
}
const returnURL = 'http://localhost:9/identity/done';

let browser;
before(async () => {
  browser = await launch(['--use-fake-ui-for-media-stream', '--use-fake-device-for-media-stream',
    '--use-file-for-fake-video-capture=' + video]);
});
after(async () => { await browser?.close(); });

async function createHosted(fields) {
  const res = await fetch(api + '/identity/hosted/session', {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', Authorization: 'Bearer ' + credential },
    body: JSON.stringify({ subject_id: 'user-7', action: 'open_account', country: 'UTO', document_type: 'passport',
      consent_accepted: true, consent_reference: 'consent-1', return_url: returnURL, theme: 'system', ...fields }),
  });
  assert.equal(res.status, 201, await res.clone().text());
  return res.json();
}

async function result(s) {
  const res = await fetch(api + '/identity/verification/' + s.session_id + '/result', {
    headers: { Authorization: 'Bearer ' + credential, 'X-Service-Identity-Session-Token': s.session_token },
  });
  assert.equal(res.status, 200);
  return res.json();
}

async function open(url, locale) {
  const p = await newPage(browser, { locale });
  await p.context.grantPermissions(['camera'], { origin: new URL(api).origin });
  let returned = null;
  await p.page.route('http://localhost:9/**', (route) => { returned = route.request().url(); route.fulfill({ status: 200, contentType: 'text/html', body: 'done' }); });
  const requests = [];
  p.page.on('request', (r) => requests.push(r.url()));
  await p.page.goto(url);
  return { ...p, returned: () => returned, requests };
}

test('document_only: the fragment is removed at once; a camera capture gets a user-safe retry; the upload fallback verifies and returns', async () => {
  const s = await createHosted({ assurance_level: 'document_only', locale: 'en-GB' });
  const token = new URL(s.url).hash.slice(1);
  assert.match(token, /^ivhs_/);
  const { page, problems, returned, requests } = await open(s.url);
  await page.waitForSelector('#doc:not([hidden])');
  assert.equal(await page.evaluate(() => location.hash), '');
  assert.ok(!page.url().includes(token), 'the capability is still in the address bar');
  assert.equal(await page.evaluate(() => history.length >= 1 && !location.href.includes('ivhs_')), true);
  await page.screenshot({ path: join(artifacts, 'hosted-document.png') });

  // Camera path: the fake camera plays a 640-pixel page: too small to read.
  await page.click('#doc-camera');
  await page.waitForSelector('#cam:not([hidden])');
  await page.waitForFunction(() => document.getElementById('video').videoWidth > 0);
  await page.screenshot({ path: join(artifacts, 'hosted-camera.png') });
  await page.click('#shoot');
  await page.waitForFunction(() => document.getElementById('hint').textContent.length > 0, null, { timeout: 60000 });
  const retry = await page.textContent('#hint');
  assert.doesNotMatch(retry, /front_|error|[{}]/, 'the retry reason is not user-safe: ' + retry);
  assert.equal((await result(s)).status, 'recapture_required');
  await page.screenshot({ path: join(artifacts, 'hosted-recapture.png') });

  // File-upload fallback with the full page.
  await page.setInputFiles('#doc-file', passport);
  await page.waitForSelector('#finish:not([hidden])', { timeout: 60000 });
  await page.click('#complete');
  await page.waitForSelector('#done:not([hidden])');
  assert.match(await page.textContent('#outcome'), /verified/);
  await page.screenshot({ path: join(artifacts, 'hosted-verified.png') });
  await page.waitForFunction(() => true);
  for (let i = 0; i < 50 && !returned(); i++) await new Promise((r) => setTimeout(r, 100));
  assert.equal(returned(), returnURL + '?session_id=' + s.session_id);
  const r = await result(s);
  assert.equal(r.status, 'verified');
  assert.equal(r.attempts.length, 2);
  const origin = new URL(api).origin;
  // a --dev node announces localhost (WebAuthn needs a domain): the same node
  const announced = origin.replace('://127.0.0.1', '://localhost');
  assert.deepEqual(requests.filter((u) => !u.startsWith(origin) && !u.startsWith(announced) && !u.startsWith('http://localhost:9/')), [], 'third-party requests');
  assert.deepEqual(await problems(), []);
});

test('standard, in French, dark theme: the liveness sequence runs on camera frames and the session verifies', async () => {
  const s = await createHosted({ assurance_level: 'standard', locale: 'fr-CA', theme: 'dark' });
  const { page, problems } = await open(s.url, 'fr-CA');
  await page.waitForSelector('#doc:not([hidden])');
  assert.equal(await page.evaluate(() => document.documentElement.lang), 'fr');
  assert.equal(await page.evaluate(() => document.documentElement.dataset.theme), 'dark');
  assert.equal(await page.textContent('#doc-camera'), 'Utiliser la caméra');
  await page.setInputFiles('#doc-file', passport);
  await page.waitForSelector('#face:not([hidden])', { timeout: 60000 });
  await page.screenshot({ path: join(artifacts, 'hosted-face-fr.png') });
  await page.click('#face-start');
  await page.waitForSelector('#cam:not([hidden])');
  await page.waitForSelector('#finish:not([hidden])', { timeout: 60000 });
  let r = await result(s);
  assert.equal(r.steps.face, 'passed');
  assert.equal(r.attempts[1].step, 'face');
  assert.ok(r.attempts[1].metrics.frames >= 4);
  await page.click('#complete');
  await page.waitForSelector('#done:not([hidden])');
  r = await result(s);
  assert.equal(r.status, 'verified');
  await page.screenshot({ path: join(artifacts, 'hosted-verified-fr.png') });
  assert.deepEqual(await problems(), []);
});

test('without the fragment the page says the link is not valid and calls nothing with a capability', async () => {
  const s = await createHosted({ assurance_level: 'document_only' });
  const { page, problems } = await open(s.url.split('#')[0]);
  await page.waitForSelector('#done:not([hidden])');
  assert.match(await page.textContent('#outcome'), /not valid/);
  assert.deepEqual(await problems(), []);
});
