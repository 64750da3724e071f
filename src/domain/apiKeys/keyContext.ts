/**
 * What an authenticated request may do: the key's study, rights and effective sites, and whether
 * its maker is unblinded (a key reads and writes unblinded-team forms only if its maker may).
 */
export interface KeyContext {
  keyId: number;
  keyName: string;
  studyId: number;
  studyCode: string;
  canRead: boolean;
  canWrite: boolean;
  canEnrol: boolean;
  /** The key's sites that its maker may still see. */
  siteIds: number[];
  makerId: number;
  makerName: string;
  makerUnblinded: boolean;
}
