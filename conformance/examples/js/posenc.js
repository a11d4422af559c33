#!/usr/bin/env node
// A posenc-ref implementation in plain JavaScript (Node.js, no npm packages), checked through the
// subprocess protocol (conformance/protocol.schema.json):
//
//   posenc-ref conformance "subprocess:node conformance/examples/js/posenc.js"
//
// Ops: sinusoidal.table, learned.lookup, grid2d.sincos, rope.apply (half, interleaved and
// interleaved_to_half layouts, prefix/proportional partial rotation, explicit positions), alibi.slopes and
// alibi.bias (press and geometric slopes, four bias forms), computed in float64 (JavaScript numbers), or
// in float32 when the handshake asks for it (--dtype float32): every intermediate result is then
// rounded to float32 with Math.fround, as a float32 kernel would hold it.
// It reads JSON lines on stdin and answers one JSON line per message on stdout; arrays travel as
// .npy files (npy.js).
"use strict";

const path = require("path");
const readline = require("readline");
const { readNpy, writeNpy } = require("./npy.js");

const PROTOCOL = "posenc-ref-subprocess/1";
let dtype = "float64";
let R = (x) => x; // rounds every intermediate result to the compute dtype

class Rejected extends Error {
  constructor(category, message) {
    super(message);
    this.category = category;
  }
}
const invalid = (message) => new Rejected("invalid_argument", message);

function choice(name, value, choices) {
  if (!choices.includes(value)) throw invalid(`${name} must be one of ${choices.join(", ")}, got ${value}`);
  return value;
}

function integer(name, value, minimum) {
  if (!Number.isInteger(value) || value < minimum) throw invalid(`${name} must be an integer >= ${minimum}, got ${value}`);
  return value;
}

function positions(name, array) {
  if (array.data.length === 0) throw new Rejected("invalid_shape", `${name} must not be empty`);
  for (const v of array.data) {
    if (!Number.isFinite(v) || !Number.isInteger(v)) throw invalid(`${name} must hold finite whole numbers, got ${v}`);
  }
  return Array.from(array.data);
}

// w_k = base^(-e): e = 2k/width (paper) or k/max(n-1, 1) (t2t), n = ceil(width/2).
function frequencies(width, base, ladder) {
  const n = Math.floor((width + 1) / 2);
  const w = new Float64Array(n);
  for (let k = 0; k < n; k++) {
    const e = R(ladder === "paper" ? R(2 * k) / width : k / Math.max(n - 1, 1));
    w[k] = R(Math.pow(R(base), -e));
  }
  return w;
}

function sinusoidalTable(inputs, p) {
  const ladder = choice("ladder", p.ladder, ["paper", "t2t"]);
  const layout = choice("layout", p.layout, ["interleaved", "concat_sin_cos", "concat_cos_sin"]);
  const oddWidth = choice("odd_width", p.odd_width, ["error", "zero_pad_last", "sin_gets_extra"]);
  const dim = integer("dim", p.dim, 1);
  if (dim % 2 === 1 && oddWidth === "error") throw invalid(`dim must be even under odd_width='error', got ${dim}`);
  if (dim === 1 && oddWidth === "zero_pad_last") throw invalid("dim must be >= 2 under odd_width='zero_pad_last'");
  if (!Number.isFinite(p.base) || p.base <= 0) throw invalid(`base must be finite and > 0, got ${p.base}`);
  if (!Number.isFinite(p.scale)) throw invalid(`scale must be finite, got ${p.scale}`);
  const offset = integer("position_offset", p.position_offset, -Infinity);
  const pos = positions("positions", inputs.positions).map((v) => v + offset);
  if (Math.min(...pos) < 0) throw invalid(`positions + position_offset must be >= 0, got ${Math.min(...pos)}`);

  const width = dim % 2 === 1 && oddWidth === "zero_pad_last" ? dim - 1 : dim;
  const w = frequencies(width, p.base, ladder);
  const n = w.length;
  const nCos = dim % 2 === 1 && oddWidth === "sin_gets_extra" ? n - 1 : n;
  // Column of sin k and cos k in each layout.
  const sinCol = (k) => (layout === "interleaved" ? 2 * k : layout === "concat_sin_cos" ? k : nCos + k);
  const cosCol = (k) => (layout === "interleaved" ? 2 * k + 1 : layout === "concat_sin_cos" ? n + k : k);
  const out = new Float64Array(pos.length * dim); // zero columns stay 0
  pos.forEach((position, row) => {
    for (let k = 0; k < n; k++) {
      const angle = R(R(position) * w[k]);
      out[row * dim + sinCol(k)] = R(R(Math.sin(angle)) * R(p.scale));
      if (k < nCos) out[row * dim + cosCol(k)] = R(R(Math.cos(angle)) * R(p.scale));
    }
  });
  return { table: [out, [...inputs.positions.shape, dim]] };
}

