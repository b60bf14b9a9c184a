// A procedural face for the viewer's mannequin: eyes (eyeballs that turn with the gaze),
// eyelids, brows, a nose and a mouth (lips and mouth interior), laid on the head mesh's
// own front surface and bound to its head bone. Eyelids, brows and mouth are meshes with
// morph targets named after the ARKit channels (spec §4.6), plus a `viseme_X` target on the
// mouth for each viseme the seed table gives a baseline (spec §4.7; today aa and PP): that
// baseline taken through the same channels. faceWeights() sends the mouth dims as the delta
// over that baseline, so baseline target + ARKit targets show the whole mouth; a viseme with
// no baseline is already in the mouth dims (its lips are the producer's), and gets no target
// of its own, which would show it twice. `apply(face)` sets every influence from the decoder's faceWeights() output —
// the values the side panel shows — and turns the eyes from the eyeLook* weights.
//
// Shapes are in metres in the head's rest frame (+x the character's left, +y up, +z out of
// the face).

import * as THREE from 'three';
import { VISEMES, DIMS, N, REGISTRY } from '../posewire/codec.mjs';
import { faceWeights, DEFAULTS } from '../posewire/decoder.mjs';

/** Largest eye turn (radians) at eyeLook* weight 1: yaw (in/out) and pitch (up/down). */
export const GAZE_YAW = THREE.MathUtils.degToRad(32);
export const GAZE_PITCH = THREE.MathUtils.degToRad(24);

const SKIN = 0xc8a27a;
const smooth = (t) => t * t * (3 - 2 * t);

// ---------------------------------------------------------------- head surface
// The head's front as a height map z(x, y): the head-bound triangles rasterized on a grid,
// the frontmost z kept per grid point.
function headSurface(mesh, headIndex) {
  const g = mesh.geometry;
  const pos = g.attributes.position;
  const si = g.attributes.skinIndex;
  const sw = g.attributes.skinWeight;
  mesh.updateMatrixWorld(true);
  const v = new THREE.Vector3();
  const onHead = (i) => {
    for (let k = 0; k < 4; k++) if (si.getComponent(i, k) === headIndex && sw.getComponent(i, k) > 0.5) return true;
    return false;
  };
  const P = [];
  for (let i = 0; i < pos.count; i++) P.push(onHead(i) ? v.fromBufferAttribute(pos, i).applyMatrix4(mesh.matrixWorld).toArray() : null);
  const head = P.filter(Boolean);
  if (!head.length) return null;
  const lo = [0, 1, 2].map((k) => Math.min(...head.map((p) => p[k])));
  const hi = [0, 1, 2].map((k) => Math.max(...head.map((p) => p[k])));
  const step = 0.0025;
  const nx = Math.ceil((hi[0] - lo[0]) / step) + 1;
  const ny = Math.ceil((hi[1] - lo[1]) / step) + 1;
  const z = new Float64Array(nx * ny).fill(-Infinity);
  const index = g.index ? g.index.array : Array.from({ length: pos.count }, (_, i) => i);
  for (let t = 0; t < index.length; t += 3) {
    const a = P[index[t]]; const b = P[index[t + 1]]; const c = P[index[t + 2]];
    if (!a || !b || !c) continue;
    const i0 = Math.max(0, Math.floor((Math.min(a[0], b[0], c[0]) - lo[0]) / step));
    const i1 = Math.min(nx - 1, Math.ceil((Math.max(a[0], b[0], c[0]) - lo[0]) / step));
    const j0 = Math.max(0, Math.floor((Math.min(a[1], b[1], c[1]) - lo[1]) / step));
    const j1 = Math.min(ny - 1, Math.ceil((Math.max(a[1], b[1], c[1]) - lo[1]) / step));
    const det = (b[1] - c[1]) * (a[0] - c[0]) + (c[0] - b[0]) * (a[1] - c[1]);
    if (Math.abs(det) < 1e-12) continue;
    for (let i = i0; i <= i1; i++) {
      for (let j = j0; j <= j1; j++) {
        const x = lo[0] + i * step; const y = lo[1] + j * step;
        const l1 = ((b[1] - c[1]) * (x - c[0]) + (c[0] - b[0]) * (y - c[1])) / det;
        const l2 = ((c[1] - a[1]) * (x - c[0]) + (a[0] - c[0]) * (y - c[1])) / det;
        const l3 = 1 - l1 - l2;
        if (l1 < -1e-6 || l2 < -1e-6 || l3 < -1e-6) continue;
        const zz = l1 * a[2] + l2 * b[2] + l3 * c[2];
        if (zz > z[i + nx * j]) z[i + nx * j] = zz;
      }
    }
  }
  const at = (i, j) => z[Math.min(Math.max(i, 0), nx - 1) + nx * Math.min(Math.max(j, 0), ny - 1)];
  const surf = (x, y) => { // bilinear
    const fx = (x - lo[0]) / step; const fy = (y - lo[1]) / step;
    const i = Math.floor(fx); const j = Math.floor(fy); const u = fx - i; const w = fy - j;
    const q = [at(i, j), at(i + 1, j), at(i, j + 1), at(i + 1, j + 1)];
    const m = Math.max(...q);
    const [q0, q1, q2, q3] = q.map((e) => (Number.isFinite(e) ? e : m));
    return (1 - w) * ((1 - u) * q0 + u * q1) + w * ((1 - u) * q2 + u * q3);
  };
  return { surf, lo, hi, cx: (lo[0] + hi[0]) / 2 };
}

