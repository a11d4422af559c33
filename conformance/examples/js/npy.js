// Reading and writing NumPy .npy files (format versions 1.0, 2.0 and 3.0), little-endian,
// C order, for the dtypes the posenc-ref corpus uses. No npm packages.
"use strict";

const fs = require("fs");

const MAGIC = Buffer.from([0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59]); // \x93NUMPY

const READERS = {
  "<f8": { size: 8, make: (buf) => new Float64Array(buf) },
  "<f4": { size: 4, make: (buf) => Float64Array.from(new Float32Array(buf)) },
  "<i8": { size: 8, make: (buf) => Array.from(new BigInt64Array(buf), Number), integer: true },
  "<i4": { size: 4, make: (buf) => Array.from(new Int32Array(buf)), integer: true },
  "<u8": { size: 8, make: (buf) => Array.from(new BigUint64Array(buf), Number), integer: true },
};

class NpyError extends Error {}

// Returns {data: number[] | Float64Array (flat, C order), shape: number[], integer: bool}.
function readNpy(path) {
  const bytes = fs.readFileSync(path);
  if (bytes.length < 10 || !bytes.subarray(0, 6).equals(MAGIC)) {
    throw new NpyError(`${path}: not a .npy file`);
  }
  const major = bytes[6];
  const headerLength = major === 1 ? bytes.readUInt16LE(8) : bytes.readUInt32LE(8);
  const start = major === 1 ? 10 : 12;
  const header = bytes.subarray(start, start + headerLength).toString(major === 3 ? "utf8" : "latin1");
  const descr = /'descr':\s*'([^']+)'/.exec(header);
  const fortran = /'fortran_order':\s*(True|False)/.exec(header);
  const shapeText = /'shape':\s*\(([^)]*)\)/.exec(header);
  if (!descr || !fortran || !shapeText) throw new NpyError(`${path}: malformed header ${header}`);
  if (fortran[1] === "True") throw new NpyError(`${path}: Fortran order is not supported`);
  const reader = READERS[descr[1]];
  if (!reader) throw new NpyError(`${path}: dtype ${descr[1]} is not supported`);
  const shape = shapeText[1].split(",").map((s) => s.trim()).filter((s) => s.length).map(Number);
  const count = shape.reduce((a, b) => a * b, 1);
  const offset = start + headerLength;
  if (bytes.length - offset < count * reader.size) throw new NpyError(`${path}: truncated data`);
  // Copy into a fresh, aligned buffer: typed arrays need an offset that is a multiple of the item size.
  const body = new ArrayBuffer(count * reader.size);
  new Uint8Array(body).set(bytes.subarray(offset, offset + count * reader.size));
  return { data: reader.make(body), shape, integer: Boolean(reader.integer) };
}

// Writes a float64 ('<f8') or int64 ('<i8') array of the given shape.
function writeNpy(path, data, shape, { integer = false } = {}) {
  const shapeText = shape.length === 1 ? `(${shape[0]},)` : `(${shape.join(", ")})`;
  let header = `{'descr': '${integer ? "<i8" : "<f8"}', 'fortran_order': False, 'shape': ${shapeText}, }`;
  const unpadded = 10 + header.length + 1;
  header += " ".repeat((64 - (unpadded % 64)) % 64) + "\n";
  const prefix = Buffer.alloc(10);
  MAGIC.copy(prefix, 0);
  prefix[6] = 1;
  prefix[7] = 0;
  prefix.writeUInt16LE(header.length, 8);
  const body = integer
    ? Buffer.from(BigInt64Array.from(data, (v) => BigInt(v)).buffer)
    : Buffer.from(Float64Array.from(data).buffer);
  fs.writeFileSync(path, Buffer.concat([prefix, Buffer.from(header, "latin1"), body]));
}

module.exports = { readNpy, writeNpy, NpyError };
