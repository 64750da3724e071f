/**
 * What XML text cannot hold as it is: markup characters, line breaks and tabs (an attribute value would
 * lose them to normalisation), and characters XML 1.0 cannot carry even escaped (C0 controls, lone
 * surrogates, U+FFFE/U+FFFF).
 */
const SPECIAL = /[&<>"\r\n\t]|[\u0000-\u0008\u000B\u000C\u000E-\u001F\uFFFE\uFFFF]|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', '\r': '&#13;', '\n': '&#10;', '\t': '&#9;' };

/**
 * Any character that may need SPECIAL's replacement (every surrogate, paired or not): most values of a
 * study (numbers, dates, codes) have none, and this simple class finds that faster than SPECIAL's
 * alternatives with their look-arounds.
 */
const MAYBE_SPECIAL = /[&<>"\u0000-\u001F\uD800-\uDFFF\uFFFE\uFFFF]/;

/** Text as an XML attribute value or element content; a character XML 1.0 cannot hold becomes U+FFFD. */
export function xmlEscape(text: string): string {
  return MAYBE_SPECIAL.test(text) ? text.replace(SPECIAL, (c) => ESCAPES[c] ?? '\uFFFD') : text;
}

type Attributes = Record<string, string | number | undefined>;

/** Attributes in the order given; undefined ones are left out. */
export function xmlAttributes(attributes: Attributes): string {
  let text = '';
  for (const name in attributes) {
    const value = attributes[name];
    if (value !== undefined) text += ` ${name}="${typeof value === 'number' ? value : xmlEscape(value)}"`;
  }
  return text;
}

/** An element: empty when it has no children, else with them inside. */
export function xmlElement(name: string, attributes: Attributes, children: string[] = []): string {
  const open = `<${name}${xmlAttributes(attributes)}`;
  return children.length === 0 ? `${open}/>` : `${open}>${children.join('')}</${name}>`;
}

/** An element holding only text. */
export function xmlTextElement(name: string, text: string, attributes: Attributes = {}): string {
  return `<${name}${xmlAttributes(attributes)}>${xmlEscape(text)}</${name}>`;
}

/** The start tag of an element whose children are written one after another, as a stream writes them. */
export function xmlStartTag(name: string, attributes: Attributes): string {
  return `<${name}${xmlAttributes(attributes)}>`;
}
