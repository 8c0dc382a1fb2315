// The widget in headless Chromium against a fake challenge server
// (fake-server.mjs): accessibility, keyboard use, every mode and state,
// callbacks, several widgets on one page, languages, themes and the
// Turnstile-compatible API, all under a strict CSP with Trusted Types.
//
//   node --test test/system/browser/widget.test.mjs

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { launch, newPage, shot, waitState } from './lib.mjs';
import { startFakeServer } from './fake-server.mjs';

let browser;
let server;

before(async () => {
  server = await startFakeServer();
  browser = await launch();
});

after(async () => {
  await browser?.close();
  await server?.close();
});

// Records every callback the widgets make, in order.
const RECORDER = `
  window.events = [];
  function onOk(t) { events.push(['success', t]); }
  function onExpired(t) { events.push(['expired', t]); }
  function onError(c) { events.push(['error', c]); }
`;

const events = (page) => page.evaluate(() => window.events);

test('a checkbox widget is an accessible checkbox that a keyboard user can tick', async () => {
  const url = server.page({
    head: RECORDER,
    body: `<form id="f"><input id="name" name="name">
      <div id="w" class="service-widget" data-sitekey="sk-checkbox" data-action="login" data-theme="light"
        data-callback="onOk" data-error-callback="onError"></div></form>`,
  });
  const { page, problems, context } = await newPage(browser);
  await page.goto(url);
  const box = page.getByRole('checkbox', { name: 'Verify you are human' });
  await box.waitFor();
  assert.equal(await box.getAttribute('aria-checked'), 'false');
  const status = page.locator('#w [role="status"]');
  assert.equal(await status.getAttribute('aria-live'), 'polite');
  await shot(page.locator('#w .trustd'), 'fake-checkbox-idle');

  // Keyboard only: Tab from the text field reaches the box, Space ticks it.
  await page.locator('#name').focus();
  await page.keyboard.press('Tab');
  assert.equal(await page.evaluate(() => document.activeElement.getAttribute('role')), 'checkbox');
  const focusRing = await box.evaluate((el) => getComputedStyle(el).outlineStyle);
  assert.equal(focusRing, 'solid', 'the focused checkbox shows a focus ring');
  await page.keyboard.press('Space');
  await waitState(page, '#w', 'success');
  assert.equal(await page.locator('#w [aria-busy="true"]').count(), 0, 'nothing around the live region is marked busy');

  assert.equal(await box.getAttribute('aria-checked'), 'true');
  assert.equal(await status.textContent(), 'Success!');
  const token = await page.locator('#f input[name="service-response"]').inputValue();
  assert.match(token, /^tok\./);
  assert.deepEqual(await events(page), [['success', token]]);
  assert.equal(await page.evaluate(() => trustd.getResponse()), token);

  const redeem = server.redeems.at(-1);
  assert.equal(redeem.signals.interaction, true, 'a keypress on the widget counts as interaction');
  assert.equal(redeem.signals.webdriver, true, 'playwright-driven Chromium reports navigator.webdriver');
  assert.ok(redeem.signals.keypresses >= 2);
  assert.equal(redeem.signals.visible, true);
  assert.deepEqual(await problems(), []);
  await context.close();
});

test('several widgets on one page work independently', async () => {
  const url = server.page({
    head: RECORDER,
    body: `<form><div id="a" class="service-widget" data-sitekey="sk-checkbox" data-action="a" data-callback="onOk"></div></form>
           <form><div id="b" class="service-widget" data-sitekey="sk-checkbox" data-action="b" data-size="compact" data-callback="onOk"></div></form>
           <form><div id="c" class="service-widget" data-sitekey="sk-nope" data-error-callback="onError"></div></form>`,
  });
  const { page, problems, context } = await newPage(browser);
  await page.goto(url);
  await waitState(page, '#c', 'error');
  await page.locator('#a .trustd-cb').click();
  await waitState(page, '#a', 'success');
  assert.equal(await page.locator('#b .trustd').getAttribute('data-state'), 'idle', 'ticking one widget leaves the others alone');

  await page.locator('#b .trustd-label').click(); // the label text works like the box
  await waitState(page, '#b', 'success');
  const [a, b] = await page.evaluate(() => [trustd.getResponse('#a'), trustd.getResponse('#b')]);
  assert.ok(a && b && a !== b, 'each widget has its own token');
  assert.equal(await page.locator('#b .trustd').evaluate((el) => el.getBoundingClientRect().width), 150, 'compact is 150px wide');
  assert.deepEqual((await events(page)).map((e) => e[0]), ['error', 'success', 'success']);
  assert.equal((await events(page))[0][1], 'invalid-sitekey', 'the error callback gets the server\'s error code');
  assert.equal(await page.locator('#c .trustd').getAttribute('data-error'), 'invalid-sitekey');
  await shot(page.locator('#c .trustd'), 'fake-error');

  // Reset one: its token goes, the other keeps its own.
  await page.evaluate(() => trustd.reset('#a'));
  assert.equal(await page.locator('#a .trustd').getAttribute('data-state'), 'idle');
  assert.equal(await page.locator('#a input[name="service-response"]').inputValue(), '');
  assert.equal(await page.evaluate(() => trustd.getResponse('#b')), b);
  assert.deepEqual(server.redeems.slice(-2).map((r) => r.sitekey), ['sk-checkbox', 'sk-checkbox']);
  assert.deepEqual(await problems(), []);
  await context.close();
});

