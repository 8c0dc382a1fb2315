// human_verification and the facial journeys completed in headless
// Chromium on the person's page of a real in-process dev node.
// Driven by test/system/journeys_browser_test.go (TestJourneyMethodsInBrowser),
// which passes TRUSTD_API, TRUSTD_SECRET, TRUSTD_ADMIN_TOKEN,
// TRUSTD_WORKSPACE and two fake-camera videos, TRUSTD_FACE_A and
// TRUSTD_FACE_B (another face).

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { launch, newPage, shot } from './lib.mjs';

const api = process.env.TRUSTD_API;
const secret = process.env.TRUSTD_SECRET;
const admin = process.env.TRUSTD_ADMIN_TOKEN;
const workspace = process.env.TRUSTD_WORKSPACE;
const faceA = process.env.TRUSTD_FACE_A;
const faceB = process.env.TRUSTD_FACE_B;
if (!api || !secret || !admin || !workspace || !faceA || !faceB) {
  throw new Error('set TRUSTD_API, TRUSTD_SECRET, TRUSTD_ADMIN_TOKEN, TRUSTD_WORKSPACE, TRUSTD_FACE_A and TRUSTD_FACE_B (test/system/journeys_browser_test.go does)');
}
const origin = new URL(api).origin;
// sidecar: the node runs the real face engine (TestJourneyFaceWithSidecarInBrowser);
// only the real-engine test runs. Otherwise the fake presence check's tests.
const sidecar = process.env.TRUSTD_FACE_ENGINE === 'sidecar';

async function call(method, path, body, headers = {}) {
  const h = { 'Content-Type': 'application/json', ...headers };
  const base = path.startsWith('/admin/') ? origin : api;
  const r = await fetch(base + path, { method, headers: h, body: body && JSON.stringify(body) });
  return { status: r.status, body: await r.json() };
}

async function define(key, def) {
  const r = await call('PUT', `/admin/v1/workspaces/${workspace}/journeys/${key}`, def, { Authorization: 'Bearer ' + admin });
  assert.equal(r.status, 200, JSON.stringify(r.body));
}

async function start(fields) {
  const r = await call('POST', '/journeys/start', { secret, ...fields });
  assert.equal(r.status, 200, JSON.stringify(r.body));
  const capability = new URL(r.body.endpoint).hash.slice(1);
  return { session: r.body.session_token, url: r.body.endpoint, capability, method: r.body.method };
}

const siteverify = (fields) => call('POST', '/journeys/siteverify', { secret, ...fields });
const person = (path, capability, body) => call('POST', '/journeys/person/' + path, body, { 'X-Service-Journey-Token': capability });

async function open(page, url) {
  await page.goto('about:blank'); // a new fragment alone would not reload the page
  await page.goto(url);
  await page.waitForSelector('body[data-state="ready"]', { timeout: 15000 });
  assert.equal(new URL(page.url()).hash, '', 'the capability left the address bar');
}

const outcome = async (page) => {
  await page.waitForFunction(() => ['done', 'failed', 'error'].includes(document.body.dataset.state), null, { timeout: 60000 });
  return page.evaluate(() => ({ state: document.body.dataset.state, proof: document.getElementById('proof').value,
    text: document.getElementById('state').textContent }));
};

// The widget on the person's page: Continue, then tick its checkbox.
async function solveWidget(page) {
  await page.click('#go');
  const box = page.locator('#widget').getByRole('checkbox', { name: 'Verify you are human' });
  await box.waitFor({ timeout: 15000 });
  await box.click();
}

let browser;
before(async () => { browser = await launch(); });
after(async () => { await browser?.close(); });

