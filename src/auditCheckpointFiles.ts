import { createHash, createPrivateKey, createPublicKey, generateKeyPairSync, sign, verify, type KeyObject } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { AuditCheckpoint, CheckpointStore, StoredCheckpoint } from './domain/auditCheckpoint.js';

/**
 * Audit checkpoints as files outside the database (issue 21.4): one append-only JSON-lines file per
 * study in a folder, each line signed with an Ed25519 key kept in a file of its own. Someone who can
 * rewrite the database (owner or superuser) can then still not shorten the trail unseen.
 */

/** The Ed25519 private key of the file, created (mode 0600) on first use. Refuses a key others can read. */
export function loadSigningKey(file: string): KeyObject {
  // The file itself is private (0600); its folder keeps the usual mode, since by default it is the data
  // folder, which the embedded PostgreSQL server (another OS user) must be able to enter.
  fs.mkdirSync(path.dirname(file), { recursive: true });
  try {
    const { privateKey } = generateKeyPairSync('ed25519');
    // 'wx': of two processes starting together, one creates the key and the other reads it.
    fs.writeFileSync(file, privateKey.export({ type: 'pkcs8', format: 'pem' }), { flag: 'wx', mode: 0o600 });
  } catch (error) {
    if ((error as { code?: string }).code !== 'EEXIST') throw error;
  }
  if ((fs.statSync(file).mode & 0o077) !== 0) throw new Error(`${file}: the audit signing key must be readable by its owner only (chmod 600)`);
  return createPrivateKey(fs.readFileSync(file));
}

/** The fields a signature covers, in a fixed order: what is signed does not depend on JSON key order. */
function signedText(c: AuditCheckpoint, keyId: string): string {
  return JSON.stringify([c.study, c.studyId, c.rows, c.lastId, c.lastHash, c.at, c.accepted ?? null, keyId]);
}

/** Names the key that signed a line: a checkpoint from another key does not verify, and the id says why. */
function keyIdOf(publicKey: KeyObject): string {
  return createHash('sha256').update(publicKey.export({ type: 'spki', format: 'der' })).digest('hex').slice(0, 16);
}

export function checkpointFiles(dir: string, signingKey: KeyObject): CheckpointStore {
  const publicKey = createPublicKey(signingKey);
  const keyId = keyIdOf(publicKey);
  const fileOf = (study: string) => path.join(dir, `${encodeURIComponent(study)}.jsonl`);
  return {
    async latest(study) {
      const text = await fs.promises.readFile(fileOf(study), 'utf8').catch((error: { code?: string }) => {
        if (error.code === 'ENOENT') return '';
        throw error;
      });
      const last = text.trimEnd().split('\n').at(-1);
      return last ? readLine(last, publicKey) : undefined;
    },
    async append(c) {
      const signature = sign(null, Buffer.from(signedText(c, keyId)), signingKey).toString('base64');
      const line = `${JSON.stringify({ study: c.study, study_id: c.studyId, rows: c.rows, last_id: c.lastId, last_hash: c.lastHash, at: c.at, accepted: c.accepted, key_id: keyId, signature })}\n`;
      await fs.promises.mkdir(dir, { recursive: true });
      // One write of one line in append mode, flushed to disk before the command says it checkpointed.
      const file = await fs.promises.open(fileOf(c.study), 'a', 0o644);
      try {
        await file.write(line);
        await file.sync();
      } finally {
        await file.close();
      }
    },
  };
}

function readLine(line: string, publicKey: KeyObject): StoredCheckpoint {
  let raw: Record<string, unknown>;
  try {
    raw = JSON.parse(line) as Record<string, unknown>;
  } catch {
    return { checkpoint: { study: '', studyId: 0, rows: 0, lastId: 0, lastHash: '', at: 'an unreadable line' }, signatureValid: false };
  }
  const checkpoint: AuditCheckpoint = {
    study: String(raw.study), studyId: Number(raw.study_id), rows: Number(raw.rows), lastId: Number(raw.last_id), lastHash: String(raw.last_hash), at: String(raw.at),
    accepted: typeof raw.accepted === 'string' ? raw.accepted : undefined,
  };
  const signatureValid = typeof raw.signature === 'string'
    && verify(null, Buffer.from(signedText(checkpoint, String(raw.key_id))), publicKey, Buffer.from(raw.signature, 'base64'));
  return { checkpoint, signatureValid };
}
