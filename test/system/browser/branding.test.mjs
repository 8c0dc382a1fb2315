// A site's branding profile in headless Chromium: the widget on a customer
// page with a strict CSP, the hosted identity page and a journey's person
// page show the profile's colours (computed styles) and its logo (loaded,
// alt text = the profile's name), without any CSP violation or script
// error. test/system/branding_browser_test.go starts an in-process dev node
// whose site names the profile (#c0ffee primary, #102030 background,
// #fafafa text, a logo) and runs this with
//   TRUSTD_API           the node's API base, e.g. http://127.0.0.1:41234/v1
//   TRUSTD_SITEKEY       the dev site's key, TRUSTD_SECRET its secret
//   TRUSTD_CREDENTIAL    a credential with identity.verify
//   TRUSTD_PROFILE_NAME  the profile's name

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { launch, newPage, shot, waitState } from './lib.mjs';

const api = process.env.TRUSTD_API;
const sitekey = process.env.TRUSTD_SITEKEY;
const secret = process.env.TRUSTD_SECRET;
const credential = process.env.TRUSTD_CREDENTIAL;
const profileName = process.env.TRUSTD_PROFILE_NAME;
if (!api || !sitekey || !secret || !credential || !profileName) {
  throw new Error('set TRUSTD_API, TRUSTD_SITEKEY, TRUSTD_SECRET, TRUSTD_CREDENTIAL and TRUSTD_PROFILE_NAME (test/system/branding_browser_test.go does)');
}
const origin = new URL(api).origin;
const PRIMARY = 'rgb(192, 255, 238)';
const BACKGROUND = 'rgb(16, 32, 48)';
const TEXT = 'rgb(250, 250, 250)';

let browser;
before(async () => { browser = await launch(); });
after(async () => { await browser?.close(); });

// logo waits for the branded logo in page and returns what the browser
// made of it.
async function logo(page, selector) {
  await page.waitForFunction((sel) => {
    const img = document.querySelector(sel);
    return img && img.complete && img.naturalWidth > 0;
  }, selector, { timeout: 15000 });
  return page.$eval(selector, (img) => ({ alt: img.alt, width: img.naturalWidth, src: img.src }));
}

test('the widget shows the site profile under a strict CSP', async () => {
  const { page, problems } = await newPage(browser);
  // The customer's page, served by a real loopback server at a host the
  // dev site allows (127.0.0.1; a page fulfilled by the test itself would
  // be refused loopback access by Chromium), loading the widget from
  // trustd at localhost (another origin), with a CSP that allows only the
  // nonce'd script and trustd's origin: no 'unsafe-inline' anywhere.
  const widgetOrigin = origin.replace('127.0.0.1', 'localhost');
  const csp = `default-src 'none'; script-src 'nonce-n0nce' 'strict-dynamic'; style-src ${widgetOrigin}; img-src ${widgetOrigin}; connect-src ${widgetOrigin}; base-uri 'none'`;
  const shop = createServer((req, res) => {
    res.writeHead(200, { 'Content-Type': 'text/html; charset=utf-8', 'Content-Security-Policy': csp });
    res.end(`<!doctype html><html lang="en"><head><title>shop</title>
<script nonce="n0nce" src="${widgetOrigin}/v1/widget/api.js" async defer></script></head>
<body><form><div id="w" class="service-widget" data-sitekey="${sitekey}" data-action="login" data-theme="light"></div></form></body></html>`);
  });
  await new Promise((resolve) => shop.listen(0, '127.0.0.1', resolve));
  after(() => shop.close());
  await page.goto(`http://127.0.0.1:${shop.address().port}/login`);
  try {
    await page.waitForSelector('#w .trustd.trustd-branded', { timeout: 15000 });
  } catch (e) {
    const html = await page.locator('#w').innerHTML().catch(() => '');
    throw new Error(e.message + '\nwidget: ' + html + '\nproblems: ' + JSON.stringify(await problems()));
  }
  const root = page.locator('#w .trustd');
  const style = await root.evaluate((el) => {
    const s = getComputedStyle(el);
    return { border: s.borderTopColor, background: s.backgroundColor, color: s.color, primary: s.getPropertyValue('--trustd-brand-primary').trim() };
  });
  assert.deepEqual(style, { border: PRIMARY, background: BACKGROUND, color: TEXT, primary: '#c0ffee' });
  const img = await logo(page, '#w .trustd-brand-logo');
  assert.equal(img.alt, profileName);
  assert.ok(img.src.startsWith(widgetOrigin + '/v1/branding/') && img.src.includes('size=64'), img.src);
  // branding changes nothing of the widget's work
  await page.locator('#w .trustd-cb').click();
  await waitState(page, '#w', 'success');
  await shot(root, 'branding-widget');
  assert.deepEqual(await problems(), []);
});

test('the hosted identity page shows the profile of the session site', async () => {
  const res = await fetch(api + '/identity/hosted/session', {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', Authorization: 'Bearer ' + credential },
    body: JSON.stringify({ subject_id: 'user-7', action: 'open_account', country: 'UTO', document_type: 'passport',
      assurance_level: 'document_only', consent_accepted: true, consent_reference: 'consent-1', return_url: 'http://localhost:9/done', theme: 'dark' }),
  });
  assert.equal(res.status, 201, await res.clone().text());
  const s = await res.json();
  const { page, problems } = await newPage(browser);
  await page.goto(s.url);
  await page.waitForSelector('#doc:not([hidden])', { timeout: 15000 });
  const style = await page.evaluate(() => ({
    body: getComputedStyle(document.body).backgroundColor,
    text: getComputedStyle(document.body).color,
    button: getComputedStyle(document.getElementById('doc-camera')).backgroundColor,
  }));
  // the profile's colours win over the dark theme's
  assert.deepEqual(style, { body: BACKGROUND, text: TEXT, button: PRIMARY });
  const img = await logo(page, 'img.brand-logo');
  assert.equal(img.alt, profileName);
  await shot(page.locator('main'), 'branding-hosted');
  assert.deepEqual(await problems(), []);
});

test('the journey person page shows the profile of the starting site', async () => {
  const res = await fetch(api + '/journeys/start', {
    method: 'POST', headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ secret, journey_key: 'signin' }),
  });
  assert.equal(res.status, 200, await res.clone().text());
  const st = await res.json();
  const { page, problems } = await newPage(browser);
  await page.goto(st.endpoint);
  await page.waitForSelector('body.branded', { timeout: 15000 });
  const img = await logo(page, 'img.brand-logo');
  assert.equal(img.alt, profileName);
  const style = await page.evaluate(() => ({
    body: getComputedStyle(document.body).backgroundColor,
    title: getComputedStyle(document.getElementById('title')).color,
    button: getComputedStyle(document.getElementById('go')).backgroundColor,
  }));
  assert.deepEqual(style, { body: BACKGROUND, title: TEXT, button: PRIMARY });
  assert.equal(await page.locator('#title').textContent(), 'Sign in');
  await shot(page.locator('main'), 'branding-journey');
  assert.deepEqual(await problems(), []);
});
