/**
 * The OIDs both CDISC exports use, so that a Dataset-JSON column and an ODM ItemDef of the same
 * field carry the same identifier (`itemOID` = `ItemDef/@OID`, `itemGroupOID` = `ItemGroupDef/@OID`).
 */

function part(code: string): string {
  return code.toUpperCase();
}

export function studyEventOid(visit: string): string {
  return `SE.${part(visit)}`;
}

export function formOid(form: string): string {
  return `F.${part(form)}`;
}

/** A form's item group, or a table field's (repeating) one. */
export function itemGroupOid(form: string, table?: string): string {
  return table === undefined ? `IG.${part(form)}` : `IG.${part(form)}.${part(table)}`;
}

/** A field's item, or a table column's. */
export function itemOid(form: string, field: string, column?: string): string {
  return column === undefined ? `IT.${part(form)}.${part(field)}` : `IT.${part(form)}.${part(field)}.${part(column)}`;
}

export function codeListOid(form: string, field: string, column?: string): string {
  return `CL${itemOid(form, field, column).slice(2)}`;
}

export function locationOid(site: string): string {
  return `LOC.${site}`;
}

/** One measurement unit per UCUM code (an ODM OID may hold any character). */
export function unitOid(ucum: string): string {
  return `MU.${ucum}`;
}
