// posewire capture page: a webcam in a browser tab is a producer (spec §7.5).
//
// camera (getUserMedia) -> the frame, un-mirrored when the camera sends mirrored frames
// (spec §2.2) -> MediaPipe in the page: Holistic (pose 33 + world landmarks, both hands,
// labelled by the pose) and the Tasks FaceLandmarker (52 blendshapes, facial transformation
// matrix), the same route as the Python producer (producers/mediapipe_source.py) ->
// js/posewire/encoder.mjs (the Python encoder's maths, pinned by the kit, spec §6.10) with the
// live calibration and the One-Euro filter (js/posewire/live.mjs) -> js/posewire/client.mjs
// Publisher to the relay (with the token when the relay needs one).
//
// Every asset comes from the posewire server that served this page (wasm, graph and models
// from js/node_modules and the sha256-checked model cache); nothing from a CDN.

import { FilesetResolver, FaceLandmarker } from '/node_modules/@mediapipe/tasks-vision/vision_bundle.mjs';
import { encodeFrame, makeCalibration, headFromRotation, TRACKING_PARTS } from '/js/posewire/encoder.mjs';
import { LiveCalibration, VectorFilter, VisibilityHold, faceRotation, frameFromResults, handScale, irisGaze }
  from '/js/posewire/live.mjs';
import { Publisher } from '/js/posewire/client.mjs';
import { REGISTRY } from '/js/posewire/codec.mjs';
import { watchLink } from '/js/viewer/problems.mjs';

const $ = (id) => document.getElementById(id);
const col = (id) => REGISTRY.dimensions.find((d) => d.id === id).index;
const HEAD_COLS = ['h_yaw', 'h_pitch', 'h_roll'].map(col);
const GAZE_COLS = ['f_gaze_yaw', 'f_gaze_pitch'].map(col);
const view = $('view');
const ctx = view.getContext('2d');
const statusLine = $('status');
const work = document.createElement('canvas'); // the frame MediaPipe sees (un-mirrored)
const wctx = work.getContext('2d', { willReadFrequently: new URLSearchParams(location.search).get('record') === '1' });

// what the page did, for tests and curious users (window.posewireCapture)
const state = {
  started: false, frames: 0, published: 0, errors: [], relayErrors: [], last: null, calibration: null,
  stats: { fps: 0, inference_ms: 0, holistic_ms: 0, face_ms: 0, encode_us: 0, bytes_per_s: 0, tracked: [] },
  history: [],
};
window.posewireCapture = state;
window.addEventListener('error', (e) => state.errors.push(String(e.message)));
window.addEventListener('unhandledrejection', (e) => state.errors.push(String(e.reason)));

const config = await (await fetch('/config.json')).json();
$('avatar').src = '/';
const params = new URLSearchParams(location.search);
if (params.has('mirrored')) $('mirrored').checked = params.get('mirrored') === '1';

const record = params.get('record') === '1';
/** The frame MediaPipe saw as 16 × 12 grey levels, each the mean of its cell (which clip frame
 * a recorded frame showed). */
function thumbnail() {
  const { width: w, height: h } = work;
  const d = wctx.getImageData(0, 0, w, h).data;
  const sums = new Float64Array(16 * 12); const counts = new Float64Array(16 * 12);
  for (let y = 0; y < h; y += 1) {
    const row = Math.min(11, Math.floor((12 * y) / h));
    for (let x = 0; x < w; x += 1) {
      const i = 4 * (y * w + x); const cell = 16 * row + Math.min(15, Math.floor((16 * x) / w));
      sums[cell] += (d[i] + d[i + 1] + d[i + 2]) / 3; counts[cell] += 1;
    }
  }
  return Array.from(sums, (s, k) => s / counts[k]);
}
/** FNV-1a (32 bit) of the frame MediaPipe saw, RGBA bytes: whether two recorded frames were the
 * very same pixels (the thumbnail cannot tell a grey level). */
