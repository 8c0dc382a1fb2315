/*!
 * trustd human-verification widget, served by trustd at /v1/widget/api.js.
 *
 * Mounts on every <div class="service-widget" data-sitekey="…"> and offers
 * an explicit API as window.trustd (and window.turnstile when that name is
 * free). No dependencies and CSP-friendly: no eval, no inline styles, no
 * innerHTML (so it also runs under Trusted Types); its look comes from
 * /v1/widget/api.css, which it loads with the nonce of its own <script>.
 *
 * Protocol: POST {base}/challenge gives a proof-of-work challenge
 * (PBKDF2-SHA-256, solved here with WebCrypto) and a mode; POST
 * {base}/challenge/redeem trades the solution for a response token, which
 * goes into a hidden input named service-response and is refreshed at 80 %
 * of its lifetime.
 */
(function (win, doc) {
  'use strict';

  if (win.trustd && win.trustd.widgetVersion) {
    return; // the script was included twice: keep the first instance
  }

  var WIDGET_VERSION = '1';
  var CSS_VERSION = '__TRUSTD_CSS_VERSION__';
  var AUTO_SELECTOR = '.service-widget, .cf-turnstile, .g-recaptcha';

  // Default names of the hidden response field, per dialect: backends
  // written for Turnstile read cf-turnstile-response, those written for
  // reCAPTCHA read g-recaptcha-response; the native name is the spec's.
  var FIELD_NAMES = { native: 'service-response', turnstile: 'cf-turnstile-response', recaptcha: 'g-recaptcha-response' };

  // dialectOf names the dialect a container was written for.
  function dialectOf(el, given) {
    if (given) {
      return given;
    }
    if (el.classList.contains('cf-turnstile')) {
      return 'turnstile';
    }
    if (el.classList.contains('g-recaptcha')) {
      return 'recaptcha';
    }
    return 'native';
  }
  var REFRESH_AT = 0.8;
  var REQUEST_TIMEOUT_MS = 15000;
  var EXPIRY_MARGIN_MS = 2000;
  var MAX_DIFFICULTY = 32;
  var MAX_ITERATIONS = 10000000;
  var MAX_ELAPSED_MS = 3600000;
  var MAX_COUNT = 100000;

  // ---- where the script came from -------------------------------------

  var script = doc.currentScript || findOwnScript();
  var scriptURL = new URL(script && script.src ? script.src : '/v1/widget/api.js', win.location.href);
  // /v1/widget/api.js -> /v1, the legacy /widget/api.js -> the origin.
  var apiBase = scriptURL.origin + scriptURL.pathname.replace(/\/widget\/api\.js$/, '');
  var scriptParams = scriptURL.searchParams;
  var nonce = script ? script.nonce || script.getAttribute('nonce') || '' : '';

  function findOwnScript() {
    var all = doc.getElementsByTagName('script');
    for (var i = all.length - 1; i >= 0; i--) {
      if (/\/widget\/api\.js(\?|$)/.test(all[i].src)) {
        return all[i];
      }
    }
    return null;
  }

  // ---- languages ------------------------------------------------------

  var MESSAGES = {
    en: {
      label: 'Verify you are human',
      verifying: 'Verifying…',
      success: 'Success!',
      expired: 'Expired. Verify again.',
      error: 'Error. Try again.',
      unsupported: 'This browser cannot verify.',
      interactive: 'Solve the puzzle below.',
      puzzlePrompt: 'Type the characters in the picture.',
      puzzleImage: 'Distorted characters. If you cannot read them, answer the text question instead.',
      puzzleAlternative: 'Or answer this question:',
      puzzleAnswer: 'Your answer',
      puzzleSubmit: 'Submit',
      brandBy: 'Protected by'
    },
    de: {
      label: 'Ich bin ein Mensch',
      verifying: 'Wird überprüft…',
      success: 'Erfolgreich!',
      expired: 'Abgelaufen. Erneut bestätigen.',
      error: 'Fehler. Erneut versuchen.',
      unsupported: 'Dieser Browser kann nicht prüfen.',
      interactive: 'Lösen Sie das Rätsel unten.',
      puzzlePrompt: 'Geben Sie die Zeichen im Bild ein.',
      puzzleImage: 'Verzerrte Zeichen. Wenn Sie sie nicht lesen können, beantworten Sie stattdessen die Textfrage.',
      puzzleAlternative: 'Oder beantworten Sie diese Frage:',
      puzzleAnswer: 'Ihre Antwort',
      puzzleSubmit: 'Senden',
      brandBy: 'Geschützt durch'
    },
    fr: {
      label: 'Je suis un humain',
      verifying: 'Vérification…',
      success: 'Réussi !',
      expired: 'Expiré. Vérifiez à nouveau.',
      error: 'Erreur. Réessayez.',
      unsupported: 'Ce navigateur ne peut pas vérifier.',
      interactive: 'Résolvez l’énigme ci-dessous.',
      puzzlePrompt: 'Saisissez les caractères de l’image.',
      puzzleImage: 'Caractères déformés. Si vous ne pouvez pas les lire, répondez plutôt à la question écrite.',
      puzzleAlternative: 'Ou répondez à cette question :',
      puzzleAnswer: 'Votre réponse',
      puzzleSubmit: 'Envoyer',
      brandBy: 'Protégé par'
    },
    es: {
      label: 'Soy humano',
      verifying: 'Verificando…',
      success: '¡Listo!',
      expired: 'Caducado. Verifique de nuevo.',
      error: 'Error. Inténtelo de nuevo.',
      unsupported: 'Este navegador no puede verificar.',
      interactive: 'Resuelva el acertijo de abajo.',
      puzzlePrompt: 'Escriba los caracteres de la imagen.',
      puzzleImage: 'Caracteres distorsionados. Si no puede leerlos, responda a la pregunta de texto.',
      puzzleAlternative: 'O responda a esta pregunta:',
      puzzleAnswer: 'Su respuesta',
      puzzleSubmit: 'Enviar',
      brandBy: 'Protegido por'
    }
  };

  // pickLanguage resolves data-language (or "auto": the page's <html lang>,
  // then the browser's) to a language we have, falling back to English.
  function pickLanguage(wanted) {
    var candidates = [];
    if (wanted && wanted !== 'auto') {
      candidates.push(wanted);
    }
    candidates.push(doc.documentElement.lang || '');
    candidates = candidates.concat(navigator.languages || [navigator.language || '']);
    for (var i = 0; i < candidates.length; i++) {
      var tag = String(candidates[i] || '').toLowerCase();
      if (MESSAGES[tag]) {
        return tag;
      }
      var primary = tag.split('-')[0];
      if (MESSAGES[primary]) {
        return primary;
      }
    }
    return 'en';
  }

  // ---- options --------------------------------------------------------

  var OPTIONS = [
    'sitekey', 'action', 'cdata', 'theme', 'size', 'language', 'tabindex',
    'callback', 'expired-callback', 'error-callback', 'timeout-callback',
    'unsupported-callback', 'before-interactive-callback', 'after-interactive-callback',
    'refresh-expired', 'execution', 'appearance', 'response-field', 'response-field-name'
  ];

  // Other spellings wrappers use (Turnstile documents cData).
  var ALIASES = { cdata: 'cData' };

  function camel(name) {
    return ALIASES[name] || name.replace(/-([a-z])/g, function (_, c) { return c.toUpperCase(); });
  }

  function oneOf(value, allowed, fallback) {
    return allowed.indexOf(value) >= 0 ? value : fallback;
  }

  // readOptions merges explicit options (kebab-case as Turnstile names them,
  // or camelCase) over the container's data-* attributes.
  function readOptions(el, given, dialect) {
    var o = {};
    given = given || {};
    OPTIONS.forEach(function (name) {
      var v = given[name] !== undefined ? given[name] : given[camel(name)];
      if (v === undefined && el.hasAttribute('data-' + name)) {
        v = el.getAttribute('data-' + name);
      }
      o[name] = v;
    });
    if (typeof o.sitekey !== 'string' || o.sitekey === '') {
      throw new TypeError('trustd: a sitekey is required (data-sitekey or the sitekey option)');
    }
    o.action = o.action == null ? '' : String(o.action);
    o.cdata = o.cdata == null ? '' : String(o.cdata);
    o.theme = oneOf(o.theme, ['light', 'dark', 'auto'], 'auto');
    o.size = oneOf(o.size, ['normal', 'compact', 'flexible', 'invisible'], 'normal');
    o['refresh-expired'] = oneOf(o['refresh-expired'], ['auto', 'manual', 'never'], 'auto');
    o.execution = oneOf(o.execution, ['render', 'execute'], 'render');
    o.appearance = oneOf(o.appearance, ['always', 'execute', 'interaction-only'], 'always');
    o['response-field'] = !(o['response-field'] === false || o['response-field'] === 'false');
    o['response-field-name'] = o['response-field-name'] ? String(o['response-field-name']) : FIELD_NAMES[dialectOf(el, dialect)];
    o.tabindex = o.tabindex == null || isNaN(Number(o.tabindex)) ? 0 : Number(o.tabindex);
    return o;
  }

  // callback runs an option that is a function or the name of a global one.
  function callback(fn, arg) {
    if (typeof fn === 'string' && fn) {
      fn = win[fn];
    }
    if (typeof fn !== 'function') {
      return undefined;
    }
    try {
      return fn(arg);
    } catch (err) {
      setTimeout(function () { throw err; }); // report, but never break the widget
      return undefined;
    }
  }

  // ---- errors and requests ------------------------------------------------

  function widgetError(code, message) {
    var err = new Error(message || code);
    err.code = code;
    return err;
  }

  // postJSON sends body to the API and returns the decoded answer; every
  // failure becomes an error with a stable code (the server's when it sent one).
  function postJSON(path, body) {
    var ctrl = typeof AbortController === 'function' ? new AbortController() : null;
    var timer = setTimeout(function () { if (ctrl) { ctrl.abort(); } }, REQUEST_TIMEOUT_MS);
    return fetch(apiBase + path, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify(body),
      credentials: 'omit',
      cache: 'no-store',
      signal: ctrl ? ctrl.signal : undefined
    }).then(function (res) {
      return res.json().catch(function () { return null; }).then(function (data) {
        if (!res.ok || !data || typeof data !== 'object' || data.success === false) {
          var code = data && typeof data.error === 'string' ? data.error : 'http-' + res.status;
          throw widgetError(code, data && data.message);
        }
        return data;
      });
    }, function (err) {
      throw widgetError(err && err.name === 'AbortError' ? 'timeout' : 'network-error', String(err && err.message));
    }).finally(function () {
      clearTimeout(timer);
    });
  }

  // ---- proof of work ------------------------------------------------------

  function supported() {
    return !!(win.crypto && win.crypto.subtle && win.TextEncoder && win.fetch && win.Promise);
  }

  function base64url(s) {
    if (typeof s !== 'string' || !/^[A-Za-z0-9_-]*$/.test(s)) {
      throw widgetError('invalid-challenge', 'pow.salt is not base64url');
    }
    var b64 = s.replace(/-/g, '+').replace(/_/g, '/');
    while (b64.length % 4) {
      b64 += '=';
    }
    var bin = atob(b64);
    var out = new Uint8Array(bin.length);
    for (var i = 0; i < bin.length; i++) {
      out[i] = bin.charCodeAt(i);
    }
    return out;
  }

  function leadingZeroBits(bytes) {
    var n = 0;
    for (var i = 0; i < bytes.length; i++) {
      if (bytes[i] !== 0) {
        return n + Math.clz32(bytes[i]) - 24;
      }
      n += 8;
    }
    return n;
  }

  // solve finds the smallest n whose PBKDF2-SHA-256(password = decimal n,
  // salt, iterations) has at least difficulty leading zero bits. Candidates
  // run in concurrent batches (WebCrypto works off the main thread); alive()
  // stops the search when the widget is reset or removed, deadline when the
  // challenge runs out.
  function solve(pow, alive, deadline) {
    if (!pow || pow.algorithm !== 'pbkdf2-sha256') {
      return Promise.reject(widgetError('unsupported-algorithm', 'unknown proof-of-work algorithm'));
    }
    var iterations = pow.iterations;
    var difficulty = pow.difficulty;
    if (!Number.isInteger(iterations) || iterations < 1 || iterations > MAX_ITERATIONS ||
        !Number.isInteger(difficulty) || difficulty < 0 || difficulty > MAX_DIFFICULTY) {
      return Promise.reject(widgetError('invalid-challenge', 'proof-of-work parameters out of range'));
    }
    var salt;
    try {
      salt = base64url(pow.salt);
    } catch (err) {
      return Promise.reject(err.code ? err : widgetError('invalid-challenge', 'pow.salt is not base64url'));
    }
    var subtle = win.crypto.subtle;
    var encoder = new TextEncoder();
    var batch = Math.min(16, Math.max(4, 2 * (navigator.hardwareConcurrency || 2)));
    // A search 64 times longer than expected has odds below e^-64.
    var limit = 64 * Math.pow(2, difficulty) + batch;
    var params = { name: 'PBKDF2', hash: 'SHA-256', salt: salt, iterations: iterations };

    function attempt(n) {
      return subtle.importKey('raw', encoder.encode(String(n)), 'PBKDF2', false, ['deriveBits'])
        .then(function (key) { return subtle.deriveBits(params, key, 256); });
    }

    function from(start) {
      if (!alive()) {
        return Promise.reject(widgetError('cancelled'));
      }
      if (now() >= deadline) {
        return Promise.reject(widgetError('challenge-expired', 'the challenge expired while being solved'));
      }
      if (start > limit) {
        return Promise.reject(widgetError('pow-failed', 'no solution found'));
      }
      var tries = [];
      for (var i = 0; i < batch; i++) {
        tries.push(attempt(start + i));
      }
      return Promise.all(tries).then(function (hashes) {
        for (var i = 0; i < hashes.length; i++) {
          if (leadingZeroBits(new Uint8Array(hashes[i])) >= difficulty) {
            return start + i;
          }
        }
        return from(start + batch);
      });
    }
    return from(0);
  }

  // ---- behaviour signals ----------------------------------------------------

  var counters = { pointerMoves: 0, keypresses: 0 };
  doc.addEventListener('pointermove', function () { counters.pointerMoves++; }, { capture: true, passive: true });
  doc.addEventListener('keydown', function () { counters.keypresses++; }, { capture: true, passive: true });

  function now() {
    return Date.now();
  }

  // ---- stylesheet -----------------------------------------------------------

  var cssReady = new Promise(function (resolve) {
    var links = doc.querySelectorAll('link[rel~="stylesheet"]');
    for (var i = 0; i < links.length; i++) {
      if (/\/widget\/api\.css(\?|$)/.test(links[i].href)) {
        resolve(); // the page included it itself
        return;
      }
    }
    var link = doc.createElement('link');
    link.rel = 'stylesheet';
    link.href = apiBase + '/widget/api.css?v=' + CSS_VERSION;
    link.setAttribute('data-trustd', '');
    if (nonce) {
      link.nonce = nonce;
    }
    link.addEventListener('load', function () { resolve(); });
    link.addEventListener('error', function () { resolve(); });
    (doc.head || doc.documentElement).appendChild(link);
  });

  // ---- DOM helpers ------------------------------------------------------------

  function h(tag, attrs, children) {
    var el = doc.createElement(tag);
    Object.keys(attrs || {}).forEach(function (k) {
      if (attrs[k] !== null && attrs[k] !== undefined) {
        el.setAttribute(k, attrs[k]);
      }
    });
    (children || []).forEach(function (c) {
      el.appendChild(typeof c === 'string' ? doc.createTextNode(c) : c);
    });
    return el;
  }

  // ---- the widget -------------------------------------------------------------

  var widgets = [];
  var seq = 0;

  function Widget(container, options) {
    this.id = 'trustd-widget-' + seq++;
    this.container = container;
    this.o = options;
    this.lang = pickLanguage(options.language);
    this.t = MESSAGES[this.lang];
    this.created = now();
    this.state = 'idle';
    this.mode = '';
    this.run = null;
    this.token = null;
    this.timers = [];
    this.build();
    if (!supported()) {
      this.fail(widgetError('unsupported-browser'), this.t.unsupported);
      callback(this.o['unsupported-callback']);
      return;
    }
    if (this.o.execution === 'render') {
      this.prepare();
    }
  }

  Widget.prototype.build = function () {
    var id = this.id;
    var t = this.t;
    var self = this;
    this.box = h('button', {
      type: 'button', 'class': 'trustd-cb', role: 'checkbox', 'aria-checked': 'false',
      'aria-labelledby': id + '-label', 'aria-describedby': id + '-status', tabindex: String(this.o.tabindex)
    }, [h('span', { 'class': 'trustd-mark', 'aria-hidden': 'true' })]);
    this.label = h('span', { 'class': 'trustd-label', id: id + '-label' }, [t.label]);
    this.status = h('span', {
      'class': 'trustd-status', id: id + '-status', role: 'status', 'aria-live': 'polite', 'aria-atomic': 'true'
    });
    this.main = h('div', { 'class': 'trustd-main' }, [
      this.box, h('span', { 'class': 'trustd-text' }, [this.label, this.status])
    ]);
    var brand = h('div', { 'class': 'trustd-brand', 'aria-hidden': 'true' }, [
      h('span', { 'class': 'trustd-by' }, [t.brandBy]), h('span', { 'class': 'trustd-logo' }, ['trustd'])
    ]);
    this.brand = brand;
    this.root = h('div', {
      id: id, 'class': 'trustd trustd-theme-' + this.o.theme + ' trustd-size-' + this.o.size,
      lang: this.lang, 'data-state': 'idle'
    }, [this.main, brand]);
    if (this.o['response-field']) {
      this.input = h('input', { type: 'hidden', name: this.o['response-field-name'], value: '' });
      this.root.appendChild(this.input);
    }
    this.box.addEventListener('click', function () { self.verify(true); });
    // The text beside the box acts as its label: clicking it verifies too.
    this.main.addEventListener('click', function (e) {
      if (!self.box.contains(e.target)) {
        self.box.focus();
        self.verify(true);
      }
    });
    this.updateVisibility();
    this.root.hidden = true; // until the stylesheet has loaded: no flash of unstyled widget
    cssReady.then(function () { self.root.hidden = false; });
    this.container.appendChild(this.root);
  };

  Widget.prototype.updateVisibility = function () {
    var a = this.o.appearance;
    var hidden = this.o.size === 'invisible' ||
      (a === 'execute' && this.state === 'idle') ||
      (a === 'interaction-only' && (this.mode === 'score_based' || this.mode === 'score_enforced' || this.mode === ''));
    // Visually hidden only: the live region still speaks to screen readers.
    this.root.classList.toggle('trustd-hidden', hidden);
  };

  Widget.prototype.setState = function (state, text) {
    this.state = state;
    this.root.setAttribute('data-state', state);
    this.box.setAttribute('aria-checked', state === 'success' ? 'true' : 'false');
    this.box.setAttribute('aria-disabled', state === 'verifying' || state === 'success' ? 'true' : 'false');
    // No aria-busy here: on an ancestor of the live region it would hold
    // back the very announcements the region exists for.
    this.status.textContent = state === 'idle' ? '' : text || this.t[state] || '';
    this.updateVisibility();
  };

  Widget.prototype.setToken = function (token) {
    this.token = token;
    if (this.input) {
      this.input.value = token || '';
    }
  };

  Widget.prototype.clearTimers = function () {
    this.timers.forEach(clearTimeout);
    this.timers = [];
  };

  // prepare starts a fresh run: fetch a challenge and start solving it at
  // once, so a click usually finds the work already done. Score modes go on
  // to verify without any interaction.
  // Cloudflare's published Turnstile test site keys behave as documented,
  // so pages and CI set up with them work unchanged: 1x… always pass with
  // the dummy token (…BB invisibly), 2x… always block, 3x…FF asks for a
  // click. No request is made; the dummy token is refused by every
  // production secret (only the test secrets of a --dev node or the
  // sandbox accept it).
  var TEST_TOKEN = 'XXXX.DUMMY.TOKEN.XXXX';

  // INVISIBLE_DELAY_MS is how long after its challenge arrives a score-mode
  // widget waits before it verifies on its own.
  var INVISIBLE_DELAY_MS = 700;
  var TEST_SITEKEYS = {
    '1x00000000000000000000AA': ['pass', 'checkbox'], '1x00000000000000000000BB': ['pass', 'score_based'],
    '3x00000000000000000000FF': ['pass', 'checkbox'],
    '2x00000000000000000000AB': ['block', 'checkbox'], '2x00000000000000000000BB': ['block', 'score_based']
  };

  Widget.prototype.prepare = function (interaction) {
    var self = this;
    if (this.run) {
      this.run.live = false;
    }
    var run = { live: true, interaction: !!interaction };
    this.run = run;
    var test = TEST_SITEKEYS[this.o.sitekey];
    if (test) {
      run.test = test[0];
      run.challenge = Promise.resolve({ challenge_type: test[1], deadline: Infinity });
      run.nonce = Promise.resolve(0);
      run.challenge.then(function (ch) {
        self.mode = ch.challenge_type;
        self.root.setAttribute('data-mode', self.mode);
        self.updateVisibility();
        if (self.invisibleMode() && self.state === 'idle') {
          self.verify(false);
        }
      });
      return run;
    }
    run.challenge = postJSON('/challenge', { sitekey: this.o.sitekey, action: this.o.action, cdata: this.o.cdata })
      .then(function (ch) {
        if (!ch || typeof ch.challenge !== 'string' || !ch.pow || !(ch.expires_in > 0)) {
          throw widgetError('invalid-challenge', 'the challenge answer is malformed');
        }
        ch.deadline = now() + ch.expires_in * 1000 - EXPIRY_MARGIN_MS;
        return ch;
      });
    run.nonce = run.challenge.then(function (ch) {
      return solve(ch.pow, function () { return run.live; }, ch.deadline);
    });
    run.nonce.catch(function () {}); // surfaced by verify()
    run.challenge.then(function (ch) {
      if (!run.live) {
        return;
      }
      self.mode = String(ch.challenge_type || 'checkbox');
      self.root.setAttribute('data-mode', self.mode);
      self.applyBranding(ch.branding);
      self.updateVisibility();
      if (self.invisibleMode() && self.state === 'idle') {
        // Score modes verify by themselves, a moment after the page
        // opened: the server scores the time it saw between challenge
        // and redeem, and no person submits a form in a few milliseconds.
        setTimeout(function () {
          if (run.live && self.state === 'idle') {
            self.verify(false);
          }
        }, INVISIBLE_DELAY_MS);
      }
    }, function (err) {
      if (run.live && self.state === 'idle') {
        self.fail(err);
      }
    });
    return run;
  };

  // ---- branding -----------------------------------------------------------

  // The site's branding profile comes with the challenge answer (never
  // cached), not in the cached api.js/api.css. Colours are applied with
  // CSSOM (style.setProperty), which a CSP without 'unsafe-inline' allows,
  // and only when they are #rrggbb, so nothing else reaches a declaration.
  // The logo must be a /v1/branding/ path of the service's own origin.
  var BRAND_COLOR = /^#[0-9a-f]{6}$/;
  var BRAND_VARS = {
    primary: ['--trustd-brand-primary', '--trustd-accent', '--trustd-focus'],
    background: ['--trustd-brand-background', '--trustd-bg', '--trustd-box-bg'],
    text: ['--trustd-brand-text', '--trustd-fg'],
    accent: ['--trustd-brand-accent']
  };

  Widget.prototype.applyBranding = function (b) {
    if (!b || typeof b !== 'object' || this.brandedBy === b.profile_id) {
      return;
    }
    var root = this.root;
    var colors = b.colors && typeof b.colors === 'object' ? b.colors : {};
    Object.keys(BRAND_VARS).forEach(function (k) {
      var v = colors[k];
      if (typeof v === 'string' && BRAND_COLOR.test(v)) {
        BRAND_VARS[k].forEach(function (name) { root.style.setProperty(name, v); });
      }
    });
    root.classList.add('trustd-branded');
    this.brandedBy = b.profile_id;
    var url = null;
    try {
      url = typeof b.logo_url === 'string' && b.logo_url ? new URL(b.logo_url, apiBase + '/') : null;
    } catch (e) {
      url = null;
    }
    if (url && url.origin === new URL(apiBase + '/').origin && /^\/(v1\/)?branding\//.test(url.pathname)) {
      var img = h('img', { 'class': 'trustd-brand-logo', alt: typeof b.name === 'string' ? b.name : '', referrerpolicy: 'no-referrer' });
      img.src = url.href;
      var old = this.brand.querySelector('.trustd-brand-logo');
      if (old) {
        old.parentNode.removeChild(old);
      }
      this.brand.insertBefore(img, this.brand.firstChild);
    }
  };

  Widget.prototype.invisibleMode = function () {
    return this.mode === 'score_based' || this.mode === 'score_enforced';
  };

  // verify runs the challenge to a token. interaction is true when a person
  // clicked or pressed a key on the widget.
  Widget.prototype.verify = function (interaction) {
    var self = this;
    if (this.state === 'verifying' || this.state === 'interactive' || this.state === 'success' || !supported()) {
      return;
    }
    var run = this.run;
    if (!run || this.state === 'error' || this.state === 'expired') {
      run = this.prepare(interaction);
    }
    run.interaction = run.interaction || !!interaction;
    this.clearTimers();
    this.setState('verifying');
    if (run.test) {
      setTimeout(function () {
        if (!run.live) {
          return;
        }
        if (run.test === 'pass') {
          self.succeed({ token: TEST_TOKEN, expires_in: 300 });
        } else {
          self.fail(widgetError('test-sitekey-blocks', 'this test site key always blocks'));
        }
      }, 50);
      return;
    }
    run.challenge.then(function (ch) {
      if (now() >= ch.deadline) {
        // Fetched long ago and never used: start over with a fresh one.
        run = self.prepare(run.interaction);
        return run.challenge;
      }
      return ch;
    }).then(function (ch) {
      var answer = ch.challenge_type === 'visual' ? self.askPuzzle(run, ch) : null;
      return Promise.all([ch, run.nonce, answer]);
    }).then(function (r) {
      if (!run.live) {
        return null;
      }
      var signals = self.signals(run);
      if (r[2] !== null) {
        signals.answer = r[2];
      }
      return postJSON('/challenge/redeem', { challenge: r[0].challenge, nonce: String(r[1]), signals: signals });
    }).then(function (res) {
      if (!run.live || !res) {
        return;
      }
      if (typeof res.token !== 'string' || !(res.expires_in > 0)) {
        throw widgetError('invalid-response', 'the redeem answer is malformed');
      }
      self.succeed(res);
    }).catch(function (err) {
      if (run.live) {
        self.fail(err);
      }
    });
  };

  // signals are the bounded behaviour facts the server scores (it refuses
  // values outside its ranges, hence the clamps).
  Widget.prototype.signals = function (run) {
    return {
      webdriver: navigator.webdriver === true,
      headless: /Headless/i.test(navigator.userAgent),
      interaction: run.interaction,
      elapsed_ms: clamp(now() - this.created, MAX_ELAPSED_MS),
      pointer_moves: clamp(counters.pointerMoves, MAX_COUNT),
      keypresses: clamp(counters.keypresses, MAX_COUNT),
      visible: doc.visibilityState === 'visible'
    };
  };

  function clamp(n, max) {
    return Math.min(max, Math.max(0, Math.round(n)));
  }

  Widget.prototype.succeed = function (res) {
    var self = this;
    var lifetime = res.expires_in * 1000;
    this.hidePuzzle();
    this.setToken(res.token);
    this.setState('success');
    this.clearTimers();
    // A score-mode or checkbox token is refreshed silently at 80 % of its
    // lifetime (the person already acted); a visual one needs a person again.
    if (this.o['refresh-expired'] === 'auto' && this.mode !== 'visual') {
      this.timers.push(setTimeout(function () { self.refresh(); }, lifetime * REFRESH_AT));
    }
    this.timers.push(setTimeout(function () { self.expire(); }, lifetime));
    callback(this.o.callback, res.token);
  };

  // refresh swaps in a new token while the current one is still valid.
  Widget.prototype.refresh = function () {
    var self = this;
    var run = this.prepare(this.run && this.run.interaction);
    Promise.all([run.challenge, run.nonce]).then(function (r) {
      return postJSON('/challenge/redeem', { challenge: r[0].challenge, nonce: String(r[1]), signals: self.signals(run) });
    }).then(function (res) {
      if (run.live && self.state === 'success' && typeof res.token === 'string' && res.expires_in > 0) {
        self.succeed(res);
      }
    }).catch(function () {
      // The current token stays valid until its own expiry timer fires.
    });
  };

  Widget.prototype.expire = function () {
    var old = this.token;
    this.clearTimers();
    if (this.run) {
      this.run.live = false;
      this.run = null;
    }
    this.setToken(null);
    this.setState('expired');
    callback(this.o['expired-callback'], old);
    if (this.o['refresh-expired'] === 'auto' && this.invisibleMode()) {
      this.verify(false);
    }
  };

  Widget.prototype.fail = function (err, text) {
    var code = (err && err.code) || 'error';
    this.clearTimers();
    if (this.run) {
      this.run.live = false;
      this.run = null;
    }
    this.hidePuzzle();
    this.setToken(null);
    this.root.setAttribute('data-error', code);
    this.setState('error', text);
    callback(this.o['error-callback'], code);
  };

  // askPuzzle shows the server-rendered puzzle and resolves with what the
  // person types: the characters in the image, or the digits answering the
  // puzzle's text question (alt_text_challenge), the alternative for people
  // who cannot see the image.
  Widget.prototype.askPuzzle = function (run, ch) {
    var self = this;
    var p = ch.puzzle || {};
    var t = this.t;
    var url;
    try {
      url = new URL(p.image_url, apiBase + '/');
    } catch (e) {
      url = null;
    }
    if (!url || (url.protocol !== 'https:' && url.protocol !== 'http:')) {
      return Promise.reject(widgetError('invalid-challenge', 'the puzzle has no image'));
    }
    callback(this.o['before-interactive-callback']);
    this.hidePuzzle();
    var pid = this.id + '-puzzle';
    var input = h('input', {
      id: pid + '-answer', 'class': 'trustd-answer', type: 'text', autocomplete: 'off',
      autocapitalize: 'characters', spellcheck: 'false', maxlength: '32', required: ''
    });
    var submit = h('button', { type: 'button', 'class': 'trustd-submit' }, [t.puzzleSubmit]);
    var children = [
      h('p', { 'class': 'trustd-prompt', id: pid + '-prompt' }, [t.puzzlePrompt]),
      h('img', { 'class': 'trustd-puzzle-img', src: url.href, alt: t.puzzleImage, width: '200', height: '70' })
    ];
    if (p.alt_text_challenge) {
      // The server words its question in English.
      children.push(h('p', { 'class': 'trustd-alternative', id: pid + '-alt' }, [
        t.puzzleAlternative + ' ', h('span', { lang: 'en' }, [String(p.alt_text_challenge)])
      ]));
    }
    children.push(h('label', { 'for': pid + '-answer', 'class': 'trustd-answer-label' }, [t.puzzleAnswer]));
    children.push(h('span', { 'class': 'trustd-answer-row' }, [input, submit]));
    this.puzzle = h('div', {
      'class': 'trustd-puzzle', role: 'group', 'aria-labelledby': pid + '-prompt',
      'aria-describedby': p.alt_text_challenge ? pid + '-alt' : null
    }, children);
    this.root.insertBefore(this.puzzle, this.input || null);
    this.setState('interactive');
    input.focus();
    return new Promise(function (resolve, reject) {
      // An unanswered puzzle times out with its challenge.
      self.timers.push(setTimeout(function () {
        if (run.live && self.state === 'interactive') {
          callback(self.o['timeout-callback']);
          reject(widgetError('challenge-timeout', 'the puzzle was not answered in time'));
        }
      }, Math.max(0, ch.deadline - now())));
      function send() {
        var answer = input.value.trim();
        if (!answer || !run.live) {
          input.focus();
          return;
        }
        callback(self.o['after-interactive-callback']);
        self.setState('verifying');
        resolve(answer);
      }
      submit.addEventListener('click', send);
      input.addEventListener('keydown', function (e) {
        if (e.key === 'Enter') {
          e.preventDefault(); // never submit the enclosing form from here
          send();
        }
      });
    });
  };

  Widget.prototype.hidePuzzle = function () {
    if (this.puzzle) {
      this.puzzle.remove();
      this.puzzle = null;
    }
  };

  Widget.prototype.reset = function () {
    this.clearTimers();
    this.hidePuzzle();
    this.setToken(null);
    this.root.removeAttribute('data-error');
    if (this.run) {
      this.run.live = false;
      this.run = null;
    }
    this.setState('idle');
    if (this.o.execution === 'render' && supported()) {
      this.prepare();
    }
  };

  Widget.prototype.remove = function () {
    this.clearTimers();
    if (this.run) {
      this.run.live = false;
      this.run = null;
    }
    this.root.remove();
    widgets.splice(widgets.indexOf(this), 1);
  };

  // ---- the public API -----------------------------------------------------

  function containerOf(ref, dialect) {
    var el = typeof ref === 'string' ? lookup(ref, dialect) : ref;
    return el && el.nodeType === 1 ? el : null;
  }

  // lookup resolves a container named by a string. reCAPTCHA's documented
  // render(container) takes the container's id ('box'), so that dialect
  // tries the id first; Turnstile and the native API take a CSS selector
  // ('#box'), which every dialect still accepts, and a bare id is the
  // fallback when no element matches it as a selector.
  function lookup(ref, dialect) {
    var byId = doc.getElementById(ref);
    if (dialect === 'recaptcha' && byId) {
      return byId;
    }
    return safeQuery(ref) || byId;
  }

  // find resolves a widget id, a container (element or selector) or nothing
  // (the first widget on the page).
  function find(ref) {
    if (ref === undefined || ref === null) {
      return widgets[0] || null;
    }
    for (var i = 0; i < widgets.length; i++) {
      var w = widgets[i];
      if (w.id === ref || w.container === ref || w.root === ref) {
        return w;
      }
    }
    var el = typeof ref === 'string' ? lookup(ref) : null;
    for (var j = 0; el && j < widgets.length; j++) {
      if (widgets[j].container === el) {
        return widgets[j];
      }
    }
    return null;
  }

  function safeQuery(selector) {
    try {
      return doc.querySelector(selector);
    } catch (e) {
      return null;
    }
  }

  function render(container, options, dialect) {
    var el = typeof container === 'string' ? lookup(container, dialect) : container;
    if (!el || el.nodeType !== 1) {
      throw new TypeError('trustd.render: no element matches ' + String(container));
    }
    var existing = find(el);
    if (existing) {
      return existing.id;
    }
    var w = new Widget(el, readOptions(el, options, dialect));
    widgets.push(w);
    return w.id;
  }

  var readyQueue = [];
  var isReady = false;

  function whenDomReady(fn) {
    if (doc.readyState === 'loading') {
      doc.addEventListener('DOMContentLoaded', fn, { once: true });
    } else {
      fn();
    }
  }

  var api = {
    widgetVersion: WIDGET_VERSION,
    render: render,
    reset: function (ref) {
      var w = find(ref);
      if (w) {
        w.reset();
      }
    },
    remove: function (ref) {
      var w = find(ref);
      if (w) {
        w.remove();
      }
    },
    getResponse: function (ref) {
      var w = find(ref);
      return w && w.token ? w.token : undefined;
    },
    isExpired: function (ref) {
      var w = find(ref);
      return !!w && w.state === 'expired';
    },
    // execute runs the challenge of a widget rendered with
    // execution: 'execute' (rendering it first when given a bare container).
    execute: function (ref, options) {
      var w = find(ref);
      if (!w) {
        var el = containerOf(ref);
        if (!el) {
          throw new TypeError('trustd.execute: no widget or element ' + String(ref));
        }
        var opts = {};
        Object.keys(options || {}).forEach(function (k) { opts[k] = options[k]; });
        opts.execution = 'execute';
        w = find(render(el, opts));
      }
      w.verify(false);
    },
    ready: function (fn) {
      if (typeof fn !== 'function') {
        throw new TypeError('trustd.ready needs a function');
      }
      if (isReady) {
        setTimeout(fn);
      } else {
        readyQueue.push(fn);
      }
    }
  };

  win.trustd = api;

  // dialectAPI is api with render (and execute of a bare container) in a
  // dialect, so its hidden field takes that dialect's default name.
  function dialectAPI(dialect) {
    var d = {};
    Object.keys(api).forEach(function (k) { d[k] = api[k]; });
    d.render = function (container, options) { return render(container, options, dialect); };
    d.execute = function (ref, options) {
      if (!find(ref)) {
        var el = containerOf(ref, dialect);
        if (el) {
          var opts = {};
          Object.keys(options || {}).forEach(function (k) { opts[k] = options[k]; });
          opts.execution = 'execute';
          render(el, opts, dialect);
        }
      }
      return api.execute(ref, options);
    };
    return d;
  }

  if (!win.turnstile) {
    win.turnstile = dialectAPI('turnstile'); // drop-in for front-end wrappers written for Turnstile
  }
  if (!win.grecaptcha) {
    // The reCAPTCHA v2 calls wrappers make: render, getResponse, reset,
    // execute, ready.
    win.grecaptcha = dialectAPI('recaptcha');
  }

  whenDomReady(function () {
    if (scriptParams.get('render') !== 'explicit') {
      var els = doc.querySelectorAll(AUTO_SELECTOR);
      for (var i = 0; i < els.length; i++) {
        try {
          render(els[i]);
        } catch (err) {
          if (win.console) {
            win.console.error(err);
          }
        }
      }
    }
    isReady = true;
    readyQueue.splice(0).forEach(function (fn) { callback(fn); });
    var onload = scriptParams.get('onload');
    if (onload) {
      callback(onload);
    }
  });
})(window, document);