test('human_verification: the page\'s widget solves a real challenge, the proof verifies once, another session\'s token fails', { skip: sidecar }, async () => {
  await define('login', { name: 'Sign in', method: 'human_verification', requested_assurance: 'none' });
  const { page, problems, context } = await newPage(browser);
  const requests = [];
  page.on('request', (r) => requests.push(r.url()));

  // A: completed on the page; the proof verifies once.
  const a = await start({ journey_key: 'login', action: 'login' });
  assert.equal(a.method, 'human_verification');
  await open(page, a.url);
  await solveWidget(page);
  const ra = await outcome(page);
  assert.equal(ra.state, 'done', ra.text);
  assert.match(ra.proof, /^tp1_/);
  await shot(page.locator('main'), 'journey-human-done');
  const sv = { session_token: a.session, response: ra.proof, action: 'login' };
  let v = await siteverify(sv);
  assert.equal(v.status, 200);
  assert.equal(v.body.success, true, JSON.stringify(v.body));
  assert.equal(v.body.journey.status, 'completed');
  assert.equal(v.body.trust.method, 'human_verification');
  v = await siteverify(sv);
  assert.equal(v.body.success, false, 'a replayed session token and proof');
  assert.deepEqual(v.body['error-codes'], ['timeout-or-duplicate']);
  const other = await start({ journey_key: 'login', action: 'login' });
  v = await siteverify({ ...sv, session_token: other.session });
  assert.equal(v.body.success, false, 'the proof with another session token');
  assert.deepEqual(v.body['error-codes'], ['proof-session-mismatch']);

  // B: the page's widget token is taken before it reaches the service
  // (the page shows an error), then spent on session C: another session's
  // reference as cdata fails C's attempt, and the token is gone.
  const b = await start({ journey_key: 'login', action: 'login' });
  await open(page, b.url);
  let stolen;
  await page.route('**/v1/journeys/person/human', (route) => { stolen = route.request().postDataJSON().response; route.abort(); }, { times: 1 });
  await solveWidget(page);
  const rb = await outcome(page);
  assert.equal(rb.state, 'error', rb.text);
  assert.ok(stolen, 'the widget token');
  const c = await start({ journey_key: 'login', action: 'login' });
  let x = await person('human', c.capability, { response: stolen });
  assert.equal(x.status, 200, JSON.stringify(x.body));
  assert.equal(x.body.success, false);
  assert.deepEqual(x.body.reasons, ['cdata-mismatch']);
  assert.equal(x.body.status, 'failed');
  x = await person('human', b.capability, { response: stolen });
  assert.equal(x.body.success, false, 'the token was spent by the failed attempt');
  assert.deepEqual(x.body.reasons, ['timeout-or-duplicate']);
  assert.equal(x.body.status, 'started', 'a replayed token never moves the session');
  v = await siteverify({ session_token: c.session, action: 'login' });
  assert.equal(v.body.journey.status, 'failed');
  assert.equal(v.body.next_step, 'retry_with_fresh_proof');

  // B's page retries with a fresh token.
  await page.click('#go');
  const box = page.locator('#widget').getByRole('checkbox', { name: 'Verify you are human' });
  await box.waitFor({ timeout: 15000 });
  await box.click();
  const rb2 = await outcome(page);
  assert.equal(rb2.state, 'done', rb2.text);
  v = await siteverify({ session_token: b.session, response: rb2.proof, action: 'login' });
  assert.equal(v.body.success, true, JSON.stringify(v.body));

  // C, after its failed attempt, completes on its page with a fresh proof.
  await open(page, c.url);
  await solveWidget(page);
  const rc = await outcome(page);
  assert.equal(rc.state, 'done', rc.text);
  v = await siteverify({ session_token: c.session, response: rc.proof, action: 'login' });
  assert.equal(v.body.success, true, JSON.stringify(v.body));
  assert.equal(v.body.journey.status, 'completed');

  // a --dev node announces localhost (WebAuthn needs a domain): the same node
  const announced = origin.replace('://127.0.0.1', '://localhost');
  assert.deepEqual(requests.filter((u) => !u.startsWith(origin) && !u.startsWith(announced) && u !== 'about:blank'), [], 'third-party requests');
  assert.deepEqual((await problems()).filter((p) => !/person\/human/.test(p)), []);
  await context.close();
});

// A browser whose camera plays video.
async function camera(video) {
  const b = await launch(['--use-fake-ui-for-media-stream', '--use-fake-device-for-media-stream',
    '--use-file-for-fake-video-capture=' + video]);
  const p = await newPage(b);
  await p.context.grantPermissions(['camera'], { origin });
  return { browser: b, ...p };
}

async function faceJourney(page, fields) {
  const j = await start(fields);
  await open(page, j.url);
  await page.click('#go');
  const r = await outcome(page);
  return { ...j, ...r };
}

async function defineFacial() {
  await define('enroll', { name: 'Enrol', method: 'facial_enrollment', requested_assurance: 'none',
    requirements: { identity: false, liveness: true, authorization: false, operation_binding: false } });
  await define('approve', { name: 'Approve', method: 'facial_authorization', requested_assurance: 'high',
    consent: { required: true, version: 'face-1' },
    requirements: { identity: true, liveness: true, authorization: true, operation_binding: true } });
  await define('live', { name: 'Liveness', method: 'facial_liveness', requested_assurance: 'none',
    requirements: { identity: false, liveness: true, authorization: false, operation_binding: false } });
}