function pixelDigest() {
  const d = wctx.getImageData(0, 0, work.width, work.height).data;
  let h = 0x811c9dc5;
  for (let i = 0; i < d.length; i += 1) h = Math.imul(h ^ d[i], 0x01000193);
  return h >>> 0;
}

function status(text) { statusLine.textContent = text; if (params.has('debug')) console.log(text); }

// a refused origin, a wrong token, a taken stream, a relay that is down: said in the page with
// the fix; asked of the page's server at once, before the camera starts
const link = watchLink({ relay: config.relay, origin: location.origin, stream: config.stream, capture: true });
link.precheck();

async function loadModels() {
  status('loading MediaPipe (Holistic, FaceLandmarker)…');
  // Holistic lives in a hidden same-origin frame: its emscripten global `Module` and the
  // FaceLandmarker's would collide in one window
  const frame = $('holistic');
  if (!frame.contentWindow?.Holistic) await new Promise((r) => frame.addEventListener('load', r, { once: true }));
  const holistic = new frame.contentWindow.Holistic({ locateFile: (f) => `/node_modules/@mediapipe/holistic/${f}` });
  // useCpuInference: the models run on the CPU (XNNPACK wasm) as the Python producer's; the GL
  // path is far slower on a software GPU and no faster on most laptops' integrated ones
  holistic.setOptions({ modelComplexity: 1, smoothLandmarks: true, refineFaceLandmarks: false,
    enableSegmentation: false, useCpuInference: params.get('gpu') !== '1' });
  let latest = null;
  holistic.onResults((r) => { latest = r; });
  status('initializing Holistic…');
  await holistic.initialize();
  status('loading FaceLandmarker…');
  const fileset = await FilesetResolver.forVisionTasks('/node_modules/@mediapipe/tasks-vision/wasm');
  const face = await FaceLandmarker.createFromOptions(fileset, {
    baseOptions: { modelAssetPath: '/models/face_landmarker.task', delegate: 'CPU' },
    runningMode: 'VIDEO', numFaces: 1, outputFaceBlendshapes: true, outputFacialTransformationMatrixes: true,
  });
  // the second pass on a crop around Holistic's face (producers/mediapipe_source.py): the
  // FaceLandmarker's face detector is short-range, a face small in the frame is not found
  const faceCrop = await FaceLandmarker.createFromOptions(fileset, {
    baseOptions: { modelAssetPath: '/models/face_landmarker.task', delegate: 'CPU' },
    runningMode: 'IMAGE', numFaces: 1, outputFaceBlendshapes: true, outputFacialTransformationMatrixes: true,
  });
  const crop = document.createElement('canvas');
  return {
    close() { face.close(); faceCrop.close(); holistic.close(); },
    async holistic(image) { latest = null; await holistic.send({ image }); return latest; },
    face(image, ts, mesh) {
      const found = face.detectForVideo(image, ts);
      const box = found.faceLandmarks?.length || !mesh ? null : faceCropBox(mesh, image.width, image.height);
      if (box === null) return found;
      const [x0, y0, x1, y1] = box;
      crop.width = x1 - x0; crop.height = y1 - y0;
      crop.getContext('2d').drawImage(image, x0, y0, x1 - x0, y1 - y0, 0, 0, x1 - x0, y1 - y0);
      const got = faceCrop.detect(crop);
      // the mesh back into the frame, depth included (z is in units of the crop's width, as x
      // is): the Python producer's face crop does the same (spec §7.5); blendshapes and the
      // rotation need nothing
      got.faceLandmarks = got.faceLandmarks.map((m) => m.map((p) => ({ ...p,
        x: (x0 + p.x * (x1 - x0)) / image.width, y: (y0 + p.y * (y1 - y0)) / image.height,
        z: p.z * (x1 - x0) / image.width })));
      return got;
    },
  };
}