function learnedLookup(inputs, p) {
  const table = inputs.table;
  if (table.shape.length !== 2 || table.data.length === 0) {
    throw new Rejected("invalid_shape", `table must be a non-empty (N, D) array, got shape (${table.shape})`);
  }
  const offset = integer("offset", p.offset, 0);
  const policy = choice("out_of_range", p.out_of_range, ["error", "clamp"]);
  const pos = positions("positions", inputs.positions);
  const [rows, dim] = table.shape;
  const out = new Float64Array(pos.length * dim);
  pos.forEach((position, i) => {
    if (position < 0) throw invalid(`positions must be >= 0, got ${position}`);
    let row = position + offset;
    if (row >= rows) {
      if (policy === "error") throw new Rejected("out_of_range", `row ${row} is beyond the table of ${rows} rows`);
      row = rows - 1;
    }
    for (let j = 0; j < dim; j++) out[i * dim + j] = R(table.data[row * dim + j]);
  });
  return { rows: [out, [...inputs.positions.shape, dim]] };
}

function grid2d(inputs, p) {
  const dim = integer("dim", p.dim, 4);
  if (dim % 4 !== 0) throw invalid(`dim must be a multiple of 4, got ${dim}`);
  const axisOrder = choice("axis_order", p.axis_order, ["x_first", "y_first"]);
  const blockLayout = choice("block_layout", p.block_layout, ["sin_cos", "sin_sin_cos_cos", "interleaved"]);
  const ladder = choice("ladder", p.ladder, ["paper", "t2t"]);
  if (!Number.isFinite(p.base) || p.base <= 0) throw invalid(`base must be finite and > 0, got ${p.base}`);
  const ys = positions("ys", inputs.ys);
  const xs = positions("xs", inputs.xs);
  if (inputs.ys.shape.join() !== inputs.xs.shape.join()) {
    throw new Rejected("invalid_shape", `ys and xs must have the same shape, got (${inputs.ys.shape}) and (${inputs.xs.shape})`);
  }
  if (Math.min(...ys, ...xs) < 0) throw invalid("coordinates must be >= 0");
  const w = frequencies(dim / 2, p.base, ladder); // D/4 frequencies per axis
  const q = w.length;
  const out = new Float64Array(ys.length * dim);
  ys.forEach((y, i) => {
    const [a, b] = axisOrder === "x_first" ? [xs[i], y] : [y, xs[i]];
    const base = i * dim;
    for (let k = 0; k < q; k++) {
      const [ta, tb] = [R(R(a) * w[k]), R(R(b) * w[k])];
      const [sa, ca, sb, cb] = [Math.sin(ta), Math.cos(ta), Math.sin(tb), Math.cos(tb)].map(R);
      if (blockLayout === "sin_cos") {
        out[base + k] = sa; out[base + q + k] = ca; out[base + 2 * q + k] = sb; out[base + 3 * q + k] = cb;
      } else if (blockLayout === "sin_sin_cos_cos") {
        out[base + k] = sa; out[base + q + k] = sb; out[base + 2 * q + k] = ca; out[base + 3 * q + k] = cb;
      } else {
        out[base + 2 * k] = sa; out[base + 2 * k + 1] = ca; out[base + 2 * q + 2 * k] = sb; out[base + 2 * q + 2 * k + 1] = cb;
      }
    }
  });
  return { table: [out, [...inputs.ys.shape, dim]] };
}

// The scaling keywords rope.apply carries (corpus 1.4). This implementation rotates at the default
// frequencies only: its handshake declares rope_type "default", so the runner never sends it a valid
// scaled case, but it still rejects what the reference rejects in a scaled call it was sent.
const SCALING = ["rope_type", "factor", "original_max_position", "context_length", "low_freq_factor",
  "high_freq_factor", "beta_fast", "beta_slow", "mscale", "mscale_all_dim", "scaling_attention_factor", "truncate",
  "ext_factor", "short_factor", "long_factor", "dynamic_convention", "yarn_convention"];
const APPLY_KEYS = ["base", "rotary_dim", "partial", "layout", "x_layout", "attention_factor", ...SCALING];
const NEEDS = { linear: ["factor"], ntk_aware: ["factor"], dynamic: ["factor", "original_max_position", "context_length"],
  yarn: ["factor", "original_max_position"], llama3: ["factor", "original_max_position", "low_freq_factor",
    "high_freq_factor"], longrope: ["factor", "original_max_position", "context_length"], proportional: [] };

