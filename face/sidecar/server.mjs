// trustd's face engine sidecar: @vladmandic/human on the TensorFlow.js wasm
// backend (CPU), served over loopback HTTP to the trustd node.
//
//   FACE_SIDECAR_SECRET=... node face/sidecar/server.mjs --port 7310
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
//                      "eyes_open","ear":[left,right],"descriptor"}]}; the descriptor is
//                      1024 little-endian float32 in base64; angles in degrees,
//                      positive yaw = the person turned to their left (see DESIGN.md).
//
// No network: models and the wasm binary are read from node_modules on disk
// (a tfjs load router for file:// replaces fetch), and global fetch is
// replaced by a function that refuses, so an unexpected download fails
// loudly instead of leaving the machine.

import http from 'node:http';
import fs from 'node:fs';
import path from 'node:path';
import crypto from 'node:crypto';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const require = createRequire(import.meta.url);

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

// The largest image decoded, and the longest side the model sees: larger
// images are scaled down before detection (boxes are reported in the
// pixels of the image sent).
const maxPixels = 24e6;
const maxSide = 1280;

const jpeg = require('jpeg-js');
const { PNG } = require('pngjs');
// The package's exports map lacks "./" on its subpaths, so the wasm build is
// required by its absolute path.
const humanDir = path.dirname(path.dirname(require.resolve('@vladmandic/human')));
const { Human } = require(path.join(humanDir, 'dist', 'human.node-wasm.js'));
const wasmDir = path.join(path.dirname(require.resolve('@tensorflow/tfjs-backend-wasm/package.json')), 'dist') + path.sep;
const modelDir = path.join(humanDir, 'models');
const humanVersion = JSON.parse(fs.readFileSync(path.join(humanDir, 'package.json'), 'utf8')).version;

const human = new Human({
  backend: 'wasm',
  wasmPath: wasmDir,
  modelBasePath: 'file://' + modelDir + '/',
  cacheModels: false,
  warmup: 'none',
  debug: false,
  async: true,
  filter: { enabled: false },
  gesture: { enabled: false },
  body: { enabled: false },
  hand: { enabled: false },
  object: { enabled: false },
  segmentation: { enabled: false },
  face: {
    enabled: true,
    detector: { enabled: true, rotation: true, maxDetected: 4, minConfidence: 0.3, iouThreshold: 0.1, skipFrames: 0, skipTime: 0, return: false },
    mesh: { enabled: true },
    attention: { enabled: false },
    iris: { enabled: true, skipFrames: 0, skipTime: 0 },
    description: { enabled: true, skipFrames: 0, skipTime: 0, minConfidence: 0 },
    emotion: { enabled: false },
    antispoof: { enabled: false },
    liveness: { enabled: false },
    gear: { enabled: false },
  },
});
const tf = human.tf;

// Models are read from disk through a tfjs load router for file:// URLs
// (the wasm build would otherwise try fetch, which cannot read files).
tf.io.registerLoadRouter((url) => {
  const u = Array.isArray(url) ? url[0] : url;
  if (typeof u !== 'string' || !u.startsWith('file://')) return null;
  const file = path.resolve(u.slice('file://'.length));
  if (!file.startsWith(modelDir + path.sep)) return null;
  return {
    async load() {
      const json = JSON.parse(await fs.promises.readFile(file, 'utf8'));
      const specs = [];
      const buffers = [];
      for (const group of json.weightsManifest || []) {
        specs.push(...group.weights);
        for (const p of group.paths) buffers.push(await fs.promises.readFile(path.join(path.dirname(file), p)));
      }
      const all = Buffer.concat(buffers);
      return {
        modelTopology: json.modelTopology,
        format: json.format,
        generatedBy: json.generatedBy,
        convertedBy: json.convertedBy,
        signature: json.signature,
        userDefinedMetadata: json.userDefinedMetadata,
        weightSpecs: specs,
        weightData: all.buffer.slice(all.byteOffset, all.byteOffset + all.byteLength),
      };
    },
  };
});

// Eye aspect ratio (Soukupová and Čech 2016) from the face mesh, with the
// eyelid points refined by the iris model: (|p2-p6| + |p3-p5|) / (2 |p1-p4|).
// MediaPipe mesh indices; "left" is the person's left eye.
const eyeIdx = {
  left: [362, 385, 387, 263, 373, 380],
  right: [33, 160, 158, 133, 153, 144],
};
function dist(a, b) { return Math.hypot(a[0] - b[0], a[1] - b[1]); }
function ear(mesh, idx) {
  const p = idx.map((i) => mesh[i]);
  if (p.some((q) => !q)) return -1;
  const w = dist(p[0], p[3]);
  if (w <= 0) return -1;
  return (dist(p[1], p[5]) + dist(p[2], p[4])) / (2 * w);
}
// An open eye measures about 0.28 and a closed one under 0.12 on this mesh
// (see DESIGN.md); eyes_open maps the mean ratio linearly onto 0..1.
const earOpen = 0.28;
const earClosed = 0.10;

// human's own blink gesture measure: the vertical eyelid gap over the
// height of the eye region (374/386 and 443/450 for the left eye, 145/159
// and 223/230 for the right); human calls an eye blinking under 0.2.
function lid(mesh, a, b, c, d) {
  if (!mesh[a] || !mesh[b] || !mesh[c] || !mesh[d]) return -1;
  const h = Math.abs(mesh[c][1] - mesh[d][1]);
  return h > 0 ? Math.abs(mesh[a][1] - mesh[b][1]) / h : -1;
}

