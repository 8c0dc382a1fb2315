// The workspace console (/console/) in headless Chromium against a real
// `trustd --dev` node: log in with the admin token, create a site, watch
// an observe-mode policy's would-have-throttled count, promote it to
// throttle with one click, and log out. Every page is checked with
// axe-core (no violations), for CSP violations and script errors (none:
// the console has no script), for keyboard focus, and photographed at
// laptop and phone widths, light and dark, into the artifacts folder.
//
// systemtest/console_browser_test.go starts the node and runs this with
//   TRUSTD_API, TRUSTD_SECRET, TRUSTD_ADMIN_TOKEN, TRUSTD_WORKSPACE

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { launch, newPage, artifacts } from './lib.mjs';
import { join } from 'node:path';

const api = process.env.TRUSTD_API;
const secret = process.env.TRUSTD_SECRET;
const adminToken = process.env.TRUSTD_ADMIN_TOKEN;
const workspace = process.env.TRUSTD_WORKSPACE;
if (!api || !secret || !adminToken || !workspace) {
  throw new Error('set TRUSTD_API, TRUSTD_SECRET, TRUSTD_ADMIN_TOKEN and TRUSTD_WORKSPACE (systemtest/console_browser_test.go does)');
}
const origin = new URL(api).origin;
const console_ = origin + '/console/';
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

// checkPage runs axe-core on the page (evaluated through the DevTools
// protocol, which the page's CSP does not govern: the console itself
// never runs script) and fails on any violation.
async function checkPage(page, label) {
  await page.evaluate(axeSource);
  const result = await page.evaluate(() => window.axe.run(document, { resultTypes: ['violations'] }));
  const found = result.violations.map((v) => `${label}: ${v.id} (${v.impact}): ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`);
  assert.deepEqual(found, [], 'axe-core violations');
}

async function shoot(page, name) {
  await page.screenshot({ path: join(artifacts, 'console-' + name + '.png'), fullPage: true });
}

