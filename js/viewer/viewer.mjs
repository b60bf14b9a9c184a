// posewire live viewer: subscribes to a relay stream, decodes every frame in the browser
// with the JavaScript client (js/posewire/) and poses the skinned mannequin-x wooden
// mannequin with three.js; a dropped .vrm is decoded on its own skeleton and driven too
// (@pixiv/three-vrm humanoid bones and expressions). Lost parts ease to their defaults.
//
// The mannequin's head carries a procedural face (face.mjs) driven by the same decoded
// weights as the side panel; a face inset (top right of the stage) shows it close up.
//
// For tests and tools the page exposes window.posewire: {ready, seq, frames, readBones(),
// faceRig(), faceInset()} where readBones() reads the bone quaternions back from the three.js
// scene graph and faceRig() the face's morph influences and eye turns.

import * as THREE from 'three';
import { GLTFLoader } from 'three/addons/loaders/GLTFLoader.js';
import { OrbitControls } from 'three/addons/controls/OrbitControls.js';
import { VRMLoaderPlugin, VRMUtils } from '@pixiv/three-vrm';
import { DIMS, N, VISEMES, ARKIT_ORDER, TRACK_PARTS } from '../posewire/codec.mjs';
import { skeletonFromWorld, decodePlan, decodePose, faceWeights, DEFAULTS } from '../posewire/decoder.mjs';
import { Subscriber } from '../posewire/client.mjs';
import { watchLink } from './problems.mjs';
import { buildFace } from './face.mjs';

/** Seconds for a lost part to ease (1 − 1/e of the way) to its defaults. */
const EASE_TAU = 0.25;
/** Seconds of the stream (frame timestamps) a lost part holds its last pose before it eases
 * (spec §3.4.2 "hold or ease"): a wrist the camera misses for a few frames does not drop the
 * arm. Stream time, not the page's: a slow renderer holds as long as a fast one; a stream
 * that stops while a part is lost still eases it after HOLD_S of the page's time. */
const HOLD_S = 0.4;
const lostSince = {}; // part -> { streamUs, pageS } when it was first lost
const params = new URLSearchParams(location.search);
const $ = (id) => document.getElementById(id);

const config = await (await fetch('/config.json')).json();
const avatar = await (await fetch('/avatar/skeleton.json')).json();
const plan = decodePlan(skeletonFromWorld(avatar));

// ---------------------------------------------------------------- scene
const stage = $('stage');
const renderer = new THREE.WebGLRenderer({ antialias: true, preserveDrawingBuffer: true });
renderer.setPixelRatio(Math.min(devicePixelRatio, 2));
renderer.outputColorSpace = THREE.SRGBColorSpace;
stage.appendChild(renderer.domElement);
const scene = new THREE.Scene();
scene.background = new THREE.Color(0x2b3138);
const camera = new THREE.PerspectiveCamera(35, 1, 0.05, 50);
camera.position.set(0, 1.25, 3.6);
const controls = new OrbitControls(camera, renderer.domElement);
controls.target.set(0, 1.05, 0);
controls.update();
scene.add(new THREE.HemisphereLight(0xf4f1ea, 0x3a3f46, 1.6));
const key = new THREE.DirectionalLight(0xffffff, 2.2);
key.position.set(1.5, 3, 2.5);
scene.add(key);
const grid = new THREE.GridHelper(6, 24, 0x59626c, 0x3c434b);
scene.add(grid);

function resize() {
  const w = stage.clientWidth;
  const h = stage.clientHeight;
  renderer.setSize(w, h, false);
  camera.aspect = w / Math.max(h, 1);
  camera.updateProjectionMatrix();
}
addEventListener('resize', resize);
resize();

