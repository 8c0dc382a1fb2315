// The workspace console (/console/) in headless Chromium against a real
// `trustd --dev` node.
//
// 1. The operator logs in with the admin token, creates console users
//    (an editor with a password, a viewer with a one-time sign-in link)
//    on the Console users page, and looks at the cluster and audit pages.
// 2. The editor logs in with email and password (keyboard only), creates
//    a site, creates a rate-limit policy in observe mode with the form,
//    drives checks through the public API, sees the would-have-throttled
//    count in the table and on the chart, promotes the policy to throttle
//    with one click, drives more checks and sees the throttles.
// 3. Every module page (API Protection, concurrency with a live holder, dependencies, agents
//    and approvals, webhooks, webhook events, trust policies, audit) is
//    opened; each is checked with axe-core (no violations allowed), for
//    keyboard focus, and photographed light, dark and at phone width.
// 4. The viewer signs in with the link (once), sees no forms.
// 5. The pages of the modules that landed since (a second test on the same
//    node): the overview's cluster-wide chart, a journey defined and edited with the form, an escalated
//    journey's review case resolved, a branding profile created with a
//    PNG logo uploaded and its preview loaded, the messaging settings
//    before and after a policy exists; axe-core, keyboard focus and
//    screenshots on each.
// No page may log a script error or a CSP violation (the only script is
// the console's own charts.js and the vendored uPlot, from 'self').
//
// test/system/console_browser_test.go starts the node and runs this with
//   TRUSTD_API, TRUSTD_SECRET, TRUSTD_ADMIN_TOKEN, TRUSTD_WORKSPACE

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { deflateSync, crc32 } from 'node:zlib';
import { createRequire } from 'node:module';
import { launch, newPage, artifacts } from './lib.mjs';
import { join } from 'node:path';

const api = process.env.TRUSTD_API;
const secret = process.env.TRUSTD_SECRET;
const adminToken = process.env.TRUSTD_ADMIN_TOKEN;
const workspace = process.env.TRUSTD_WORKSPACE;
if (!api || !secret || !adminToken || !workspace) {
  throw new Error('set TRUSTD_API, TRUSTD_SECRET, TRUSTD_ADMIN_TOKEN and TRUSTD_WORKSPACE (test/system/console_browser_test.go does)');
}
const origin = new URL(api).origin;
const console_ = origin + '/console/';
const wsURL = console_ + 'workspaces/' + workspace;
const axeSource = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

let browser;
before(async () => { browser = await launch(); });
after(async () => { await browser?.close(); });

