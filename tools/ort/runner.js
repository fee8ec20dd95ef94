#!/usr/bin/env node
// ONNX Runtime (CPU) runner for rewire (runtimes/ort_runner.h is its client).
//
// Protocol: one JSON request per line on stdin, one JSON reply per line on stdout, in order.
// Tensors travel as .npy files (float32, float64, int64, int32, bool) in a folder the client owns.
// A model whose inputs or outputs are float16 takes float32 files for them (rounded to the
// nearest float16, ties to even) and gives its float16 outputs back as float32, exactly.
//   {"op":"hello"}                                   -> {"ok":true,"ort":"1.30.0"}
//   {"op":"load","id":"a","path":"m.onnx","threads":2[,"profile":"dir/prefix"][,"optimized":"o.onnx"]}
//                                                    -> {"ok":true,"inputs":[..],"outputs":[..]}
//     "optimized": ONNX Runtime writes the graph it runs (after its own fusions) to that file.
//   {"op":"run","id":"a","inputs":{"x":"x.npy"},"out_dir":"d"}
//                                                    -> {"ok":true,"outputs":{"y":"d/0.npy"}}
//   {"op":"time","id":"a","inputs":{..},"warmups":2,"repeats":10}
//                                                    -> {"ok":true,"times_ms":[..],"median_ms":m}
//     A session loaded with "profile" (ONNX Runtime's profiler writing to that file prefix) also
//     replies "kernel_ms": per timed run, the summed time of the kernels ONNX Runtime ran, from
//     its profile (no JavaScript, no tensor transfer), and "kernels": per node ONNX Runtime ran,
//     {"node","op","provider","inputs":[[dims]..],"outputs":[[dims]..],"types":[..],"us":[..]}
//     with its duration in each timed run; its profiling ends with that request.
//   {"op":"unload","id":"a"}                          -> {"ok":true}
//   {"op":"quit"}                                     -> {"ok":true}, then exit 0
// A failed request replies {"ok":false,"error":"..."} and the runner goes on.
// Sessions use every ONNX Runtime graph optimisation ("all"), sequential execution and the
// given intra-op thread count.
//
// Test hook: REWIRE_ORT_RUNNER_EXIT_AFTER=N makes the runner exit (status 3) in the middle of
// its N+1-th inference run, as a runner that dies mid-measurement would.
// Fault injection (tests and chaos runs only): REWIRE_ORT_RUNNER_FAULT fails "time" requests
// (measurements), counted from 1 per runner process (a restarted runner counts afresh):
//   crash:N        the N-th time request aborts the runner (process.abort(): SIGABRT)
//   hang:N         the N-th time request never replies (an endless busy loop)
//   crash-every:N  every N-th time request aborts;  hang-every:N  every N-th one hangs
// The client (runtimes/ort_runner.h) sees a dead or silent runner and restarts it.
'use strict';

const fs = require('fs');
const path = require('path');
const readline = require('readline');

let ort;
try {
  ort = require('onnxruntime-node');
} catch (e) {
  process.stdout.write(JSON.stringify({ ok: false, fatal: true,
    error: 'onnxruntime-node is not installed next to ' + __filename +
           ' (run scripts/install-deps.sh): ' + e.message }) + '\n');
  process.exit(2);
}

const exitAfter = process.env.REWIRE_ORT_RUNNER_EXIT_AFTER
  ? parseInt(process.env.REWIRE_ORT_RUNNER_EXIT_AFTER, 10) : -1;
let runs = 0;
const fault = (() => {
  const spec = process.env.REWIRE_ORT_RUNNER_FAULT || '';
  if (!spec) return null;
  const m = /^(crash|hang)(-every)?:([0-9]+)$/.exec(spec);
  if (!m || parseInt(m[3], 10) < 1) {
    process.stderr.write('runner: REWIRE_ORT_RUNNER_FAULT=' + spec + ' is not crash:N, hang:N, ' +
                         'crash-every:N or hang-every:N (N >= 1); ignored\n');
    return null;
  }
  return { kind: m[1], every: !!m[2], n: parseInt(m[3], 10) };
})();
let timeRequests = 0;