function checkScaling(p, space) {
  for (const key of Object.keys(p)) if (!APPLY_KEYS.includes(key)) throw invalid(`unknown keyword ${key}`);
  const kind = choice("rope_type", p.rope_type ?? "default", ["default", ...Object.keys(NEEDS)]);
  if (kind === "default") return;
  for (const key of NEEDS[kind]) if (p[key] === null || p[key] === undefined) throw invalid(`rope_type=${kind} needs ${key}`);
  if (kind === "proportional" && p.partial !== "proportional") throw invalid("rope_type=proportional needs partial=proportional");
  if (kind === "longrope") {
    const name = p.context_length > p.original_max_position ? "long_factor" : "short_factor";
    if (!Array.isArray(p[name]) || p[name].length !== space / 2) throw invalid(`${name} must have ${space / 2} values`);
  }
  throw invalid(`rope_type=${kind} is not implemented here (the handshake declares only "default")`);
}

// rope.apply: x (B, H, T, D) or (B, T, H, D), positions (T,) or (B, T). The rotated space S is rotary_dim
// (prefix) or D (proportional); pair i of S turns at base^(-2i/S) for i < rotary_dim/2, else at 0.
// Pairs (i, i + S/2) (half), (2i, 2i+1) (interleaved), or read interleaved and written half.
function ropeApply(inputs, p) {
  const layout = choice("layout", p.layout, ["half", "interleaved", "interleaved_to_half"]);
  const xLayout = choice("x_layout", p.x_layout, ["BHTD", "BTHD"]);
  const partial = choice("partial", p.partial, ["prefix", "proportional"]);
  if (!Number.isFinite(p.base) || p.base <= 0) throw invalid(`base must be finite and > 0, got ${p.base}`);
  if (!Number.isFinite(p.attention_factor) || p.attention_factor <= 0) {
    throw invalid(`attention_factor must be finite and > 0, got ${p.attention_factor}`);
  }
  const x = inputs.x;
  if (x.shape.length !== 4) throw new Rejected("invalid_shape", `x must be 4-D, got shape (${x.shape})`);
  for (const v of x.data) if (!Number.isFinite(v)) throw invalid("x must be finite");
  const [B, A1, A2, D] = x.shape;
  const [H, T] = xLayout === "BHTD" ? [A1, A2] : [A2, A1];
  if (D % 2 === 1) throw invalid(`the head dim must be even, got ${D}`);
  const rd = p.rotary_dim === null ? D : integer("rotary_dim", p.rotary_dim, 0);
  if (rd % 2 === 1 || rd > D || rd === 0) throw invalid(`rotary_dim must be even, > 0 and <= ${D}, got ${rd}`);
  const pos = positions("positions", inputs.positions);
  const pShape = inputs.positions.shape;
  if (pShape.length > 2 || pShape[pShape.length - 1] !== T || (pShape.length === 2 && ![1, B].includes(pShape[0]))) {
    throw new Rejected("invalid_shape", `positions must be (T,) or (B, T) with T=${T}, got (${pShape})`);
  }
  if (Math.min(...pos) < 0) throw invalid(`positions must be >= 0, got ${Math.min(...pos)}`);
  const space = partial === "prefix" ? rd : D;
  checkScaling(p, space);
  const n = space / 2;
  const w = new Float64Array(n);
  for (let i = 0; i < rd / 2; i++) w[i] = R(Math.pow(R(p.base), -R(R(2 * i) / space)));
  const a = R(p.attention_factor);
  const out = Float64Array.from(x.data, R); // channels beyond S pass through
  const at = (b, h, t) => (xLayout === "BHTD" ? ((b * H + h) * T + t) * D : ((b * T + t) * H + h) * D);
  const readU = layout === "half" ? (i) => i : (i) => 2 * i;
  const readV = layout === "half" ? (i) => n + i : (i) => 2 * i + 1;
  const writeU = layout === "interleaved" ? (i) => 2 * i : (i) => i;
  const writeV = layout === "interleaved" ? (i) => 2 * i + 1 : (i) => n + i;
  for (let b = 0; b < B; b++) {
    for (let t = 0; t < T; t++) {
      const position = pos[pShape.length === 2 && pShape[0] === B ? b * T + t : t];
      for (let i = 0; i < n; i++) {
        const angle = R(R(position) * w[i]);
        const [c, s] = [R(R(Math.cos(angle)) * a), R(R(Math.sin(angle)) * a)];
        for (let h = 0; h < H; h++) {
          const base = at(b, h, t);
          const [u, v] = [x.data[base + readU(i)], x.data[base + readV(i)]].map(R);
          out[base + writeU(i)] = R(R(u * c) - R(v * s));
          out[base + writeV(i)] = R(R(u * s) + R(v * c));
        }
      }
    }
  }
  return { y: [out, x.shape] };
}