// ---------------------------------------------------------------- mannequin
const loader = new GLTFLoader();
loader.register((parser) => new VRMLoaderPlugin(parser));
const gltf = await loader.loadAsync('/avatar/mannequin.glb');
const mannequin = gltf.scene;
mannequin.traverse((o) => {
  if (o.isMesh) {
    o.material = new THREE.MeshStandardMaterial({ color: 0xc8a27a, roughness: 0.65, metalness: 0.0 });
    o.frustumCulled = false;
  }
});
scene.add(mannequin);
// joint j of the decoder's skeleton -> three.js bone of the same (avatar) name
const bones = avatar.avatar_names.map((name) => mannequin.getObjectByName(name) ?? null);
// the face, laid on the head mesh at its rest pose and bound to the head bone
let skinnedMesh = null;
mannequin.traverse((o) => { if (o.isSkinnedMesh && !skinnedMesh) skinnedMesh = o; });
const headBone = bones[avatar.names.indexOf('head')] ?? null;
const faceRig = skinnedMesh && headBone ? buildFace(skinnedMesh, headBone) : null;

// ---------------------------------------------------------------- VRM (dropped file)
const VRM_BONES = { pelvis: 'hips', spine_01: 'spine', spine_03: 'chest', spine_05: 'upperChest',
  neck_01: 'neck', head: 'head' };
for (const [s, side] of [['l', 'left'], ['r', 'right']]) {
  Object.assign(VRM_BONES, { [`clavicle_${s}`]: `${side}Shoulder`, [`upperarm_${s}`]: `${side}UpperArm`,
    [`lowerarm_${s}`]: `${side}LowerArm`, [`hand_${s}`]: `${side}Hand`, [`thigh_${s}`]: `${side}UpperLeg`,
    [`calf_${s}`]: `${side}LowerLeg`, [`foot_${s}`]: `${side}Foot`, [`ball_${s}`]: `${side}Toes` });
  const segs = { thumb: ['Metacarpal', 'Proximal', 'Distal'], index: ['Proximal', 'Intermediate', 'Distal'] };
  for (const f of ['thumb', 'index', 'middle', 'ring', 'little']) {
    const names = segs[f] ?? segs.index;
    const canon = f === 'little' ? 'pinky' : f;
    names.forEach((seg, k) => {
      VRM_BONES[`${canon}_0${k + 1}_${s}`] = `${side}${f[0].toUpperCase()}${f.slice(1)}${seg}`;
    });
  }
}
// ARKit-named expressions are used directly when a VRM has them (perfect sync);
// otherwise these presets are driven.
const VRM_VOWELS = { aa: 'aa', I: 'ih', U: 'ou', E: 'ee', O: 'oh' };
const VOWEL_FOLD = { PP: 'U', FF: 'I', TH: 'E', DD: 'E', kk: 'aa', CH: 'I', SS: 'I', nn: 'E', RR: 'O',
  aa: 'aa', E: 'E', I: 'I', O: 'O', U: 'U' }; // posewire.consumers.face.VOWEL_FOLD (vowel5 rung)
let vrmState = null;

function vrmSkeleton(vrm) {
  // the VRM's normalized humanoid (T-pose, world-aligned bind frames) in canonical names,
  // a root added at the origin; sites middle_tip_* extrapolated from the distal segment
  vrm.scene.updateMatrixWorld(true);
  const names = ['root'];
  const parents = [-1];
  const positions = [[0, 0, 0]];
  const nodes = [null];
  const byNode = new Map();
  const canonOf = Object.fromEntries(Object.entries(VRM_BONES).map(([c, v]) => [v, c]));
  const order = Object.keys(VRM_BONES).map((c) => [c, vrm.humanoid.getNormalizedBoneNode(VRM_BONES[c])])
    .filter(([, n]) => n);
  // parents first: sort by depth in the scene graph
  const depth = (o) => { let d = 0; for (let p = o.parent; p; p = p.parent) d++; return d; };
  order.sort((a, b) => depth(a[1]) - depth(b[1]));
  for (const [canon, node] of order) {
    let p = node.parent;
    while (p && !byNode.has(p)) p = p.parent;
    byNode.set(node, names.length);
    names.push(canon);
    parents.push(p ? byNode.get(p) : 0);
    positions.push(node.getWorldPosition(new THREE.Vector3()).toArray());
    nodes.push(node);
  }
  const sites = {};
  for (const s of ['l', 'r']) {
    const d = names.indexOf(`middle_03_${s}`);
    const i = names.indexOf(`middle_02_${s}`);
    if (d > 0 && i > 0) {
      const tip = positions[d].map((x, k) => x + 0.8 * (x - positions[i][k]));
      sites[`middle_tip_${s}`] = [`middle_03_${s}`, tip];
    }
  }
  void canonOf;
  const description = { names, parents, positions, sites };
  return { skel: skeletonFromWorld(description), nodes, description };
}

