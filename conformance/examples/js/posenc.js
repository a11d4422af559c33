#!/usr/bin/env node
// A posenc-ref implementation in plain JavaScript (Node.js, no npm packages), checked through the
// subprocess protocol (conformance/protocol.schema.json):
//
//   posenc-ref conformance "subprocess:node conformance/examples/js/posenc.js"
//
// Ops: sinusoidal.table, learned.lookup, grid2d.sincos, computed in float64 (JavaScript numbers), or
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

const OPS = { "sinusoidal.table": sinusoidalTable, "learned.lookup": learnedLookup, "grid2d.sincos": grid2d };

function handle(message) {
  if (message.type === "hello") {
    if (message.dtype === "float32") {
      dtype = "float32";
      R = Math.fround;
    }
    const capabilities = Object.fromEntries(Object.keys(OPS).map((op) => [op, {}]));
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