const FACE_CROP_SCALE = 3.0;
const FACE_CROP_MAX_SHARE = 0.6;
/** The square crop around Holistic's face mesh (normalized points), or null when it would gain
 * nothing (mediapipe_source._face_crop). */
function faceCropBox(mesh, width, height) {
  const xs = mesh.map((p) => p.x * width); const ys = mesh.map((p) => p.y * height);
  const lo = [Math.min(...xs), Math.min(...ys)]; const hi = [Math.max(...xs), Math.max(...ys)];
  const half = 0.5 * FACE_CROP_SCALE * Math.max(hi[0] - lo[0], hi[1] - lo[1]);
  const cx = 0.5 * (lo[0] + hi[0]); const cy = 0.5 * (lo[1] + hi[1]);
  const x0 = Math.max(0, Math.trunc(cx - half)); const y0 = Math.max(0, Math.trunc(cy - half));
  const x1 = Math.min(width, Math.ceil(cx + half)); const y1 = Math.min(height, Math.ceil(cy + half));
  if (x1 - x0 < 8 || y1 - y0 < 8 || (x1 - x0) * (y1 - y0) > FACE_CROP_MAX_SHARE * width * height) return null;
  return [x0, y0, x1, y1];
}

const BONES = [[11, 12], [11, 13], [13, 15], [12, 14], [14, 16], [11, 23], [12, 24], [23, 24]];
const HAND = [[0, 1], [1, 2], [2, 3], [3, 4], [0, 5], [5, 6], [6, 7], [7, 8], [5, 9], [9, 10], [10, 11], [11, 12],
  [9, 13], [13, 14], [14, 15], [15, 16], [13, 17], [17, 18], [18, 19], [19, 20], [0, 17]];
function draw(results, face) {
  ctx.drawImage(work, 0, 0, view.width, view.height);
  const line = (pts, pairs, color) => {
    ctx.strokeStyle = color; ctx.lineWidth = 2; ctx.beginPath();
    for (const [a, b] of pairs) {
      if (!pts[a] || !pts[b]) continue;
      ctx.moveTo(pts[a].x * view.width, pts[a].y * view.height);
      ctx.lineTo(pts[b].x * view.width, pts[b].y * view.height);
    }
    ctx.stroke();
    ctx.fillStyle = color;
    for (const p of pts) ctx.fillRect(p.x * view.width - 2, p.y * view.height - 2, 4, 4);
  };
  if (results?.poseLandmarks) line(results.poseLandmarks.filter((_, i) => i <= 24), BONES, '#58a6ff');
  if (results?.leftHandLandmarks) line(results.leftHandLandmarks, HAND, '#e0a040');
  if (results?.rightHandLandmarks) line(results.rightHandLandmarks, HAND, '#7ee787');
  const mesh = face?.faceLandmarks?.[0];
  if (mesh) {
    ctx.fillStyle = '#f0f0f0';
    for (let i = 0; i < mesh.length; i += 4) ctx.fillRect(mesh[i].x * view.width, mesh[i].y * view.height, 1.5, 1.5);
  }
}

