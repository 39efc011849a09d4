/**
 * What the commit index keeps in memory (commit-store.ts): per node id the seq of the commit
 * holding its newest change and how many changes it has. A Map from id to a slot in two typed
 * arrays, so a node costs its Map entry and id string plus 8 bytes (about 100 bytes), and
 * nothing is kept per commit.
 *
 * Its snapshot (`nodes.snap`): 'WGNODES1' | u32 commits covered | the sha of the last of them |
 * u32 node count | per node: u16 id length, id, i32 newest seq, u32 change count | sha1 of all
 * that. A snapshot that does not check out is no snapshot (the store reads every record).
 */
import { createHash } from 'node:crypto';

const MAGIC = Buffer.from('WGNODES1', 'latin1');

export interface NodeStats {
  /** seq of the commit holding the node's newest change */
  newest: number;
  /** how many changes the node has (also after a deletion) */
  count: number;
}

export class NodeTable {
  private readonly slotOf = new Map<string, number>();
  private newestOf = new Int32Array(1024);
  private countOf = new Uint32Array(1024);

  /**
   * `canon` gives the id string to keep for an id met the first time: the graph index's own, so
   * an id read back from the files is not a second copy of the one the index holds.
   */
  constructor(private readonly canon: (id: string) => string = (id) => id) {}

  get size(): number {
    return this.slotOf.size;
  }

  stats(id: string): NodeStats | undefined {
    const slot = this.slotOf.get(id);
    return slot === undefined ? undefined : { newest: this.newestOf[slot]!, count: this.countOf[slot]! };
  }

  /** A change of `id` in commit `seq` (seqs arrive in order); `count` sets its change count instead of adding one. */
  note(id: string, seq: number, count?: number): void {
    let slot = this.slotOf.get(id);
    if (slot === undefined) {
      slot = this.slotOf.size;
      if (slot >= this.newestOf.length) {
        const newest = new Int32Array(this.newestOf.length * 2);
        newest.set(this.newestOf);
        this.newestOf = newest;
        const counts = new Uint32Array(this.countOf.length * 2);
        counts.set(this.countOf);
        this.countOf = counts;
      }
      this.slotOf.set(this.canon(id), slot);
      this.countOf[slot] = 0;
    }
    this.newestOf[slot] = seq;
    this.countOf[slot] = count ?? this.countOf[slot]! + 1;
  }

  clear(): void {
    this.slotOf.clear();
    this.newestOf = new Int32Array(1024);
    this.countOf = new Uint32Array(1024);
  }

  /** Every node with the seq of its newest change (one pass over the table). */
  *newest(): Generator<[string, number]> {
    for (const [id, slot] of this.slotOf) yield [id, this.newestOf[slot]!];
  }

  /** The snapshot of the table as of `covered` commits, the last of them `headSha`. */
  encode(covered: number, headSha: string | null): Buffer {
    const parts: Buffer[] = [];
    const head = Buffer.alloc(36);
    MAGIC.copy(head, 0);
    head.writeUInt32LE(covered, 8);
    if (headSha) head.write(headSha, 12, 'hex');
    head.writeUInt32LE(this.slotOf.size, 32);
    parts.push(head);
    for (const [id, slot] of this.slotOf) {
      const idBytes = Buffer.from(id, 'utf8');
      const entry = Buffer.allocUnsafe(2 + idBytes.length + 8);
      entry.writeUInt16LE(idBytes.length, 0);
      idBytes.copy(entry, 2);
      entry.writeInt32LE(this.newestOf[slot]!, 2 + idBytes.length);
      entry.writeUInt32LE(this.countOf[slot]!, 6 + idBytes.length);
      parts.push(entry);
    }
    const body = Buffer.concat(parts);
    return Buffer.concat([body, createHash('sha1').update(body).digest()]);
  }

  /**
   * Loads a snapshot into this (empty) table when it checks out and `matches(covered, sha)`
   * says it describes a prefix of the store's files; returns the commits it covers, or null
   * (and leaves the table empty).
   */
  load(bytes: Buffer, matches: (covered: number, sha: Buffer) => boolean): number | null {
    const entries: Array<[string, number, number]> = [];
    let covered: number;
    try {
      if (bytes.length < 56 || !bytes.subarray(0, 8).equals(MAGIC)) return null;
      const body = bytes.subarray(0, bytes.length - 20);
      if (
        !createHash('sha1')
          .update(body)
          .digest()
          .equals(bytes.subarray(bytes.length - 20))
      )
        return null;
      covered = body.readUInt32LE(8);
      if (!matches(covered, body.subarray(12, 32))) return null;
      const nodes = body.readUInt32LE(32);
      let pos = 36;
      for (let i = 0; i < nodes; i++) {
        const len = body.readUInt16LE(pos);
        const id = body.toString('utf8', pos + 2, pos + 2 + len);
        pos += 2 + len;
        const newest = body.readInt32LE(pos);
        const count = body.readUInt32LE(pos + 4);
        if (newest < 0 || newest >= covered || count === 0) return null;
        entries.push([id, newest, count]);
        pos += 8;
      }
      if (pos !== body.length) return null;
    } catch {
      return null;
    }
    for (const [id, newest, count] of entries) this.note(id, newest, count);
    return covered;
  }
}
