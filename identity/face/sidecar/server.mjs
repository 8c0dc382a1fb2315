// trustd's face engine sidecar: @vladmandic/human on the TensorFlow.js wasm
// backend (CPU), served over loopback HTTP to the trustd node.
//
//   FACE_SIDECAR_SECRET=... node identity/face/sidecar/server.mjs --port 7310
//
// Configuration (flags win over the environment):
//   --port N          FACE_SIDECAR_PORT        port on 127.0.0.1 (0 = any; the
//                                               bound address is printed as the
//                                               first stdout line, JSON)
//   --secret-file P   FACE_SIDECAR_SECRET_FILE file holding the shared secret
//                     FACE_SIDECAR_SECRET      the shared secret itself (never a flag:
//                                               flags are visible to every user in ps)
//   --max-body N      FACE_SIDECAR_MAX_BODY    largest image accepted, bytes (8 MiB)
//   --max-queue N     FACE_SIDECAR_MAX_QUEUE   analyses waiting at most (8); more → 503
//
// API (every call but /healthz needs the header X-Face-Secret):
//   GET  /healthz      200 {"ready":true} once the models are loaded, 503 before
//   POST /v1/analyze   body: a JPEG or PNG image. 200 {"width","height","ms",
//                      "faces":[{"box":[x,y,w,h],"score","yaw","pitch","roll",
//                      "eyes_open","ear":[left,right],"lid":[left,right],"descriptor"}]};
//                      ear is the eye aspect ratio, lid human's own blink measure; the descriptor is
//                      1024 little-endian float32 in base64; angles in degrees,
//                      positive yaw = the person turned to their left (see DESIGN.md).
//
// The models run in a worker thread (engine.mjs) so this thread keeps
// answering (health, refusals) while an analysis runs.
//
// No network: models and the wasm binary are read from node_modules on disk
// (a tfjs load router for file:// replaces fetch), and global fetch is
// replaced by a function that refuses, in both threads, so an unexpected
// download fails loudly instead of leaving the machine.

import http from 'node:http';
import fs from 'node:fs';
import crypto from 'node:crypto';
import { Worker } from 'node:worker_threads';

globalThis.fetch = async (url) => { throw new Error(`face sidecar: network use refused (${String(url).slice(0, 80)})`); };

function arg(name, envName, def) {
  const i = process.argv.indexOf(`--${name}`);
  if (i >= 0 && i + 1 < process.argv.length) return process.argv[i + 1];
  if (envName && process.env[envName] !== undefined && process.env[envName] !== '') return process.env[envName];
  return def;
}

function intArg(name, envName, def, min, max) {
  const v = Number(arg(name, envName, String(def)));
  if (!Number.isInteger(v) || v < min || v > max) {
    console.error(`face sidecar: --${name} must be an integer in [${min}, ${max}]`);
    process.exit(2);
  }
  return v;
}

const port = intArg('port', 'FACE_SIDECAR_PORT', 7310, 0, 65535);
const maxBody = intArg('max-body', 'FACE_SIDECAR_MAX_BODY', 8 << 20, 1024, 64 << 20);
const maxQueue = intArg('max-queue', 'FACE_SIDECAR_MAX_QUEUE', 8, 0, 1024);
let secret = process.env.FACE_SIDECAR_SECRET || '';
const secretFile = arg('secret-file', 'FACE_SIDECAR_SECRET_FILE', '');
if (secretFile) secret = fs.readFileSync(secretFile, 'utf8').trim();
if (Buffer.byteLength(secret) < 16) {
  console.error('face sidecar: a shared secret of at least 16 bytes is required (FACE_SIDECAR_SECRET or --secret-file)');
  process.exit(2);
}
const secretDigest = crypto.createHash('sha256').update(secret).digest();
delete process.env.FACE_SIDECAR_SECRET;

