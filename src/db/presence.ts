import pg from 'pg';

/** How soon a lost presence connection is tried again: about the Retry-After the service gives while the database is down. */
const RETRY_MS = 2_000;

export interface Presence {
  /** The application_name of the presence connection, for telling it from the pool's connections. */
  applicationName: string;
  end(): Promise<void>;
}

/**
 * On the shared embedded server, one connection held for this process's whole life tells the other
 * processes it is still in use, even while the pool has idled down to no connection at all: the last
 * process to leave stops the server (src/db/knex.ts). When the server restarts under it (an outage),
 * the connection is opened again, or the others would take this process for gone and stop the server
 * under its feet. The first opening fails loudly, like the pool's; later ones are retried quietly.
 */
export async function holdPresence(url: string, applicationName: string): Promise<Presence> {
  let client: pg.Client | undefined;
  let retry: NodeJS.Timeout | undefined;
  let ended = false;

  const reopenLater = () => {
    if (ended || retry) return;
    retry = setTimeout(() => {
      retry = undefined;
      void open().catch(reopenLater);
    }, RETRY_MS);
    // A process that is otherwise done does not stay up for this.
    retry.unref();
  };
  const open = async () => {
    const next = new pg.Client({ connectionString: url, application_name: applicationName });
    next.on('error', () => undefined);
    next.on('end', () => {
      if (client === next) client = undefined;
      reopenLater();
    });
    await next.connect();
    if (ended) await next.end().catch(() => undefined);
    else client = next;
  };

  await open();
  return {
    applicationName,
    async end() {
      ended = true;
      clearTimeout(retry);
      await client?.end().catch(() => undefined);
    },
  };
}
