// The hosted identity capture page. It runs before the body is parsed so
// the hosted capability leaves the address bar at once; it is then kept in
// this closure only (never in storage, never in a URL). Every image stays
// in memory and goes only to this origin's API. No innerHTML anywhere
// (the page's CSP requires Trusted Types for scripts).
(() => {
  'use strict';
  const m = /^#(ivhs_[A-Za-z0-9_-]{20,100})$/.exec(location.hash);
  const token = m ? m[1] : '';
  if (location.hash) history.replaceState(null, '', location.pathname + location.search);
  const api = location.pathname.replace(/\/+$/, '');

  const T = {
    en: { restart: 'Please start again from the site that sent you here.', title: 'Identity verification', docTitle: 'Photo of your document', docHelp: 'Place the page with your photo flat, in good light, filling the frame.',
      useCamera: 'Use the camera', upload: 'Upload a photo', camera: 'Camera', takePhoto: 'Take the photo', back: 'Back',
      faceTitle: 'A short video check', faceHelp: 'Look at the camera. You will be asked to turn your head or blink, in order.', start: 'Start',
      finishTitle: 'Send for checking', finish: 'Finish', working: 'Checking…', badLink: 'This link is not valid or has expired. Please start again from the site that sent you here.',
      noCamera: 'The camera is not available. You can upload a photo instead.', retry: 'Please try again.', docOk: 'Document received.',
      turn_left: 'Turn your head to the left', turn_right: 'Turn your head to the right', blink: 'Blink', hold: 'Look at the camera',
      verified: 'Thank you: your identity is verified.', manual_review: 'Thank you: your verification will be reviewed by a person.',
      rejected: 'Your identity could not be verified.', cancelled: 'This verification was cancelled.', unavailable: 'The check is not available right now. Please try again later.',
      returning: 'Taking you back…' },
    fr: { restart: 'Veuillez recommencer depuis le site qui vous a envoyé ici.', title: 'Vérification d’identité', docTitle: 'Photo de votre document', docHelp: 'Posez la page avec votre photo à plat, bien éclairée, en remplissant le cadre.',
      useCamera: 'Utiliser la caméra', upload: 'Envoyer une photo', camera: 'Caméra', takePhoto: 'Prendre la photo', back: 'Retour',
      faceTitle: 'Une courte vérification vidéo', faceHelp: 'Regardez la caméra. Il vous sera demandé de tourner la tête ou de cligner des yeux, dans l’ordre.', start: 'Commencer',
      finishTitle: 'Envoyer pour vérification', finish: 'Terminer', working: 'Vérification…', badLink: 'Ce lien n’est pas valide ou a expiré. Recommencez depuis le site qui vous a envoyé ici.',
      noCamera: 'La caméra n’est pas disponible. Vous pouvez envoyer une photo.', retry: 'Veuillez réessayer.', docOk: 'Document reçu.',
      turn_left: 'Tournez la tête vers la gauche', turn_right: 'Tournez la tête vers la droite', blink: 'Clignez des yeux', hold: 'Regardez la caméra',
      verified: 'Merci : votre identité est vérifiée.', manual_review: 'Merci : votre vérification sera examinée par une personne.',
      rejected: 'Votre identité n’a pas pu être vérifiée.', cancelled: 'Cette vérification a été annulée.', unavailable: 'La vérification n’est pas disponible pour le moment. Réessayez plus tard.',
      returning: 'Retour en cours…' },
    de: { restart: 'Bitte beginnen Sie erneut auf der Website, die Sie hierher geschickt hat.', title: 'Identitätsprüfung', docTitle: 'Foto Ihres Ausweises', docHelp: 'Legen Sie die Seite mit Ihrem Foto flach hin, gut beleuchtet und bildfüllend.',
      useCamera: 'Kamera verwenden', upload: 'Foto hochladen', camera: 'Kamera', takePhoto: 'Foto aufnehmen', back: 'Zurück',
      faceTitle: 'Eine kurze Videoprüfung', faceHelp: 'Schauen Sie in die Kamera. Sie werden gebeten, den Kopf zu drehen oder zu blinzeln, der Reihe nach.', start: 'Starten',
      finishTitle: 'Zur Prüfung senden', finish: 'Abschließen', working: 'Wird geprüft…', badLink: 'Dieser Link ist ungültig oder abgelaufen. Bitte beginnen Sie erneut auf der Website, die Sie hierher geschickt hat.',
      noCamera: 'Die Kamera ist nicht verfügbar. Sie können stattdessen ein Foto hochladen.', retry: 'Bitte versuchen Sie es erneut.', docOk: 'Ausweis erhalten.',
      turn_left: 'Drehen Sie den Kopf nach links', turn_right: 'Drehen Sie den Kopf nach rechts', blink: 'Blinzeln', hold: 'Schauen Sie in die Kamera',
      verified: 'Danke: Ihre Identität ist bestätigt.', manual_review: 'Danke: Ihre Prüfung wird von einer Person begutachtet.',
      rejected: 'Ihre Identität konnte nicht bestätigt werden.', cancelled: 'Diese Prüfung wurde abgebrochen.', unavailable: 'Die Prüfung ist gerade nicht verfügbar. Bitte später erneut versuchen.',
      returning: 'Sie werden zurückgeleitet…' },
    es: { restart: 'Vuelva a empezar desde el sitio que le envió aquí.', title: 'Verificación de identidad', docTitle: 'Foto de su documento', docHelp: 'Coloque la página con su foto plana, con buena luz, llenando el encuadre.',
      useCamera: 'Usar la cámara', upload: 'Subir una foto', camera: 'Cámara', takePhoto: 'Tomar la foto', back: 'Volver',
      faceTitle: 'Una breve comprobación en vídeo', faceHelp: 'Mire a la cámara. Se le pedirá girar la cabeza o parpadear, en orden.', start: 'Empezar',
      finishTitle: 'Enviar para comprobar', finish: 'Terminar', working: 'Comprobando…', badLink: 'Este enlace no es válido o ha caducado. Vuelva a empezar desde el sitio que le envió aquí.',
      noCamera: 'La cámara no está disponible. Puede subir una foto.', retry: 'Inténtelo de nuevo.', docOk: 'Documento recibido.',
      turn_left: 'Gire la cabeza a la izquierda', turn_right: 'Gire la cabeza a la derecha', blink: 'Parpadee', hold: 'Mire a la cámara',
      verified: 'Gracias: su identidad está verificada.', manual_review: 'Gracias: una persona revisará su verificación.',
      rejected: 'No se pudo verificar su identidad.', cancelled: 'Esta verificación se canceló.', unavailable: 'La comprobación no está disponible ahora. Inténtelo más tarde.',
      returning: 'Volviendo…' },
  };
  let t = T.en;
  let info = null;
  let docImage = '';
  let stream = null;

  const $ = (id) => document.getElementById(id);
  const show = (id) => { for (const s of ['doc', 'cam', 'face', 'finish', 'done']) $(s).hidden = s !== id; };
  const say = (text) => { $('status').textContent = text || ''; };
  const hint = (text) => { $('hint').textContent = text || ''; };
  const busy = (on) => {
    $('app').setAttribute('aria-busy', on ? 'true' : 'false');
    for (const b of document.querySelectorAll('button, input')) b.disabled = on;
    if (on) say(t.working);
  };

  async function call(method, path, body) {
    const res = await fetch(api + path, {
      method, credentials: 'omit', cache: 'no-store', referrerPolicy: 'no-referrer',
      headers: Object.assign({ 'X-Service-Hosted-Token': token }, body ? { 'Content-Type': 'application/json' } : {}),
      body: body ? JSON.stringify(body) : undefined,
    });
    let data = null;
    try { data = await res.json(); } catch (_) { /* not JSON */ }
    return { status: res.status, data };
  }

  function toBase64(blob) {
    return new Promise((resolve, reject) => {
      const r = new FileReader();
      r.onload = () => resolve(String(r.result).replace(/^data:[^,]*,/, ''));
      r.onerror = () => reject(r.error);
      r.readAsDataURL(blob);
    });
  }

  function grab(video, maxWidth, quality) {
    const w = Math.min(video.videoWidth, maxWidth);
    const h = Math.round(video.videoHeight * w / video.videoWidth);
    const c = document.createElement('canvas');
    c.width = w; c.height = h;
    c.getContext('2d').drawImage(video, 0, 0, w, h);
    return new Promise((resolve) => c.toBlob((b) => resolve(b), 'image/jpeg', quality)).then(toBase64);
  }

  async function openCamera(facing) {
    stopCamera();
    stream = await navigator.mediaDevices.getUserMedia({ video: { facingMode: facing, width: { ideal: 1920 }, height: { ideal: 1080 } }, audio: false });
    const v = $('video');
    v.srcObject = stream;
    await new Promise((resolve) => { if (v.readyState >= 2) resolve(); else v.onloadeddata = () => resolve(); });
    return v;
  }

  function stopCamera() {
    if (stream) for (const tr of stream.getTracks()) tr.stop();
    stream = null;
  }

  function route() {
    if (!info) return;
    const st = info.status;
    if (['verified', 'rejected', 'cancelled', 'manual_review'].includes(st)) return finish(st);
    if (info.expired) return fail(t.badLink);
    if (info.steps.document === 'pending') { show('doc'); say(''); return; }
    // The face step compares with the very image screened, kept in memory
    // only: after a reload it is gone, and the session must start again.
    if (info.steps.face === 'pending' && !docImage) return fail(t.restart);
    if (info.steps.face === 'pending') { show('face'); say(t.docOk); return; }
    show('finish'); say('');
  }

  function fail(text) { stopCamera(); show('done'); $('outcome').textContent = text; say(''); }

  // A user-safe message for a step answer that did not pass.
  function retryMessage(r) {
    const d = r.data || {};
    const um = (d.document && d.document.verification && d.document.verification.risk.user_message) || (d.face && d.face.user_message);
    return um || t.retry;
  }

  async function afterStep(r) {
    busy(false);
    if (r.status === 503) { hint(t.unavailable); return route(); }
    if (r.status !== 200) { hint(t.retry); return refresh(); }
    info = Object.assign(info, r.data.session || r.data);
    if (info.status === 'recapture_required') { hint(retryMessage(r)); show(r.data.face ? 'face' : 'doc'); say(''); return; }
    hint('');
    route();
  }

  async function sendDocument(b64) {
    busy(true);
    docImage = b64;
    const r = await call('POST', '/document', { front_image: b64 });
    if (r.status !== 200 || (r.data.session && r.data.session.steps.document === 'pending')) docImage = '';
    await afterStep(r);
  }

  async function faceCheck() {
    busy(true);
    hint('');
    const c = await call('POST', '/liveness');
    if (c.status !== 200) return afterStep(c);
    let v;
    try { v = await openCamera('user'); } catch (_) { busy(false); hint(t.noCamera); return; }
    show('cam');
    $('shoot').hidden = true;
    const list = $('prompts');
    list.replaceChildren();
    const steps = ['hold', ...c.data.actions];
    const items = steps.map((a) => { const li = document.createElement('li'); li.textContent = t[a] || a; list.append(li); return li; });
    const frames = [];
    const t0 = performance.now();
    let selfie = '';
    for (let i = 0; i < steps.length; i++) {
      items.forEach((li, j) => li.classList.toggle('now', j === i));
      say(t[steps[i]] || steps[i]);
      await new Promise((r) => setTimeout(r, 900));
      if (i === 0) selfie = await grab(v, 960, 0.9);
      for (let k = 0; k < 2 && frames.length < 12; k++) {
        frames.push({ image: await grab(v, 480, 0.7), offset_ms: Math.round(performance.now() - t0) });
        await new Promise((r) => setTimeout(r, 150));
      }
    }
    stopCamera();
    $('shoot').hidden = false;
    say(t.working);
    const r = await call('POST', '/face', { nonce: c.data.nonce, selfie, frames, document_front_image: docImage });
    await afterStep(r);
  }

  function finish(status) {
    stopCamera();
    show('done');
    $('outcome').textContent = t[status] || status;
    say('');
    $('app').setAttribute('aria-busy', 'false');
    const msg = { type: 'trustd:identity', session_id: info.session_id, status };
    if (info.parent_origin && window.parent !== window) {
      window.parent.postMessage(msg, info.parent_origin);
    } else if (info.return_url) {
      const u = new URL(info.return_url);
      u.searchParams.set('session_id', info.session_id);
      say(t.returning);
      setTimeout(() => location.assign(u.toString()), 1200);
    }
  }

  async function refresh() {
    const r = await call('GET', '/info');
    if (r.status !== 200) return fail(t.badLink);
    info = r.data;
    route();
  }

  document.addEventListener('DOMContentLoaded', async () => {
    if (!token) { fail(t.badLink); return; }
    const r = await call('GET', '/info');
    if (r.status !== 200) { fail(t.badLink); return; }
    info = r.data;
    t = T[info.locale] || T.en;
    document.documentElement.lang = T[info.locale] ? info.locale : 'en';
    document.documentElement.dataset.theme = info.theme || 'system';
    for (const el of document.querySelectorAll('[data-t]')) el.textContent = t[el.dataset.t] || el.textContent;
    document.title = t.title;
    $('app').setAttribute('aria-busy', 'false');

    $('doc-file').addEventListener('change', async (e) => {
      const f = e.target.files && e.target.files[0];
      e.target.value = '';
      if (f) await sendDocument(await toBase64(f));
    });
    $('doc-camera').addEventListener('click', async () => {
      hint('');
      try { await openCamera('environment'); } catch (_) { hint(t.noCamera); return; }
      $('prompts').replaceChildren();
      show('cam');
      $('shoot').focus();
    });
    $('shoot').addEventListener('click', async () => {
      const b64 = await grab($('video'), 1920, 0.92);
      stopCamera();
      await sendDocument(b64);
    });
    $('cam-cancel').addEventListener('click', () => { stopCamera(); route(); });
    $('face-start').addEventListener('click', faceCheck);
    $('complete').addEventListener('click', async () => {
      busy(true);
      const c = await call('POST', '/complete');
      await afterStep(c);
    });
    route();
  });
})();
