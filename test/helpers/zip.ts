// A tiny ZIP writer for tests. It makes well-formed archives and, on request, hostile ones: raw
// name bytes, unix modes of symlinks and devices, lying sizes or CRCs, encryption flags, unknown
// methods, raw (corrupt) data, data descriptors and a local name that differs from the central one.
import { deflateSync } from "fflate";

export interface ZipEntrySpec {
  /** A string (UTF-8) or raw bytes; a trailing "/" makes a folder entry. */
  name: string | Uint8Array;
  data?: string | Uint8Array;
  /** 0 stored, 8 deflate (default for non-empty files); any other number writes `data` as is. */
  method?: number;
  /** Full st_mode (type and permissions), stored in the high 16 bits of the external attributes. */
  unixMode?: number;
  /** General-purpose flags to add (bit 0: encrypted). */
  flags?: number;
  /** Write crc and sizes after the data (bit 3) instead of in the local header. */
  dataDescriptor?: boolean;
  /** Overrides written in both headers, for lying archives. */
  uncompressedSize?: number;
  compressedSize?: number;
  crc32?: number;
  /** Bytes written as the entry's compressed data instead of compressing `data`. */
  rawData?: Uint8Array;
  /** A different name in the local header than in the central directory. */
  localName?: string;
}

const encoder = new TextEncoder();
const bytesOf = (value: string | Uint8Array) => (typeof value === "string" ? encoder.encode(value) : value);

class ByteWriter {
  private readonly parts: Uint8Array[] = [];
  length = 0;
  u16(value: number) {
    const part = new Uint8Array(2);
    new DataView(part.buffer).setUint16(0, value, true);
    return this.bytes(part);
  }
  u32(value: number) {
    const part = new Uint8Array(4);
    new DataView(part.buffer).setUint32(0, value >>> 0, true);
    return this.bytes(part);
  }
  bytes(part: Uint8Array) {
    this.parts.push(part);
    this.length += part.length;
    return this;
  }
  result(): Uint8Array<ArrayBuffer> {
    const out = new Uint8Array(this.length);
    let offset = 0;
    for (const part of this.parts) (out.set(part, offset), (offset += part.length));
    return out;
  }
}

export function makeZip(entries: ZipEntrySpec[]): Uint8Array<ArrayBuffer> {
  const body = new ByteWriter();
  const central = new ByteWriter();
  for (const entry of entries) {
    const name = bytesOf(entry.name);
    const localName = entry.localName === undefined ? name : encoder.encode(entry.localName);
    const isFolder = name[name.length - 1] === 0x2f;
    const data = bytesOf(entry.data ?? "");
    const method = entry.method ?? (data.length > 0 ? 8 : 0);
    const compressed = entry.rawData ?? (method === 8 ? deflateSync(data) : data);
    const crc = entry.crc32 ?? Bun.hash.crc32(data);
    const compressedSize = entry.compressedSize ?? compressed.length;
    const uncompressedSize = entry.uncompressedSize ?? data.length;
    const flags = 0x0800 | (entry.flags ?? 0) | (entry.dataDescriptor ? 0x0008 : 0);
    const mode = entry.unixMode ?? (isFolder ? 0o040755 : 0o100644);
    const external = ((mode << 16) >>> 0) | (isFolder ? 0x10 : 0);
    const offset = body.length;

    body.u32(0x04034b50).u16(20).u16(flags).u16(method).u16(0).u16(0x21);
    if (entry.dataDescriptor) body.u32(0).u32(0).u32(0);
    else body.u32(crc).u32(compressedSize).u32(uncompressedSize);
    body.u16(localName.length).u16(0).bytes(localName).bytes(compressed);
    if (entry.dataDescriptor) body.u32(0x08074b50).u32(crc).u32(compressedSize).u32(uncompressedSize);

    central.u32(0x02014b50).u16((3 << 8) | 20).u16(20).u16(flags).u16(method).u16(0).u16(0x21);
    central.u32(crc).u32(compressedSize).u32(uncompressedSize);
    central.u16(name.length).u16(0).u16(0).u16(0).u16(0).u32(external).u32(offset).bytes(name);
  }
  const centralOffset = body.length;
  body.bytes(central.result());
  body.u32(0x06054b50).u16(0).u16(0).u16(entries.length).u16(entries.length);
  body.u32(central.length).u32(centralOffset).u16(0);
  return body.result();
}

/**
 * A folder bomb: `chains` files, each at the end of its own chain of folders, `depth` path
 * segments long in all (the file name included): `0/d/d/…/f`. Tiny on the wire (empty files,
 * one-letter names), it makes chains × (depth - 1) folders on disk. `extra` entries are added
 * as they are (e.g. an index.html that makes the tree a deployable static app).
 */
export function folderBombZip(chains: number, depth: number, extra: ZipEntrySpec[] = []): Uint8Array<ArrayBuffer> {
  const folders = Array(depth - 2).fill("d").join("/");
  const entries: ZipEntrySpec[] = Array.from({ length: chains }, (_, chain) => ({ name: `${chain}/${folders}/f` }));
  return makeZip([...extra, ...entries]);
}
