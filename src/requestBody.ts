import { isUtf8 } from 'node:buffer';
import type { IncomingMessage } from 'node:http';
import type { Readable, Transform } from 'node:stream';
import { createBrotliDecompress, createUnzip } from 'node:zlib';
import bourne from '@hapi/bourne';

/**
 * Why a request body could not be read. app.ts turns each into the problem of the call (413, 415, or the
 * call's "not JSON" refusal).
 */
export type BodyFault = 'too_large' | 'unknown_coding' | 'corrupt_coding' | 'incomplete' | 'not_utf8' | 'not_json' | 'too_slow' | 'busy';

/** Faults after which the rest of the body is not worth reading: the connection is closed with the answer. */
const CLOSING_FAULTS = new Set<BodyFault>(['too_slow', 'busy']);

export class UnreadableBody extends Error {
  /** Whether the connection is to be closed with the answer, the rest of the body unread. */
  closes: boolean;

  constructor(readonly fault: BodyFault, readonly coding = 'identity') {
    super(fault);
    this.name = 'UnreadableBody';
    this.closes = CLOSING_FAULTS.has(fault);
  }
}

/**
 * The bytes of request bodies held in memory at once, across all requests, bounded: past the bound a body
 * is refused (503 `busy`) rather than buffered, so many slow or stalled senders cannot exhaust memory.
 */
export class BodyBudget {
  private used = 0;

  constructor(readonly bytes: number) {}

  /** Takes `n` bytes of the budget; false, taking nothing, when they are not left. */
  take(n: number): boolean {
    if (this.used + n > this.bytes) return false;
    this.used += n;
    return true;
  }

  give(n: number): void {
    this.used -= n;
  }

  get inUse(): number {
    return this.used;
  }
}

/** How a body may be read: its decoded size, whether it is JSON, when it must have arrived, and the shared budget. */
export interface BodyOptions {
  limit: number;
  json: boolean;
  /** Milliseconds the whole body may take to arrive, from the start of reading it. */
  deadlineMs: number;
  budget: BodyBudget;
}

/** How much of a refused body is still read and discarded before its connection is closed. */
const DISCARD_MOST = { bytes: 15 * 1024 * 1024, ms: 10_000 };

/**
 * Reads and discards the rest of a refused request's body, before the refusal is sent: a client that sends
 * its whole body before it reads the answer (Python's urllib, which also asks for `Connection: close`, so
 * Node closes the connection as soon as the answer is out) then reads the refusal rather than a broken pipe.
 * Settles with true once the body has ended, or with false past a bound of bytes or time: the connection is
 * then to be closed with the answer, so a sender that never stops costs nothing more.
 */
export function discardBody(req: IncomingMessage): Promise<boolean> {
  if (req.complete) return Promise.resolve(true);
  return new Promise((resolve) => {
    let seen = 0;
    const settle = (whole: boolean) => {
      clearTimeout(timer);
      req.off('data', onData);
      resolve(whole);
    };
    const timer = setTimeout(() => settle(false), DISCARD_MOST.ms);
    const onData = (chunk: Buffer) => {
      seen += chunk.length;
      if (seen > DISCARD_MOST.bytes) settle(false);
    };
    req.on('data', onData);
    req.once('end', () => settle(true));
    req.once('close', () => settle(req.complete));
    req.resume();
  });
}

/** Content codings (RFC 9110 §8.4.1) a body may come in; `createUnzip` reads both gzip and zlib (`deflate`) data. */
const DECODERS: Record<string, () => Transform> = { gzip: createUnzip, 'x-gzip': createUnzip, deflate: createUnzip, br: createBrotliDecompress };

/** A byte order mark in UTF-8, which JSON text may start with (RFC 8259 §8.1) and which is dropped. */
const BYTE_ORDER_MARK = Buffer.from([0xef, 0xbb, 0xbf]);

function startsWithByteOrderMark(bytes: Buffer): boolean {
  return bytes.subarray(0, BYTE_ORDER_MARK.length).equals(BYTE_ORDER_MARK);
}

