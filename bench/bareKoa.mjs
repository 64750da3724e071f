// The framework floor of the design call: a bare Koa route answering a fixed JSON body (the design the
// service returns, captured once), on the same machine, with no database, auth or validation. Plain
// JavaScript started with plain node, like the service. Usage: node bench/bareKoa.mjs <port> <body file>
import { readFileSync } from 'node:fs';
import Koa from 'koa';

const [port, bodyFile] = process.argv.slice(2);
const body = JSON.parse(readFileSync(bodyFile, 'utf8'));
const app = new Koa();
app.use((ctx) => {
  if (ctx.method !== 'GET' || !ctx.path.startsWith('/api/v1/studies/')) {
    ctx.status = 404;
    return;
  }
  // An object, so Koa serialises it on every request exactly as it does the service's replies.
  ctx.body = body;
});
const server = app.listen(Number(port), '127.0.0.1', () => process.stdout.write(`bare koa listening on ${port}\n`));
process.on('SIGTERM', () => {
  server.close(() => process.exit(0));
  server.closeAllConnections();
});