test('score mode verifies on load without any interaction', async () => {
  const url = server.page({
    head: RECORDER,
    body: `<form><div id="s" class="service-widget" data-sitekey="sk-score" data-action="signup" data-callback="onOk"></div></form>`,
  });
  const { page, problems, context } = await newPage(browser);
  await page.goto(url);
  await waitState(page, '#s', 'success');
  const redeem = server.redeems.at(-1);
  assert.equal(redeem.sitekey, 'sk-score');
  assert.equal(redeem.signals.interaction, false);
  assert.equal((await events(page)).length, 1);
  assert.deepEqual(await problems(), []);
  await context.close();
});

test('a visual challenge shows the puzzle with a text alternative and takes a typed answer', async () => {
  const url = server.page({
    head: RECORDER,
    body: `<form><div id="v" class="service-widget" data-sitekey="sk-visual" data-callback="onOk" data-error-callback="onError"></div></form>`,
  });
  const { page, problems, context } = await newPage(browser);
  await page.goto(url);
  await page.locator('#v .trustd-cb').click();
  await waitState(page, '#v', 'interactive');
  const img = page.getByRole('img', { name: /^Distorted characters\./ });
  await img.waitFor();
  await page.waitForFunction(() => document.querySelector('.trustd-puzzle-img').complete);
  assert.ok(await page.getByRole('group', { name: 'Type the characters in the picture.' }).isVisible());
  const alt = page.locator('#v .trustd-alternative');
  assert.equal(await alt.textContent(), 'Or answer this question: Type, in digits, the result of twelve plus nine.');
  assert.equal(await alt.locator('span').getAttribute('lang'), 'en', 'the server\'s English question is marked as English');
  assert.equal(await page.locator('#v .trustd-puzzle').getAttribute('aria-describedby'), await alt.getAttribute('id'));
  const answer = page.getByRole('textbox', { name: 'Your answer' });
  assert.ok(await answer.evaluate((el) => el === document.activeElement), 'focus moves to the answer field');
  await shot(page.locator('#v .trustd'), 'fake-visual-puzzle');

  await answer.fill('K7P3Y');
  await answer.press('Enter'); // answers the puzzle, never submits the form
  await waitState(page, '#v', 'error');
  assert.deepEqual(await events(page), [['error', 'invalid-solution']]);

  await page.locator('#v .trustd-cb').click(); // a wrong answer burns the puzzle: a new challenge
  await waitState(page, '#v', 'interactive');
  await page.getByRole('textbox', { name: 'Your answer' }).fill('21'); // the text alternative
  await page.getByRole('button', { name: 'Submit' }).click();
  await waitState(page, '#v', 'success');
  assert.equal(server.redeems.at(-1).signals.answer, '21', 'the answer travels in signals.answer');
  assert.equal(await page.locator('#v .trustd-puzzle').count(), 0, 'the puzzle closes on success');
  assert.deepEqual(await problems(), []);
  await context.close();
});