/**
 * Reads an API request body as text, then as JSON when `json` is set (objects with a `__proto__` member are
 * refused, as koa-body did). Read here rather than by koa-body because its decoder puts U+FFFD in place of
 * bytes that are not UTF-8: the service would then store text the sender never wrote, so such a body is
 * refused instead. `limit` bounds the decoded size, so a small compressed body cannot inflate past it.
 * Whatever the fault, the rest of the body is discarded up to a bound (discardBody), so the client reads the refusal.
 *
 * @throws UnreadableBody
 */
export async function readBody(req: IncomingMessage, options: BodyOptions): Promise<unknown> {
  const coding = (req.headers['content-encoding'] ?? 'identity').trim().toLowerCase();
  const decoder = coding === 'identity' ? undefined : DECODERS[coding]?.();
  if (coding !== 'identity' && !decoder) throw await discarded(req, new UnreadableBody('unknown_coding', coding));
  const taken = { bytes: 0 };
  try {
    return parse(await collect(req, decoder, options, coding, taken), options.json, coding);
  } finally {
    options.budget.give(taken.bytes);
  }
}

/** The refusal once the rest of the body is discarded, or at once for a fault that closes the connection. */
async function discarded(req: IncomingMessage, refusal: UnreadableBody): Promise<UnreadableBody> {
  if (!refusal.closes && !(await discardBody(req))) refusal.closes = true;
  return refusal;
}

function parse(bytes: Buffer, json: boolean, coding: string): unknown {
  // JSON text must be UTF-8 (RFC 8259 §8.1). isUtf8 checks it in native code, several times faster on a 5 MB
  // record than a fatal TextDecoder; the bytes are then decoded knowing they are valid.
  if (!isUtf8(bytes)) throw new UnreadableBody('not_utf8', coding);
  const unmarked = bytes.subarray(startsWithByteOrderMark(bytes) ? BYTE_ORDER_MARK.length : 0);
  if (!json) return unmarked.toString('utf8');
  try {
    return bourne.parse(unmarked.toString('utf8'), { protoAction: 'error' });
  } catch {
    throw new UnreadableBody('not_json', coding);
  }
}

/**
 * The body's bytes. One of a declared length (no content coding) is copied into place chunk by chunk while
 * the rest is still arriving, rather than joined once it has all come: the copies fill time spent waiting
 * for the network anyway, where the join would be the call's own time (bench/README.md).
 */
function collect(req: IncomingMessage, decoder: Transform | undefined, options: BodyOptions, coding: string, taken: { bytes: number }): Promise<Buffer> {
  const { limit, budget } = options;
  const declared = decoder ? Number.NaN : Number(req.headers['content-length']);
  const known = Number.isSafeInteger(declared) && declared > 0 && declared <= limit;
  // A body of a declared length takes its whole size of the budget before a byte is read; any other, as it arrives.
  if (known && !budget.take(declared)) return Promise.reject(new UnreadableBody('busy', coding));
  if (known) taken.bytes = declared;
  const into = known ? Buffer.allocUnsafe(declared) : undefined;
  const source: Readable = decoder ? req.pipe(decoder) : req;
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let done = false;
    const deadline = setTimeout(() => stop('too_slow'), options.deadlineMs);
    const stop = (fault: BodyFault) => {
      if (done) return;
      done = true;
      clearTimeout(deadline);
      source.off('data', onData);
      if (decoder) {
        req.unpipe(decoder);
        decoder.destroy();
      }
      void discarded(req, new UnreadableBody(fault, coding)).then(reject);
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) stop('too_large');
      else if (!into && !budget.take(chunk.length)) stop('busy');
      else if (!into) {
        taken.bytes += chunk.length;
        chunks.push(chunk);
      }
      // Node's parser never passes on more than the declared length; were it to, the body is not the one declared.
      else if (size > into.length) stop('incomplete');
      else chunk.copy(into, size - chunk.length);
    };
    source.on('data', onData);
    source.once('end', () => {
      if (done) return;
      done = true;
      clearTimeout(deadline);
      resolve(into ? into.subarray(0, size) : Buffer.concat(chunks, size));
    });
    // A decoder fails on data that is not in its coding; the request itself fails when the client goes away.
    decoder?.once('error', () => stop('corrupt_coding'));
    req.once('error', () => stop('incomplete'));
    req.once('close', () => {
      if (!req.complete) stop('incomplete');
    });
  });
}