// The engine runs in a worker thread (engine.mjs); one analysis at a time.
const worker = new Worker(new URL('./engine.mjs', import.meta.url));
let ready = false;
const calls = new Map();
let nextId = 1;
worker.on('message', (m) => {
  if (m.ready) {
    ready = true;
    process.stdout.write(JSON.stringify(m) + '\n');
    return;
  }
  if (m.fatal) {
    console.error('face sidecar: loading the models failed:', m.fatal);
    process.exit(1);
  }
  const c = calls.get(m.id);
  if (!c) return;
  calls.delete(m.id);
  if (m.out) c.resolve(m.out);
  else c.reject(m.bad ? new BadImage(m.error) : new Error(m.error));
});
worker.on('error', (err) => {
  console.error('face sidecar: engine worker failed:', err && err.message);
  process.exit(1);
});
worker.on('exit', (code) => {
  console.error('face sidecar: engine worker exited', code);
  process.exit(1);
});
// An analysis that has not finished in a minute means the engine is stuck:
// the process exits so its supervisor (trustd, systemd, compose) restarts it
// rather than refusing every request as busy forever.
const stuckMS = 60000;
function analyze(buf) {
  return new Promise((resolve, reject) => {
    const id = nextId++;
    const watchdog = setTimeout(() => {
      console.error('face sidecar: an analysis is stuck; exiting');
      process.exit(1);
    }, stuckMS);
    calls.set(id, {
      resolve: (v) => { clearTimeout(watchdog); resolve(v); },
      reject: (e) => { clearTimeout(watchdog); reject(e); },
    });
    worker.postMessage({ id, buf });
  });
}
class BadImage extends Error {}

// One analysis at a time in the worker (the wasm backend uses one thread);
// up to maxQueue more wait, and the rest are refused with 503 at once.
let pending = 0; // accepted and not finished: waiting plus running
let draining = false;
const waiting = [];
function schedule(fn, gone) {
  return new Promise((resolve, reject) => {
    if (pending >= 1 + maxQueue) {
      reject(new Busy());
      return;
    }
    pending++;
    waiting.push({ fn, gone, resolve, reject });
    if (!draining) {
      draining = true;
      setImmediate(drain);
    }
  });
}
async function drain() {
  const job = waiting.shift();
  if (!job) {
    draining = false;
    return;
  }
  try {
    // A caller that gave up while waiting (timeout) is not analysed.
    if (job.gone()) throw new Busy();
    job.resolve(await job.fn());
  } catch (err) {
    job.reject(err);
  } finally {
    pending--;
  }
  setImmediate(drain);
}
class Busy extends Error {}

function authorised(req) {
  const got = req.headers['x-face-secret'];
  if (typeof got !== 'string') return false;
  const d = crypto.createHash('sha256').update(got).digest();
  return crypto.timingSafeEqual(d, secretDigest);
}

function send(res, status, body) {
  const s = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(s), 'cache-control': 'no-store' });
  res.end(s);
}

const server = http.createServer((req, res) => {
  const url = req.url.split('?')[0];
  if (req.method === 'GET' && url === '/healthz') {
    send(res, ready ? 200 : 503, { ready });
    req.resume();
    return;
  }
  if (!authorised(req)) {
    send(res, 401, { error: 'unauthorised' });
    req.resume();
    return;
  }
  if (url !== '/v1/analyze') {
    send(res, 404, { error: 'not found' });
    req.resume();
    return;
  }
  if (req.method !== 'POST') {
    send(res, 405, { error: 'method not allowed' });
    req.resume();
    return;
  }
  if (!ready) {
    send(res, 503, { error: 'models loading' });
    req.resume();
    return;
  }
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > maxBody) {
    send(res, 413, { error: 'image too large' });
    req.destroy();
    return;
  }
  const chunks = [];
  let size = 0;
  let over = false;
  req.on('data', (c) => {
    size += c.length;
    if (size > maxBody) {
      if (!over) {
        over = true;
        send(res, 413, { error: 'image too large' });
        req.destroy();
      }
      return;
    }
    chunks.push(c);
  });
  req.on('error', () => {});
  req.on('end', () => {
    if (over) return;
    const buf = Buffer.concat(chunks);
    if (buf.length === 0) {
      send(res, 400, { error: 'empty body' });
      return;
    }
    let closed = false;
    res.on('close', () => { closed = true; });
    schedule(() => analyze(buf), () => closed || res.destroyed).then(
      (out) => send(res, 200, out),
      (err) => {
        if (err instanceof Busy) send(res, 503, { error: 'busy' });
        else if (err instanceof BadImage) {
          send(res, 422, { error: 'image could not be decoded' });
        } else {
          console.error('face sidecar: analyze failed:', err && err.message);
          send(res, 500, { error: 'analysis failed' });
        }
      },
    );
  });
});
server.requestTimeout = 30000;
server.headersTimeout = 10000;
server.maxRequestsPerSocket = 0;

server.listen(port, '127.0.0.1', () => {
  const addr = server.address();
  process.stdout.write(JSON.stringify({ listening: `${addr.address}:${addr.port}` }) + '\n');
});

for (const sig of ['SIGTERM', 'SIGINT']) {
  process.on(sig, () => {
    server.close();
    process.exit(0);
  });
}
