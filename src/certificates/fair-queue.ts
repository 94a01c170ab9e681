// The queue of certificate orders: one line per owner (a workspace, or the platform for its own
// names), served in turn, so that one workspace with many domains cannot hold the others' orders
// back. The next item comes from the line served longest ago (a new line counts as never served);
// within a line, first come first served. An item waits at most once.

interface Line<Item> {
  items: Item[];
  /** The turn this line was last served at; 0: not yet. */
  lastTurn: number;
}

export class FairQueue<Item> {
  /** Lines with items waiting, in the order they were made (which breaks ties). */
  private readonly lines = new Map<string, Line<Item>>();
  private readonly ownerOf = new Map<Item, string>();
  private turns = 0;

  get size(): number {
    return this.ownerOf.size;
  }

  has(item: Item): boolean {
    return this.ownerOf.has(item);
  }

  /** Queues `item` at the end of `owner`'s line; nothing when it waits already. */
  add(owner: string, item: Item) {
    if (this.ownerOf.has(item)) return;
    this.ownerOf.set(item, owner);
    const line = this.lines.get(owner);
    if (line) line.items.push(item);
    else this.lines.set(owner, { items: [item], lastTurn: 0 });
  }

  delete(item: Item) {
    const owner = this.ownerOf.get(item);
    if (owner === undefined) return;
    this.ownerOf.delete(item);
    const line = this.lines.get(owner)!;
    line.items.splice(line.items.indexOf(item), 1);
    if (line.items.length === 0) this.lines.delete(owner);
  }

  /** The first item of the line served longest ago. */
  next(): Item | undefined {
    let chosen: [string, Line<Item>] | undefined;
    for (const entry of this.lines) if (!chosen || entry[1].lastTurn < chosen[1].lastTurn) chosen = entry;
    if (!chosen) return undefined;
    const [owner, line] = chosen;
    const item = line.items.shift()!;
    this.ownerOf.delete(item);
    line.lastTurn = ++this.turns;
    if (line.items.length === 0) this.lines.delete(owner);
    return item;
  }
}
