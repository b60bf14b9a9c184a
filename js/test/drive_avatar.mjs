// Plays the animation a posewire GLB export adds to a user's VRM (posewire export --avatar
// MODEL.vrm) in headless Chromium with three.js's own GLTFLoader, as any glTF player does (no
// VRM plugin: the animation drives the model's bone nodes), for tests/test_vrm_avatar.py:
// poses it at given times, answers the world rotations of named nodes and writes a screenshot.
//
// usage: node js/test/drive_avatar.mjs TAKE.glb '{"times": [s, ...], "nodes": [name, ...],
//   "camera_z": 3.0, "screenshot": "out.png"}'
// Prints one JSON line: {animations: [names], duration, tracks, skinned (skinned meshes), vrm
//   ({meta_version, bones} as @pixiv/three-vrm reads the file, or null),
//   poses: [{node: [w, x, y, z]} per time], page_errors, origins}

import { runPage } from './static_page.mjs';

const [takePath, optionsText] = process.argv.slice(2);
const options = JSON.parse(optionsText);

const PAGE = `<!doctype html><html><head><meta charset="utf-8"><link rel="icon" href="data:,">
<script type="importmap">{"imports": {"three": "/node_modules/three/build/three.module.js",
  "three/addons/": "/node_modules/three/examples/jsm/",
  "@pixiv/three-vrm": "/node_modules/@pixiv/three-vrm/lib/three-vrm.module.js"}}</script></head>
<body style="margin:0;background:#202428"><script type="module">
import * as THREE from 'three';
import { GLTFLoader } from 'three/addons/loaders/GLTFLoader.js';
import { VRMLoaderPlugin } from '@pixiv/three-vrm';
const gltf = await new GLTFLoader().loadAsync('/take.glb');
// the file is still a VRM: the consortium's loader reads its humanoid
const vrmLoader = new GLTFLoader();
vrmLoader.register((parser) => new VRMLoaderPlugin(parser));
const vrm = (await vrmLoader.loadAsync('/take.glb')).userData.vrm;
const vrmInfo = vrm ? { meta_version: vrm.meta.metaVersion,
  bones: Object.keys(vrm.humanoid.humanBones).filter((b) => vrm.humanoid.getRawBoneNode(b)) } : null;
const model = gltf.scene;
const scene = new THREE.Scene();
scene.add(model);
scene.add(new THREE.HemisphereLight(0xffffff, 0x445566, 2.5));
const sun = new THREE.DirectionalLight(0xffffff, 2.0);
sun.position.set(1, 2, 3 * Math.sign(${JSON.stringify(options.camera_z ?? 3.0)}));
scene.add(sun);
scene.add(new THREE.AmbientLight(0xffffff, 0.6));
scene.add(new THREE.GridHelper(2, 8, 0x667788, 0x334455));
// the take is the file's last animation (posewire appends one to the model's own)
const clip = gltf.animations[gltf.animations.length - 1];
const mixer = new THREE.AnimationMixer(model);
const action = mixer.clipAction(clip);
action.setLoop(THREE.LoopOnce, 1); // the last key is held, not wrapped to the first
action.clampWhenFinished = true;
action.play();
const cameraZ = ${JSON.stringify(options.camera_z ?? 3.0)};
const camera = new THREE.PerspectiveCamera(30, innerWidth / innerHeight, 0.01, 20);
camera.position.set(0.0, 1.3, cameraZ);
camera.lookAt(0, 1.15, 0);
const renderer = new THREE.WebGLRenderer({ antialias: true, preserveDrawingBuffer: true });
renderer.setSize(innerWidth, innerHeight);
renderer.setClearColor(0x202428);
document.body.appendChild(renderer.domElement);
let skinned = 0;
model.traverse((o) => { if (o.isSkinnedMesh) skinned += 1; });
const q = new THREE.Quaternion();
window.take = {
  animations: gltf.animations.map((a) => a.name),
  duration: clip.duration,
  tracks: clip.tracks.length,
  skinned,
  vrm: vrmInfo,
  pose(t, names) {
    mixer.setTime(t);
    model.updateMatrixWorld(true);
    const out = {};
    for (const n of names) {
      const node = model.getObjectByName(n);
      out[n] = node ? (node.getWorldQuaternion(q), [q.w, q.x, q.y, q.z]) : null;
    }
    renderer.render(scene, camera);
    return out;
  },
};
window.takeReady = true;
</script></body></html>`;

await runPage({
  serve: { page: PAGE, files: { '/take.glb': takePath }, packages: ['three', '@pixiv/three-vrm'] },
  readyFlag: 'takeReady',
  async work(page) {
    const info = await page.evaluate(() => ({ animations: window.take.animations, duration: window.take.duration,
      tracks: window.take.tracks, skinned: window.take.skinned, vrm: window.take.vrm }));
    const poses = [];
    for (const t of options.times) poses.push(await page.evaluate(([s, n]) => window.take.pose(s, n), [t, options.nodes]));
    if (options.screenshot) await page.screenshot({ path: options.screenshot });
    return { ...info, poses };
  },
});