// Applies REWIRE_ORT_RUNNER_FAULT to the time request just counted.
function injectFault() {
  if (!fault) return;
  const due = fault.every ? timeRequests % fault.n === 0 : timeRequests === fault.n;
  if (!due) return;
  process.stderr.write('runner: injected ' + fault.kind + ' on time request ' + timeRequests +
                       ' (REWIRE_ORT_RUNNER_FAULT)\n');
  if (fault.kind === 'crash') process.abort();
  for (;;) { /* hang: never reply */ }
}
const sessions = new Map();
const profiles = new Map();  // session id -> profile file prefix, until its profile is read

const NPY_TYPES = {
  '<f4': ['float32', Float32Array, 4], '<f8': ['float64', Float64Array, 8],
  '<i8': ['int64', BigInt64Array, 8], '<i4': ['int32', Int32Array, 4], '|b1': ['bool', Uint8Array, 1],
};

function readNpy(file) {
  const buf = fs.readFileSync(file);
  if (buf.toString('latin1', 1, 6) !== 'NUMPY') throw new Error(file + ': not an .npy file');
  const major = buf[6];
  const hlen = major >= 2 ? buf.readUInt32LE(8) : buf.readUInt16LE(8);
  const start = major >= 2 ? 12 : 10;
  const header = buf.toString('latin1', start, start + hlen);
  const descr = /'descr':\s*'([^']+)'/.exec(header);
  const shape = /'shape':\s*\(([^)]*)\)/.exec(header);
  if (!descr || !shape || /'fortran_order':\s*True/.test(header)) {
    throw new Error(file + ': unsupported .npy header ' + header);
  }
  const t = NPY_TYPES[descr[1]];
  if (!t) throw new Error(file + ': unsupported dtype ' + descr[1]);
  const dims = shape[1].split(',').map(s => s.trim()).filter(s => s.length).map(Number);
  const off = start + hlen;
  const bytes = Buffer.from(buf.subarray(off));  // copy: aligned
  const data = new t[1](bytes.buffer, bytes.byteOffset, (buf.length - off) / t[2]);
  if (t[0] === 'bool') return new ort.Tensor('bool', Uint8Array.from(data), dims);
  return new ort.Tensor(t[0], data, dims);
}

function writeNpy(file, tensor) {
  const descr = { float32: '<f4', float64: '<f8', int64: '<i8', int32: '<i4', bool: '|b1' }[tensor.type];
  if (!descr) throw new Error('output of unsupported type ' + tensor.type);
  const dims = tensor.dims.join(', ') + (tensor.dims.length === 1 ? ',' : '');
  let header = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': (" + dims + '), }';
  const pad = 64 - ((10 + header.length + 1) % 64);
  header = header + ' '.repeat(pad % 64) + '\n';
  const head = Buffer.alloc(10);
  head.write('\x93NUMPY', 0, 'latin1');
  head[6] = 1; head[7] = 0;
  head.writeUInt16LE(header.length, 8);
  const data = tensor.type === 'bool' ? Buffer.from(Uint8Array.from(tensor.data, v => (v ? 1 : 0)))
    : Buffer.from(tensor.data.buffer, tensor.data.byteOffset, tensor.data.byteLength);
  fs.writeFileSync(file, Buffer.concat([head, Buffer.from(header, 'latin1'), data]));
}

