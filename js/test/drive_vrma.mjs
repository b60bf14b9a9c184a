// Plays a VRM Animation (.vrma) on a VRM avatar in headless Chromium with the VRM
// consortium's own three.js libraries (@pixiv/three-vrm, @pixiv/three-vrm-animation), for
// tests/test_vrma.py: poses it at given times and answers the avatar's normalized bone
// rotations and the expression and gaze tracks the clip carries; writes a screenshot.
//
// usage: node js/test/drive_vrma.mjs AVATAR.vrm TAKE.vrma '{"times": [s, ...], "bones": [vrm bone, ...], "screenshot": "out.png"}'
// Prints one JSON line: {duration, tracks (the clip's), humanoid, expressions (the tracks the
//   loader read), look_at_track, poses: [{bones: {bone: [w, x, y, z]}, look: [yaw, pitch] degrees,
//   expressions: {name: weight}} per time], page_errors, origins}

import { runPage } from './static_page.mjs';

const [avatarPath, takePath, optionsText] = process.argv.slice(2);
const options = JSON.parse(optionsText);

const PAGE = `<!doctype html><html><head><meta charset="utf-8"><link rel="icon" href="data:,">
<script type="importmap">{"imports": {"three": "/node_modules/three/build/three.module.js",
  "three/addons/": "/node_modules/three/examples/jsm/",
  "@pixiv/three-vrm": "/node_modules/@pixiv/three-vrm/lib/three-vrm.module.js",
  "@pixiv/three-vrm-animation": "/node_modules/@pixiv/three-vrm-animation/lib/three-vrm-animation.module.js"}}</script></head>
<body style="margin:0;background:#202428"><script type="module">
import * as THREE from 'three';
import { GLTFLoader } from 'three/addons/loaders/GLTFLoader.js';
import { VRMLoaderPlugin } from '@pixiv/three-vrm';
import { VRMAnimationLoaderPlugin, createVRMAnimationClip } from '@pixiv/three-vrm-animation';
const loader = new GLTFLoader();
loader.register((parser) => new VRMLoaderPlugin(parser));
loader.register((parser) => new VRMAnimationLoaderPlugin(parser));
const vrm = (await loader.loadAsync('/avatar.vrm')).userData.vrm;
const vrmAnimation = (await loader.loadAsync('/take.vrma')).userData.vrmAnimations[0];
const clip = createVRMAnimationClip(vrmAnimation, vrm);
const scene = new THREE.Scene();
scene.add(vrm.scene);
scene.add(new THREE.HemisphereLight(0xffffff, 0x445566, 2.5));
const sun = new THREE.DirectionalLight(0xffffff, 2.0);
sun.position.set(1, 2, 3);
scene.add(sun);
scene.add(new THREE.AmbientLight(0xffffff, 0.6));
scene.add(new THREE.GridHelper(2, 8, 0x667788, 0x334455));
const mixer = new THREE.AnimationMixer(vrm.scene);
const action = mixer.clipAction(clip);
action.setLoop(THREE.LoopOnce, 1); // the last key is held, not wrapped to the first
action.clampWhenFinished = true;
action.play();
const camera = new THREE.PerspectiveCamera(30, innerWidth / innerHeight, 0.01, 20);
camera.position.set(0.0, 1.3, 3.0);
camera.lookAt(0, 1.15, 0);
const renderer = new THREE.WebGLRenderer({ antialias: true, preserveDrawingBuffer: true });
renderer.setSize(innerWidth, innerHeight);
renderer.setClearColor(0x202428);
document.body.appendChild(renderer.domElement);
// the look-at track: the player turns it into yaw and pitch (VRMC_vrm_animation: extrinsic ZXY)
const lookTrack = vrmAnimation.lookAtTrack;
window.vrma = {
  duration: clip.duration,
  tracks: clip.tracks.map((t) => t.name),
  humanoidTracks: [...vrmAnimation.humanoidTracks.rotation.keys()],
  expressionTracks: [...vrmAnimation.expressionTracks.preset.keys()],
  lookAtTrack: lookTrack !== null,
  pose(t, bones) {
    mixer.setTime(t);
    vrm.update(0);
    const out = {};
    for (const b of bones) {
      const node = vrm.humanoid.getNormalizedBoneNode(b);
      out[b] = node ? [node.quaternion.w, node.quaternion.x, node.quaternion.y, node.quaternion.z] : null;
    }
    const expressions = {};
    for (const [name, track] of vrmAnimation.expressionTracks.preset.entries()) {
      expressions[name] = track.createInterpolant().evaluate(t)[0];
    }
    let look = null;
    if (lookTrack) {
      const q = new THREE.Quaternion().fromArray(lookTrack.createInterpolant().evaluate(t));
      const e = new THREE.Euler().setFromQuaternion(q, 'YXZ');
      look = [THREE.MathUtils.radToDeg(e.y), THREE.MathUtils.radToDeg(e.x)];
    }
    renderer.render(scene, camera);
    return { bones: out, look, expressions };
  },
};
window.vrmaReady = true;
</script></body></html>`;

await runPage({
  serve: { page: PAGE, files: { '/avatar.vrm': avatarPath, '/take.vrma': takePath },
    packages: ['three', '@pixiv/three-vrm', '@pixiv/three-vrm-animation'] },
  readyFlag: 'vrmaReady',
  async work(page) {
    const info = await page.evaluate(() => ({ duration: window.vrma.duration, tracks: window.vrma.tracks,
      humanoid: window.vrma.humanoidTracks, expressions: window.vrma.expressionTracks, look_at_track: window.vrma.lookAtTrack }));
    const poses = [];
    for (const t of options.times) poses.push(await page.evaluate(([s, b]) => window.vrma.pose(s, b), [t, options.bones]));
    if (options.screenshot) await page.screenshot({ path: options.screenshot });
    return { ...info, poses };
  },
});