test('console: log in, create a site, promote an observed policy, log out', async () => {
  // An observe-mode policy with room for one check per hour, made by the
  // admin API; three checks leave two would-have-throttled.
  const action = 'console.e2e.' + Date.now();
  const created = await admin('POST', `/workspaces/${workspace}/rate-limit-policies`, {
    name: 'console-e2e', target: { type: 'workspace' }, action_pattern: action, scope: 'workspace', mode: 'observe',
    bucket: { capacity: 1, refill_amount: 1, refill_interval_seconds: 3600 },
  });
  assert.equal(created.status, 201, JSON.stringify(created.body));
  const policyID = created.body.policy_id;
  for (let i = 0; i < 3; i++) {
    const res = await fetch(api + '/rate-limit/check', {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Authorization: 'Bearer ' + secret },
      body: JSON.stringify({ action }),
    });
    assert.equal(res.status, 200, await res.text());
  }

  const { page, problems } = await newPage(browser, { viewport: { width: 1280, height: 900 } });

  // Anonymous: the console sends the browser to the login page.
  await page.goto(console_);
  assert.equal(new URL(page.url()).pathname, '/console/login');
  await checkPage(page, 'login');
  await shoot(page, '01-login');

  // Keyboard: the token field has focus; Tab reaches the button, and
  // focus is drawn.
  const focus = () => page.evaluate(() => {
    const el = document.activeElement;
    return { id: el.id, text: el.textContent, outline: getComputedStyle(el).outlineStyle, left: el.getBoundingClientRect().left };
  });
  assert.equal((await focus()).id, 'token');
  await page.keyboard.press('Tab');
  let f = await focus();
  assert.equal(f.text, 'Log in');
  assert.notEqual(f.outline, 'none', 'keyboard focus is visible');

  // A wrong token is refused on the page.
  await page.getByLabel('Admin token').fill('not-the-admin-token');
  await page.getByRole('button', { name: 'Log in' }).click();
  await page.getByRole('alert').filter({ hasText: "not the cluster's admin token" }).waitFor();
  await shoot(page, '02-login-refused');

  // The right one opens the overview.
  await page.getByLabel('Admin token').fill(adminToken);
  await page.getByRole('button', { name: 'Log in' }).click();
  await page.getByRole('heading', { level: 1, name: 'Overview' }).waitFor();
  const cookies = await page.context().cookies();
  const sess = cookies.find((c) => c.name === 'trustd_console');
  assert.ok(sess && sess.httpOnly && sess.sameSite === 'Strict', 'session cookie is HttpOnly and SameSite=Strict');
  assert.equal(await page.evaluate(() => document.cookie), '', 'no cookie is readable by script');
  await checkPage(page, 'overview');
  await shoot(page, '03-overview');
  // The first Tab of a page lands on the skip link, shown when focused.
  await page.keyboard.press('Tab');
  f = await focus();
  assert.equal(f.text, 'Skip to content');
  assert.notEqual(f.outline, 'none');
  assert.ok(f.left >= 0, 'the skip link is on screen when focused');

  // Cluster page.
  await page.getByRole('link', { name: 'Cluster', exact: true }).click();
  await page.getByRole('heading', { level: 1, name: 'Cluster' }).waitFor();
  await checkPage(page, 'cluster');
  await shoot(page, '04-cluster');

  // Workspace → create a site.
  await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Workspaces' }).click();
  await page.locator(`a[href="/console/workspaces/${workspace}"]`).click();
  await page.getByRole('heading', { level: 2, name: 'Create a site' }).waitFor();
  await checkPage(page, 'workspace');
  await page.getByLabel('Name', { exact: true }).fill('Console shop');
  await page.getByLabel('Hostnames').fill('shop.console.example\nwww.console.example');
  await page.getByLabel('Challenge mode').selectOption('visual');
  await page.getByRole('button', { name: 'Create site' }).click();
  await page.getByRole('heading', { level: 1, name: 'Site created' }).waitFor();
  const shown = await page.getByLabel('Secret (private)').inputValue();
  assert.match(shown, /^sk_live_/);
  await checkPage(page, 'site created');
  await shoot(page, '05-site-created');
  const sites = await admin('GET', `/workspaces/${workspace}/sites`);
  const site = sites.body.sites.find((s) => s.name === 'Console shop');
  assert.ok(site, 'the admin API lists the site the console created');
  assert.deepEqual(site.hostnames, ['shop.console.example', 'www.console.example']);
  assert.equal(site.challenge_mode, 'visual');

  // Policies: the observed counts, then one click to throttle.
  await page.getByRole('link', { name: 'Back to the workspace' }).click();
  await page.getByRole('link', { name: 'Rate-limit policies' }).click();
  const card = page.locator('#policy-' + policyID);
  assert.equal(await card.locator('.would-throttle').textContent(), '2');
  await checkPage(page, 'policies');
  await shoot(page, '06-policies-observe');
  await card.getByRole('button', { name: 'Promote console-e2e to throttle' }).click();
  await page.locator('#policy-' + policyID).getByRole('status').filter({ hasText: 'Saved' }).waitFor();
  assert.equal(await page.locator('#policy-' + policyID + ' .mode').textContent(), 'throttle');
  const after_ = await admin('GET', `/workspaces/${workspace}/rate-limit-policies/${policyID}`);
  assert.equal(after_.body.mode, 'throttle');
  await shoot(page, '07-policies-promoted');

  // An invalid rollout: the browser's own form validation stops it (the
  // field has min and max); with that validation switched off, the admin
  // API refuses it with its own message.
  const pct = page.locator('#policy-' + policyID).getByLabel('Enforce percentage');
  await pct.fill('150');
  assert.equal(await pct.evaluate((el) => el.validity.rangeOverflow), true);
  await pct.evaluate((el) => { el.form.noValidate = true; });
  await page.locator('#policy-' + policyID).getByRole('button', { name: 'Save console-e2e' }).click();
  await page.locator('#policy-' + policyID).getByRole('alert').filter({ hasText: 'enforce_percentage' }).waitFor();
  await shoot(page, '08-policies-refused');

  // Phone width, dark scheme.
  await page.setViewportSize({ width: 390, height: 844 });
  await page.emulateMedia({ colorScheme: 'dark' });
  await page.goto(console_ + 'workspaces/' + workspace + '/policies');
  await checkPage(page, 'policies dark narrow');
  await shoot(page, '09-policies-phone-dark');

  // Log out: the session is gone, and so is the console.
  await page.getByRole('button', { name: 'Log out' }).click();
  await page.getByRole('heading', { level: 1, name: 'Log in' }).waitFor();
  await page.goto(console_);
  assert.equal(new URL(page.url()).pathname, '/console/login');

  assert.deepEqual(await problems(), []);
  await page.context().close();
});