test('the language follows data-language, then the page language, else English', async () => {
  const url = server.page({
    lang: 'fr-CA',
    body: `<div id="de" class="service-widget" data-sitekey="sk-checkbox" data-language="de"></div>
           <div id="es" class="service-widget" data-sitekey="sk-checkbox" data-language="es-MX"></div>
           <div id="page" class="service-widget" data-sitekey="sk-checkbox"></div>
           <div id="xx" class="service-widget" data-sitekey="sk-checkbox" data-language="xx"></div>`,
  });
  const { page, problems, context } = await newPage(browser, { locale: 'en-US' });
  await page.goto(url);
  const name = (id) => page.locator(id + ' .trustd-cb').evaluate((el) => document.getElementById(el.getAttribute('aria-labelledby')).textContent);
  await page.locator('#xx .trustd-cb').waitFor();
  assert.equal(await name('#de'), 'Ich bin ein Mensch');
  assert.equal(await name('#es'), 'Soy humano');
  assert.equal(await name('#page'), 'Je suis un humain', '<html lang="fr-CA"> picks French');
  assert.equal(await name('#xx'), 'Je suis un humain', 'an unknown data-language falls back to the page language');
  assert.equal(await page.locator('#de .trustd').getAttribute('lang'), 'de');
  await page.locator('#de .trustd-cb').click();
  await waitState(page, '#de', 'success');
  assert.equal(await page.locator('#de [role="status"]').textContent(), 'Erfolgreich!');
  assert.deepEqual(await problems(), []);
  await context.close();
});

test('themes: dark and light are fixed, auto follows the system setting', async () => {
  const url = server.page({
    body: `<div id="d" class="service-widget" data-sitekey="sk-checkbox" data-theme="dark"></div>
           <div id="l" class="service-widget" data-sitekey="sk-checkbox" data-theme="light"></div>
           <div id="a" class="service-widget" data-sitekey="sk-checkbox"></div>`,
  });
  const { page, problems, context } = await newPage(browser, { colorScheme: 'dark' });
  await page.goto(url);
  await page.locator('#a .trustd-cb').waitFor();
  const bg = (id) => page.locator(id + ' .trustd').evaluate((el) => getComputedStyle(el).backgroundColor);
  assert.equal(await bg('#d'), 'rgb(34, 36, 39)');
  assert.equal(await bg('#l'), 'rgb(250, 250, 250)');
  assert.equal(await bg('#a'), 'rgb(34, 36, 39)', 'auto is dark when the system prefers dark');
  await page.emulateMedia({ colorScheme: 'light' });
  assert.equal(await bg('#a'), 'rgb(250, 250, 250)');
  assert.deepEqual(await problems(), []);
  await context.close();
});

test('a token is refreshed before it expires', async () => {
  const url = server.page({
    head: RECORDER,
    body: `<form><div id="r" class="service-widget" data-sitekey="sk-refresh" data-callback="onOk" data-expired-callback="onExpired"></div></form>`,
  });
  const { page, problems, context } = await newPage(browser);
  await page.goto(url);
  await page.locator('#r .trustd-cb').click();
  await waitState(page, '#r', 'success');
  // Lifetime 6 s: a fresh token arrives at 4.8 s, before the first expires.
  await page.waitForFunction(() => window.events.length >= 2, null, { timeout: 15000 });
  const ev = await events(page);
  assert.deepEqual(ev.map((e) => e[0]), ['success', 'success']);
  assert.notEqual(ev[0][1], ev[1][1]);
  assert.equal(await page.locator('#r input[name="service-response"]').inputValue(), ev[1][1]);
  assert.equal(server.redeems.at(-1).signals.interaction, true, 'the refresh carries the earlier interaction');
  assert.deepEqual(await problems(), []);
  await context.close();
});

test('with refresh-expired manual the widget marks the token expired and asks again', async () => {
  const url = server.page({
    head: RECORDER,
    body: `<form><div id="m" class="service-widget" data-sitekey="sk-short" data-refresh-expired="manual"
      data-callback="onOk" data-expired-callback="onExpired"></div></form>`,
  });
  const { page, problems, context } = await newPage(browser);
  await page.goto(url);
  await page.locator('#m .trustd-cb').click();
  await waitState(page, '#m', 'success');
  const token = await page.evaluate(() => trustd.getResponse());
  await waitState(page, '#m', 'expired', 6000);
  assert.deepEqual(await events(page), [['success', token], ['expired', token]]);
  assert.equal(await page.locator('#m input[name="service-response"]').inputValue(), '');
  assert.equal(await page.evaluate(() => trustd.isExpired()), true);
  assert.equal(await page.evaluate(() => trustd.getResponse()), undefined);
  assert.equal(await page.locator('#m [role="status"]').textContent(), 'Expired. Verify again.');
  await shot(page.locator('#m .trustd'), 'fake-expired');
  await page.locator('#m .trustd-cb').click();
  await waitState(page, '#m', 'success');
  assert.equal(await page.evaluate(() => trustd.isExpired()), false);
  assert.deepEqual(await problems(), []);
  await context.close();
});

