// The person's page of a journey: reads the capability from the fragment
// (never sent to a server, dropped from the address bar at once), shows
// the journey, and runs its method against this service. No inline
// script, no third-party code; the page's CSP allows only this file and
// calls to its own origin.
'use strict';

(() => {
  const $ = (id) => document.getElementById(id);
  const cap = location.hash.slice(1);
  history.replaceState(null, '', location.pathname + location.search);

  const setState = (state, text) => {
    document.body.dataset.state = state;
    $('state').textContent = text;
  };

  const call = async (path, body) => {
    const headers = { 'X-Service-Journey-Token': cap };
    if (body !== undefined) headers['Content-Type'] = 'application/json';
    const r = await fetch('/v1/journeys/person/' + path, {
      method: 'POST', headers, body: body === undefined ? undefined : JSON.stringify(body),
      credentials: 'omit', cache: 'no-store', redirect: 'error',
    });
    const j = await r.json().catch(() => ({}));
    // The error's code and its reason (the message), so the person or the
    // site's support can tell what is missing (for example a passkey page
    // served at an IP address, which WebAuthn refuses as relying party).
    if (!r.ok) throw new Error((j.error || ('HTTP ' + r.status)) + (j.message ? ': ' + j.message : ''));
    return j;
  };

  const fromB64 = (s) => {
    const b = atob(s.replace(/-/g, '+').replace(/_/g, '/') + '==='.slice((s.length + 3) % 4));
    return Uint8Array.from(b, (c) => c.charCodeAt(0)).buffer;
  };
  const toB64 = (buf) => btoa(String.fromCharCode(...new Uint8Array(buf)))
    .replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');

  const creationOptions = (o) => ({
    ...o,
    challenge: fromB64(o.challenge),
    user: { ...o.user, id: fromB64(o.user.id) },
    excludeCredentials: (o.excludeCredentials || []).map((c) => ({ ...c, id: fromB64(c.id) })),
  });
  const requestOptions = (o) => ({
    ...o,
    challenge: fromB64(o.challenge),
    allowCredentials: (o.allowCredentials || []).map((c) => ({ ...c, id: fromB64(c.id) })),
  });

  const credentialJSON = (c) => {
    const r = c.response;
    const out = { id: c.id, rawId: toB64(c.rawId), type: c.type, clientExtensionResults: c.getClientExtensionResults(), response: {
      clientDataJSON: toB64(r.clientDataJSON) } };
    if (r.attestationObject) {
      out.response.attestationObject = toB64(r.attestationObject);
      out.response.transports = r.getTransports ? r.getTransports() : [];
    } else {
      out.response.authenticatorData = toB64(r.authenticatorData);
      out.response.signature = toB64(r.signature);
      if (r.userHandle) out.response.userHandle = toB64(r.userHandle);
    }
    return out;
  };

  const done = (res) => {
    if (res.success) {
      $('proof').hidden = false;
      $('proof').value = res.response;
      $('proof').textContent = res.response;
      setState('done', 'Verified. You can return to the application.');
      // Only to the starting site's origins: a page that merely opened this
      // link learns nothing (postMessage drops a message whose target
      // origin is not the opener's).
      if (window.opener) for (const o of returnOrigins) window.opener.postMessage({ type: 'trustd-journey', response: res.response }, o);
    } else {
      setState('failed', 'Not verified (' + (res.reasons || []).join(', ') + '). Try again.');
      $('go').hidden = false;
    }
  };

  const passkey = async () => {
    let c = await call('passkey/begin');
    for (let i = 0; i < 2; i++) {
      const cred = c.ceremony === 'registration'
        ? await navigator.credentials.create({ publicKey: creationOptions(c.options) })
        : await navigator.credentials.get({ publicKey: requestOptions(c.options) });
      const res = await call('passkey/finish', { credential: credentialJSON(cred) });
      if (!res.next) return res;
      c = res.next;
    }
    throw new Error('unexpected ceremony');
  };

  // human_verification: the starting site's widget, loaded from this
  // service, bound to the session by cdata = the session's reference; its
  // token is exchanged once (as /siteverify would) for the proof.
  let widgetLoaded = null;
  const loadWidget = () => {
    if (!widgetLoaded) {
      widgetLoaded = new Promise((resolve, reject) => {
        const sc = document.createElement('script');
        sc.src = '/v1/widget/api.js?render=explicit';
        sc.onload = () => (window.trustd ? resolve(window.trustd) : reject(new Error('widget')));
        sc.onerror = () => reject(new Error('widget'));
        document.head.append(sc);
      });
    }
    return widgetLoaded;
  };
  let widgetSlot = null;
  const human = async () => {
    const api = await loadWidget();
    if (widgetSlot) { api.remove(widgetSlot); widgetSlot.remove(); }
    widgetSlot = document.createElement('div');
    widgetSlot.id = 'widget';
    $('go').before(widgetSlot);
    setState('working', 'Confirm you are human.');
    const response = await new Promise((resolve, reject) => {
      api.render(widgetSlot, { sitekey: view.sitekey, cdata: view.reference, 'response-field': false, 'refresh-expired': 'never',
        callback: resolve, 'error-callback': (code) => reject(new Error(code)) });
    });
    setState('working', 'Checking…');
    return call('human', { response });
  };

  // Facial methods: the liveness challenge's actions, prompted in order
  // while the camera is sampled at a steady rate for a fixed time (up to
  // 24 distinct frames, the checker's limit, 115 ms apart: ~2.8 s); the
  // first frame is offset 0. The
  // frames go to this service only, and the camera stops as soon as they
  // are taken.
  const PROMPTS = { hold: 'Look at the camera', turn_left: 'Turn your head to the left',
    turn_right: 'Turn your head to the right', blink: 'Blink' };
  const FRAMES = 24;
  const EVERY_MS = 115;
  const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
  const nextFrame = (video) => new Promise((r) => {
    if (video.requestVideoFrameCallback) video.requestVideoFrameCallback(() => r());
    setTimeout(r, video.requestVideoFrameCallback ? 400 : 40); // a stalled camera never blocks
  });
  const grab = (video) => {
    const w = Math.min(video.videoWidth, 640);
    const h = Math.round(video.videoHeight * w / video.videoWidth);
    const c = document.createElement('canvas');
    c.width = w; c.height = h;
    c.getContext('2d').drawImage(video, 0, 0, w, h);
    return c.toDataURL('image/jpeg', 0.8).replace(/^data:[^,]*,/, '');
  };
  const face = async () => {
    const ch = await call('face/begin');
    const stream = await navigator.mediaDevices.getUserMedia({ video: { facingMode: 'user', width: { ideal: 640 }, height: { ideal: 480 } }, audio: false });
    const video = document.createElement('video');
    video.id = 'camera';
    video.muted = true; video.autoplay = true; video.playsInline = true;
    video.srcObject = stream;
    $('go').before(video);
    const frames = [];
    try {
      await new Promise((resolve) => { if (video.readyState >= 2) resolve(); else video.onloadeddata = resolve; });
      const steps = ['hold', ...ch.actions];
      const seen = new Set();
      let first = 0;
      const t0 = performance.now();
      // The capture lasts a fixed time (the prompts' pace), however many
      // distinct pictures the camera gave in it.
      const until = t0 + FRAMES * EVERY_MS;
      for (let k = 0; frames.length < FRAMES && performance.now() < until; k++) {
        const step = steps[Math.min(steps.length - 1, Math.floor(frames.length * steps.length / FRAMES))];
        if (document.body.dataset.prompt !== step) {
          setState('capturing', PROMPTS[step] || step);
          document.body.dataset.prompt = step;
        }
        await sleep(Math.max(0, t0 + k * EVERY_MS - performance.now()));
        // A new camera picture each time: the same picture twice is no
        // evidence of anything (and the checker refuses duplicates).
        await nextFrame(video);
        const image = grab(video);
        if (seen.has(image)) continue;
        seen.add(image);
        if (frames.length === 0) first = performance.now();
        const at = frames.length === 0 ? 0 : Math.max(Math.round(performance.now() - first), frames[frames.length - 1].offset_ms + 1);
        frames.push({ image, offset_ms: at });
      }
    } finally {
      for (const tr of stream.getTracks()) tr.stop();
      video.remove();
      delete document.body.dataset.prompt;
    }
    setState('working', 'Checking…');
    return call('face/complete', { frames });
  };

  const methods = { device_authorization: passkey, human_verification: human,
    facial_liveness: face, facial_enrollment: face, facial_authorization: face };

  const run = async () => {
    $('go').hidden = true;
    setState('working', 'Follow your device\'s prompt…');
    try {
      done(await methods[document.body.dataset.method]());
    } catch (e) {
      setState('error', 'Something went wrong: ' + e.message);
      $('go').hidden = false;
    }
  };

  let returnOrigins = [];
  let view = {};

  // Branding of the starting site or app (the branding hook): its
  // stylesheet (only #rrggbb custom properties, served by this origin, so
  // the page's CSP style-src 'self' allows it) and its logo, the profile
  // name as alt text. Paths outside /v1/branding/ are ignored.
  const ownBranding = (p) => typeof p === 'string' && /^\/v1\/branding\/[0-9a-f-]{36}\/(theme\.css|logo)\?/.test(p);
  const brand = (b) => {
    if (!b) return;
    if (ownBranding(b.stylesheet_url)) {
      const link = document.createElement('link');
      link.rel = 'stylesheet';
      link.href = b.stylesheet_url;
      document.head.appendChild(link);
    }
    if (ownBranding(b.logo_url)) {
      const img = document.createElement('img');
      img.className = 'brand-logo';
      img.alt = String(b.name || '');
      img.src = b.logo_url;
      document.querySelector('main').prepend(img);
    }
    document.body.classList.add('branded');
  };

  const init = async () => {
    if (!cap) { setState('error', 'This link is incomplete.'); return; }
    try {
      const v = await call('session');
      view = v;
      returnOrigins = v.return_origins || [];
      brand(v.branding);
      $('title').textContent = v.journey_name;
      document.body.dataset.method = v.method;
      if (v.consent.required) {
        $('consent').hidden = false;
        $('consent').textContent = 'By continuing you accept consent version ' + v.consent.version + '.';
      }
      if (!methods[v.method] || (v.method === 'human_verification' && !v.sitekey)) {
        setState('unsupported', 'This verification continues in the application that sent you here.');
        return;
      }
      if (v.status === 'expired' || v.status === 'escalated') {
        setState('closed', 'This verification is no longer open.');
        return;
      }
      setState('ready', 'Ready.');
      $('go').hidden = false;
      $('go').addEventListener('click', run);
    } catch (e) {
      setState('error', 'This verification link is not valid: ' + e.message);
    }
  };
  init();
})();
