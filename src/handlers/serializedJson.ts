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

  constructor(readonly text: string) {}
}