async function loadVrm(file) {
  const url = URL.createObjectURL(file);
  try {
    const got = await loader.loadAsync(url);
    const vrm = got.userData.vrm;
    if (!vrm) throw new Error('not a VRM file');
    VRMUtils.rotateVRM0(vrm);
    if (vrmState) scene.remove(vrmState.vrm.scene);
    const { skel, nodes, description } = vrmSkeleton(vrm);
    vrmState = { vrm, plan: decodePlan(skel), nodes, description, name: file.name };
    needDecode = true;
    // both in view (left of the face inset, where it is shown)
    const cx = insetShown() ? 0.25 : -0.15;
    vrm.scene.position.x = insetShown() ? -0.7 : -0.9;
    mannequin.position.x = insetShown() ? 0.4 : 0.6;
    scene.add(vrm.scene);
    camera.position.set(cx, 1.3, 4.9);
    controls.target.set(cx, 1.05, 0);
    controls.update();
    $('drop').textContent = `${file.name}: driven (${nodes.length - 1} humanoid bones)`;
  } catch (e) {
    $('drop').textContent = `${file.name}: ${e.message}`;
  } finally {
    URL.revokeObjectURL(url);
  }
}
addEventListener('dragover', (e) => { e.preventDefault(); document.body.classList.add('dragging'); });
addEventListener('dragleave', () => document.body.classList.remove('dragging'));
addEventListener('drop', (e) => {
  e.preventDefault();
  document.body.classList.remove('dragging');
  const file = [...(e.dataTransfer?.files ?? [])].find((f) => f.name.toLowerCase().endsWith('.vrm'));
  if (file) loadVrm(file);
});

// ---------------------------------------------------------------- face panel
function bars(el, names, cls) {
  el.innerHTML = '';
  return Object.fromEntries(names.map((n) => {
    const row = document.createElement('div');
    row.className = `bar ${cls}`;
    row.innerHTML = `<span>${n}</span><span class="track"><span class="fill"></span></span><span class="v">0.00</span>`;
    el.appendChild(row);
    return [n, { row, fill: row.querySelector('.fill'), v: row.querySelector('.v') }];
  }));
}
const arkitBars = bars($('arkit'), ARKIT_ORDER, 'arkit');
const visemeBars = bars($('visemes'), VISEMES, 'viseme');
function showBars(set, weights, hideZero) {
  for (const [n, b] of Object.entries(set)) {
    const w = weights[n] ?? 0;
    b.fill.style.width = `${(100 * w).toFixed(1)}%`;
    b.v.textContent = w.toFixed(2);
    if (hideZero) b.row.style.display = w > 0.005 ? '' : 'none';
  }
}

// ---------------------------------------------------------------- stream state
const PART_DIMS = {};
DIMS.forEach((d) => { (PART_DIMS[d.part] ??= []).push(d.index); });
const shown = new Float64Array(N).fill(NaN); // what the avatar shows (eased for lost parts)
let latest = null; // the newest frame not yet applied
let current = null; // the newest frame applied
let lastDecode = null;
let needDecode = true;
const recent = []; // [arrival ms, latency ms, bytes]
let decodeUs = 0;
let statusText = 'connecting…';