// float32 -> float16 bits, rounding to nearest even; overflow goes to infinity, NaN stays NaN.
const f32 = new Float32Array(1);
const u32 = new Uint32Array(f32.buffer);
function toHalfBits(x) {
  f32[0] = x;
  const b = u32[0];
  const sign = (b >>> 16) & 0x8000;
  const exp = (b >>> 23) & 0xff;
  let mant = b & 0x7fffff;
  if (exp === 0xff) return sign | 0x7c00 | (mant ? 0x200 : 0);
  const e = exp - 127 + 15;
  if (e >= 0x1f) return sign | 0x7c00;
  if (e <= 0) {
    if (e < -10) return sign;
    mant |= 0x800000;
    const shift = 14 - e;
    let h = mant >>> shift;
    const rem = mant & ((1 << shift) - 1), half = 1 << (shift - 1);
    if (rem > half || (rem === half && (h & 1))) ++h;
    return sign | h;
  }
  let h = (e << 10) | (mant >>> 13);
  const rem = mant & 0x1fff;
  if (rem > 0x1000 || (rem === 0x1000 && (h & 1))) ++h;  // a carry into the exponent is right
  return sign | h;
}
function fromHalfBits(h) {
  const sign = h & 0x8000 ? -1 : 1, exp = (h >>> 10) & 0x1f, mant = h & 0x3ff;
  if (exp === 0) return sign * mant * Math.pow(2, -24);
  if (exp === 0x1f) return mant ? NaN : sign * Infinity;
  return sign * (1 + mant / 1024) * Math.pow(2, exp - 15);
}

// A float32 tensor for an input the session takes as float16 becomes float16.
function asInputType(s, name, tensor) {
  const meta = (s.inputMetadata || []).find(m => m.name === name);
  if (!meta || meta.type !== 'float16' || tensor.type !== 'float32') return tensor;
  return new ort.Tensor('float16', Uint16Array.from(tensor.data, toHalfBits), tensor.dims);
}

// A float16 output as float32 (every float16 is a float32).
function asFloat32(tensor) {
  if (tensor.type !== 'float16') return tensor;
  const d = tensor.data;
  const data = d instanceof Uint16Array ? Float32Array.from(d, fromHalfBits) : Float32Array.from(d);
  return new ort.Tensor('float32', data, tensor.dims);
}

function median(xs) {
  const sorted = [...xs].sort((a, b) => a - b);
  const m = sorted.length;
  return m % 2 ? sorted[(m - 1) / 2] : (sorted[m / 2 - 1] + sorted[m / 2]) / 2;
}

function feeds(req, s) {
  const f = {};
  for (const [name, file] of Object.entries(req.inputs || {})) f[name] = asInputType(s, name, readNpy(file));
  return f;
}

function session(req) {
  const s = sessions.get(req.id);
  if (!s) throw new Error('no model loaded as "' + req.id + '"');
  return s;
}

async function runOnce(s, f) {
  if (exitAfter >= 0 && runs >= exitAfter) {
    process.stderr.write('runner: exiting after ' + runs + ' runs (REWIRE_ORT_RUNNER_EXIT_AFTER)\n');
    process.exit(3);
  }
  ++runs;
  return s.run(f);
}

// The profile files a session wrote under `prefix` (ONNX Runtime appends a date to it).
function profileFiles(prefix) {
  const dir = path.dirname(prefix);
  const base = path.basename(prefix) + '_';
  return fs.readdirSync(dir).filter(f => f.startsWith(base)).map(f => path.join(dir, f));
}

// The profile file the session wrote under `prefix`: per profiled run, the summed duration (ms)
// of the kernels ONNX Runtime ran, and for the last `last` runs each node's kernel (read, then
// removed).
function kernelProfile(prefix, last) {
  const files = profileFiles(prefix).filter(f => f.endsWith('.json'));
  if (files.length !== 1) throw new Error('expected one ONNX Runtime profile ' + prefix + '_*.json, found ' + files.length);
  const events = JSON.parse(fs.readFileSync(files[0], 'utf8'));
  fs.unlinkSync(files[0]);
  const runsOf = events.filter(e => e.cat === 'Session' && e.name === 'model_run').sort((a, b) => a.ts - b.ts);
  const kernels = events.filter(e => e.cat === 'Node' && e.name.endsWith('_kernel_time'));
  const inRun = r => kernels.filter(k => k.ts >= r.ts && k.ts <= r.ts + r.dur);
  const totals = runsOf.map(r => inRun(r).reduce((sum, k) => sum + k.dur, 0) / 1000);
  const byNode = new Map();
  const dims = list => (list || []).map(t => Object.values(t)[0]);
  const types = list => (list || []).map(t => Object.keys(t)[0]);
  for (const r of runsOf.slice(Math.max(0, runsOf.length - last))) {
    for (const k of inRun(r)) {
      const node = k.name.slice(0, k.name.length - '_kernel_time'.length);
      let n = byNode.get(node);
      if (!n) {
        const a = k.args || {};
        n = { node, op: a.op_name || '', provider: a.provider || '', inputs: dims(a.input_type_shape),
              outputs: dims(a.output_type_shape), types: types(a.input_type_shape), us: [] };
        byNode.set(node, n);
      }
      n.us.push(k.dur);
    }
  }
  return { totals, kernels: [...byNode.values()] };
}

