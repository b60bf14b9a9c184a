// Loads a BVH file with three.js's own BVHLoader in headless Chromium (Debian chromium through
// npm playwright-core) for tests/test_bvh.py: poses it at given frames, answers the world
// positions of named joints and writes a screenshot of the skeleton.
//
// usage: node js/test/drive_bvh.mjs FILE.bvh '{"frames": [k, ...], "joints": [name, ...], "screenshot": "out.png"}'
// Prints one JSON line: {frames: N, frame_time, bones: [names in file order],
//   positions: {k: {name: [x, y, z]}}, page_errors, origins}
// The page, three.js and the file are served from a loopback server this script starts.

import { runPage } from './static_page.mjs';

const [bvhPath, optionsText] = process.argv.slice(2);
const options = JSON.parse(optionsText);

const PAGE = `<!doctype html><html><head><meta charset="utf-8"><link rel="icon" href="data:,">
<script type="importmap">{"imports": {"three": "/node_modules/three/build/three.module.js",
  "three/addons/": "/node_modules/three/examples/jsm/"}}</script></head>
<body style="margin:0;background:#202428"><script type="module">
import * as THREE from 'three';
import { BVHLoader } from 'three/addons/loaders/BVHLoader.js';
const result = await new BVHLoader().loadAsync('/take.bvh');
const skeleton = result.skeleton;
const root = skeleton.bones[0];
const scene = new THREE.Scene();
const group = new THREE.Group();
group.add(root);
scene.add(group);
const helper = new THREE.SkeletonHelper(root);
helper.material.linewidth = 2;
scene.add(helper);
scene.add(new THREE.GridHelper(2, 8, 0x667788, 0x334455));
const mixer = new THREE.AnimationMixer(group);
const action = mixer.clipAction(result.clip);
action.setLoop(THREE.LoopOnce, 1); // the last frame is held, not wrapped to the first
action.clampWhenFinished = true;
action.play();
const frameTime = result.clip.duration / Math.max(1, result.clip.tracks[0].times.length - 1);
const camera = new THREE.PerspectiveCamera(35, innerWidth / innerHeight, 0.01, 20);
camera.position.set(0.0, 1.2, 3.4);
camera.lookAt(0, 1.0, 0);
const renderer = new THREE.WebGLRenderer({ antialias: true, preserveDrawingBuffer: true });
renderer.setSize(innerWidth, innerHeight);
document.body.appendChild(renderer.domElement);
window.bvh = {
  frames: result.clip.tracks[0].times.length, frameTime,
  names: skeleton.bones.map((b) => b.name),
  pose(k, names) {
    mixer.setTime(k * frameTime);
    group.updateMatrixWorld(true);
    const out = {};
    const v = new THREE.Vector3();
    for (const n of names) {
      const bone = skeleton.getBoneByName(n);
      out[n] = bone ? bone.getWorldPosition(v).toArray() : null;
    }
    renderer.render(scene, camera);
    return out;
  },
};
window.bvhReady = true;
</script></body></html>`;

await runPage({
  serve: { page: PAGE, files: { '/take.bvh': bvhPath }, packages: ['three'] },
  readyFlag: 'bvhReady',
  async work(page) {
    const info = await page.evaluate(() => ({ frames: window.bvh.frames, frame_time: window.bvh.frameTime, bones: window.bvh.names }));
    const positions = {};
    for (const k of options.frames) positions[k] = await page.evaluate(([f, n]) => window.bvh.pose(f, n), [k, options.joints]);
    if (options.screenshot) await page.screenshot({ path: options.screenshot });
    return { ...info, positions };
  },
});
