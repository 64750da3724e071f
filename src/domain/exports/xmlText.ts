/** Characters XML 1.0 cannot carry, even escaped: C0 controls but tab and line breaks, lone surrogates, U+FFFE/U+FFFF. */
// eslint-disable-next-line no-control-regex
const NOT_XML = /[\u0000-\u0008\u000B\u000C\u000E-\u001F\uFFFE\uFFFF]|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', '\r': '&#13;', '\n': '&#10;', '\t': '&#9;' };

/**
 * Text as an XML attribute value or element content: markup characters escaped, line breaks and tabs
 * as character references (an attribute would otherwise lose them to normalisation), and characters
 * XML 1.0 cannot hold written as U+FFFD.
 */
export function xmlEscape(text: string): string {
  return text.replace(NOT_XML, '\uFFFD').replace(/[&<>"\r\n\t]/g, (c) => ESCAPES[c] ?? c);
}

/** Attributes in the order given; undefined ones are left out. */
export function xmlAttributes(attributes: Record<string, string | number | undefined>): string {
  return Object.entries(attributes)
    .filter((entry): entry is [string, string | number] => entry[1] !== undefined)
    .map(([name, value]) => ` ${name}="${xmlEscape(String(value))}"`)
    .join('');
}

/** An element: empty when it has no children, else with them inside. */
export function xmlElement(name: string, attributes: Record<string, string | number | undefined>, children: string[] = []): string {
  const open = `<${name}${xmlAttributes(attributes)}`;
  return children.length === 0 ? `${open}/>` : `${open}>${children.join('')}</${name}>`;
}

/** An element holding only text. */
export function xmlTextElement(name: string, text: string, attributes: Record<string, string | number | undefined> = {}): string {
  return `<${name}${xmlAttributes(attributes)}>${xmlEscape(text)}</${name}>`;
}

/** The start tag of an element whose children are written one after another, as a stream writes them. */
export function xmlStartTag(name: string, attributes: Record<string, string | number | undefined>): string {
  return `<${name}${xmlAttributes(attributes)}>`;
}
