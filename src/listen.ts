import { randomUUID } from 'node:crypto';
import type { Server } from 'node:http';
import type { Socket } from 'node:net';
import type Koa from 'koa';
import { securityHeaders } from './app.js';
import type { Config } from './config.js';
import { DomainError } from './domain/errors.js';
import { problemOf } from './handlers/problem.js';

/**
 * Starts the HTTP server of the app, answering the requests Node refuses before the app sees them (a
 * request line or headers over Node's 16 KB, a request that is not HTTP) with the same problem body as
 * every other refusal, where Node would send a bare status line.
 */
export function listen(app: Pick<Koa, 'listen'>, config: Pick<Config, 'baseUrl'>, port: number, host?: string): Server {
  const server = app.listen(port, host);
  server.on('clientError', (error: NodeJS.ErrnoException, socket: Socket) => refuseUnparsed(error, socket, config));
  return server;
}

function refuseUnparsed(error: NodeJS.ErrnoException, socket: Socket, config: Pick<Config, 'baseUrl'>): void {
  // A client that went away, or a socket something was already written to, gets nothing more.
  if (error.code === 'ECONNRESET' || !socket.writable || socket.bytesWritten > 0) {
    socket.destroy();
    return;
  }
  const code = error.code === 'HPE_HEADER_OVERFLOW' ? 'request_too_large' : 'malformed_request';
  // Nothing of the request can be trusted, its Accept-Language included: the answer is in English.
  const problem = problemOf(new DomainError(code), 'en', randomUUID());
  const body = JSON.stringify(problem.body);
  const headers = {
    ...securityHeaders(config),
    ...problem.headers,
    'X-Request-Id': problem.body.request_id,
    'Content-Length': String(Buffer.byteLength(body)),
    Connection: 'close',
  };
  const head = Object.entries(headers).map(([name, value]) => `${name}: ${value}`).join('\r\n');
  socket.end(`HTTP/1.1 ${problem.status} ${code === 'request_too_large' ? 'Request Header Fields Too Large' : 'Bad Request'}\r\n${head}\r\n\r\n${body}`);
}
