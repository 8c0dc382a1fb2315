// Drives the trustd widget in Chromium for the attack benchmark
// (test/bench/cmd/attack): MODE=scripted loads the page and takes the token as
// fast as it comes, in headless Chromium; MODE=human moves the mouse along
// curves, pauses as a person would and clicks, in a headed Chromium (run
// it under xvfb-run). Prints one token per line. It serves its own page on
// 127.0.0.1 (the site allows that host) that mounts the widget with SITEKEY.
import http from 'node:http';
import { launch } from './lib.mjs';

const api = process.env.API;
const sitekey = process.env.SITEKEY;
const n = Number(process.env.N || 20);
const mode = process.env.MODE || 'scripted';

const page = `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>shop</title>
<script src="${api}/v1/widget/api.js" async defer></script></head>
<body><main><h1>Checkout</h1><p>Some text a person reads before paying.</p>
<form><div class="service-widget" data-sitekey="${sitekey}" data-action="login"></div><button type="submit">Pay</button></form></main></body></html>`;
const server = http.createServer((req, res) => { res.setHeader('Content-Type', 'text/html'); res.end(page); });
await new Promise((r) => server.listen(0, '127.0.0.1', r));
const url = `http://127.0.0.1:${server.address().port}/`;

// The human run stands for a person's own browser, which carries no
// automation switch: it is launched without --enable-automation (so
// navigator.webdriver is false, as for a person). The scripted run keeps
// what a script gets by default.
const browser = await launch([], {
  headless: mode !== 'human',
  ignoreDefaultArgs: mode === 'human' ? ['--enable-automation'] : [],
  args: [...(mode === 'human' ? ['--disable-blink-features=AutomationControlled'] : []), '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
});
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const rand = (a, b) => a + Math.random() * (b - a);

for (let i = 0; i < n; i++) {
  const context = await browser.newContext({ viewport: { width: 1200, height: 800 } });
  const p = await context.newPage();
  await p.goto(url);
  if (mode === 'human') {
    // Read, wander, then head for the widget along a curve.
    let x = rand(100, 1000), y = rand(100, 600);
    await p.mouse.move(x, y);
    for (let s = 0; s < 6; s++) {
      const tx = rand(50, 1100), ty = rand(50, 700);
      const steps = Math.round(rand(12, 30));
      for (let k = 1; k <= steps; k++) {
        const t = k / steps, e = t * t * (3 - 2 * t);
        await p.mouse.move(x + (tx - x) * e + rand(-2, 2), y + (ty - y) * e + rand(-2, 2));
        await sleep(rand(8, 25));
      }
      x = tx; y = ty;
      await sleep(rand(150, 600));
    }
    await p.keyboard.press('Tab');
    await sleep(rand(300, 900));
  }
  const handle = await p.waitForFunction(() => window.trustd && trustd.getResponse('.service-widget'), null, { timeout: 120000 });
  console.log(await handle.jsonValue());
  await context.close();
  if (mode === 'human') {
    await sleep(rand(3500, 5000)); // a person does not verify ten times a minute
  }
}
await browser.close();
server.close();