const state = {
  ready: false, seq: -1, frames: 0, decoded: 0, status: () => statusText,
  /** {avatar joint name: [w, x, y, z]} read from the three.js bones. */
  readBones() {
    const out = {};
    bones.forEach((b, j) => {
      if (b) out[avatar.avatar_names[j]] = [b.quaternion.w, b.quaternion.x, b.quaternion.y, b.quaternion.z];
    });
    return out;
  },
  face: () => lastDecode?.face ?? null,
  /** The face's morph influences {mesh: {target: w}} and eye turns {l|r: {yaw, pitch}} (rad). */
  faceRig: () => faceRig?.read() ?? null,
  /** The face inset on the canvas: [x0, y0, x1, y1] in CSS pixels; null when not shown. */
  faceInset: () => (insetShown() ? insetRect() : null),
  /** The dropped VRM: its humanoid as decoded (canonical names, rest world positions) and
   * the normalized bones' quaternions {canonical name: [w, x, y, z]}; null without one. */
  vrm() {
    if (!vrmState) return null;
    const bones = {};
    vrmState.nodes.forEach((n, j) => {
      if (n) bones[vrmState.description.names[j]] = [n.quaternion.w, n.quaternion.x, n.quaternion.y, n.quaternion.z];
    });
    return { name: vrmState.name, skeleton: vrmState.description, bones };
  },
  /** The mannequin's bounds projected on the canvas: [x0, y0, x1, y1] in CSS pixels. */
  screenBox() {
    const box = new THREE.Box3();
    const v = new THREE.Vector3();
    mannequin.updateMatrixWorld(true);
    bones.forEach((b) => { if (b) box.expandByPoint(b.getWorldPosition(v)); });
    box.expandByScalar(0.12); // the mesh around the joints (head, hands, feet)
    const w = renderer.domElement.clientWidth;
    const h = renderer.domElement.clientHeight;
    let x0 = Infinity; let y0 = Infinity; let x1 = -Infinity; let y1 = -Infinity;
    for (let i = 0; i < 8; i++) {
      v.set(i & 1 ? box.max.x : box.min.x, i & 2 ? box.max.y : box.min.y, i & 4 ? box.max.z : box.min.z).project(camera);
      const x = ((v.x + 1) / 2) * w;
      const y = ((1 - v.y) / 2) * h;
      x0 = Math.min(x0, x); x1 = Math.max(x1, x); y0 = Math.min(y0, y); y1 = Math.max(y1, y);
    }
    return [x0, y0, x1, y1];
  },
};
window.posewire = state;

// a refused origin, a wrong token, a relay that is down: said in the page, with the fix
const relayUrl = params.get('relay') ?? config.relay;
const link = watchLink({ relay: relayUrl, origin: location.origin, stream: params.get('stream') ?? config.stream,
  quiet: window.parent !== window });
const sub = new Subscriber(relayUrl, params.get('stream') ?? config.stream, {
  registryVersion: config.registry_version, registryHash: config.registry_hash, token: config.token,
  client: 'posewire-viewer', onWelcome: link.onWelcome, onClose: link.onClose,
  onStatus: (t) => { statusText = t; },
  onFrame: (f) => {
    latest = f;
    state.frames += 1;
    const now = Date.now();
    recent.push([now, now - f.timestampUs / 1000, f.bytes]);
    while (recent.length && recent[0][0] < now - 1000) recent.shift();
  },
});
sub.start();

function partState(conditions, part) {
  return conditions?.tracking?.[part] ?? 'tracked'; // an absent part is tracked (registry)
}

