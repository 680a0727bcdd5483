// A minimal GGUF reader for the interop tests: the metadata values and each tensor's type and bytes, so
// that two files can be compared tensor by tensor.
import {readFileSync} from "node:fs";

const SCALAR = {0: [1, "getUint8"], 1: [1, "getInt8"], 2: [2, "getUint16"], 3: [2, "getInt16"], 4: [4, "getUint32"],
  5: [4, "getInt32"], 6: [4, "getFloat32"], 7: [1, "getUint8"], 10: [8, "getBigUint64"], 11: [8, "getBigInt64"],
  12: [8, "getFloat64"]};
const STRING = 8;
const ARRAY = 9;

export function readGguf(path) {
  const buf = readFileSync(path);
  const view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
  let at = 0;
  const u32 = () => { const v = view.getUint32(at, true); at += 4; return v; };
  const u64 = () => { const v = Number(view.getBigUint64(at, true)); at += 8; return v; };
  const str = () => { const n = u64(); const s = buf.toString("utf8", at, at + n); at += n; return s; };
  const value = (type) => {
    if (type === STRING) return str();
    if (type === ARRAY) {
      const elemType = u32();
      const n = u64();
      return Array.from({length: n}, () => value(elemType));
    }
    const [size, getter] = SCALAR[type];
    const v = view[getter](at, true);
    at += size;
    return typeof v === "bigint" ? Number(v) : v;
  };
  if (buf.toString("latin1", 0, 4) !== "GGUF") throw new Error(`${path}: not a GGUF file`);
  at = 4;
  u32();  // version
  const nTensors = u64();
  const nKeys = u64();
  const meta = new Map();
  for (let i = 0; i < nKeys; i++) {
    const key = str();
    meta.set(key, value(u32()));
  }
  const infos = [];
  for (let i = 0; i < nTensors; i++) {
    const name = str();
    const dims = Array.from({length: u32()}, () => u64());
    infos.push({name, dims, type: u32(), offset: u64()});
  }
  const align = meta.get("general.alignment") ?? 32;
  const dataStart = Math.ceil(at / align) * align;
  const byOffset = [...infos].sort((a, b) => a.offset - b.offset);
  const tensors = new Map();
  byOffset.forEach((t, i) => {
    const end = i + 1 < byOffset.length ? byOffset[i + 1].offset : buf.length - dataStart;
    tensors.set(t.name, {type: t.type, dims: t.dims, dataOffset: dataStart + t.offset,
      bytes: buf.subarray(dataStart + t.offset, dataStart + end)});
  });
  return {meta, tensors};
}