// ---------------------------------------------------------------- morph geometry helper
// grid(rows, cols, place(r, c) -> [x, y, z]); targets: {name: (r, c, p) -> [dx, dy, dz]}
function gridMesh(rows, cols, place, targets, colour = null) {
  const base = [];
  for (let r = 0; r < rows; r++) for (let c = 0; c < cols; c++) base.push(place(r, c));
  const geo = new THREE.BufferGeometry();
  geo.setAttribute('position', new THREE.Float32BufferAttribute(base.flat(), 3));
  if (colour) geo.setAttribute('color', new THREE.Float32BufferAttribute(base.flatMap((_, k) => colour(Math.floor(k / cols), k % cols)), 3));
  const idx = [];
  for (let r = 0; r + 1 < rows; r++) {
    for (let c = 0; c + 1 < cols; c++) {
      const a = r * cols + c; const b = a + 1; const d = a + cols; const e = d + 1;
      idx.push(a, d, b, b, d, e);
    }
  }
  geo.setIndex(idx);
  geo.morphAttributes.position = [];
  const names = Object.keys(targets);
  for (const name of names) {
    const d = [];
    for (let r = 0; r < rows; r++) for (let c = 0; c < cols; c++) d.push(...targets[name](r, c, base[r * cols + c]));
    geo.morphAttributes.position.push(new THREE.Float32BufferAttribute(d, 3));
  }
  geo.morphTargetsRelative = true;
  geo.computeVertexNormals();
  return { geo, names };
}

function morphMesh(geo, names, material) {
  const mesh = new THREE.Mesh(geo, material);
  mesh.morphTargetDictionary = Object.fromEntries(names.map((n, i) => [n, i]));
  mesh.morphTargetInfluences = names.map(() => 0);
  mesh.frustumCulled = false;
  return mesh;
}

/**
 * Builds the face on `skinned` (the mannequin's SkinnedMesh, at its rest pose) and binds it
 * to `headBone`. Returns {group, apply(face), read()} or null when the mesh has no head.
 */