test('facial journeys: enrollment then authorization of the same face; another face fails; liveness alone', { skip: sidecar }, async () => {
  await defineFacial();

  const a = await camera(faceA);
  const b = await camera(faceB);
  try {
    // Before enrollment, authorization has nothing to compare with.
    let j = await faceJourney(a.page, { journey_key: 'approve', subject_id: 'alice', action: 'approve', operation_reference: 'tx-0' });
    assert.equal(j.state, 'error', j.text);
    assert.match(j.text, /journey-not-enrolled/);

    j = await faceJourney(a.page, { journey_key: 'enroll', subject_id: 'alice', action: 'enroll' });
    assert.equal(j.state, 'done', j.text);
    let v = await siteverify({ session_token: j.session, response: j.proof, subject_id: 'alice', action: 'enroll' });
    assert.equal(v.body.success, true, JSON.stringify(v.body));
    assert.equal(v.body.trust.method, 'facial_enrollment');
    assert.equal(v.body.trust.liveness_verified, true);

    // The same face authorizes alice's operation.
    j = await faceJourney(a.page, { journey_key: 'approve', subject_id: 'alice', action: 'approve', operation_reference: 'tx-1' });
    assert.equal(j.state, 'done', j.text);
    await shot(a.page.locator('main'), 'journey-face-authorized');
    const sv = { session_token: j.session, response: j.proof, subject_id: 'alice', action: 'approve', operation_reference: 'tx-1',
      consent_version: 'face-1', consent_accepted: true };
    v = await siteverify(sv);
    assert.equal(v.body.success, true, JSON.stringify(v.body));
    assert.equal(v.body.journey.status, 'completed');
    assert.deepEqual(v.body.trust, { method: 'facial_authorization', assurance_level: 'high', identity_bound: true,
      liveness_verified: true, operation_bound: true, authorization_capable: true });
    v = await siteverify(sv);
    assert.deepEqual(v.body['error-codes'], ['timeout-or-duplicate']);

    // Another face fails alice's authorization.
    j = await faceJourney(b.page, { journey_key: 'approve', subject_id: 'alice', action: 'approve', operation_reference: 'tx-2' });
    assert.equal(j.state, 'failed', j.text);
    assert.match(j.text, /face-mismatch/);
    assert.equal(j.proof, '');
    v = await siteverify({ ...sv, session_token: j.session, response: '', operation_reference: 'tx-2' });
    assert.equal(v.body.success, false);
    assert.equal(v.body.journey.status, 'failed');

    // Liveness alone, with any face.
    j = await faceJourney(b.page, { journey_key: 'live', action: 'check' });
    assert.equal(j.state, 'done', j.text);
    v = await siteverify({ session_token: j.session, response: j.proof, action: 'check' });
    assert.equal(v.body.success, true, JSON.stringify(v.body));
    assert.equal(v.body.trust.method, 'facial_liveness');

    assert.deepEqual(await a.problems(), []);
    assert.deepEqual(await b.problems(), []);
  } finally {
    await a.browser.close();
    await b.browser.close();
  }
});

// With the real engine, whether the page's ~2.8 s of samples show the
// looping fake video's turn and blink in order depends on where the loop
// was when the camera opened; a failed attempt is retried once (a fresh
// attempt, as the session allows), and the first reason is reported.
async function realFaceJourney(t, page, fields) {
  const j = await faceJourney(page, fields);
  if (j.state !== 'failed') return j;
  t.diagnostic('first attempt: ' + j.text + ' (retrying once)');
  await page.click('#go');
  return { ...j, ...(await outcome(page)) };
}

test('facial journeys with the real face engine: enrollment, then authorization of the same face', { skip: !sidecar }, async (t) => {
  await defineFacial();
  const a = await camera(faceA);
  try {
    let j = await realFaceJourney(t, a.page, { journey_key: 'enroll', subject_id: 'carol', action: 'enroll' });
    assert.equal(j.state, 'done', j.text);
    let v = await siteverify({ session_token: j.session, response: j.proof, subject_id: 'carol', action: 'enroll' });
    assert.equal(v.body.success, true, JSON.stringify(v.body));
    assert.equal(v.body.trust.liveness_verified, true);

    j = await realFaceJourney(t, a.page, { journey_key: 'approve', subject_id: 'carol', action: 'approve', operation_reference: 'tx-9' });
    assert.equal(j.state, 'done', j.text);
    await shot(a.page.locator('main'), 'journey-face-sidecar-authorized');
    v = await siteverify({ session_token: j.session, response: j.proof, subject_id: 'carol', action: 'approve', operation_reference: 'tx-9',
      consent_version: 'face-1', consent_accepted: true });
    assert.equal(v.body.success, true, JSON.stringify(v.body));
    assert.equal(v.body.trust.assurance_level, 'high');

    // Another subject has no enrolled face: the attempt cannot begin.
    j = await faceJourney(a.page, { journey_key: 'approve', subject_id: 'dave', action: 'approve', operation_reference: 'tx-10' });
    assert.equal(j.state, 'error', j.text);
    assert.match(j.text, /journey-not-enrolled/);
    assert.deepEqual(await a.problems(), []);
  } finally {
    await a.browser.close();
  }
});