async function start() {
  if (state.started) return;
  state.started = true;
  $('start').disabled = true;
  const video = document.createElement('video');
  video.muted = true;
  video.playsInline = true;
  try {
    video.srcObject = await navigator.mediaDevices.getUserMedia({ video: { width: 640, height: 480 }, audio: false });
  } catch (e) {
    status(`no camera: ${e.name}: ${e.message}`);
    state.errors.push(`camera: ${e.message}`);
    state.started = false;
    $('start').disabled = false;
    return;
  }
  await video.play();
  // the relay first: a refused token or a taken stream shows before the models' long load
  // (whose warm-up blocks the page: the hello has left by then, spec §5.8 hello deadline)
  const pub = new Publisher(config.relay, config.stream, {
    token: config.token, registryVersion: config.registry_version, registryHash: config.registry_hash,
    client: 'posewire-capture', onStatus: (t) => { state.relay = t; if (params.has('debug')) console.log(t); },
    onError: (e) => state.relayErrors.push(`${e.code}: ${e.message}`),
    onWelcome: link.onWelcome, onClose: link.onClose,
  }).start();
  status('connecting to the relay…');
  if (!(await pub.whenReady(3000))) status(`the relay at ${config.relay} has not welcomed this page yet (retrying)`);
  const models = await loadModels();
  const live = new LiveCalibration();
  const smoothing = new VectorFilter();
  const visibilityHold = new VisibilityHold();
  let cal = makeCalibration(null); // the reference avatar's until a body is seen (producers/live.py)
  const times = [];
  const encodeTimes = [];
  let lastVideoTime = -1;
  let bytesMark = { t: performance.now(), bytes: 0 };

  let stopped = null;
  /** Stop the camera loop and close MediaPipe (the tasks flush whatever they hold on close). */
  state.stop = () => new Promise((resolve) => { stopped = resolve; });
  for (;;) {
    if (stopped) {
      models.close();
      pub.close();
      for (const track of video.srcObject.getTracks()) track.stop();
      status('stopped');
      stopped();
      return;
    }
    // yield to the event loop every frame: MediaPipe resolves in microtasks, which would
    // starve the relay's websocket events and the page's timers
    await new Promise((r) => setTimeout(r, 0));
    if (video.currentTime === lastVideoTime) { await new Promise((r) => requestAnimationFrame(r)); continue; }
    lastVideoTime = video.currentTime;
    const w = video.videoWidth; const h = video.videoHeight;
    if (work.width !== w || work.height !== h) { work.width = w; work.height = h; view.width = w; view.height = h; }
    // spec §2.2: un-mirror before anything sees the image
    wctx.setTransform($('mirrored').checked ? -1 : 1, 0, 0, 1, $('mirrored').checked ? w : 0, 0);
    wctx.drawImage(video, 0, 0, w, h);
    const t0 = performance.now();
    let results; let face;
    try {
      results = await models.holistic(work);
      var t1 = performance.now(); // eslint-disable-line no-var
      face = models.face(work, t1, results?.faceLandmarks);
    } catch (e) {
      state.errors.push(`mediapipe: ${e.message}`);
      status(`MediaPipe failed: ${e.message}`);
      return;
    }
    const t2 = performance.now();
    const frame = frameFromResults(results, face, w, h);
    const seen = frame.pose_visibility; // what the pose model gave (recorded)
    frame.pose_visibility = visibilityHold.apply(seen, frame.pose_in_frame); // spec §7.3 "Visibility hysteresis"
    const e0 = performance.now();
    const gainBefore = live.handDepthGain;
    const changed = live.update(frame, handScale(results, w, h));
    if (changed) { pub.sendCalibration(changed); state.calibration = changed; }
    if (changed || live.handDepthGain !== gainBefore) {
      // ?depthgain=off keeps the depth as given (gain 1): a still image gives the rigidity fit
      // of spec §4.3 nothing but jitter to fit
      state.handDepthGain = params.get('depthgain') === 'off' ? { l: 1.0, r: 1.0 } : live.handDepthGain;
      cal = makeCalibration(live.current, state.handDepthGain);
    }
    const enc = encodeFrame(frame, cal, { visibilityThreshold: 0.5 });
    const rot = faceRotation(face);
    if (rot !== null && enc.tracking.head !== 'tracked') { // no body frame: the head relative to the camera (§4.4)
      const [n] = headFromRotation(rot);
      HEAD_COLS.forEach((col, k) => { enc.vector[col] = n[k]; });
      enc.tracking.head = 'tracked';
    }
    if (enc.tracking.head === 'not_estimated') enc.tracking.head = 'lost'; // the face model ran and saw no face
    const mesh = face?.faceLandmarks?.[0];
    if (rot !== null && mesh?.length === 478) { // spec §7.3: the gaze yaw from the irises (producers/live.py)
      const [[gYaw, gPitch], clipped] = irisGaze(mesh, w, h, rot);
      const pitchFromBlendshapes = frame.blendshapes != null && Number.isFinite(enc.vector[GAZE_COLS[1]]);
      if (Number.isFinite(gYaw) && (pitchFromBlendshapes || Number.isFinite(gPitch))) {
        enc.vector[GAZE_COLS[0]] = gYaw;
        if (!pitchFromBlendshapes) enc.vector[GAZE_COLS[1]] = gPitch;
        if (clipped) enc.clamped['f_gaze_* (eye angle beyond max)'] = 1;
      }
    }
    const vec = $('smooth').checked ? smoothing.apply(t0 / 1000, enc.vector) : enc.vector;
    const e1 = performance.now();
    const notTracked = Object.fromEntries(TRACKING_PARTS.filter((p) => enc.tracking[p] !== 'tracked')
      .map((p) => [p, enc.tracking[p]]));
    if (pub.sendFrame(vec, notTracked, Math.round(performance.timeOrigin * 1000 + t0 * 1000))) state.published += 1;
    draw(results, face);

    // status line: fps, inference ms, encode µs, tracked parts, bytes/s
    state.frames += 1;
    times.push(t2); while (times.length > 1 && times[0] < t2 - 2000) times.shift();
    encodeTimes.push(e1 - e0); if (encodeTimes.length > 60) encodeTimes.shift();
    const now = performance.now();
    if (now - bytesMark.t >= 1000) {
      state.stats.bytes_per_s = (pub.bytes - bytesMark.bytes) * 1000 / (now - bytesMark.t);
      bytesMark = { t: now, bytes: pub.bytes };
    }
    const tracked = TRACKING_PARTS.filter((p) => enc.tracking[p] === 'tracked');
    Object.assign(state.stats, {
      fps: times.length > 1 ? (times.length - 1) * 1000 / (times[times.length - 1] - times[0]) : 0,
      inference_ms: t2 - t0, holistic_ms: t1 - t0, face_ms: t2 - t1,
      encode_us: 1000 * encodeTimes.reduce((a, b) => a + b, 0) / encodeTimes.length, tracked,
    });
    state.last = { vector: Array.from(vec, (x) => (Number.isFinite(x) ? x : null)),
      raw: Array.from(enc.vector, (x) => (Number.isFinite(x) ? x : null)), tracking: enc.tracking,
      clamped: enc.clamped, degenerate: enc.degenerate, frame };
    if (record) { // ?record=1: each frame's inputs and outputs, for tests/test_capture_agreement.py
      state.history.push({ t: t0, vector: state.last.vector, raw: state.last.raw, tracking: enc.tracking,
        frame, visibility_seen: seen, pose_image: results?.poseLandmarks?.map((p) => [p.x, p.y, p.z]) ?? null,
        face_mesh: mesh ? mesh.map((p) => [p.x, p.y, p.z]) : null,
        face_matrix: face?.facialTransformationMatrixes?.[0]?.data ? Array.from(face.facialTransformationMatrixes[0].data) : null,
        thumb: thumbnail(), digest: pixelDigest() });
      if (state.pixels === undefined) state.pixels = work.toDataURL('image/png'); // the pixels MediaPipe saw
    }
    const s = state.stats;
    status(`${s.fps.toFixed(1)} fps · inference ${s.inference_ms.toFixed(0)} ms (holistic ${s.holistic_ms.toFixed(0)}, `
      + `face ${s.face_ms.toFixed(0)}) · encode ${s.encode_us.toFixed(0)} µs · tracked: ${tracked.join(' ') || 'nothing'}`
      + ` · ${(s.bytes_per_s / 1000).toFixed(1)} kB/s · ${state.relay ?? 'connecting to the relay…'}`
      + `${cal.fallback_axes.length ? ` · calibration fallback ${cal.fallback_axes.join('')}` : ''}`);
  }
}

$('start').addEventListener('click', start);
if (params.get('autostart') === '1') start();