async function admin(method, path, body) {
  const res = await fetch(origin + '/admin/v1' + path, {
    method,
    headers: { 'Content-Type': 'application/json', Authorization: 'Bearer ' + adminToken },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null };
}

async function check(action) {
  const res = await fetch(api + '/rate-limit/check', {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', Authorization: 'Bearer ' + secret },
    body: JSON.stringify({ action }),
  });
  const text = await res.text();
  assert.ok(res.status === 200 || res.status === 429, `check: ${res.status} ${text}`);
}

// checkPage runs axe-core on the page (evaluated through the DevTools
// protocol, which the page's CSP does not govern) and fails on any
// violation.
async function checkPage(page, label) {
  await page.evaluate(axeSource);
  const result = await page.evaluate(() => window.axe.run(document, { resultTypes: ['violations'] }));
  const found = result.violations.map((v) => `${label}: ${v.id} (${v.impact}): ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`);
  assert.deepEqual(found, [], 'axe-core violations');
}

// shoot keeps a screenshot as an artifact. Headless Chromium sometimes
// cannot capture a full page on a starved machine; the viewport is tried
// then, and a page that cannot be captured at all is reported, not failed
// (screenshots document the run; the assertions are the test).
async function shoot(page, name) {
  const path = join(artifacts, 'console-' + name + '.png');
  try {
    await page.screenshot({ path, fullPage: true });
  } catch (err) {
    try {
      await page.screenshot({ path });
    } catch (err2) {
      console.log(`# screenshot ${name} not captured: ${err2.message.split('\n')[0]}`);
    }
  }
}

const focus = (page) => page.evaluate(() => {
  const el = document.activeElement;
  return { id: el.id, tag: el.tagName, text: el.textContent.trim(), outline: getComputedStyle(el).outlineStyle, left: el.getBoundingClientRect().left };
});

// loginPage opens the login page and returns it.
async function loginWithToken(page, token) {
  await page.goto(console_ + 'login');
  await page.getByLabel('Admin token').fill(token);
  await page.getByRole('button', { name: 'Log in with the admin token' }).click();
}

test('console: users, a policy from observe to throttle, every module page', async () => {
  const stamp = Date.now();
  const editorEmail = `editor.${stamp}@example.com`;
  const viewerEmail = `viewer.${stamp}@example.com`;
  const editorPassword = 'correct horse battery staple';

  const { page, problems } = await newPage(browser, { viewport: { width: 1280, height: 900 } });

  // Anonymous: the console sends the browser to the login page.
  await page.goto(console_);
  assert.equal(new URL(page.url()).pathname, '/console/login');
  await checkPage(page, 'login');
  await shoot(page, '01-login');

  // A wrong admin token is refused on the page.
  await loginWithToken(page, 'not-the-admin-token');
  await page.getByRole('alert').filter({ hasText: "not the cluster's admin token" }).waitFor();

  // 1. The operator.
  await loginWithToken(page, adminToken);
  await page.getByRole('heading', { level: 1, name: 'Overview' }).waitFor();
  const cookies = await page.context().cookies();
  const sess = cookies.find((c) => c.name === 'trustd_console');
  assert.ok(sess && sess.httpOnly && sess.sameSite === 'Strict', 'session cookie is HttpOnly and SameSite=Strict');
  assert.equal(await page.evaluate(() => document.cookie), '', 'no cookie is readable by script');
  await checkPage(page, 'overview');
  await shoot(page, '02-overview-admin');
  await page.keyboard.press('Tab');
  let f = await focus(page);
  assert.equal(f.text, 'Skip to content');
  assert.notEqual(f.outline, 'none');

  await page.getByRole('link', { name: 'Cluster', exact: true }).click();
  await page.getByRole('heading', { level: 1, name: 'Cluster' }).waitFor();
  await checkPage(page, 'cluster');

  // Console users: an editor with a password, a viewer with a link.
  await page.goto(wsURL + '/users');
  await page.getByRole('heading', { level: 1, name: 'Console users' }).waitFor();
  await checkPage(page, 'users');
  await page.getByLabel('Email').fill(editorEmail);
  await page.getByLabel('Role').selectOption('editor');
  await page.getByLabel('Password').fill(editorPassword);
  await page.getByRole('button', { name: 'Add user' }).click();
  await page.getByRole('status').filter({ hasText: `${editorEmail} created as editor` }).waitFor();
  await page.getByLabel('Email').fill(viewerEmail);
  await page.getByLabel('Role').selectOption('viewer');
  await page.getByRole('button', { name: 'Add user' }).click();
  const linkText = await page.getByRole('status').filter({ hasText: 'One-time sign-in link' }).locator('code').textContent();
  assert.match(linkText, /\/console\/link\?t=/);
  await shoot(page, '03-users');
  const listed = await admin('GET', `/workspaces/${workspace}/console-users`);
  assert.ok(listed.body.console_users.some((u) => u.email === editorEmail && u.role === 'editor' && u.has_password));

  await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Audit log' }).click();
  await page.getByRole('heading', { level: 1, name: 'Audit log' }).waitFor();
  assert.ok(await page.getByRole('cell', { name: 'createConsoleUser' }).count() >= 2, 'the audit page lists the console user creations');
  await checkPage(page, 'audit');
  await shoot(page, '04-audit');
  await page.getByRole('button', { name: 'Log out' }).click();
  await page.getByRole('heading', { level: 1, name: 'Log in' }).waitFor();

  // 2. The editor, keyboard only: the email field has focus.
  await page.goto(console_ + 'login');
  assert.equal((await focus(page)).id, 'email');
  await page.keyboard.type(editorEmail);
  await page.keyboard.press('Tab');
  assert.equal((await focus(page)).id, 'password');
  await page.keyboard.type(editorPassword);
  await page.keyboard.press('Tab');
  f = await focus(page);
  assert.equal(f.text, 'Log in');
  assert.notEqual(f.outline, 'none', 'keyboard focus is visible');
  await page.keyboard.press('Enter');
  await page.getByRole('heading', { level: 1, name: 'Overview' }).waitFor();
  assert.ok(await page.getByText(`Signed in as ${editorEmail} · editor`).isVisible());
  assert.equal(await page.getByRole('link', { name: 'Cluster', exact: true }).count(), 0, 'a console user has no cluster page');

  // Create a site.
  await page.goto(wsURL);
  await page.getByRole('heading', { level: 2, name: 'Create a site' }).waitFor();
  await checkPage(page, 'workspace (editor)');
  await page.getByLabel('Name', { exact: true }).fill('Console shop');
  await page.getByLabel('Hostnames', { exact: true }).fill('shop.console.example\nwww.console.example');
  await page.getByLabel('Challenge mode', { exact: true }).selectOption('visual');
  await page.getByRole('button', { name: 'Create site' }).click();
  await page.getByRole('heading', { level: 1, name: 'Site created' }).waitFor();
  assert.match(await page.getByLabel('Secret (private)').inputValue(), /^sk_live_/);
  await shoot(page, '05-site-created');
  const sites = await admin('GET', `/workspaces/${workspace}/sites`);
  const site = sites.body.sites.find((s) => s.name === 'Console shop');
  assert.ok(site, 'the admin API lists the site the console created');
  assert.deepEqual(site.hostnames, ['shop.console.example', 'www.console.example']);

  // The dev site lists this console's host: its embed snippet and a live
  // preview of its widget, which a keyboard user can tick.
  await page.goto(wsURL);
  await page.getByText('Embed localhost', { exact: true }).click();
  const embed = page.locator('details', { has: page.getByText('Embed localhost', { exact: true }) });
  assert.match(await embed.locator('pre code').textContent(), /<div class="service-widget" data-sitekey="site_/);
  const preview = embed.locator('.trustd-cb');
  await preview.waitFor();
  await preview.focus();
  await page.keyboard.press('Space');
  await page.waitForFunction(() => [...document.querySelectorAll('details')].some((d) => d.textContent.includes('Embed localhost') &&
    (d.querySelector('input[name="service-response"]') || {}).value), null, { timeout: 15000 });
  await checkPage(page, 'workspace with a live widget preview');
  await shoot(page, '05b-site-embed-preview');

  // Edit it: hostnames and challenge mode, through the admin API's PATCH.
  await page.goto(wsURL);
  await page.getByText('Edit Console shop').click();
  await page.getByLabel('Hostnames of Console shop').fill('shop.console.example, pay.console.example');
  await page.getByLabel('Challenge mode of Console shop').selectOption('checkbox');
  await page.getByRole('button', { name: 'Save Console shop' }).click();
  await page.getByRole('heading', { level: 2, name: 'Create a site' }).waitFor();
  const edited = (await admin('GET', `/workspaces/${workspace}/sites/${site.site_id}`)).body;
  assert.deepEqual([edited.hostnames, edited.challenge_mode], [['shop.console.example', 'pay.console.example'], 'checkbox']);

  // Create a policy in observe mode with the form: one check per hour.
  const action = 'console.e2e.' + stamp;
  await page.goto(wsURL + '/policies');
  const form = page.locator('section[aria-labelledby="new-policy"]');
  await form.getByLabel('Name').fill('console-e2e');
  await form.getByLabel('Action pattern').fill(action);
  await form.getByLabel('Counted per').selectOption('workspace');
  await form.getByLabel('Capacity (tokens)').fill('1');
  await form.getByLabel('Refill amount').fill('1');
  await form.getByLabel('Refill interval (seconds)').fill('3600');
  assert.equal(await form.getByLabel('Mode').inputValue(), 'observe');
  await form.getByRole('button', { name: 'Create policy' }).click();
  await page.getByRole('status').filter({ hasText: 'Saved' }).waitFor();
  const pols = await admin('GET', `/workspaces/${workspace}/rate-limit-policies`);
  const pol = pols.body.policies.find((p) => p.name === 'console-e2e');
  assert.ok(pol && pol.mode === 'observe', 'the policy exists in observe mode');
  const card = page.locator('#policy-' + pol.policy_id);

  // Drive checks through the API: one allowed, two would have throttled.
  for (let i = 0; i < 3; i++) await check(action);
  await page.reload();
  assert.equal(await card.locator('.would-throttle').textContent(), '2');
  // The chart (uPlot, fed by the stats the page polls) draws and carries
  // the same totals.
  const chart = card.locator('figure.chart');
  await chart.locator('canvas').first().waitFor();
  await page.waitForFunction((id) => document.querySelector(`#policy-${id} figure.chart`)?.getAttribute('data-observed-would-throttle') === '2', pol.policy_id);
  await checkPage(page, 'policies observe');
  await shoot(page, '06-policy-observe');

  // One click to throttle, then the throttles.
  await card.getByRole('button', { name: 'Promote console-e2e to throttle' }).click();
  await page.locator('#policy-' + pol.policy_id).getByRole('status').filter({ hasText: 'Saved' }).waitFor();
  assert.equal(await page.locator('#policy-' + pol.policy_id + ' .mode').textContent(), 'throttle');
  assert.equal((await admin('GET', `/workspaces/${workspace}/rate-limit-policies/${pol.policy_id}`)).body.mode, 'throttle');
  // Observe mode counted in a simulated bucket; the live bucket starts
  // full, so of three checks one passes and two are refused.
  for (let i = 0; i < 3; i++) await check(action);
  await page.reload();
  // A throttle whose wait is within the policy's limit counts as
  // throttled; one whose wait (here up to an hour) is beyond it is
  // rejected: together they are the two refused checks.
  const cells = card.locator('table.stats tbody td');
  const refused = Number(await cells.nth(2).textContent()) + Number(await cells.nth(3).textContent());
  assert.equal(refused, 2, 'the promoted policy refused the two checks');
  assert.ok(Number(await cells.nth(2).textContent()) >= 1, 'at least one check was throttled');
  await page.waitForFunction((id) => {
    const fig = document.querySelector(`#policy-${id} figure.chart`);
    return fig && Number(fig.getAttribute('data-throttled')) + Number(fig.getAttribute('data-rejected')) === 2;
  }, pol.policy_id);
  // A second sample draws the line.
  await page.waitForFunction((id) => Number(document.querySelector(`#policy-${id} figure.chart`)?.getAttribute('data-points')) >= 2, pol.policy_id, { timeout: 15000 });
  await shoot(page, '07-policy-throttled');

  // Records for the module pages, made with the admin API.
  assert.equal((await admin('POST', `/workspaces/${workspace}/dependencies`, { name: 'payments' })).status, 201);
  assert.equal((await admin('POST', `/workspaces/${workspace}/concurrency-constraints`, { name: 'exports', action_pattern: 'export.*', capacity: 2 })).status, 201);

  // 3. Every module page: heading, axe-core, keyboard reach of the
  // workspace navigation, screenshots.
  const modulePages = [
    ['api-protection', 'API Protection policies'],
    ['concurrency', 'Concurrency constraints'],
    ['dependencies', 'Dependencies'],
    ['approvals', 'Agents and approvals'],
    ['webhooks', 'Webhook endpoints'],
    ['webhook-events', 'Webhook events'],
    ['trust-policies', 'Trust policies'],
    ['audit', 'Audit log'],
  ];
  for (const [slug, title] of modulePages) {
    await page.goto(wsURL + '/' + slug);
    await page.getByRole('heading', { level: 1, name: title }).waitFor();
    const current = page.getByRole('navigation', { name: 'Workspace' }).locator('a[aria-current="page"]');
    assert.equal(await current.textContent(), title);
    await current.focus();
    f = await focus(page);
    assert.notEqual(f.outline, 'none', `focus visible on ${slug}`);
    await checkPage(page, slug);
    await shoot(page, '08-' + slug);
  }
  await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Account defence' }).click();
  await page.getByRole('heading', { level: 1, name: 'Account defence' }).waitFor();
  assert.equal(await page.getByRole('cell', { name: 'sha1', exact: true }).count(), 1);
  await checkPage(page, 'account defence');
  await shoot(page, '08-account-defence');
  // The dependency's live breaker state, read from its owner.
  await page.goto(wsURL + '/dependencies');
  const dep = page.getByRole('row').filter({ hasText: 'payments' });
  assert.equal(await dep.getByRole('cell').nth(1).textContent(), 'closed');
  // The constraint's live holders: one lease taken through the public API.
  const lease = await fetch(api + '/concurrency/acquire', { method: 'POST', headers: { 'Content-Type': 'application/json', Authorization: 'Bearer ' + secret },
    body: JSON.stringify({ action: 'export.report' }) });
  assert.equal(lease.status, 200);
  await page.goto(wsURL + '/concurrency');
  const exportsRow = page.getByRole('row').filter({ hasText: 'exports' });
  assert.equal(await exportsRow.getByRole('cell').nth(3).textContent(), '2');
  assert.equal(await exportsRow.getByRole('cell').nth(4).textContent(), '1', 'one live holder');
  assert.equal(await exportsRow.getByRole('cell').nth(5).textContent(), 'workspace: 1');
  // The editor's own change is in the workspace's audit log, by name.
  await page.goto(wsURL + '/audit');
  assert.ok(await page.getByRole('cell', { name: `console:${editorEmail} (editor)` }).count() >= 3);

  // Dark and phone width.
  await page.emulateMedia({ colorScheme: 'dark' });
  await page.goto(wsURL + '/policies');
  await checkPage(page, 'policies dark');
  await shoot(page, '09-policies-dark');
  await page.setViewportSize({ width: 390, height: 844 });
  await page.goto(wsURL + '/policies');
  await checkPage(page, 'policies dark phone');
  await shoot(page, '10-policies-phone-dark');
  await page.emulateMedia({ colorScheme: 'light' });
  await page.goto(wsURL + '/dependencies');
  await checkPage(page, 'dependencies phone');
  await shoot(page, '11-dependencies-phone-light');
  await page.getByRole('button', { name: 'Log out' }).click();
  await page.getByRole('heading', { level: 1, name: 'Log in' }).waitFor();
  await page.setViewportSize({ width: 1280, height: 900 });

  // 4. The viewer's one-time link: a GET shows a button, the POST logs in.
  await page.goto(linkText);
  await checkPage(page, 'sign-in link');
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('heading', { level: 1, name: 'Overview' }).waitFor();
  await page.goto(wsURL + '/policies');
  assert.equal(await page.getByRole('button', { name: 'Create policy' }).count(), 0, 'a viewer has no create form');
  assert.equal(await page.getByRole('button', { name: /^Promote/ }).count(), 0, 'a viewer has no promotion');
  await shoot(page, '12-policies-viewer');
  await page.getByRole('button', { name: 'Log out' }).click();
  await page.goto(linkText);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('alert').filter({ hasText: 'used, expired or not valid' }).waitFor();

  assert.deepEqual(await problems(), []);
  await page.context().close();
});

// pngOf encodes a w×h RGBA image (a diagonal gradient) as a PNG.
function pngOf(w, h) {
  const raw = Buffer.alloc((w * 4 + 1) * h);
  for (let y = 0; y < h; y++) {
    raw[y * (w * 4 + 1)] = 0;
    for (let x = 0; x < w; x++) {
      const o = y * (w * 4 + 1) + 1 + x * 4;
      raw[o] = (x * 255) / w; raw[o + 1] = 88; raw[o + 2] = (y * 255) / h; raw[o + 3] = 255;
    }
  }
  const chunk = (type, data) => {
    const len = Buffer.alloc(4); len.writeUInt32BE(data.length);
    const td = Buffer.concat([Buffer.from(type, 'latin1'), data]);
    const crc = Buffer.alloc(4); crc.writeUInt32BE(crc32(td) >>> 0);
    return Buffer.concat([len, td, crc]);
  };
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(w, 0); ihdr.writeUInt32BE(h, 4); ihdr[8] = 8; ihdr[9] = 6;
  return Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), chunk('IHDR', ihdr),
    chunk('IDAT', deflateSync(raw)), chunk('IEND', Buffer.alloc(0))]);
}