function step(dt) {
  // apply the newest frame: tracked parts exactly, lost / not estimated parts ease to defaults
  if (latest) {
    current = latest;
    latest = null;
    needDecode = true;
  }
  if (!current) return;
  const k = 1 - Math.exp(-dt / EASE_TAU);
  for (const [part, dims] of Object.entries(PART_DIMS)) {
    const state = partState(current.conditions, part);
    const tracked = state === 'tracked';
    if (state !== 'lost') delete lostSince[part];
    else {
      const since = (lostSince[part] ??= { streamUs: current.timestampUs, pageS: 0 });
      since.pageS += dt;
      const held = (current.timestampUs - since.streamUs) / 1e6 < HOLD_S && since.pageS < HOLD_S + 1.0;
      if (held && dims.every((i) => Number.isFinite(shown[i]))) continue;
    }
    for (const i of dims) {
      if (tracked) {
        if (!Object.is(shown[i], current.values[i])) { shown[i] = current.values[i]; needDecode = true; }
      } else {
        const from = Number.isFinite(shown[i]) ? shown[i] : DEFAULTS[i];
        const to = from + (DEFAULTS[i] - from) * k;
        if (Math.abs(to - DEFAULTS[i]) > 1e-6 ? to !== shown[i] : shown[i] !== DEFAULTS[i]) {
          shown[i] = Math.abs(to - DEFAULTS[i]) > 1e-6 ? to : DEFAULTS[i];
          needDecode = true;
        }
      }
    }
  }
  if (!needDecode) return;
  needDecode = false;
  const t0 = performance.now();
  const pose = decodePose(shown, plan);
  const mouthing = partState(current.conditions, 'mouth') === 'tracked' ? current.conditions?.mouthing ?? null : null;
  const face = faceWeights(shown, mouthing);
  decodeUs = 0.8 * decodeUs + 0.2 * (performance.now() - t0) * 1000;
  pose.local.forEach((q, j) => { if (bones[j]) bones[j].quaternion.set(q[1], q[2], q[3], q[0]); });
  if (vrmState) driveVrm(face);
  faceRig?.apply(face);
  lastDecode = { pose, face, seq: current.seq };
  state.seq = current.seq;
  state.decoded += 1;
  showBars(arkitBars, face.arkit, true);
  showBars(visemeBars, face.visemes, false);
}

function driveVrm(face) {
  const { vrm, plan: vplan, nodes } = vrmState;
  const pose = decodePose(shown, vplan);
  pose.local.forEach((q, j) => { if (nodes[j]) nodes[j].quaternion.set(q[1], q[2], q[3], q[0]); });
  const em = vrm.expressionManager;
  if (!em) return;
  const vowels = { aa: 0, ih: 0, ou: 0, ee: 0, oh: 0 };
  for (const [v, w] of Object.entries(face.visemes)) if (VOWEL_FOLD[v]) vowels[VRM_VOWELS[VOWEL_FOLD[v]]] += w;
  if (!Object.values(vowels).some((w) => w > 0)) vowels.aa = face.arkit.jawOpen ?? 0;
  let perfectSync = false;
  for (const [c, w] of Object.entries(face.arkit)) {
    if (em.getExpression(c)) { em.setValue(c, w); perfectSync = true; }
  }
  if (!perfectSync) {
    for (const [name, w] of Object.entries(vowels)) if (em.getExpression(name)) em.setValue(name, Math.min(1, w));
    if (em.getExpression('blinkLeft')) em.setValue('blinkLeft', face.arkit.eyeBlinkLeft ?? 0);
    if (em.getExpression('blinkRight')) em.setValue('blinkRight', face.arkit.eyeBlinkRight ?? 0);
  }
}

function status() {
  const n = recent.length;
  const lat = recent.map((r) => r[1]).sort((a, b) => a - b);
  const bytes = n ? recent.reduce((a, r) => a + r[2], 0) / n : 0;
  const parts = TRACK_PARTS.filter((p) => partState(current?.conditions, p) === 'tracked');
  const lost = TRACK_PARTS.filter((p) => !parts.includes(p));
  const seq = current ? current.seq : '–';
  $('status').textContent = `${config.stream} · ${statusText} · ${n} fps · latency ${n ? lat[n >> 1].toFixed(1) : '–'} ms`
    + ` · ${bytes.toFixed(0)} B/frame · decode ${decodeUs.toFixed(0)} µs · seq ${seq}`
    + ` · tracked: ${parts.join(' ') || 'none'}${lost.length ? ` · lost/not estimated: ${lost.join(' ')}` : ''}`;
}

