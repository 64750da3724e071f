import { Readable } from 'node:stream';

/** Pieces are gathered up to this size before they are written: a write per row would cost more than the row. */
const CHUNK_BYTES = 64 * 1024;

async function* gathered(pieces: AsyncIterable<string>): AsyncGenerator<Buffer> {
  let pending: string[] = [];
  let size = 0;
  for await (const piece of pieces) {
    pending.push(piece);
    size += piece.length;
    if (size >= CHUNK_BYTES) {
      yield Buffer.from(pending.join(''), 'utf8');
      pending = [];
      size = 0;
    }
  }
  if (pending.length > 0) yield Buffer.from(pending.join(''), 'utf8');
}

/**
 * A response written while it is produced (the CDISC exports), so that a study of any size is sent in
 * bounded memory. The stream reads the next pieces only as fast as the client takes them, and a client
 * that goes away ends the iteration, which ends its database snapshot. The tests check such answers
 * with the standards' own validators instead of the spec's schema.
 */
export class StreamedBody {
  constructor(
    readonly contentType: string,
    private readonly pieces: AsyncIterable<string>,
  ) {}

  stream(): Readable {
    return Readable.from(gathered(this.pieces), { objectMode: false });
  }
}
