/**
 * A response body already written as JSON text, of the shape `Body`. A read page of 1,000 records is
 * about 1 MB: parsing its jsonb columns into objects only to serialise them again took a third of the
 * service's time in a bulk read (bench/README.md), so the records page splices the text the database
 * sends; the design call serialises its answer once, for its ETag and to send. The shape parameter
 * keeps the handler's reply typed against the spec; the tests still check every answer against it.
 */
export class SerializedJson<Body> {
  /** Only for the type checker: which body the text holds. */
  declare readonly shape?: Body;

  private encoded?: Buffer;

  constructor(readonly text: string) {}

  /**
   * The text as UTF-8, encoded once (a cached design answer is sent many times). Node sends a 1 MB Buffer
   * far faster than the same string: answering the records page as bytes raised the bulk read from
   * 0.58–0.64 to 0.69–0.70 of its floor (bench/README.md).
   */
  get bytes(): Buffer {
    return (this.encoded ??= Buffer.from(this.text, 'utf8'));
  }
}