// ALiBi slope exponents x_h (heads from 1): press = the authors' get_slopes generalised to bias_max b,
// geometric = b h / H for every H. m_h = 2^-x_h.
function alibiSlopes(p) {
  const rule = choice("slope_rule", p.slope_rule, ["press", "geometric"]);
  const H = integer("num_heads", p.num_heads, 1);
  if (!Number.isFinite(p.bias_max) || p.bias_max <= 0) throw invalid(`bias_max must be finite and > 0, got ${p.bias_max}`);
  const b = p.bias_max;
  const c = 2 ** Math.floor(Math.log2(H));
  const x = [];
  if (rule === "geometric" || c === H) {
    for (let h = 1; h <= H; h++) x.push((b * h) / H);
  } else {
    for (let h = 1; h <= c; h++) x.push((b * h) / c);
    for (let t = 0; t < H - c; t++) x.push((b * (2 * t + 1)) / (2 * c));
  }
  return Float64Array.from(x, (e) => R(2 ** -e));
}

function alibiSlopesOp(inputs, p) {
  const m = alibiSlopes(p);
  return { slopes: [m, [m.length]] };
}

// alibi.bias (..., H, Tq, Tk) for query positions (..., Tq) and key positions (..., Tk).
function alibiBias(inputs, p) {
  const form = choice("form", p.form, ["relative_causal", "key_only", "symmetric", "bottom_right"]);
  const m = alibiSlopes(p);
  const q = positions("query_positions", inputs.query_positions);
  const k = positions("key_positions", inputs.key_positions);
  const [qs, ks] = [inputs.query_positions.shape, inputs.key_positions.shape];
  if (qs.length === 0 || ks.length === 0 || qs.slice(0, -1).join() !== ks.slice(0, -1).join()) {
    throw new Rejected("invalid_shape", `query and key positions must share their batch shape, got (${qs}) and (${ks})`);
  }
  if (Math.min(...q, ...k) < 0) throw invalid("positions must be >= 0");
  const [Tq, Tk, H] = [qs[qs.length - 1], ks[ks.length - 1], m.length];
  const batch = q.length / Tq;
  const out = new Float64Array(batch * H * Tq * Tk);
  for (let n = 0; n < batch; n++) {
    for (let a = 0; a < Tq; a++) {
      for (let c = 0; c < Tk; c++) {
        const [i, j] = [q[n * Tq + a], k[n * Tk + c]];
        const d = form === "relative_causal" ? j - i : form === "key_only" ? j
          : form === "symmetric" ? -Math.abs(i - j) : -Math.abs(i + Tk - Tq - j);
        for (let h = 0; h < H; h++) out[((n * H + h) * Tq + a) * Tk + c] = R(m[h] * R(d));
      }
    }
  }
  return { bias: [out, [...qs.slice(0, -1), H, Tq, Tk]] };
}

const OPS = {
  "sinusoidal.table": sinusoidalTable, "learned.lookup": learnedLookup, "grid2d.sincos": grid2d,
  "rope.apply": ropeApply, "alibi.slopes": alibiSlopesOp, "alibi.bias": alibiBias,
};

function handle(message) {
  if (message.type === "hello") {
    if (message.dtype === "float32") {
      dtype = "float32";
      R = Math.fround;
    }
    const capabilities = Object.fromEntries(Object.keys(OPS).map((op) => [op, {}]));
    capabilities["rope.apply"] = { rope_type: ["default"] };
    return { type: "hello", protocol: PROTOCOL, name: "posenc-js", version: "1.0", dtype, capabilities };
  }
  if (message.type !== "run") return { type: "error", seq: message.seq ?? null, category: null, message: `unknown message type ${message.type}` };
  const op = OPS[message.op];
  if (!op) return { type: "error", seq: message.seq, category: null, message: `op ${message.op} is not implemented` };
  try {
    const inputs = Object.fromEntries(Object.entries(message.inputs).map(([name, file]) => [name, readNpy(file)]));
    const outputs = {};
    for (const [name, [data, shape]] of Object.entries(op(inputs, message.params))) {
      const file = path.join(message.output_dir, `${name}.npy`);
      writeNpy(file, data, shape);
      outputs[name] = file;
    }
    return { type: "result", seq: message.seq, outputs };
  } catch (err) {
    if (err instanceof Rejected) return { type: "error", seq: message.seq, category: err.category, message: err.message };
    throw err; // a bug: crash, and the runner reports this case as an error
  }
}

const lines = readline.createInterface({ input: process.stdin, terminal: false });
lines.on("line", (line) => {
  if (!line.trim()) return;
  const message = JSON.parse(line);
  if (message.type === "shutdown") {
    lines.close();
    process.stdin.destroy();
    return;
  }
  process.stdout.write(JSON.stringify(handle(message)) + "\n");
});