async function handle(req) {
  switch (req.op) {
    case 'hello':
      return { ok: true, ort: ort.env.versions ? ort.env.versions.node : '' };
    case 'load': {
      const opts = { graphOptimizationLevel: 'all', executionMode: 'sequential',
                     interOpNumThreads: 1, logSeverityLevel: 3 };
      if (req.threads > 0) opts.intraOpNumThreads = req.threads;
      if (req.profile) {
        opts.enableProfiling = true;
        opts.profileFilePrefix = req.profile;
      }
      if (req.optimized) opts.optimizedModelFilePath = req.optimized;
      const s = await ort.InferenceSession.create(req.path, opts);
      const old = sessions.get(req.id);
      if (old) await old.release();
      sessions.set(req.id, s);
      if (req.profile) profiles.set(req.id, req.profile);
      else profiles.delete(req.id);
      return { ok: true, inputs: s.inputNames, outputs: s.outputNames };
    }
    case 'run': {
      const s = session(req);
      const out = await runOnce(s, feeds(req, s));
      const files = {};
      s.outputNames.forEach((name, i) => {
        const file = path.join(req.out_dir, i + '.npy');
        writeNpy(file, asFloat32(out[name]));
        files[name] = file;
      });
      return { ok: true, outputs: files };
    }
    case 'time': {
      const s = session(req);
      const f = feeds(req, s);
      ++timeRequests;
      injectFault();
      for (let i = 0; i < (req.warmups || 0); ++i) await runOnce(s, f);
      const times = [];
      for (let i = 0; i < Math.max(1, req.repeats || 1); ++i) {
        const t0 = process.hrtime.bigint();
        await runOnce(s, f);
        times.push(Number(process.hrtime.bigint() - t0) / 1e6);
      }
      const reply = { ok: true, times_ms: times, median_ms: median(times) };
      const prefix = profiles.get(req.id);
      if (prefix) {
        // Every run of this session since its load was profiled: skip all but the timed ones.
        s.endProfiling();
        profiles.delete(req.id);
        const p = kernelProfile(prefix, times.length);
        reply.kernel_ms = p.totals.slice(p.totals.length - times.length);
        reply.kernels = p.kernels;
      }
      return reply;
    }
    case 'unload': {
      const s = sessions.get(req.id);
      if (s && profiles.has(req.id)) {
        s.endProfiling();  // its file is removed below, unread
        for (const f of profileFiles(profiles.get(req.id))) fs.unlinkSync(f);
        profiles.delete(req.id);
      }
      if (s) await s.release();
      sessions.delete(req.id);
      return { ok: true };
    }
    case 'quit':
      return { ok: true, quit: true };
    default:
      throw new Error('unknown op ' + JSON.stringify(req.op));
  }
}

async function main() {
  const rl = readline.createInterface({ input: process.stdin, terminal: false });
  for await (const line of rl) {
    if (!line.trim()) continue;
    let reply;
    try {
      reply = await handle(JSON.parse(line));
    } catch (e) {
      reply = { ok: false, error: String(e && e.message ? e.message : e).split('\n').join(' ') };
    }
    process.stdout.write(JSON.stringify(reply) + '\n');
    if (reply.quit) process.exit(0);
  }
  process.exit(0);
}

main();