function decode(buf) {
  if (buf.length >= 3 && buf[0] === 0xff && buf[1] === 0xd8 && buf[2] === 0xff) {
    const img = jpeg.decode(buf, { useTArray: true, formatAsRGBA: false, maxResolutionInMP: maxPixels / 1e6, maxMemoryUsageInMB: 256, tolerantDecoding: false });
    return { width: img.width, height: img.height, channels: 3, data: img.data };
  }
  if (buf.length >= 24 && buf.readUInt32BE(0) === 0x89504e47 && buf.readUInt32BE(4) === 0x0d0a1a0a) {
    const w = buf.readUInt32BE(16);
    const h = buf.readUInt32BE(20);
    if (w === 0 || h === 0 || w * h > maxPixels) throw new BadImage('image too large');
    const img = PNG.sync.read(buf);
    return { width: img.width, height: img.height, channels: 4, data: img.data };
  }
  throw new BadImage('not a JPEG or PNG image');
}

class BadImage extends Error {}

function b64f32(arr) {
  const f = Float32Array.from(arr);
  return Buffer.from(f.buffer).toString('base64');
}

const deg = (r) => (Number.isFinite(r) ? (r * 180) / Math.PI : 0);
const round = (v, n = 4) => Math.round(v * 10 ** n) / 10 ** n;

async function analyze(buf) {
  const t0 = performance.now();
  let img;
  try {
    img = decode(buf);
  } catch (err) {
    throw err instanceof BadImage ? err : new BadImage(String(err && err.message));
  }
  if (img.width * img.height > maxPixels) throw new BadImage('image too large');
  let scale = 1;
  const tensor = tf.tidy(() => {
    let t = tf.tensor3d(img.data, [img.height, img.width, img.channels], 'int32');
    if (img.channels === 4) t = tf.slice(t, [0, 0, 0], [-1, -1, 3]);
    t = tf.cast(t, 'float32');
    const side = Math.max(img.width, img.height);
    if (side > maxSide) {
      scale = side / maxSide;
      t = tf.image.resizeBilinear(t, [Math.round(img.height / scale), Math.round(img.width / scale)]);
    }
    return tf.expandDims(t, 0);
  });
  let res;
  try {
    res = await human.detect(tensor);
  } finally {
    tf.dispose(tensor);
  }
  if (res.error) throw new Error(res.error);
  const faces = [];
  for (const f of res.face || []) {
    const mesh = f.mesh || [];
    const l = ear(mesh, eyeIdx.left);
    const r = ear(mesh, eyeIdx.right);
    let open = -1;
    if (l >= 0 && r >= 0) open = Math.min(1, Math.max(0, ((l + r) / 2 - earClosed) / (earOpen - earClosed)));
    const a = f.rotation?.angle || {};
    faces.push({
      box: (f.box || [0, 0, 0, 0]).map((v) => Math.round(v * scale)),
      score: round(f.score ?? 0),
      // human's yaw is positive when the face turns towards the image's
      // left, i.e. the person's right; trustd's convention is the person's
      // left, so the sign is flipped here (measured, see DESIGN.md).
      yaw: round(-deg(a.yaw), 2),
      pitch: round(deg(a.pitch), 2),
      roll: round(deg(a.roll), 2),
      eyes_open: round(open),
      ear: [round(l), round(r)],
      lid: [round(lid(mesh, 374, 386, 443, 450)), round(lid(mesh, 145, 159, 223, 230))],
      descriptor: f.embedding && f.embedding.length ? b64f32(f.embedding) : '',
    });
  }
  faces.sort((x, y) => y.score - x.score || y.box[2] * y.box[3] - x.box[2] * x.box[3]);
  return { width: img.width, height: img.height, ms: Math.round(performance.now() - t0), faces };
}

// One analysis at a time (the wasm backend runs on one thread); up to
// maxQueue more wait, and the rest are refused with 503 at once.
let running = false;
const waiting = [];
function schedule(fn) {
  return new Promise((resolve, reject) => {
    const job = () => {
      running = true;
      fn().then(resolve, reject).finally(() => {
        running = false;
        const next = waiting.shift();
        if (next) next();
      });
    };
    if (!running) job();
    else if (waiting.length < maxQueue) waiting.push(job);
    else reject(new Busy());
  });
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

let ready = false;

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
    schedule(() => analyze(buf)).then(
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

server.listen(port, '127.0.0.1', async () => {
  const addr = server.address();
  process.stdout.write(JSON.stringify({ listening: `${addr.address}:${addr.port}` }) + '\n');
  try {
    const t0 = performance.now();
    await human.load();
    // Warm up on a plain grey image so the first real request is not slowed
    // by kernel compilation.
    const t = tf.fill([1, 256, 256, 3], 128, 'float32');
    await human.detect(t);
    tf.dispose(t);
    ready = true;
    process.stdout.write(JSON.stringify({ ready: true, human: humanVersion, tfjs: tf.version_core, backend: tf.getBackend(), load_ms: Math.round(performance.now() - t0) }) + '\n');
  } catch (err) {
    console.error('face sidecar: loading the models failed:', err && err.message);
    process.exit(1);
  }
});

for (const sig of ['SIGTERM', 'SIGINT']) {
  process.on(sig, () => {
    server.close();
    process.exit(0);
  });
}
