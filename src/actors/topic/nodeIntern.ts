// Interning of a topic instance's `$node` names and decoded tag literals. Records store a small
// node id (SeqIndex column) instead of a string; readers map a request's node names to ids once.
// Recovery decodes each distinct stored JSON literal once; those caches are dropped when the
// instance's recovery ends, and every map and the name list are made on first use (most topics
// never name a node).
// Pure data; owned by a TopicInstance.

/** Distinct decoded tag literals kept for recovery; past this each literal is decoded again. */
const TAG_LITERALS_MAX = 100_000;

export class NodeIntern {
  /** Node names by id, from id 1 (id 0 is "no node"), or undefined while there are none. */
  private list: string[] | undefined = undefined;
  private ids: Map<string, number> | undefined;
  /** Literal caches: filled by recovery (and a router's tag filter), dropped by endRecovery. */
  private idsByLiteral: Map<string, number> | undefined;
  private tagsByLiteral: Map<string, string> | undefined;

  id(node: string | undefined): number {
    if (node === undefined) return 0;
    let id = this.ids?.get(node);
    if (id === undefined) {
      const list = (this.list ??= ['']);
      id = list.length;
      list.push(node);
      (this.ids ??= new Map()).set(node, id);
    }
    return id;
  }

  /** The node name of id `id` ('' for 0, "no node"). */
  name(id: number): string {
    return id === 0 ? '' : this.list![id]!;
  }

  knownId(node: string): number | undefined {
    return this.ids?.get(node);
  }

  /** Node id from a stored JSON string literal (recovery), parsing each distinct literal once. */
  idOfLiteral(latin1Literal: string): number {
    let id = this.idsByLiteral?.get(latin1Literal);
    if (id === undefined) {
      id = this.id(decodeLiteral(latin1Literal));
      (this.idsByLiteral ??= new Map()).set(latin1Literal, id);
    }
    return id;
  }

  /** A tag from its stored JSON string literal (recovery), parsing each distinct literal once. */
  tagOfLiteral(latin1Literal: string): string {
    let tag = this.tagsByLiteral?.get(latin1Literal);
    if (tag === undefined) {
      tag = decodeLiteral(latin1Literal);
      const cache = (this.tagsByLiteral ??= new Map());
      if (cache.size < TAG_LITERALS_MAX) cache.set(latin1Literal, tag);
    }
    return tag;
  }

  /**
   * Recovery of the instance is over: the literal caches go (up to 100k decoded tags per topic
   * would otherwise stay for the life of the process); whatever needs them later builds them again.
   */
  endRecovery(): void {
    this.idsByLiteral = undefined;
    this.tagsByLiteral = undefined;
  }
}

/** Stored literals are UTF-8 bytes read as latin1 (one char per byte). */
function decodeLiteral(latin1Literal: string): string {
  return JSON.parse(Buffer.from(latin1Literal, 'latin1').toString('utf8')) as string;
}
