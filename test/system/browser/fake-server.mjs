// A small stand-in for the challenge protocol, so the widget's behaviour
// (modes, expiry, errors, several widgets) can be tested in the browser
// with exact control over what the server answers. It checks the proof of
// work exactly as the contract defines it. The end-to-end test (e2e.mjs)
// runs the same widget against a real trustd node.

import { createServer } from 'node:http';
import { pbkdf2Sync, randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { repoRoot } from './lib.mjs';

const widgetDir = join(repoRoot, 'verify', 'widget');

// Site keys and what they do.
export const SITES = {
  'sk-checkbox': { type: 'checkbox', tokenTTL: 300 },
  'sk-score': { type: 'score_based', tokenTTL: 300 },
  'sk-visual': { type: 'visual', tokenTTL: 300 },
  'sk-short': { type: 'checkbox', tokenTTL: 2 },
  // Long enough that the silent refresh (at 80 %) has 1.2 s to solve and
  // redeem on a loaded machine before the first token expires.
  'sk-refresh': { type: 'checkbox', tokenTTL: 6 },
  'sk-short-score': { type: 'score_based', tokenTTL: 2 },
  // Sites with a branding profile (the challenge answer carries it): one
  // well-formed, one whose answer an attacker shaped (colours that try to
  // break out of a declaration, a logo on another origin).
  'sk-branded': { type: 'checkbox', tokenTTL: 300, branding: { profile_id: 'p-good', name: 'Acme', stylesheet_url: '/v1/branding/p-good/theme.css?v=1',
    colors: { primary: '#c0ffee', background: '#102030', text: '#fafafa' }, logo_url: '/v1/branding/p-good/logo?v=1&size=64' } },
  'sk-branded-hostile': { type: 'checkbox', tokenTTL: 300, branding: { profile_id: 'p-bad', name: 'Evil', stylesheet_url: '/x.css',
    colors: { primary: '#c0ffee;}body{background:red', background: 'red', text: 'url(https://evil.example/t)', accent: '#12345G' },
    logo_url: 'https://evil.example/logo.png' } },
};

// LOGO is a 1×1 PNG the fake serves as a branding logo.
const LOGO = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==', 'base64');

const POW = { algorithm: 'pbkdf2-sha256', iterations: 2000, difficulty: 6 };

export function leadingZeroBits(buf) {
  let n = 0;
  for (const b of buf) {
    if (b !== 0) return n + Math.clz32(b) - 24;
    n += 8;
  }
  return n;
}

function nonceFor(n) {
  return randomBytes(n).toString('base64');
}

// start listens on 127.0.0.1 on a free port. The returned object records
// every redeem request (redeems) and serves test pages made by page().
export async function startFakeServer() {
  const challenges = new Map();
  const pages = new Map();
  const redeems = [];
  let pageSeq = 0;
  let widgetJS = readFileSync(join(widgetDir, 'api.js'), 'utf8');
  const widgetCSS = readFileSync(join(widgetDir, 'api.css'), 'utf8');

  function json(res, status, body) {
    res.writeHead(status, { 'Content-Type': 'application/json', 'Cache-Control': 'no-store' });
    res.end(JSON.stringify(body));
  }

  function fail(res, status, code, message) {
    json(res, status, { success: false, error: code, message });
  }

  async function readJSON(req) {
    let raw = '';
    for await (const chunk of req) raw += chunk;
    return JSON.parse(raw);
  }

  function issue(res, body) {
    const site = SITES[body.sitekey];
    if (!site) return fail(res, 400, 'invalid-sitekey', 'unknown site key');
    const id = 'ch-' + randomBytes(9).toString('base64url');
    const salt = randomBytes(16).toString('base64url');
    const ch = { ...site, sitekey: body.sitekey, action: body.action, cdata: body.cdata, salt, used: false };
    challenges.set(id, ch);
    const answer = {
      challenge: id,
      challenge_type: site.type,
      pow: { ...POW, salt },
      expires_in: 120,
    };
    if (site.branding) answer.branding = site.branding;
    if (site.type === 'visual') {
      answer.puzzle = {
        image_url: '/v1/challenge/puzzle/' + id + '.svg',
        alt_text_challenge: 'Type, in digits, the result of twelve plus nine.',
      };
    }
    json(res, 200, answer);
  }

  function redeem(res, body) {
    const ch = challenges.get(body.challenge);
    redeems.push({ ...body, sitekey: ch && ch.sitekey, action: ch && ch.action, cdata: ch && ch.cdata });
    // Strict, like trustd: only these members.
    const extra = Object.keys(body).filter((k) => !['challenge', 'nonce', 'signals'].includes(k));
    if (extra.length) return fail(res, 400, 'unknown-field', 'unknown field ' + extra[0]);
    if (!ch) return fail(res, 400, 'invalid-challenge', 'unknown challenge');
    if (ch.used) return fail(res, 409, 'challenge-used', 'the challenge was already redeemed');
    ch.used = true;
    if (!/^\d+$/.test(body.nonce)) return fail(res, 400, 'invalid-field', 'nonce must be a decimal string');
    const hash = pbkdf2Sync(body.nonce, Buffer.from(ch.salt, 'base64url'), POW.iterations, 32, 'sha256');
    if (leadingZeroBits(hash) < POW.difficulty) return fail(res, 400, 'invalid-solution', 'proof of work does not meet the difficulty');
    const s = body.signals || {};
    // The image shows K7P3X; the text alternative's answer is 21.
    if (ch.type === 'visual' && !['K7P3X', '21'].includes(String(s.answer || '').trim().toUpperCase())) {
      return fail(res, 400, 'invalid-solution', 'the puzzle answer is wrong; request a new challenge');
    }
    for (const k of ['webdriver', 'headless', 'interaction', 'visible']) {
      if (typeof s[k] !== 'boolean') return fail(res, 400, 'invalid-field', 'signals.' + k + ' must be a boolean');
    }
    for (const [k, max] of [['elapsed_ms', 3600000], ['pointer_moves', 100000], ['keypresses', 100000]]) {
      if (!Number.isInteger(s[k]) || s[k] < 0 || s[k] > max) return fail(res, 400, 'invalid-field', `signals.${k}: 0 to ${max}`);
    }
    json(res, 200, { success: true, token: 'tok.' + randomBytes(24).toString('base64url'), expires_in: ch.tokenTTL });
  }

  // The same strict policy as trustd's demo page. trustedTypes false
  // leaves out Trusted Types, for third-party code that needs that.
  function html(res, nonce, body, trustedTypes) {
    res.writeHead(200, {
      'Content-Type': 'text/html; charset=utf-8',
      'Content-Security-Policy': `default-src 'none'; script-src 'nonce-${nonce}' 'strict-dynamic'; style-src 'self' 'nonce-${nonce}'; img-src 'self'; connect-src 'self'; form-action 'self'; base-uri 'none'` +
        (trustedTypes ? "; require-trusted-types-for 'script'" : ''),
    });
    res.end(body);
  }

  // Third-party front-end code the tests load as plain ES modules.
  const vendor = {
    '/vendor/svelte-put-turnstile.js': join(repoRoot, 'test', 'system', 'browser', 'node_modules', '@svelte-put', 'cloudflare-turnstile', 'src', 'turnstile.js'),
  };

  const server = createServer(async (req, res) => {
    try {
      const url = new URL(req.url, 'http://127.0.0.1');
      if (req.method === 'POST' && url.pathname === '/v1/challenge') return issue(res, await readJSON(req));
      if (req.method === 'POST' && url.pathname === '/v1/challenge/redeem') return redeem(res, await readJSON(req));
      if (url.pathname === '/v1/widget/api.js') {
        res.writeHead(200, { 'Content-Type': 'application/javascript' });
        return res.end(widgetJS);
      }
      if (url.pathname === '/v1/widget/api.css') {
        res.writeHead(200, { 'Content-Type': 'text/css' });
        return res.end(widgetCSS);
      }
      if (url.pathname.startsWith('/v1/branding/') && url.pathname.endsWith('/logo')) {
        res.writeHead(200, { 'Content-Type': 'image/png' });
        return res.end(LOGO);
      }
      if (url.pathname.startsWith('/v1/challenge/puzzle/')) {
        res.writeHead(200, { 'Content-Type': 'image/svg+xml' });
        return res.end('<svg xmlns="http://www.w3.org/2000/svg" width="200" height="70"><rect width="200" height="70" fill="#e8e4e8"/>' +
          '<text x="28" y="48" font-size="36" font-family="monospace" fill="#444" transform="rotate(-4 100 35)">K7P3X</text></svg>');
      }
      if (vendor[url.pathname]) {
        res.writeHead(200, { 'Content-Type': 'text/javascript' });
        return res.end(readFileSync(vendor[url.pathname]));
      }
      const p = pages.get(url.pathname);
      if (p) {
        const nonce = nonceFor(16);
        const widget = p.loadWidget ? `<script nonce="${nonce}" src="/v1/widget/api.js${p.query}" async></script>` : '';
        const mod = p.module ? `<script type="module" nonce="${nonce}">${p.module}</script>` : '';
        return html(res, nonce, `<!doctype html><html lang="${p.lang}"><head><meta charset="utf-8"><title>widget test</title>
<style nonce="${nonce}">body{font:15px system-ui,sans-serif;margin:16px} .slot{margin:10px 0}</style>
<script nonce="${nonce}">${p.head}</script>
${widget}</head>
<body>${p.body}${mod}</body></html>`, p.trustedTypes);
      }
      fail(res, 404, 'not-found', 'no such path');
    } catch (err) {
      fail(res, 400, 'malformed-json', String(err.message));
    }
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const origin = `http://127.0.0.1:${server.address().port}`;

  return {
    origin,
    redeems,
    // page registers a test page and returns its URL. head is inline script
    // (allowed by nonce), body the markup, query the script URL's query,
    // module an inline module script run after the body; loadWidget false
    // leaves loading the widget to the page's own code.
    page({ body, head = '', query = '', lang = 'en', module = '', loadWidget = true, trustedTypes = true }) {
      const path = '/page/' + pageSeq++;
      pages.set(path, { body, head, query, lang, module, loadWidget, trustedTypes });
      return origin + path;
    },
    close() {
      server.closeAllConnections();
      return new Promise((resolve) => server.close(resolve));
    },
  };
}
