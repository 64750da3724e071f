import { DomainError } from '../domain/errors.js';

/**
 * A named segment of the route's path (`:study`, `:subject`). The router fills every segment its
 * pattern names, so a missing one means a route asked for a name its pattern lacks: no such page.
 */
export function pathSegment(segment: string | undefined): string {
  if (segment === undefined) throw new DomainError('portal_not_found');
  return segment;
}
