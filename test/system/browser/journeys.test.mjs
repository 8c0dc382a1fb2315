// A device_authorization journey completed in headless Chromium with the
// DevTools virtual authenticator (WebAuthn.addVirtualAuthenticator over a
// CDP session): the person's page registers a passkey, asserts with it,
// and the proof it shows is exchanged once at /v1/journeys/siteverify.
// Driven by test/system/journeys_browser_test.go, which starts the node and
// passes TRUSTD_API, TRUSTD_PAGE, TRUSTD_SECRET, TRUSTD_ADMIN_TOKEN and
// TRUSTD_WORKSPACE.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { launch, newPage, shot } from './lib.mjs';

const api = process.env.TRUSTD_API;
const page0 = process.env.TRUSTD_PAGE;
const secret = process.env.TRUSTD_SECRET;
const admin = process.env.TRUSTD_ADMIN_TOKEN;
const workspace = process.env.TRUSTD_WORKSPACE;

async function call(method, path, body, bearer) {
  const headers = { 'Content-Type': 'application/json' };
  if (bearer) headers.Authorization = 'Bearer ' + bearer;
  const base = path.startsWith('/admin/') ? api.replace(/\/v1$/, '') : api;
  const r = await fetch(base + path, { method, headers, body: body && JSON.stringify(body) });
  return { status: r.status, body: await r.json() };
}

async function start(op) {
  const r = await call('POST', '/journeys/start', { secret, journey_key: 'pay', subject_id: 'browser-user', action: 'pay', operation_reference: op });
  assert.equal(r.status, 200, JSON.stringify(r.body));
  // The page runs at localhost (WebAuthn refuses an IP address as RP id).
  const u = new URL(r.body.endpoint);
  return { session: r.body.session_token, url: page0 + u.pathname + u.hash };
}

async function authenticator(context, page, options = {}) {
  const cdp = await context.newCDPSession(page);
  await cdp.send('WebAuthn.enable');
  const { authenticatorId } = await cdp.send('WebAuthn.addVirtualAuthenticator', {
    options: { protocol: 'ctap2', transport: 'internal', hasResidentKey: true, hasUserVerification: true,
      isUserVerified: true, automaticPresenceSimulation: true, ...options },
  });
  return { cdp, authenticatorId };
}

async function complete(page, url) {
  await page.goto('about:blank'); // a new fragment alone would not reload the page
  await page.goto(url);
  await page.waitForSelector('body[data-state="ready"]', { timeout: 15000 });
  assert.equal(new URL(page.url()).hash, '', 'the capability stays in the address bar');
  await page.click('#go');
  await page.waitForFunction(() => ['done', 'failed', 'error'].includes(document.body.dataset.state), null, { timeout: 20000 });
  return page.evaluate(() => ({ state: document.body.dataset.state, proof: document.getElementById('proof').value, text: document.getElementById('state').textContent }));
}

test('a passkey journey completes in Chromium and its proof verifies once', async () => {
  assert.ok(api && page0 && secret && admin && workspace, 'TRUSTD_* environment');
  const def = await call('PUT', `/admin/v1/workspaces/${workspace}/journeys/pay`, {
    name: 'Payment', method: 'device_authorization', requested_assurance: 'standard',
    requirements: { identity: true, liveness: false, authorization: true, operation_binding: true },
  }, admin);
  assert.equal(def.status, 200, JSON.stringify(def.body));

  const browser = await launch();
  try {
    const { context, page, problems } = await newPage(browser);
    const { cdp, authenticatorId } = await authenticator(context, page);

    // First journey: the subject has no passkey: registration, then an
    // assertion with user verification, in one attempt.
    const j1 = await start('order-1');
    const r1 = await complete(page, j1.url);
    assert.equal(r1.state, 'done', r1.text);
    assert.match(r1.proof, /^tp1_/);
    await shot(page.locator('main'), 'journey-passkey-done');
    const sv = { secret, session_token: j1.session, response: r1.proof, subject_id: 'browser-user', action: 'pay', operation_reference: 'order-1' };
    let v = await call('POST', '/journeys/siteverify', sv);
    assert.equal(v.status, 200);
    assert.equal(v.body.success, true, JSON.stringify(v.body));
    assert.equal(v.body.journey.status, 'completed');
    assert.equal(v.body.trust.method, 'device_authorization');
    assert.equal(v.body.trust.assurance_level, 'standard');
    v = await call('POST', '/journeys/siteverify', sv);
    assert.equal(v.body.success, false);
    assert.deepEqual(v.body['error-codes'], ['timeout-or-duplicate']);

    // Second journey: the passkey exists: an assertion only; the
    // authenticator's counter moved.
    const { credentials } = await cdp.send('WebAuthn.getCredentials', { authenticatorId });
    assert.equal(credentials.length, 1);
    const j2 = await start('order-2');
    const r2 = await complete(page, j2.url);
    assert.equal(r2.state, 'done', r2.text);
    const after = await cdp.send('WebAuthn.getCredentials', { authenticatorId });
    assert.ok(after.credentials[0].signCount > credentials[0].signCount, 'the sign count increased');
    v = await call('POST', '/journeys/siteverify', { ...sv, session_token: j2.session, response: r2.proof, operation_reference: 'order-2' });
    assert.equal(v.body.success, true, JSON.stringify(v.body));
    assert.deepEqual(await problems(), []);
    await context.close();

    // An authenticator that cannot verify the user never completes.
    const other = await newPage(browser);
    await authenticator(other.context, other.page, { isUserVerified: false });
    const j3 = await start('order-3');
    const r3 = await complete(other.page, j3.url);
    assert.notEqual(r3.state, 'done', r3.text);
    assert.equal(r3.proof, '');
    await other.context.close();
  } finally {
    await browser.close();
  }
});
