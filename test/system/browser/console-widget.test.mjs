// The console's production login in headless Chromium: the login form
// carries trustd's own widget (its script and stylesheet from the node,
// under the console's CSP); the admin token alone is refused; ticking the
// widget's box, then logging in, works. No CSP violation or script error.
//
// test/system/console_browser_test.go (TestConsoleWidgetLoginInBrowser)
// starts a node without --dev whose console site is the dev site, and
// runs this with TRUSTD_CONSOLE and TRUSTD_ADMIN_TOKEN.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { launch, newPage, artifacts } from './lib.mjs';

const consoleURL = process.env.TRUSTD_CONSOLE;
const adminToken = process.env.TRUSTD_ADMIN_TOKEN;
if (!consoleURL || !adminToken) {
  throw new Error('set TRUSTD_CONSOLE and TRUSTD_ADMIN_TOKEN (test/system/console_browser_test.go does)');
}
const axeSource = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

let browser;
before(async () => { browser = await launch(); });
after(async () => { await browser?.close(); });

test('console: the production login is protected by the widget', async () => {
  const { page, problems } = await newPage(browser, { viewport: { width: 1280, height: 900 } });
  const res = await page.goto(consoleURL + 'login');
  assert.equal(res.headers()['referrer-policy'], 'same-origin');
  const form = page.locator('form[aria-labelledby="admin-login"]');
  const box = form.getByRole('checkbox', { name: 'Verify you are human' });
  await box.waitFor();

  // The admin token alone: refused before it is checked.
  await form.getByLabel('Admin token').fill(adminToken);
  await form.getByRole('button', { name: 'Log in with the admin token' }).click();
  await page.getByRole('alert').filter({ hasText: 'human check was missing' }).waitFor();

  await page.evaluate(axeSource);
  const result = await page.evaluate(() => window.axe.run(document, { resultTypes: ['violations'] }));
  assert.deepEqual(result.violations.map((v) => `${v.id}: ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`), [], 'axe-core violations');

  // Tick the box (the proof of work runs), then log in.
  await box.click();
  await page.waitForFunction(() => (document.querySelector('form[aria-labelledby="admin-login"] input[name="service-response"]')?.value || '').length > 20, null, { timeout: 60000 });
  assert.equal(await box.getAttribute('aria-checked'), 'true');
  await page.screenshot({ path: join(artifacts, 'console-20-login-widget.png'), fullPage: true });
  await form.getByLabel('Admin token').fill(adminToken);
  await form.getByRole('button', { name: 'Log in with the admin token' }).click();
  await page.getByRole('heading', { level: 1, name: 'Overview' }).waitFor();

  assert.deepEqual(await problems(), []);
  await page.context().close();
});