test('the Turnstile-style API renders explicitly, executes, resets and removes', async () => {
  const url = server.page({
    query: '?render=explicit&onload=onApiLoad',
    head: RECORDER + `
      window.loaded = 0;
      function onApiLoad() { window.loaded++; }`,
    body: `<form id="f"><div id="auto" class="cf-turnstile" data-sitekey="sk-checkbox"></div><div id="x"></div><div id="y"></div></form>`,
  });
  const { page, problems, context } = await newPage(browser);
  await page.goto(url);
  await page.waitForFunction(() => window.loaded === 1);
  assert.equal(await page.evaluate(() => window.turnstile.getResponse === window.trustd.getResponse), true, 'turnstile is the trustd API in the Turnstile dialect');
  assert.equal(await page.locator('#auto .trustd').count(), 0, '?render=explicit mounts nothing by itself');

  const id = await page.evaluate(() => new Promise((resolve) => {
    turnstile.ready(() => resolve(turnstile.render('#x', {
      sitekey: 'sk-checkbox', action: 'checkout', theme: 'dark', language: 'fr',
      callback: (t) => events.push(['success', t]),
      'error-callback': (c) => events.push(['error', c]),
      'response-field-name': 'captcha',
    })));
  }));
  assert.match(id, /^trustd-widget-/);
  assert.equal(await page.evaluate((i) => turnstile.render('#x', { sitekey: 'sk-checkbox' }) === i, id), true, 'rendering twice into one element returns the same widget');
  await page.getByRole('checkbox', { name: 'Je suis un humain' }).click();
  await waitState(page, '#x', 'success');
  const token = await page.evaluate((i) => turnstile.getResponse(i), id);
  assert.equal(await page.locator('#f input[name="captcha"]').inputValue(), token);
  assert.equal(server.redeems.at(-1).signals.interaction, true);

  // execution: 'execute' waits for execute(), then runs without a click.
  const id2 = await page.evaluate(() => turnstile.render('#y', { sitekey: 'sk-checkbox', execution: 'execute', appearance: 'execute' }));
  assert.equal(await page.locator('#y .trustd').evaluate((el) => el.classList.contains('trustd-hidden')), true);
  await page.waitForTimeout(300);
  assert.equal(await page.locator('#y .trustd').getAttribute('data-state'), 'idle', 'nothing runs before execute()');
  await page.evaluate((i) => turnstile.execute(i), id2);
  await waitState(page, '#y', 'success');
  assert.equal(server.redeems.at(-1).signals.interaction, false);
  assert.equal(await page.locator('#y input[name="cf-turnstile-response"]').inputValue(), await page.evaluate((i) => turnstile.getResponse(i), id2),
    'turnstile.render defaults the hidden field to cf-turnstile-response');
  assert.equal(await page.locator('#y .trustd').evaluate((el) => el.classList.contains('trustd-hidden')), false);

  await page.evaluate((i) => turnstile.reset(i), id);
  assert.equal(await page.evaluate((i) => turnstile.getResponse(i), id), undefined);
  await page.evaluate((i) => turnstile.remove(i), id);
  assert.equal(await page.locator('#x .trustd').count(), 0);
  assert.equal(await page.evaluate((i) => turnstile.getResponse(i), id2) !== undefined, true, 'the other widget is untouched');
  assert.deepEqual(await problems(), []);
  await context.close();
});

