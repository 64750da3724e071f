import type { RouterContext } from '@koa/router';
import type { StaffSession } from '../domain/people/staffSessions.js';
import type { User } from '../domain/stores.js';
import type { RequestState } from '../requestState.js';

/** What a portal request carries besides the service's request state. */
export interface PortalState extends RequestState {
  /** The browser's live session (anonymous on the sign-in form), once loaded from its cookie. */
  session?: StaffSession;
  /** The signed-in person. */
  user?: User;
}

export type PortalContext = RouterContext<PortalState>;
