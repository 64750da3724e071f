import { expect } from 'chai';
import { readFileSync } from 'node:fs';
import { SERVICE_NODE_FLAGS } from '../../src/serviceNodeFlags.js';

/** Every `node … server.js` command of a file, as written. */
function serverCommands(file: string): string[] {
  return readFileSync(file, 'utf8').match(/\bnode [^\n`]*?dist\/src\/server\.js/g) ?? [];
}

describe('the Node.js options of the service (src/serviceNodeFlags.ts)', () => {
  const expected = `node ${SERVICE_NODE_FLAGS.join(' ')} dist/src/server.js`;

  for (const file of ['Makefile', 'README.md']) {
    it(`are on every command in ${file} that starts the service`, () => {
      const commands = serverCommands(file);
      expect(commands).to.have.length.above(0);
      for (const command of commands) expect(command).to.equal(expected);
    });
  }
});