test('a third-party Turnstile wrapper (@svelte-put/cloudflare-turnstile) drives the widget unchanged', async () => {
  // The wrapper is a plain function over a DOM node: it loads the script
  // from turnstile-script-src, calls window.turnstile.render with its
  // Turnstile options (cData included) and turns callbacks into events.
  // It sets the script's src as a string, so this page leaves Trusted
  // Types out of its CSP; 'strict-dynamic' still applies.
  const url = server.page({
    head: RECORDER,
    loadWidget: false,
    trustedTypes: false,
    body: `<form id="f"><div id="t" turnstile-sitekey="sk-checkbox" turnstile-action="wrapped" turnstile-cData="order-7"
      turnstile-theme="dark" turnstile-language="es" turnstile-response-field turnstile-response-field-name="captcha"
      turnstile-script-src="/v1/widget/api.js?render=explicit"></div></form>`,
    module: `
      import { turnstile } from '/vendor/svelte-put-turnstile.js';
      const node = document.getElementById('t');
      node.addEventListener('turnstile', (e) => events.push(['success', e.detail.token, e.detail.widgetId]));
      node.addEventListener('turnstileerror', (e) => events.push(['error', e.detail.code]));
      window.wrapped = turnstile(node);`,
  });
  const { page, problems, context } = await newPage(browser);
  await page.goto(url);
  await page.getByRole('checkbox', { name: 'Soy humano' }).click();
  await waitState(page, '#t', 'success');
  const [ev] = await events(page);
  assert.equal(ev[0], 'success');
  assert.equal(ev[2], await page.locator('#t').getAttribute('turnstile-widget-id'));
  assert.equal(await page.locator('#f input[name="captcha"]').inputValue(), ev[1]);
  assert.equal(await page.locator('#t').getAttribute('turnstile-rendered'), '');
  const redeemed = server.redeems.at(-1);
  assert.deepEqual([redeemed.sitekey, redeemed.action, redeemed.cdata], ['sk-checkbox', 'wrapped', 'order-7']);
  await shot(page.locator('#t .trustd'), 'fake-wrapper-dark-es');
  await page.evaluate(() => window.wrapped.destroy());
  assert.equal(await page.locator('#t .trustd').count(), 0, 'destroy() removes the widget');
  assert.deepEqual(await problems(), []);
  await context.close();
});

test('the hidden field takes the name the backend of each dialect reads', async () => {
  const url = server.page({
    head: RECORDER,
    body: `<form><div id="n" class="service-widget" data-sitekey="sk-checkbox"></div>
           <div id="t" class="cf-turnstile" data-sitekey="sk-checkbox"></div>
           <div id="g" class="g-recaptcha" data-sitekey="sk-checkbox"></div>
           <div id="r"></div></form>`,
  });
  const { page, problems, context } = await newPage(browser);
  await page.goto(url);
  await page.evaluate(() => grecaptcha.render('#r', { sitekey: 'sk-checkbox' }));
  for (const [sel, name] of [['#n', 'service-response'], ['#t', 'cf-turnstile-response'], ['#g', 'g-recaptcha-response'], ['#r', 'g-recaptcha-response']]) {
    await page.locator(sel + ' .trustd-cb').click();
    await waitState(page, sel, 'success');
    const token = await page.evaluate((s) => trustd.getResponse(s), sel);
    assert.equal(await page.locator(`${sel} input[name="${name}"]`).inputValue(), token, `${sel} posts its token as ${name}`);
  }
  assert.equal(await page.evaluate(() => typeof grecaptcha.getResponse('#g')), 'string', 'grecaptcha.getResponse reads a token');
  assert.deepEqual(await problems(), []);
  await context.close();
});

test('grecaptcha.render takes the container\'s id as Google documents, and turnstile.render a selector', async () => {
  const url = server.page({
    head: RECORDER,
    body: `<form><div id="box"></div><div id="sel"></div><div id="both"></div><div id="gone-ts"></div></form>`,
  });
  const { page, problems, context } = await newPage(browser);
  await page.goto(url);
  // reCAPTCHA's documented call: grecaptcha.render('box', {...}).
  const id = await page.evaluate(() => grecaptcha.render('box', { sitekey: 'sk-checkbox' }));
  assert.ok(id !== undefined && id !== null, 'render returns a widget id');
  await page.locator('#box .trustd-cb').click();
  await waitState(page, '#box', 'success');
  assert.equal(await page.locator('#box input[name="g-recaptcha-response"]').inputValue(), await page.evaluate((w) => grecaptcha.getResponse(w), id));
  // Rendering the same id again returns the same widget, not a second one.
  assert.equal(await page.evaluate(() => grecaptcha.render('box', { sitekey: 'sk-checkbox' })), id);
  assert.equal(await page.locator('#box .trustd-cb').count(), 1);
  // A selector and an element still work in every dialect; a bare id falls
  // back for Turnstile too.
  await page.evaluate(() => grecaptcha.render('#sel', { sitekey: 'sk-checkbox' }));
  await page.evaluate(() => turnstile.render('both', { sitekey: 'sk-checkbox' }));
  assert.equal(await page.locator('#sel .trustd-cb').count(), 1);
  assert.equal(await page.locator('#both input[name="cf-turnstile-response"]').count(), 1);
  // An id that names nothing still throws, saying what it looked for.
  const err = await page.evaluate(() => { try { grecaptcha.render('nothing-here', { sitekey: 'sk-checkbox' }); return ''; } catch (e) { return e.message; } });
  assert.match(err, /no element matches nothing-here/);
  assert.deepEqual(await problems(), []);
  await context.close();
});