async function publicAPI(path, body) {
  const res = await fetch(api + path, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', Authorization: 'Bearer ' + secret },
    body: JSON.stringify(body),
  });
  const text = await res.text();
  assert.equal(res.status, 200, `${path}: ${res.status} ${text}`);
  return JSON.parse(text);
}

// tabPage opens a workspace tab, checks its heading, its place in the
// workspace navigation, visible keyboard focus and axe-core.
async function tabPage(page, slug, title, label) {
  await page.goto(wsURL + '/' + slug);
  await page.getByRole('heading', { level: 1, name: title }).waitFor();
  const current = page.getByRole('navigation', { name: 'Workspace' }).locator('a[aria-current="page"]');
  assert.equal(await current.textContent(), label);
  await current.focus();
  assert.notEqual((await focus(page)).outline, 'none', `focus visible on ${slug}`);
  await checkPage(page, slug);
}

test('console: review queue, journeys, branding, messaging', async () => {
  const stamp = Date.now();
  const { page, problems } = await newPage(browser, { viewport: { width: 1280, height: 900 } });
  await loginWithToken(page, adminToken);
  await page.getByRole('heading', { level: 1, name: 'Overview' }).waitFor();
  // The overview's cluster-wide chart: every member's totals (one node
  // here), a rate drawn from the second sample on.
  await page.getByText('(1 of 1 members answered)').waitFor();
  await page.waitForFunction(() => document.querySelector('figure.chart[data-metrics]')?.getAttribute('data-answered') === '1/1');
  await page.waitForFunction(() => Number(document.querySelector('figure.chart[data-metrics]')?.getAttribute('data-points')) >= 1, null, { timeout: 15000 });
  assert.ok(Number(await page.locator('figure.chart[data-metrics]').getAttribute('data-requests')) > 0, 'the cluster counted requests');
  // The first test's throttled checks were 200 answers: counted as decisions.
  assert.ok(Number(await page.locator('figure.chart[data-metrics]').getAttribute('data-refused')) > 0, 'the cluster counted refusing decisions');
  await page.getByRole('cell', { name: /throttle \d+/ }).first().waitFor();
  await checkPage(page, 'overview with cluster chart');
  await shoot(page, '19-overview-cluster');

  // Journeys: define one with the form (its example definition), then edit it.
  const key = 'e2e.step.' + stamp;
  await tabPage(page, 'journeys', 'Journeys', 'Journeys');
  // Keyboard only: key, the definition as the example gives it, submit.
  await page.getByLabel('Key').focus();
  await page.keyboard.type(key);
  await page.keyboard.press('Tab');
  assert.equal((await focus(page)).id, 'nj-def');
  await page.keyboard.press('Tab');
  let jf = await focus(page);
  assert.equal(jf.text, 'Create journey');
  assert.notEqual(jf.outline, 'none');
  await page.keyboard.press('Enter');
  await page.getByRole('status').filter({ hasText: 'Saved.' }).waitFor();
  assert.equal((await admin('GET', `/workspaces/${workspace}/journeys/${key}`)).body.policy_version, 1);
  await checkPage(page, 'journey');
  const def = page.getByLabel('Definition (JSON)');
  await def.fill((await def.inputValue()).replace('Human check at sign-up', 'Human check at sign-up, edited'));
  await page.getByRole('button', { name: 'Save journey ' + key }).click();
  await page.getByRole('status').filter({ hasText: 'Saved.' }).waitFor();
  assert.equal(await page.locator('.policy-version').textContent(), '2');
  const j = (await admin('GET', `/workspaces/${workspace}/journeys/${key}`)).body;
  assert.equal(j.name, 'Human check at sign-up, edited');
  // The journeys module's own validation, shown on the page.
  await def.fill((await def.inputValue()).replace('"authorization": false', '"authorization": true'));
  await page.getByRole('button', { name: 'Save journey ' + key }).click();
  await page.getByRole('alert').filter({ hasText: 'cannot authorize an operation' }).waitFor();
  await shoot(page, '13-journey');

  // Review queue: an escalated journey opens a case; resolve it.
  const started = await publicAPI('/journeys/start', { journey_key: key, action: 'signup' });
  const esc = await publicAPI('/journeys/escalate', { session_token: started.session_token, reason_code: 'stuck', priority: 'high' });
  await tabPage(page, 'reviews', 'Identity review queue', 'Identity reviews');
  const kase = page.locator('#case-' + esc.case_reference);
  await kase.waitFor();
  // Keyboard only: the decision, a note, submit.
  await kase.getByLabel('Decision').focus();
  await page.keyboard.press('ArrowDown');
  assert.equal(await kase.getByLabel('Decision').inputValue(), 'rejected');
  await page.keyboard.press('Tab');
  await page.keyboard.type('not the account holder');
  await page.keyboard.press('Tab');
  jf = await focus(page);
  assert.equal(jf.text, 'Resolve case ' + esc.case_reference);
  assert.notEqual(jf.outline, 'none');
  await shoot(page, '14-reviews');
  await page.keyboard.press('Enter');
  await page.getByRole('status').filter({ hasText: `Case ${esc.case_reference} resolved.` }).waitFor();
  const resolved = (await admin('GET', `/workspaces/${workspace}/reviews/${esc.case_reference}`)).body;
  assert.equal(resolved.status, 'resolved');
  assert.equal(resolved.decision, 'rejected');
  assert.equal(resolved.resolved_by, 'admin (console)');
  await page.getByRole('link', { name: 'Show all cases' }).click();
  await page.locator('#case-' + esc.case_reference + ' .decision').filter({ hasText: 'rejected by admin (console)' }).waitFor();
  await checkPage(page, 'reviews (all)');

  // Branding: a profile, a logo upload (multipart), the preview loads.
  await tabPage(page, 'branding', 'Branding profiles', 'Branding');
  await page.getByLabel('Name').fill('E2E brand ' + stamp);
  await page.getByLabel('Primary colour').fill('#0a58ca');
  await page.getByRole('button', { name: 'Create profile' }).click();
  await page.getByRole('heading', { level: 1, name: 'Branding profile E2E brand ' + stamp }).waitFor();
  await page.getByLabel('Image file').setInputFiles({ name: 'logo.png', mimeType: 'image/png', buffer: pngOf(96, 48) });
  await page.getByRole('button', { name: 'Upload logo' }).click();
  await page.getByRole('status').filter({ hasText: 'Saved.' }).waitFor();
  const logo = page.getByRole('img', { name: /, 256 pixels$/ });
  await logo.waitFor();
  await page.waitForFunction(() => [...document.querySelectorAll('img.logo')].every((i) => i.complete && i.naturalWidth > 0));
  assert.equal(await logo.evaluate((i) => i.naturalWidth), 256, 'the 256 px rendition is served and decoded');
  await checkPage(page, 'branding profile');
  await shoot(page, '15-branding-profile');
  await page.goto(wsURL + '/branding');
  await page.getByRole('img', { name: 'Logo of E2E brand ' + stamp }).waitFor();
  await checkPage(page, 'branding list');

  // Messaging: what is configured, before and after a policy.
  await tabPage(page, 'messaging', 'Messaging preflight', 'Messaging preflight');
  await page.locator('.not-configured').waitFor();
  assert.equal((await admin('PUT', `/workspaces/${workspace}/messaging/policy`, { policy: { prefix_limit: 7 } })).status, 200);
  await page.reload();
  assert.equal(await page.getByRole('row').filter({ hasText: 'prefix_limit' }).getByRole('cell').nth(2).textContent(), '7');
  await checkPage(page, 'messaging');
  await shoot(page, '16-messaging');

  // Phone width, dark, on the review queue and a journey.
  await page.emulateMedia({ colorScheme: 'dark' });
  await page.setViewportSize({ width: 390, height: 844 });
  await page.goto(wsURL + '/reviews?all=1');
  await checkPage(page, 'reviews dark phone');
  await shoot(page, '17-reviews-phone-dark');
  await page.goto(wsURL + '/journeys/' + key);
  await checkPage(page, 'journey dark phone');
  await shoot(page, '18-journey-phone-dark');

  assert.deepEqual(await problems(), []);
  await page.context().close();
});
