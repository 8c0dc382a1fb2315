// Shared helpers of the browser tests: one way to launch Debian's Chromium
// through playwright-core, a page that records every script error and CSP
// violation, and the artifacts folder for screenshots.

import { mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

const here = dirname(fileURLToPath(import.meta.url));

export const repoRoot = join(here, '..', '..', '..');

// artifacts is where screenshots go (gitignored): TRUSTD_ARTIFACTS or
// test/system/artifacts.
export const artifacts = process.env.TRUSTD_ARTIFACTS || join(repoRoot, 'test', 'system', 'artifacts');
mkdirSync(artifacts, { recursive: true });

export const chromiumPath = process.env.CHROMIUM_PATH || '/usr/bin/chromium';

const baseArgs = [
  '--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync',
];

// launch starts Debian's Chromium with the shared switches plus extraArgs
// (options go to playwright as they are). A start that dies before the
// browser answers (on a busy 2-core CI machine the zygote's fork can fail
// with "Zygote could not fork") is retried twice after a short pause; a
// third failure is the test's failure.
export async function launch(extraArgs = [], options = {}) {
  const args = [...(options.args || baseArgs), ...extraArgs];
  let last;
  for (let attempt = 1; attempt <= 3; attempt++) {
    try {
      return await chromium.launch({ executablePath: chromiumPath, ...options, args });
    } catch (err) {
      last = err;
      if (attempt < 3) {
        console.error(`chromium did not start (attempt ${attempt}): ${String(err.message).split('\n')[0]}`);
        await new Promise((r) => setTimeout(r, 1000 * attempt));
      }
    }
  }
  throw last;
}

// newPage opens a page in a fresh context and records what went wrong in
// it: uncaught errors, console errors and CSP violations. problems() lists
// them; a test ends with assert.deepEqual(await problems(), []).
export async function newPage(browser, options = {}) {
  const context = await browser.newContext({ viewport: { width: 720, height: 560 }, ...options });
  const page = await context.newPage();
  const errors = [];
  page.on('pageerror', (err) => errors.push('pageerror: ' + err.message));
  page.on('console', (msg) => {
    // Failed API calls that a test provokes on purpose are logged by the
    // browser as "Failed to load resource"; those are not widget bugs.
    if (msg.type() === 'error' && !/Failed to load resource/.test(msg.text())) {
      errors.push('console: ' + msg.text());
    }
  });
  await page.addInitScript(() => {
    window.__csp = [];
    document.addEventListener('securitypolicyviolation', (e) => {
      window.__csp.push(e.violatedDirective + ' blocked ' + (e.blockedURI || 'inline'));
    });
  });
  const problems = async () => {
    const csp = await page.evaluate(() => window.__csp || []).catch(() => []);
    return [...errors, ...csp.map((v) => 'csp: ' + v)];
  };
  return { context, page, problems };
}

// shot saves a screenshot of one element into the artifacts folder and
// returns its path.
export async function shot(locator, name) {
  const path = join(artifacts, name + '.png');
  await locator.screenshot({ path, animations: 'allow' });
  return path;
}

// waitState waits until the widget root inside container has data-state
// want. A widget that lands in the error state instead fails at once, with
// the error code the server (or the widget) gave.
export async function waitState(page, container, want, timeout = 20000) {
  const handle = await page.waitForFunction(
    ([sel, st]) => {
      const el = document.querySelector(sel + ' .trustd');
      const now = el && el.getAttribute('data-state');
      return (now === st || (now === 'error' && st !== 'error')) && now;
    },
    [container, want],
    { timeout },
  );
  const got = await handle.jsonValue();
  if (got !== want) {
    const code = await page.locator(container + ' .trustd').getAttribute('data-error');
    throw new Error(`widget ${container} went to "${got}" (error code ${code}) while waiting for "${want}"`);
  }
}