test('Cloudflare\'s test site keys pass or block as documented, without a request', async () => {
  const url = server.page({
    head: RECORDER,
    body: `<form><div id="p" class="cf-turnstile" data-sitekey="1x00000000000000000000AA"></div>
           <div id="i" class="cf-turnstile" data-sitekey="1x00000000000000000000BB"></div>
           <div id="b" class="cf-turnstile" data-sitekey="2x00000000000000000000AB"></div></form>`,
  });
  const { page, problems, context } = await newPage(browser);
  const before = server.redeems.length;
  await page.goto(url);
  await waitState(page, '#i', 'success'); // the invisible one passes by itself
  await page.locator('#p .trustd-cb').click();
  await waitState(page, '#p', 'success');
  await page.locator('#b .trustd-cb').click();
  await waitState(page, '#b', 'error');
  assert.equal(await page.locator('#p input[name="cf-turnstile-response"]').inputValue(), 'XXXX.DUMMY.TOKEN.XXXX');
  assert.equal(await page.evaluate(() => turnstile.getResponse('#i')), 'XXXX.DUMMY.TOKEN.XXXX');
  assert.equal(server.redeems.length, before, 'test keys reach no server');
  assert.deepEqual(await problems(), []);
  await context.close();
});

test('a site\'s branding colours and logo apply, and a hostile branding answer changes nothing', async () => {
  const url = server.page({
    body: '<div class="slot" id="good"><div class="service-widget" data-sitekey="sk-branded" data-theme="light"></div></div>' +
      '<div class="slot" id="bad"><div class="service-widget" data-sitekey="sk-branded-hostile" data-theme="light"></div></div>',
  });
  const { page, problems } = await newPage(browser);
  const logos = [];
  page.on('request', (r) => { if (/logo/.test(r.url())) logos.push(r.url()); });
  await page.goto(url);
  await page.waitForSelector('#good .trustd.trustd-branded');
  await page.waitForSelector('#bad .trustd.trustd-branded');
  await page.waitForFunction(() => {
    const img = document.querySelector('#good .trustd-brand-logo');
    return img && img.complete && img.naturalWidth > 0;
  });
  const look = (sel) => page.$eval(sel + ' .trustd', (el) => {
    const s = getComputedStyle(el);
    const img = el.querySelector('.trustd-brand-logo');
    return { border: s.borderTopColor, background: s.backgroundColor, color: s.color, inline: el.getAttribute('style') || '',
      logo: img ? img.alt : null, bodyBackground: getComputedStyle(document.body).backgroundColor };
  });
  const good = await look('#good');
  assert.equal(good.border, 'rgb(192, 255, 238)');
  assert.equal(good.background, 'rgb(16, 32, 48)');
  assert.equal(good.color, 'rgb(250, 250, 250)');
  assert.equal(good.logo, 'Acme');
  // Nothing of the hostile answer reached a style: the default light look,
  // no custom property set, no logo, no request to the other origin.
  const bad = await look('#bad');
  assert.equal(bad.background, 'rgb(250, 250, 250)');
  assert.equal(bad.color, 'rgb(31, 35, 40)');
  assert.equal(bad.border, 'rgb(209, 217, 224)');
  assert.equal(bad.inline, '');
  assert.equal(bad.logo, null);
  assert.equal(bad.bodyBackground, 'rgba(0, 0, 0, 0)');
  assert.deepEqual(logos.filter((u) => !u.startsWith(server.origin)), []);
  await shot(page.locator('#good .trustd'), 'widget-branded');
  assert.deepEqual(await problems(), []);
});

test('the script never uses eval, new Function, inline styles or HTML strings', async () => {
  const { readFile } = await import('node:fs/promises');
  const { join } = await import('node:path');
  const { repoRoot } = await import('./lib.mjs');
  const src = await readFile(join(repoRoot, 'verify', 'widget', 'api.js'), 'utf8');
  for (const banned of [/\beval\s*\(/, /new\s+Function\b/, /\.innerHTML\b/, /\.outerHTML\b/, /insertAdjacentHTML/, /document\.write/, /\.style\.(?!setProperty)\w+\s*=/, /setAttribute\(\s*'style'/]) {
    assert.doesNotMatch(src, banned);
  }
});