export function buildFace(skinned, headBone) {
  const headIndex = skinned.skeleton.bones.indexOf(headBone);
  const hs = headIndex >= 0 ? headSurface(skinned, headIndex) : null;
  if (!hs) return null;
  const { surf, lo, hi, cx } = hs;
  const W = hi[0] - lo[0];
  const H = hi[1] - lo[1];
  const group = new THREE.Group();
  group.name = 'posewire-face';
  const meshes = [];
  const eyes = {};

  const yEye = lo[1] + 0.5 * H;
  const xEye = 0.2 * W;
  const rEye = 0.062 * W;
  const yBrow = yEye + 0.13 * H;
  const yMouth = lo[1] + 0.29 * H;
  const hwMouth = 0.13 * W;

  // ---- eyes: eyeball (white, iris, pupil) turning in a socket; lids fixed on the socket
  const white = new THREE.MeshStandardMaterial({ color: 0xf2efe8, roughness: 0.35 });
  const irisMat = new THREE.MeshStandardMaterial({ color: 0x3d6a8c, roughness: 0.4 });
  const pupilMat = new THREE.MeshStandardMaterial({ color: 0x101214, roughness: 0.3 });
  const lidMat = new THREE.MeshStandardMaterial({ color: 0xffffff, roughness: 0.65, vertexColors: true, side: THREE.DoubleSide });
  const cap = (r, theta, mat) => {
    const g = new THREE.SphereGeometry(r, 24, 6, 0, Math.PI * 2, 0, theta);
    g.rotateX(Math.PI / 2); // cap around +y -> around +z (the front)
    return new THREE.Mesh(g, mat);
  };
  const rLid = 1.16 * rEye;
  const lidRows = 7; const lidCols = 17;
  const GAMMA = 1.25; // lateral half-angle of a lid (radians)
  // lid edge angle from the top (+y) about the eye's x axis: 90° is the eye's centre
  const UP_OPEN = 52; const UP_BLINK = 112; const UP_WIDE = 34; const UP_SQUINT = 66;
  const LO_OPEN = 138; const LO_SQUINT = 116; const LO_BACK = 215; const UP_BACK = -35;
  const lidPoint = (g, b) => [rLid * Math.sin(g), rLid * Math.cos(g) * Math.cos(b), rLid * Math.cos(g) * Math.sin(b)];
  const rad = THREE.MathUtils.degToRad;
  for (const [side, sx, S] of [['l', 1, 'Left'], ['r', -1, 'Right']]) {
    const x = cx + sx * xEye;
    const socket = new THREE.Group();
    socket.position.set(x, yEye, surf(x, yEye) - 0.35 * rEye);
    const ball = new THREE.Group();
    ball.add(new THREE.Mesh(new THREE.SphereGeometry(rEye, 24, 16), white));
    ball.add(cap(rEye * 1.004, 0.5, irisMat));
    ball.add(cap(rEye * 1.008, 0.22, pupilMat));
    socket.add(ball);
    eyes[side] = ball;
    // upper lid: rows from the back (r = 0) to the edge (r = lidRows - 1)
    const lid = (back, open, to) => (r, c) => {
      const t = r / (lidRows - 1);
      const g = -GAMMA + (2 * GAMMA * c) / (lidCols - 1);
      const e = open + (to - open) * Math.cos(g) ** 0.5; // the corners move less
      return lidPoint(g, rad(back + t * (e - back)));
    };
    const edgeColour = (r) => (r >= lidRows - 2 ? [0.2, 0.12, 0.08] : new THREE.Color(SKIN).toArray());
    const delta = (to, from) => (r, c) => { const a = to(r, c); const b = from(r, c); return [a[0] - b[0], a[1] - b[1], a[2] - b[2]]; };
    const upRest = lid(UP_BACK, UP_OPEN, UP_OPEN);
    const up = gridMesh(lidRows, lidCols, upRest, {
      [`eyeBlink${S}`]: delta(lid(UP_BACK, UP_OPEN, UP_BLINK), upRest),
      [`eyeWide${S}`]: delta(lid(UP_BACK, UP_OPEN, UP_WIDE), upRest),
      [`eyeSquint${S}`]: delta(lid(UP_BACK, UP_OPEN, UP_SQUINT), upRest),
    }, edgeColour);
    const loRest = lid(LO_BACK, LO_OPEN, LO_OPEN);
    const low = gridMesh(lidRows, lidCols, loRest, {
      [`eyeSquint${S}`]: delta(lid(LO_BACK, LO_OPEN, LO_SQUINT), loRest),
      [`cheekSquint${S}`]: delta(lid(LO_BACK, LO_OPEN, (LO_OPEN + LO_SQUINT) / 2), loRest),
      [`eyeBlink${S}`]: delta(lid(LO_BACK, LO_OPEN, LO_OPEN - 14), loRest),
    }, (r) => (r >= lidRows - 1 ? [0.45, 0.3, 0.22] : new THREE.Color(SKIN).toArray()));
    for (const [m, which] of [[morphMesh(up.geo, up.names, lidMat), 'upper'], [morphMesh(low.geo, low.names, lidMat), 'lower']]) {
      m.name = `lid_${which}_${side}`;
      socket.add(m);
      meshes.push(m);
    }
    group.add(socket);
  }

  // ---- brows: one strip per side, inner end (c = 0) to outer end
  const browCols = 9; const browLen = 0.2 * W; const browH = 0.028 * H; const browIn = 0.07 * W;
  const browMat = new THREE.MeshStandardMaterial({ color: 0x4a2e1c, roughness: 0.8, side: THREE.DoubleSide });
  const browPlace = (sx) => (r, c) => {
    const t = c / (browCols - 1);
    const x = cx + sx * (browIn + t * browLen);
    const y = yBrow + 0.012 * H * Math.sin(Math.PI * t) + (r - 0.5) * browH * (1 - 0.5 * t);
    return [x, y, surf(x, y) + 0.0012];
  };
  const browD = (fn) => (r, c) => fn(c / (browCols - 1));
  for (const [side, sx, S] of [['l', 1, 'Left'], ['r', -1, 'Right']]) {
    const b = gridMesh(2, browCols, browPlace(sx), {
      [`browDown${S}`]: browD((t) => [-sx * 0.02 * W * (1 - t), -0.045 * H * (1 - 0.4 * t), 0]),
      [`browOuterUp${S}`]: browD((t) => [0, 0.06 * H * smooth(t), 0]),
      browInnerUp: browD((t) => [0, 0.055 * H * (1 - smooth(t)), 0]),
    });
    const m = morphMesh(b.geo, b.names, browMat);
    m.name = `brow_${side}`;
    group.add(m);
    meshes.push(m);
  }

  // ---- nose: a small bump, for the face to read as one
  const nose = new THREE.Mesh(new THREE.SphereGeometry(1, 16, 12), new THREE.MeshStandardMaterial({ color: SKIN, roughness: 0.65 }));
  const yNose = yEye - 0.1 * H;
  nose.scale.set(0.045 * W, 0.06 * H, 0.045 * W);
  nose.position.set(cx, yNose, surf(cx, yNose) - 0.01 * W);
  group.add(nose);

  // ---- mouth: rows 0 upper lip outer, 1 upper lip inner, 2 lower lip inner, 3 lower lip outer
  // (the lips between rows 0-1 and 2-3, the mouth interior between 1-2); columns s in [-1, 1]
  const cols = 21;
  const thickU = 0.03 * H; const thickL = 0.036 * H;
  const sOf = (c) => -1 + (2 * c) / (cols - 1);
  const prof = (s) => Math.cos((Math.PI / 2) * s) ** 0.7; // 1 at the middle, 0 at the corners
  const restY = (r, s) => [thickU, 0, 0, -thickL][r] * prof(s) ** 0.8 + 0.004 * H * s * s;
  const mouthPlace = (r, c) => {
    const s = sOf(c);
    const x = cx + hwMouth * s;
    const y = yMouth + restY(r, s);
    return [x, y, surf(x, y) + (r === 1 || r === 2 ? 0.0004 : 0.0016)];
  };
  const lower = (r) => r >= 2;
  const upper = (r) => r <= 1;
  const side = (s, sx) => Math.max(0, sx * s); // 0 .. 1 toward that corner
  const half = (s, sx) => 0.5 * (1 + sx * s); // linear across the mouth
  const ch = {
    jawOpen: (r, s) => (lower(r) ? [-0.09 * hwMouth * s, -0.12 * H * prof(s), -0.004] : [-0.09 * hwMouth * s, 0.01 * H * prof(s), 0]),
    mouthClose: (r, s) => (lower(r) ? [0, 0.11 * H * prof(s), 0] : [0, -0.01 * H * prof(s), 0]),
    mouthFunnel: (r, s) => [-0.3 * hwMouth * s, [0.012, 0.05, -0.06, -0.012][r] * H * prof(s) ** 0.5, 0.006],
    mouthPucker: (r, s) => [-0.55 * hwMouth * s, [0.03, 0.006, -0.006, -0.03][r] * H * prof(s) ** 0.5, 0.008],
    mouthLeft: () => [0.35 * hwMouth, 0, 0],
    mouthRight: () => [-0.35 * hwMouth, 0, 0],
    jawLeft: (r) => (lower(r) ? [0.06 * W, 0, 0] : [0, 0, 0]),
    jawRight: (r) => (lower(r) ? [-0.06 * W, 0, 0] : [0, 0, 0]),
    jawForward: (r) => (lower(r) ? [0, 0, 0.008] : [0, 0, 0]),
    mouthRollUpper: (r, s) => (r === 0 ? [0, -0.85 * thickU * prof(s), 0] : [0, 0, 0]),
    mouthRollLower: (r, s) => (r === 3 ? [0, 0.85 * thickL * prof(s), 0] : [0, 0, 0]),
    mouthShrugUpper: (r) => (upper(r) ? [0, 0.015 * H, 0.002] : [0, 0, 0]),
    mouthShrugLower: (r) => (lower(r) ? [0, 0.025 * H, 0.003] : [0, 0, 0]),
    cheekPuff: (r, s) => [0.12 * hwMouth * s, 0, 0.004],
    tongueOut: (r, s) => (lower(r) ? [0, -0.04 * H * prof(s), 0] : [0, 0, 0]),
  };
  for (const [sx, S] of [[1, 'Left'], [-1, 'Right']]) {
    Object.assign(ch, {
      [`mouthSmile${S}`]: (r, s) => [sx * 0.25 * hwMouth * side(s, sx) ** 1.5, 0.05 * H * side(s, sx) ** 1.6 + (r === 2 ? -0.008 * H * prof(s) * half(s, sx) : 0), 0],
      [`mouthFrown${S}`]: (r, s) => [0, -0.05 * H * side(s, sx) ** 1.6, 0],
      [`mouthDimple${S}`]: (r, s) => [sx * 0.15 * hwMouth * side(s, sx) ** 2, 0.01 * H * side(s, sx) ** 2, -0.002],
      [`mouthStretch${S}`]: (r, s) => [sx * 0.3 * hwMouth * side(s, sx), lower(r) ? -0.02 * H * prof(s) * half(s, sx) : 0, 0],
      [`mouthPress${S}`]: (r, s) => [0, r === 0 ? -0.5 * thickU * prof(s) * half(s, sx) : r === 3 ? 0.5 * thickL * prof(s) * half(s, sx) : 0, 0],
      [`mouthLowerDown${S}`]: (r, s) => (lower(r) ? [0, -0.06 * H * prof(s) * half(s, sx), 0] : [0, 0, 0]),
      [`mouthUpperUp${S}`]: (r, s) => (upper(r) ? [0, 0.045 * H * prof(s) * half(s, sx), 0] : [0, 0, 0]),
    });
  }
  const shapes = Object.fromEntries(Object.entries(ch).map(([n, f]) => [n, (r, c) => f(r, sOf(c))]));
  // visemes: the seed-table baseline of each (spec §4.7) as ARKit weights through faceWeights,
  // each viseme's target the sum of those channels' shapes
  const idx = Object.fromEntries(DIMS.map((d) => [d.id, d.index]));
  for (const v of VISEMES) {
    const row = REGISTRY.mouthing_seed_table.find((e) => e.viseme === v);
    if (!row?.baseline?.length) continue;
    const vec = Float64Array.from({ length: N }, (_, i) => DEFAULTS[i]);
    for (const { dim, value } of row.baseline) vec[idx[dim]] = value;
    const w = faceWeights(vec).arkit;
    shapes[`viseme_${v}`] = (r, c) => {
      const out = [0, 0, 0];
      for (const [n, f] of Object.entries(ch)) {
        if (!w[n]) continue;
        const d = f(r, sOf(c));
        for (let k = 0; k < 3; k++) out[k] += w[n] * d[k];
      }
      return out;
    };
  }
  const mouth = gridMesh(4, cols, mouthPlace, shapes);
  const nq = (cols - 1) * 6; // index entries per row band
  mouth.geo.addGroup(0, nq, 0);
  mouth.geo.addGroup(nq, nq, 1);
  mouth.geo.addGroup(2 * nq, nq, 0);
  const lipMat = new THREE.MeshStandardMaterial({ color: 0xa24f48, roughness: 0.5, side: THREE.DoubleSide });
  const innerMat = new THREE.MeshStandardMaterial({ color: 0x2a0d0b, roughness: 0.9, side: THREE.DoubleSide });
  const mouthMesh = morphMesh(mouth.geo, mouth.names, [lipMat, innerMat]);
  mouthMesh.name = 'mouth';
  group.add(mouthMesh);
  meshes.push(mouthMesh);

  // bind to the head at rest (the face keeps its place as the head turns)
  skinned.updateMatrixWorld(true);
  headBone.attach(group);
  const centre = new THREE.Vector3(cx, (yMouth + yBrow) / 2, surf(cx, yEye));
  headBone.worldToLocal(centre);

  const gaze = { l: [0, 0], r: [0, 0] };
  return {
    group,
    /** Face centre (the nose bridge height, on the surface) in world coordinates. */
    centre: (out = new THREE.Vector3()) => out.copy(centre).applyMatrix4(headBone.matrixWorld),
    /** Sets every morph influence and the eye turns from faceWeights() output {arkit, visemes}. */
    apply(face) {
      const a = face?.arkit ?? {};
      const vis = face?.visemes ?? {};
      for (const m of meshes) {
        for (const [n, i] of Object.entries(m.morphTargetDictionary)) {
          m.morphTargetInfluences[i] = n.startsWith('viseme_') ? vis[n.slice(7)] ?? 0 : a[n] ?? 0;
        }
      }
      // yaw + toward the character's left (+x), pitch + up (spec §4.6 eyeLook* channels)
      const yawL = (a.eyeLookOutLeft ?? 0) - (a.eyeLookInLeft ?? 0);
      const yawR = (a.eyeLookInRight ?? 0) - (a.eyeLookOutRight ?? 0);
      gaze.l = [GAZE_YAW * yawL, GAZE_PITCH * ((a.eyeLookUpLeft ?? 0) - (a.eyeLookDownLeft ?? 0))];
      gaze.r = [GAZE_YAW * yawR, GAZE_PITCH * ((a.eyeLookUpRight ?? 0) - (a.eyeLookDownRight ?? 0))];
      for (const s of ['l', 'r']) eyes[s].rotation.set(-gaze[s][1], gaze[s][0], 0, 'YXZ');
    },
    /** {meshes: {name: {target: influence}}, eyes: {l|r: {yaw, pitch, look: [x, y, z]}}} read
     * back from the scene graph (look: the eye's front axis in the head's frame). */
    read() {
      const out = { meshes: {}, eyes: {} };
      for (const m of meshes) {
        const got = (out.meshes[m.name] ??= {});
        for (const [n, i] of Object.entries(m.morphTargetDictionary)) got[n] = m.morphTargetInfluences[i];
      }
      for (const s of ['l', 'r']) {
        const look = new THREE.Vector3(0, 0, 1).applyQuaternion(eyes[s].quaternion);
        out.eyes[s] = { yaw: Math.atan2(look.x, look.z), pitch: Math.asin(THREE.MathUtils.clamp(look.y, -1, 1)), look: look.toArray() };
      }
      return out;
    },
  };
}
