// The face engine's worker thread: decodes images and runs
// @vladmandic/human on the TensorFlow.js wasm backend, so the HTTP thread
// (server.mjs) stays responsive (health, refusals, queue bounds) while an
// analysis runs. Messages: in {id, buf}; out {id, out} or {id, error, bad}
// (bad: the image could not be decoded); once at start {ready, ...} or
// {fatal}.

import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import { parentPort } from 'node:worker_threads';

const require = createRequire(import.meta.url);

globalThis.fetch = async (url) => { throw new Error(`face sidecar: network use refused (${String(url).slice(0, 80)})`); };

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

parentPort.on('message', async ({ id, buf }) => {
  try {
    const out = await analyze(Buffer.from(buf.buffer, buf.byteOffset, buf.byteLength));
    parentPort.postMessage({ id, out });
  } catch (err) {
    parentPort.postMessage({ id, error: String((err && err.message) || err), bad: err instanceof BadImage });
  }
});

try {
  const t0 = performance.now();
  await human.load();
  // Warm up on a plain grey image so the first real request is not slowed
  // by kernel compilation.
  const t = tf.fill([1, 256, 256, 3], 128, 'float32');
  await human.detect(t);
  tf.dispose(t);
  parentPort.postMessage({ ready: true, human: humanVersion, tfjs: tf.version_core, backend: tf.getBackend(), load_ms: Math.round(performance.now() - t0) });
} catch (err) {
  parentPort.postMessage({ fatal: String((err && err.message) || err) });
}
