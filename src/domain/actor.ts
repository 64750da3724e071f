/**
 * Who makes a change: a person (in the portal, or named with `--by` on the command line), an API
 * key acting for its system, or the operator running the command line. The audit trail shows the
 * author and reason derived here, so an API change always reads "<key name> (API)" with a reason
 * that says the data came through the key.
 */
export type Actor =
  | { kind: 'user'; userId: number; name: string; via: 'portal' | 'cli' }
  /** A FHIR import in save mode acts for the person who made the key (interface description, FHIR call rule 4). */
  | { kind: 'user'; userId: number; name: string; via: 'fhir_save'; keyName: string }
  /** A person confirming a FHIR import on the patient's card: the values are the file's, the decision theirs. */
  | { kind: 'user'; userId: number; name: string; via: 'fhir_review'; importNumber: number }
  | { kind: 'api_key'; keyId: number; keyName: string; makerId: number }
  | { kind: 'operator'; name: string };

/** An actor as rows keep it: its kind and the id of its person or key (none for the operator). */
export interface ActorRef { type: Actor['kind']; id: number | null }

export function actorRef(actor: Actor): ActorRef {
  return { type: actor.kind, id: actor.kind === 'user' ? actor.userId : actor.kind === 'api_key' ? actor.keyId : null };
}

export function authorOf(actor: Actor): string {
  if (actor.kind === 'api_key') return `${actor.keyName} (API)`;
  return actor.kind === 'operator' ? `${actor.name} (command line)` : actor.name;
}

/** The reason the trail states: how the data came, then the reason given for the change, when there is one. */
export function reasonOf(actor: Actor, given?: string): string {
  const how = wayOf(actor);
  return given ? `${how}: ${given}` : how;
}

function wayOf(actor: Actor): string {
  if (actor.kind === 'api_key') return `Data sent through the API key "${actor.keyName}"`;
  if (actor.kind === 'user' && actor.via === 'portal') return 'Entered in the portal';
  if (actor.kind === 'user' && actor.via === 'fhir_save') return `Saved from a FHIR record sent through the API key "${actor.keyName}"`;
  if (actor.kind === 'user' && actor.via === 'fhir_review') return `Taken from FHIR import ${actor.importNumber}, confirmed in the portal`;
  return 'Changed with the sdx command line';
}

/** How a record arrived, as the read calls report it in `source`. */
export type RecordSource = 'api' | 'fhir' | 'portal';