// ?focus=hand_l | hand_r: a close-up that follows that hand (its wrist to its middle
// fingertip) from the front, as the camera sees it; orbit controls still turn it
// ?focus=face: the same from the front of the face
const focus = ['hand_l', 'hand_r', 'face'].includes(params.get('focus')) ? params.get('focus') : null;
const focusBone = focus && focus !== 'face' ? bones[avatar.names.indexOf(focus)] ?? null : null;
const focusTip = focusBone ? bones[avatar.names.indexOf(`middle_03_${focus.slice(-1)}`)] ?? null : null;
if (focus) $('drop').style.display = 'none'; // a close-up keeps the whole stage
const focusAt = new THREE.Vector3();
const focusTo = new THREE.Vector3();
function follow() {
  if (!focusBone && !(focus === 'face' && faceRig)) return;
  mannequin.updateMatrixWorld(true);
  if (focusBone) focusBone.getWorldPosition(focusAt);
  else faceRig.centre(focusAt);
  if (focusTip) focusAt.lerp(focusTip.getWorldPosition(focusTo), 0.5);
  const offset = camera.position.clone().sub(controls.target);
  if (!follow.placed) { offset.set(0, 0.02, focus === 'face' ? 0.5 : 0.55); follow.placed = true; }
  controls.target.copy(focusAt);
  camera.position.copy(focusAt).add(offset);
  controls.update();
}

// the face inset: the stage's top right corner shows the face close up from the front,
// following the head (the default framing shows the whole body, too far for the face);
// ?inset=0 turns it off, and a close-up (?focus=) has no need of it
const insetCamera = new THREE.PerspectiveCamera(30, 1, 0.02, 20);
const insetFrame = document.createElement('div');
insetFrame.id = 'face-inset';
stage.appendChild(insetFrame);
const insetShown = () => faceRig !== null && !focus && params.get('inset') !== '0';
function insetRect() {
  const w = renderer.domElement.clientWidth;
  const h = renderer.domElement.clientHeight;
  const size = Math.round(Math.max(120, Math.min(240, 0.38 * Math.min(w, h))));
  return [w - size - 10, 10, w - 10, 10 + size];
}
const insetAt = new THREE.Vector3();
function renderInset() {
  insetFrame.hidden = !insetShown();
  if (!insetShown()) return;
  const [x0, y0, x1, y1] = insetRect();
  const h = renderer.domElement.clientHeight;
  Object.assign(insetFrame.style, { left: `${x0}px`, top: `${y0}px`, width: `${x1 - x0}px`, height: `${y1 - y0}px` });
  mannequin.updateMatrixWorld(true);
  faceRig.centre(insetAt);
  insetCamera.position.set(insetAt.x, insetAt.y + 0.01, insetAt.z + 0.5);
  insetCamera.lookAt(insetAt);
  insetCamera.aspect = 1;
  insetCamera.updateProjectionMatrix();
  renderer.setScissorTest(true);
  renderer.setScissor(x0, h - y1, x1 - x0, y1 - y0);
  renderer.setViewport(x0, h - y1, x1 - x0, y1 - y0);
  renderer.render(scene, insetCamera);
  renderer.setScissorTest(false);
  renderer.setViewport(0, 0, renderer.domElement.clientWidth, h);
}

const clock = new THREE.Clock();
let lastStatus = 0;
renderer.setAnimationLoop(() => {
  const dt = clock.getDelta(); // real elapsed time: easing keeps its pace at any frame rate
  step(dt);
  follow();
  if (vrmState) vrmState.vrm.update(Math.min(dt, 0.1));
  const now = performance.now();
  if (now - lastStatus > 250) { status(); lastStatus = now; }
  renderer.render(scene, camera);
  renderInset();
});
state.ready = true;
