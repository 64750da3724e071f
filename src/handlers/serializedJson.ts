import { compactJsonBytes } from '../compactJsonBytes.js';

/**
 * A response body already written as JSON text, of the shape `Body`. A read page of 1,000 records is
 * about 1 MB: parsing its jsonb columns into objects only to serialise them again took a third of the
 * service's time in a bulk read (bench/README.md), so the records page splices the text the database
 * sends; the design call serialises its answer once, for its ETag and to send. The shape parameter
 * keeps the handler's reply typed against the spec; the tests still check every answer against it.
 *
 * The text is kept as a head, a list of items and a tail (`head + items.join(',') + tail`), because a
 * list is far cheaper to encode item by item: V8 joins 1,000 strings into a long one and encodes that
 * at a fraction of the speed it encodes the short ones (bench/README.md, "The records page encoded record by record").
 *
 * Items written by PostgreSQL carry its blanks after `:` and `,` (`spacedByDatabase`): they are dropped
 * from the encoded bytes, so the answer is spaced like every other (compactJsonBytes.ts).
 */
export class SerializedJson<Body> {
  /** Only for the type checker: which body the text holds. */
  declare readonly shape?: Body;

  private encoded?: Buffer;

  constructor(
    private readonly head: string,
    private readonly items: readonly string[] = [],
    private readonly tail = '',
    private readonly spacedByDatabase = false,
  ) {}

  get text(): string {
    return this.spacedByDatabase ? this.bytes.toString('utf8') : this.head + this.items.join(',') + this.tail;
  }

  /**
   * The text as UTF-8, encoded once (a cached design answer is sent many times). Node sends a 1 MB Buffer
   * far faster than the same string (bench/README.md, "JSON answers sent as bytes").
   */
  get bytes(): Buffer {
    return (this.encoded ??= this.encode());
  }

  private encode(): Buffer {
    if (this.items.length === 0) return Buffer.from(this.head + this.tail, 'utf8');
    const parts: Buffer[] = [Buffer.from(this.head, 'utf8')];
    for (const [i, item] of this.items.entries()) {
      if (i > 0) parts.push(COMMA);
      parts.push(Buffer.from(item, 'utf8'));
    }
    parts.push(Buffer.from(this.tail, 'utf8'));
    const bytes = Buffer.concat(parts);
    return this.spacedByDatabase ? compactJsonBytes(bytes) : bytes;
  }
}

const COMMA = Buffer.from(',');
